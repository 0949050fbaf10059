package main

// The cardinality command: /api/v1/status/tsdb of promhbase and
// VictoriaMetrics side by side on the same series.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// cardOptions are the flags of the cardinality command.
type cardOptions struct {
	promhbase, vm           string
	dir                     string
	keep                    bool
	repeats, warmups, topN  int
	idleWait                time.Duration
	promhbaseFlags, vmFlags []string
}

func registerCardinality(app *kingpin.Application) (*kingpin.CmdClause, *cardOptions) {
	var c cardOptions
	cmd := app.Command("cardinality", "/api/v1/status/tsdb of promhbase (embedded store) and VictoriaMetrics on the same --series series (the load's labels: "+
		"100 metrics, ten labels, one unique a series), one sample each today, sent to both by remote write 1.0 (--batch series a request, --concurrency in flight); "+
		"then the same question (today's date, topN) asked of each, the systems taking turns: a first (cold), --cardinality.warmups untimed, --cardinality.repeats timed; prints the times (median and spread; the first apart) "+
		"and checks each answer's counts against those the generator knows.")
	cmd.Flag("promhbase", "promhbase binary.").Required().StringVar(&c.promhbase)
	cmd.Flag("victoria-metrics", "VictoriaMetrics single-node binary (tools/scripts/victoriametrics.sh prints it).").Required().StringVar(&c.vm)
	cmd.Flag("dir", "Where the systems' data directories go (removed at the end unless --keep).").Default(os.TempDir()).StringVar(&c.dir)
	cmd.Flag("keep", "Keep the data directories (their path is printed).").BoolVar(&c.keep)
	cmd.Flag("cardinality.repeats", "Timed questions to each system, after the first (cold: caches empty, the value names' lengths not read yet, reported apart) and the warm-ups.").Default("9").IntVar(&c.repeats)
	cmd.Flag("cardinality.warmups", "Questions to each system after the first, not timed: the work the first ones leave behind (the embedded store compacts the files a scan read across levels, VictoriaMetrics fills its caches) ends meanwhile.").Default("5").IntVar(&c.warmups)
	cmd.Flag("cardinality.top", "topN of the questions.").Default("10").IntVar(&c.topN)
	cmd.Flag("idle-wait", "Before the questions, wait until promhbase's process used under 5 % of a core for 30 s (its store settles what the load wrote a while after it), then until the machine's CPUs are less than a tenth busy, each at most this long.").Default("3m").DurationVar(&c.idleWait)
	cmd.Flag("promhbase.flag", "Extra flag for promhbase serve; repeatable.").StringsVar(&c.promhbaseFlags)
	cmd.Flag("victoria-metrics.flag", "Extra flag for VictoriaMetrics; repeatable.").StringsVar(&c.vmFlags)
	return cmd, &c
}

// cardStat is an entry of a ranking of /api/v1/status/tsdb.
type cardStat struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// cardAnswer is the part of /api/v1/status/tsdb's answer checked.
type cardAnswer struct {
	Status string `json:"status"`
	Data   struct {
		HeadStats *struct {
			NumSeries     uint64 `json:"numSeries"`
			NumLabelPairs uint64 `json:"numLabelPairs"`
		} `json:"headStats"`
		TotalSeries          uint64     `json:"totalSeries"`
		TotalLabelValuePairs uint64     `json:"totalLabelValuePairs"`
		Metrics              []cardStat `json:"seriesCountByMetricName"`
		Labels               []cardStat `json:"seriesCountByLabelName"`
		Values               []cardStat `json:"labelValueCountByLabelName"`
		Pairs                []cardStat `json:"seriesCountByLabelValuePair"`
		Memory               []cardStat `json:"memoryInBytesByLabelName"`
	} `json:"data"`
}

// cardCounts are the counts of the generator's series (seriesLabels).
type cardCounts struct {
	series, labels                      uint64
	metrics, labelSeries, values, pairs map[string]uint64
	memory                              map[string]uint64
}

