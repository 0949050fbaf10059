package main

// The disk command's long-range queries and its report.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// queryTiming is one query on one system.
type queryTiming struct {
	query, system  string
	name           string // the system's name in the report
	times          []time.Duration
	series, points int
	err            error
}

func diskQueries(d diskOptions, g genConfig, work string, runs []*diskRun) ([]*queryTiming, error) {
	servers := map[string]*server{}
	var order []string
	defer func() {
		for _, s := range servers {
			_ = s.stop()
		}
	}()
	names := map[string]string{}
	for _, r := range runs {
		if r.noQuery {
			continue
		}
		var s *server
		var err error
		names[r.system] = r.name()
		switch r.system {
		case sysPromhbase:
			s, err = startPromhbase(d, r.dataDir, filepath.Join(work, "promhbase-query.log"))
		case sysPromhbaseHBase:
			s, err = startPromhbaseHBase(d, r.tables, filepath.Join(work, "promhbase-hbase-query.log"))
		case sysVM:
			s, err = startVM(d, r.dataDir, filepath.Join(work, "victoriametrics-query.log"))
		case sysPrometheus:
			s, err = startPrometheus(d, r.dataDir, work)
		}
		if err != nil {
			return nil, err
		}
		servers[r.system] = s
		order = append(order, r.system)
	}
	step := stepOf(g, d)
	queries := d.queries
	if len(queries) == 0 {
		queries = defaultDiskQueries
	}
	var out []*queryTiming
	byKey := map[[2]string]*queryTiming{}
	for _, q := range queries {
		for _, sys := range order {
			t := &queryTiming{query: strings.ReplaceAll(q, "$step", promDuration(step)), system: sys, name: names[sys]}
			byKey[[2]string{q, sys}] = t
			out = append(out, t)
		}
	}
	fmt.Fprintf(os.Stderr, "queries: %d × %d systems, %d warm-up and %d timed runs each, step %s...\n", len(queries), len(order), d.warmups, d.repeats, promDuration(step))
	for rep := range d.warmups + d.repeats {
		for qi, q := range queries {
			// The systems take turns, each first in turn.
			for k := range order {
				sys := order[(k+rep+qi)%len(order)]
				t := byKey[[2]string{q, sys}]
				if t.err != nil {
					continue
				}
				extra := url.Values{}
				if sys == sysVM {
					extra.Set("nocache", "1")
				}
				series, points, took, err := rangeQuery(servers[sys].base, t.query, g.endMs()-g.span.Milliseconds(), g.endMs(), step, extra)
				if err != nil {
					t.err = err
					continue
				}
				t.series, t.points = series, points
				if rep >= d.warmups {
					t.times = append(t.times, took)
				}
			}
		}
	}
	return out, nil
}

// stepOf is the step of the queries: span / points, in whole
// milliseconds.
func stepOf(g genConfig, d diskOptions) time.Duration {
	return (g.span / time.Duration(d.queryParts)).Truncate(time.Millisecond)
}

