package main

// The mixed command's dashboards, and the count of the samples stored.
//
// A dashboard has six panels (mixedPanels, node_exporter's usual ones)
// over a time range (--dashboard.range: 1h or 6h). Every --refresh, as
// Grafana does, it asks all six query_range at once over the range
// ending at the refresh, both ends aligned down to the step (Grafana's
// $__interval for a panel of about 360 points, at least the scrape
// interval: 15 s for 1 h, 60 s for 6 h). The dashboards are staggered
// over the refresh interval. A refresh starts once the one before has
// been answered; each latency runs from when the refresh was due.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cpuPanel is the panel whose median the summary reports on its own.
const cpuPanel = `sum(rate(node_cpu_seconds_total[5m]))`

// mixedPanels are a dashboard's six panels; $step is replaced by the
// panel's step.
var mixedPanels = []string{
	cpuPanel,
	`sum by (mode) (rate(node_cpu_seconds_total{mode!="idle"}[5m]))`,
	`100 * node_memory_MemFree_bytes / node_memory_MemTotal_bytes`,
	`sum by (instance) (rate(node_network_receive_bytes_total[5m]))`,
	`histogram_quantile(0.9, sum by (le) (rate(node_http_request_duration_seconds_bucket[5m])))`,
	`max_over_time(node_load1[$step])`,
}

// panelPoints is about how many points Grafana asks of a panel.
const panelPoints = 360

// panelStep is the step of a panel over rng: rng / panelPoints in whole
// seconds, at least minStep (the scrape interval).
func panelStep(rng, minStep time.Duration) time.Duration {
	return max(minStep, (rng / panelPoints).Truncate(time.Second))
}

// rangeStats is what the panels over one range recorded.
type rangeStats struct {
	lat     []time.Duration // every panel's, from when its refresh was due
	cpuLat  []time.Duration // cpuPanel's
	queries int
	errors  int
	empty   int // answers without a series
	// firstErr is the first error, with its query.
	firstErr error
}

// dashStats is what the dashboards recorded, by range.
type dashStats struct {
	mu      sync.Mutex
	byRange map[time.Duration]*rangeStats
}

func newDashStats(ranges []time.Duration) *dashStats {
	d := &dashStats{byRange: map[time.Duration]*rangeStats{}}
	for _, r := range ranges {
		d.byRange[r] = &rangeStats{}
	}
	return d
}

// record counts one panel's answer: series in it, took from when its
// refresh was due, err when it failed.
func (d *dashStats) record(rng time.Duration, panel string, took time.Duration, series int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rs := d.byRange[rng]
	rs.queries++
	switch {
	case err != nil:
		rs.errors++
		if rs.firstErr == nil {
			rs.firstErr = fmt.Errorf("%s over %s: %w", panel, rng, err)
		}
		return
	case series == 0:
		rs.empty++
	}
	rs.lat = append(rs.lat, took)
	if panel == cpuPanel {
		rs.cpuLat = append(rs.cpuLat, took)
	}
}

// runDashboard refreshes dashboard i (over m.ranges[i % len]) every
// m.refresh, staggered by i, from start until end.
func runDashboard(ctx context.Context, client *http.Client, base string, m mixedOptions, i int, start, end time.Time, st *dashStats) {
	rng := m.ranges[i%len(m.ranges)]
	step := panelStep(rng, m.historyInterval)
	offset := time.Duration(i) * m.refresh / time.Duration(m.dashboards)
	for k := 0; ; k++ {
		due := start.Add(offset + time.Duration(k)*m.refresh)
		if !due.Before(end) || !sleepUntil(ctx, due) {
			return
		}
		refreshPanels(ctx, client, base, rng, step, due, st)
	}
}

// refreshPanels asks every panel at once over rng ending at due,
// aligned down to step, and records each answer's latency from due.
func refreshPanels(ctx context.Context, client *http.Client, base string, rng, step time.Duration, due time.Time, st *dashStats) {
	stepMs := step.Milliseconds()
	end := due.UnixMilli() / stepMs * stepMs
	start := end - rng.Milliseconds()
	var wg sync.WaitGroup
	for _, p := range mixedPanels {
		q := strings.ReplaceAll(p, "$step", promDuration(step))
		wg.Go(func() {
			series, err := queryRangeWith(ctx, client, base, q, start, end, step)
			st.record(rng, p, time.Since(due), series, err)
		})
	}
	wg.Wait()
}

// queryRangeWith runs one query_range through client and returns the
// series of its answer.
func queryRangeWith(ctx context.Context, client *http.Client, base, query string, start, end int64, step time.Duration) (int, error) {
	status, body, err := postForm(ctx, client, base+"/api/v1/query_range", rangeForm(query, start, end, step, nil))
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("status %d: %.300s", status, body)
	}
	series, _ := countAnswer(body)
	return series, nil
}

// countWindow is the range of each count_over_time of countStored: a
// minute of the load is 6 M samples at 100 000 samples/s.
const countWindow = time.Minute

// countQuery counts the samples of every metric of nodeCatalog over the
// last window: a sum of one count_over_time a metric, since the
// function drops the metric's name and series of different metrics with
// the same other labels would make one vector hold a labelset twice
// (an error to Prometheus's engine).
func countQuery(window time.Duration) string {
	var terms []string
	seen := map[string]bool{}
	for _, cs := range nodeCatalog {
		name := cmp.Or(cs.name, cs.fam.name)
		if !seen[name] {
			seen[name] = true
			terms = append(terms, fmt.Sprintf(`(sum(count_over_time({__name__=%q,job="node"}[%s])) or vector(0))`, name, promDuration(window)))
		}
	}
	slices.Sort(terms)
	return strings.Join(terms, " + ")
}

// countStored returns how many samples the server at base holds from
// fromMs to toMs: the sums of countQuery over consecutive windows
// (t-1m, t], t on whole seconds from just after toMs back until a window
// reaches before fromMs, each an instant query with nocache=1
// (VictoriaMetrics then moves no time back by its -search.latencyOffset).
func countStored(base string, fromMs, toMs int64) (int64, error) {
	w := countWindow.Milliseconds()
	q := countQuery(countWindow)
	var total int64
	for end := (toMs/1000 + 1) * 1000; ; end -= w {
		n, err := instantCount(base, q, end/1000)
		if err != nil {
			return total, fmt.Errorf("count at %d: %w", end/1000, err)
		}
		total += n
		if end-w < fromMs {
			return total, nil
		}
	}
}

// instantCount runs the instant query q at sec (Unix seconds) and
// returns its one value (0 without a series).
func instantCount(base, q string, sec int64) (int64, error) {
	form := url.Values{"query": {q}, "time": {strconv.FormatInt(sec, 10)}, "nocache": {"1"}}
	status, body, err := postForm(context.Background(), http.DefaultClient, base+"/api/v1/query", form)
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("%s: status %d: %.300s", q, status, body)
	}
	var a struct {
		Data struct {
			Result []struct {
				Value [2]json.RawMessage `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return 0, fmt.Errorf("%s: %w: %.300s", q, err, body)
	}
	if len(a.Data.Result) == 0 {
		return 0, nil
	}
	var v string
	if err := json.Unmarshal(a.Data.Result[0].Value[1], &v); err != nil {
		return 0, fmt.Errorf("%s: value %s: %w", q, a.Data.Result[0].Value[1], err)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: value %q: %w", q, v, err)
	}
	return int64(f), nil
}