func countGenerated(n int) cardCounts {
	c := cardCounts{series: uint64(n), metrics: map[string]uint64{}, labelSeries: map[string]uint64{}, values: map[string]uint64{},
		pairs: map[string]uint64{}, memory: map[string]uint64{}}
	size := func(n int) uint64 { // Prometheus's labels.SizeOfLabels (stringlabels)
		if n < 255 {
			return uint64(n + 1)
		}
		return uint64(n + 4)
	}
	for i := range n {
		for _, l := range seriesLabels(i) {
			c.labels++
			p := l.Name + "=" + l.Value
			if c.pairs[p] == 0 {
				c.values[l.Name]++
			}
			c.pairs[p]++
			c.labelSeries[l.Name]++
			c.memory[l.Name] += size(len(l.Name)) + size(len(l.Value))
			if l.Name == "__name__" {
				c.metrics[l.Value]++
			}
		}
	}
	return c
}

// check lists where a answers otherwise than c: totals; rankings of
// names sorted by value, then name; the pairs' ranking (whose ties at its
// last place a system may break as it likes) by its counts.
func (c cardCounts) check(a cardAnswer, topN int, prometheusFields bool) []string {
	var bad []string
	if a.Data.TotalSeries != c.series || a.Data.TotalLabelValuePairs != c.labels {
		bad = append(bad, fmt.Sprintf("totalSeries %d, totalLabelValuePairs %d; want %d, %d", a.Data.TotalSeries, a.Data.TotalLabelValuePairs, c.series, c.labels))
	}
	top := func(all map[string]uint64) []cardStat {
		out := make([]cardStat, 0, len(all))
		for k, v := range all {
			out = append(out, cardStat{k, v})
		}
		slices.SortFunc(out, func(a, b cardStat) int { return cmp.Or(cmp.Compare(b.Value, a.Value), cmp.Compare(a.Name, b.Name)) })
		return out[:min(topN, len(out))]
	}
	exact := []struct {
		name string
		got  []cardStat
		all  map[string]uint64
	}{
		{"seriesCountByMetricName", a.Data.Metrics, c.metrics},
		{"seriesCountByLabelName", a.Data.Labels, c.labelSeries},
		{"labelValueCountByLabelName", a.Data.Values, c.values},
	}
	if prometheusFields {
		exact = append(exact, struct {
			name string
			got  []cardStat
			all  map[string]uint64
		}{"memoryInBytesByLabelName", a.Data.Memory, c.memory})
		if h := a.Data.HeadStats; h == nil || h.NumSeries != c.series || h.NumLabelPairs != uint64(len(c.pairs)) {
			bad = append(bad, fmt.Sprintf("headStats %+v: want numSeries %d, numLabelPairs %d", h, c.series, len(c.pairs)))
		}
	}
	for _, e := range exact {
		if want := top(e.all); !slices.Equal(e.got, want) {
			bad = append(bad, fmt.Sprintf("%s %v, want %v", e.name, e.got, want))
		}
	}
	pairs := a.Data.Pairs
	if len(pairs) != min(topN, len(c.pairs)) {
		bad = append(bad, fmt.Sprintf("seriesCountByLabelValuePair has %d entries, want %d", len(pairs), min(topN, len(c.pairs))))
	}
	for i, p := range pairs {
		if c.pairs[p.Name] != p.Value || i > 0 && pairs[i-1].Value < p.Value {
			bad = append(bad, fmt.Sprintf("seriesCountByLabelValuePair entry %d %v: counted %d", i, p, c.pairs[p.Name]))
		}
	}
	if len(pairs) > 0 {
		for _, w := range top(c.pairs) {
			if w.Value > pairs[len(pairs)-1].Value && !slices.Contains(pairs, w) {
				bad = append(bad, fmt.Sprintf("seriesCountByLabelValuePair leaves out %v", w))
			}
		}
	}
	return bad
}