// promDuration writes d as PromQL accepts it (whole seconds, else ms).
func promDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// rangeQuery runs /api/v1/query_range and returns the series and points
// of its answer and the time it took (the answer's JSON decoded).
func rangeQuery(base, query string, start, end int64, step time.Duration, extra url.Values) (int, int, time.Duration, error) {
	v := url.Values{}
	for k, vs := range extra {
		v[k] = vs
	}
	v.Set("query", query)
	v.Set("start", strconv.FormatFloat(float64(start)/1000, 'f', 3, 64))
	v.Set("end", strconv.FormatFloat(float64(end)/1000, 'f', 3, 64))
	v.Set("step", strconv.FormatFloat(step.Seconds(), 'f', -1, 64))
	began := time.Now()
	resp, err := http.PostForm(base+"/api/v1/query_range", v)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, 0, 0, fmt.Errorf("%s: status %d: %s", query, resp.StatusCode, msg)
	}
	var qr struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Values []json.RawMessage `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&qr); err != nil {
		return 0, 0, 0, err
	}
	took := time.Since(began)
	if qr.Status != "success" {
		return 0, 0, 0, fmt.Errorf("%s: status %q", query, qr.Status)
	}
	n := 0
	for _, r := range qr.Data.Result {
		n += len(r.Values)
	}
	return len(qr.Data.Result), n, took, nil
}

// ---- printing ----

var diskSystemNames = map[string]string{sysPromhbase: "promhbase (embedded)", sysVM: "VictoriaMetrics", sysPrometheus: "Prometheus blocks"}

func printDisk(w io.Writer, title string, g genConfig, runs []*diskRun) {
	samples := float64(g.samples())
	ref := map[string]float64{}
	for _, r := range runs {
		ref[r.system] = float64(r.usage.bytes)
	}
	fmt.Fprintf(w, "\n## Disk: %s\n\n", title)
	fmt.Fprintf(w, "| system | measured | bytes | du (allocated) | bytes/sample | ÷ VictoriaMetrics | ÷ Prometheus | load | settle |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	ratio := func(b float64, sys string) string {
		if v, ok := ref[sys]; ok && v > 0 {
			return fmt.Sprintf("%.2f", b/v)
		}
		return "–"
	}
	row := func(name, state string, u *dirUsage, r *diskRun) {
		fmt.Fprintf(w, "| %s | %s | %d | %d | %.3f | %s | %s | %s | %s |\n", name, state, u.bytes, u.alloc, float64(u.bytes)/samples,
			ratio(float64(u.bytes), sysVM), ratio(float64(u.bytes), sysPrometheus), r.load.Round(time.Millisecond), r.settle.Round(time.Second))
	}
	for _, r := range runs {
		switch r.system {
		case sysPromhbase:
			row(r.name(), "settled, running", r.running, r)
			row(r.name(), "stopped (SIGTERM)", r.usage, r)
		case sysPromhbaseHBase:
			row(r.name(), "store files, flushed and major-compacted", r.usage, r)
		case sysVM:
			row(r.name(), "stopped (SIGINT)", r.usage, r)
		default:
			row(r.name(), "as promtool wrote them", r.usage, r)
		}
	}
	fmt.Fprintln(w)
	for _, r := range runs {
		fmt.Fprintf(w, "- %s: %s\n", r.name(), r.note)
	}
	for _, r := range runs {
		us := []*dirUsage{r.usage}
		states := []string{""}
		if r.running != nil {
			us, states = []*dirUsage{r.running, r.usage}, []string{" (settled, running)", " (stopped)"}
		}
		by := "file kind"
		if r.system == sysPromhbaseHBase {
			by = "table (store files)"
		}
		for i, u := range us {
			fmt.Fprintf(w, "\n%s%s by %s:\n\n| kind | files | bytes | bytes/sample | share |\n| --- | --- | --- | --- | --- |\n", r.name(), states[i], by)
			kinds := make([]string, 0, len(u.kinds))
			for k := range u.kinds {
				kinds = append(kinds, k)
			}
			slices.SortFunc(kinds, func(a, b string) int { return int(u.kinds[b].bytes - u.kinds[a].bytes) })
			for _, k := range kinds {
				ku := u.kinds[k]
				fmt.Fprintf(w, "| %s | %d | %d | %.3f | %.1f %% |\n", k, ku.files, ku.bytes, float64(ku.bytes)/samples, 100*float64(ku.bytes)/float64(max(u.bytes, 1)))
			}
		}
	}
}

func printQueries(w io.Writer, g genConfig, d diskOptions, qs []*queryTiming) {
	fmt.Fprintf(w, "\n## query_range over the whole %s, step %s (%d timed runs each after %d warm-up, systems taking turns)\n\n", d.span, promDuration(stepOf(g, d)), d.repeats, d.warmups)
	fmt.Fprintf(w, "| query | system | median | min – max | spread | series | points |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, t := range qs {
		if t.err != nil {
			fmt.Fprintf(w, "| `%s` | %s | error: %s | | | | |\n", t.query, t.name, strings.ReplaceAll(t.err.Error(), "|", `\|`))
			continue
		}
		ts := slices.Clone(t.times)
		slices.Sort(ts)
		med := ts[len(ts)/2]
		if len(ts)%2 == 0 {
			med = (ts[len(ts)/2-1] + ts[len(ts)/2]) / 2
		}
		spread := 0.0
		if med > 0 {
			spread = 100 * float64(ts[len(ts)-1]-ts[0]) / float64(med)
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s – %s | %.0f %% | %d | %d |\n", strings.ReplaceAll(t.query, "|", `\|`), t.name,
			roundDur(med), roundDur(ts[0]), roundDur(ts[len(ts)-1]), spread, t.series, t.points)
	}
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