// loadSeries writes series [0, n) of seriesLabels, one sample each at
// ts, by remote write 1.0: batch series a request, concurrency requests
// in flight.
func loadSeries(u string, n, batch, concurrency int, ts int64) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jobs := make(chan int)
	errs := make(chan error, concurrency)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for first := range jobs {
				req := prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, 0, batch)}
				for i := first; i < min(n, first+batch); i++ {
					req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: seriesLabels(i), Samples: []prompb.Sample{{Timestamp: ts, Value: float64(i)}}})
				}
				data, err := req.Marshal()
				if err == nil {
					err = post(ctx, u, "application/x-protobuf", snappy.Encode(nil, data))
				}
				if err != nil {
					errs <- fmt.Errorf("write series %d to %d to %s: %w", first, min(n, first+batch)-1, u, err)
					cancel()
					return
				}
			}
		})
	}
	for first := 0; first < n && ctx.Err() == nil; first += batch {
		select {
		case jobs <- first:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// askStatus asks base's /api/v1/status/tsdb with params and returns the
// answer and the time it took.
func askStatus(base, params string) (cardAnswer, time.Duration, error) {
	var a cardAnswer
	start := time.Now()
	resp, err := http.Get(base + "/api/v1/status/tsdb?" + params)
	if err != nil {
		return a, 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		return a, took, err
	}
	if resp.StatusCode != http.StatusOK {
		return a, took, fmt.Errorf("status %d: %.300s", resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return a, took, fmt.Errorf("answer %.200s: %w", body, err)
	}
	return a, took, nil
}

func runCardinality(o options, c cardOptions) error {
	if c.repeats < 1 || c.topN < 1 || o.series < 1 || c.warmups < 0 {
		return fmt.Errorf("--cardinality.repeats=%d, --cardinality.top=%d and --series=%d must be at least 1, --cardinality.warmups=%d at least 0", c.repeats, c.topN, o.series, c.warmups)
	}
	work, err := os.MkdirTemp(c.dir, "promhbase-cardinality-")
	if err != nil {
		return fmt.Errorf("make a work directory in %s: %w", c.dir, err)
	}
	if c.keep {
		fmt.Fprintf(os.Stderr, "data directories in %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}
	// Today, as both answer by default; a minute ago, well inside it.
	now := time.Now().UTC()
	ts := now.Add(-time.Minute)
	if ts.Day() != now.Day() {
		ts = now
	}
	date := ts.Format(time.DateOnly)
	d := diskOptions{promhbase: c.promhbase, vm: c.vm, promhbaseFlags: c.promhbaseFlags, vmFlags: c.vmFlags}
	ph, err := startPromhbase(d, filepath.Join(work, "promhbase"), filepath.Join(work, "promhbase.log"), nil)
	if err != nil {
		return err
	}
	defer func() { _ = ph.stop() }()
	vm, err := startVM(d, filepath.Join(work, "victoriametrics"), filepath.Join(work, "victoriametrics.log"))
	if err != nil {
		return err
	}
	defer func() { _ = vm.stop() }()
	systems := []*server{ph, vm}
	for _, s := range systems {
		fmt.Fprintf(os.Stderr, "%s: writing %d series...\n", s.name, o.series)
		began := time.Now()
		if err := loadSeries(s.base+"/api/v1/write", o.series, o.batch, o.concurrency, ts.UnixMilli()); err != nil {
			return s.withLog(err)
		}
		fmt.Fprintf(os.Stderr, "%s: written in %s\n", s.name, time.Since(began).Round(time.Millisecond))
	}
	if err := httpGet(vm.base + "/internal/force_flush"); err != nil {
		return vm.withLog(err)
	}
	if _, err := waitVMQuiet(vm.base, time.Now().Add(5*time.Minute)); err != nil {
		return vm.withLog(err)
	}
	// promhbase's store settles what the load wrote a while after writes
	// stop: asked meanwhile, it would answer on a busy core.
	if !waitProcQuiet(ph, 5*time.Second, 6, c.idleWait) {
		fmt.Fprintf(os.Stderr, "promhbase still busy after %s; asking anyway\n", c.idleWait)
	}
	if waited, idle := waitIdle(c.idleWait); !idle {
		fmt.Fprintf(os.Stderr, "the machine is still busy after %s; asking anyway\n", waited.Round(time.Second))
	}
	want := countGenerated(o.series)
	params := url.Values{"date": {date}, "topN": {fmt.Sprint(c.topN)}}.Encode()
	times := map[string][]time.Duration{}
	answers := map[string]cardAnswer{}
	warm := map[string][]time.Duration{} // the first, then the warm-ups
	for r := range 1 + c.warmups + c.repeats {
		order := systems
		if r%2 == 1 {
			order = []*server{vm, ph}
		}
		for _, s := range order {
			a, took, err := askStatus(s.base, params)
			if err != nil {
				return s.withLog(fmt.Errorf("%s: /api/v1/status/tsdb: %w", s.name, err))
			}
			if r <= c.warmups {
				warm[s.name] = append(warm[s.name], took)
			} else {
				times[s.name] = append(times[s.name], took)
			}
			answers[s.name] = a
		}
	}
	if time.Now().UTC().Format(time.DateOnly) != date {
		fmt.Fprintf(os.Stderr, "warning: the day changed during the run; the answers are of %s\n", date)
	}
	fmt.Printf("\n## /api/v1/status/tsdb?%s on %d series (a first question, %d warm-ups, %d timed questions each, systems taking turns)\n\n",
		params, o.series, c.warmups, c.repeats)
	fmt.Printf("| system | first (cold) | median | min – max | spread | counts |\n| --- | --- | --- | --- | --- | --- |\n")
	var failed []string
	for _, s := range systems {
		ts := times[s.name]
		first := warm[s.name][0]
		med := median(slices.Clone(ts))
		lo, hi := slices.Min(ts), slices.Max(ts)
		bad := want.check(answers[s.name], c.topN, s == ph)
		verdict := "match the generator's"
		if len(bad) > 0 {
			verdict = fmt.Sprintf("%d differences", len(bad))
			for _, b := range bad {
				failed = append(failed, s.name+": "+b)
			}
		}
		fmt.Printf("| %s | %s | %s | %s – %s | %.0f %% | %s |\n", s.name, first.Round(time.Millisecond), med.Round(time.Millisecond),
			lo.Round(time.Millisecond), hi.Round(time.Millisecond), 100*float64(hi-lo)/float64(max(med, 1)), verdict)
	}
	for _, f := range failed {
		fmt.Println("  -", f)
	}
	for _, s := range systems {
		fmt.Printf("\n%s: first and warm-ups %s; timed %s\n", s.name, strings.Join(fmtTimes(warm[s.name]), " "), strings.Join(fmtTimes(times[s.name]), " "))
	}
	if slices.ContainsFunc(failed, func(f string) bool { return strings.HasPrefix(f, ph.name+":") }) {
		return fmt.Errorf("promhbase's counts differ from the generator's")
	}
	return nil
}

// waitProcQuiet waits until srv's process used under a twentieth of a
// core over calm windows in a row, at most timeout; it reports whether
// it did.
func waitProcQuiet(srv *server, window time.Duration, calmWindows int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	calm := 0
	cpu0, err := procCPU(srv.cmd.Process.Pid)
	for err == nil && time.Now().Before(deadline) {
		time.Sleep(window)
		cpu1, e := procCPU(srv.cmd.Process.Pid)
		if err = e; err != nil {
			break
		}
		if (cpu1-cpu0)/window.Seconds() < 0.05 {
			if calm++; calm == calmWindows {
				return true
			}
		} else {
			calm = 0
		}
		cpu0 = cpu1
	}
	return false
}

func fmtTimes(ts []time.Duration) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Round(time.Millisecond).String()
	}
	return out
}
