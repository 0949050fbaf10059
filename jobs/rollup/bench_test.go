package rollup_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
)

// BenchmarkDownsampledQuery times 30-day query_range requests at a 1h
// step over node_exporter-like counters and gauges (BENCH_SERIES series,
// 20 by default, 15 s samples with jitter) read raw (max_source_resolution
// =0s) and with auto (exact: the 5m rollups inside each step's range, raw
// samples where a range's end cuts a window), at steps on the windows'
// ends and 7m11s after them, through the HTTP API of an in-process server
// on the embedded store; and the errors of approximate answers (an
// explicit max_source_resolution=5m) at unaligned steps. auto-joined is
// auto with the rollups built up to a day before the data's end, the
// last day read raw (the clock of the server that wrote the data stops
// its scheduler there); the others run on a second server whose
// scheduler built the rest.
func BenchmarkDownsampledQuery(b *testing.B) {
	series := 20
	if n, err := strconv.Atoi(os.Getenv("BENCH_SERIES")); err == nil && n > 0 {
		series = n
	}
	const days = 30
	st, tb := testbackend.NewWithRollups(b)
	H := int64(h0) * 1000
	end := H + days*24*rollup.HourMs
	joinedAt := end - 24*rollup.HourMs
	srv := startAuto(b, st, tb, time.UnixMilli(joinedAt+30*60_000), 100*time.Millisecond, false)
	rng := rand.New(rand.NewPCG(3, 4))
	vals := make([]float64, series)
	for from := H; from < end; from += 6 * rollup.HourMs {
		var ts []prompb.TimeSeries
		for i := range series {
			name := "node_cpu_seconds_total"
			if i%2 == 1 {
				name = "node_load1"
			}
			s := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: name}, {Name: "cpu", Value: strconv.Itoa(i)}, {Name: "job", Value: "node"}}}
			for t := from; t < from+6*rollup.HourMs; t += 15_000 {
				if i%2 == 0 {
					vals[i] += float64(rng.IntN(1500)) / 100
				} else {
					vals[i] = float64(rng.IntN(400)) / 100
				}
				s.Samples = append(s.Samples, prompb.Sample{Timestamp: t + int64(rng.IntN(5)), Value: vals[i]})
			}
			ts = append(ts, s)
		}
		srv.Write(b, &prompb.WriteRequest{Timeseries: ts})
	}
	// The scheduler builds the hours written before it started, backwards,
	// up to the day before the end.
	buildStart := time.Now()
	waitResolution(b, srv.URL, "max_over_time(node_load1[1h])", H+rollup.HourMs, joinedAt, 10*time.Minute)
	b.Logf("the scheduler built %d hours of %d series in %s", days*24-24, series, time.Since(buildStart).Round(time.Millisecond))
	settle := func() {
		// Settled, as a store is once the writes of the hours are old:
		// the row buffer flushed into packed runs.
		if rc, ok := st.(store.Reclaimer); ok {
			if err := rc.Reclaim(ctxFor(b)); err != nil {
				b.Fatal(err)
			}
		}
	}
	settle()
	queries := []string{"rate(node_cpu_seconds_total[1h])", "avg_over_time(node_load1[1h])", "max_over_time(node_load1[1h])", "node_load1"}
	type run struct {
		name, res string
		shift     int64
	}
	timeQueries := func(base string, q string, c run) {
		b.Run(fmt.Sprintf("%s/%s", q, c.name), func(b *testing.B) {
			v := url.Values{"query": {q}, "start": {strconv.FormatInt(H/1000+3600+c.shift, 10)}, "end": {strconv.FormatInt(end/1000, 10)},
				"step": {"3600"}, "max_source_resolution": {c.res}}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := http.PostForm(base+"/api/v1/query_range", v)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
				if c.name == "auto-joined" && q != "node_load1" && resp.Header.Get("X-Promhbase-Resolution") != "raw,5m" {
					b.Fatalf("resolution %q, want raw,5m", resp.Header.Get("X-Promhbase-Resolution"))
				}
			}
		})
	}
	for _, q := range queries {
		timeQueries(srv.URL, q, run{"auto-joined", "auto", 0})
	}
	// A server whose clock is past the end builds the last day.
	srv = startAuto(b, st, tb, time.UnixMilli(end+30*60_000), 100*time.Millisecond, false)
	waitResolution(b, srv.URL, "max_over_time(node_load1[1h])", H+rollup.HourMs, end, 10*time.Minute)
	settle()
	for _, q := range queries {
		// auto-unaligned: exact, its steps 7m11s after the windows' ends.
		for _, c := range []run{{"0s", "0s", 0}, {"auto", "auto", 0}, {"auto-unaligned", "auto", 7*60 + 11}} {
			timeQueries(srv.URL, q, c)
		}
	}
	// Where downsampled answers differ from raw: steps and ranges not
	// aligned to the 5m windows. Reported as metrics, not timed.
	for _, q := range []string{"rate(node_cpu_seconds_total[50m])", "increase(node_cpu_seconds_total[2h])",
		"avg_over_time(node_load1[50m])", "max_over_time(node_load1[50m])", "sum_over_time(node_load1[1h])", "node_load1"} {
		b.Run("unaligned/"+q, func(b *testing.B) {
			start, stop := H+3*rollup.HourMs+7*60_000+11_000, end-rollup.HourMs
			var errs []float64
			for b.Loop() {
				raw, _ := queryRange(b, srv.URL, q, start, stop, rollup.HourMs, "0s")
				down, res := queryRange(b, srv.URL, q, start, stop, rollup.HourMs, "5m")
				if res != "5m; approximate" {
					b.Fatalf("resolution %q", res)
				}
				errs = errs[:0]
				for k, rs := range raw {
					for ts, rv := range rs {
						dv, ok := down[k][ts]
						if !ok || rv == 0 {
							continue
						}
						errs = append(errs, math.Abs(dv-rv)/math.Abs(rv))
					}
				}
			}
			slices.Sort(errs)
			if len(errs) == 0 {
				b.Fatal("no point compared")
			}
			b.ReportMetric(errs[len(errs)/2], "median-rel-err")
			b.ReportMetric(errs[len(errs)*99/100], "p99-rel-err")
		})
	}
}

// BenchmarkBuildHour times building one hour's rollups (5m and 1h) of
// 200 series of 15 s samples, settled in the embedded store, beside
// writing that hour through the write path (ingest): rollup production
// must take a small fraction of ingest.
func BenchmarkBuildHour(b *testing.B) {
	const series = 200
	mkReq := func(hour int64) []prompb.TimeSeries {
		var ts []prompb.TimeSeries
		for i := range series {
			s := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "node_cpu_seconds_total"}, {Name: "cpu", Value: strconv.Itoa(i)}}}
			for t := hour * 1000; t <= (hour+3600)*1000; t += 15_000 {
				s.Samples = append(s.Samples, prompb.Sample{Timestamp: t, Value: float64(t/1000%7919) + float64(i)})
			}
			ts = append(ts, s)
		}
		return ts
	}
	b.Run("ingest", func(b *testing.B) {
		g := newRig(b, mapping.DefaultLayout())
		req := mkReq(h0)
		b.ReportAllocs()
		for b.Loop() {
			g.write(req...)
		}
	})
	b.Run("build", func(b *testing.B) {
		g := newRig(b, mapping.DefaultLayout())
		g.write(mkReq(h0)...)
		if rc, ok := g.Store.(store.Reclaimer); ok {
			if err := rc.Reclaim(ctxFor(b)); err != nil {
				b.Fatal(err)
			}
		}
		bl := g.builder()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := bl.BuildHour(ctxFor(b), h0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkNoteWritten times the write path's note of a request of 2000
// rows of the current hour, 20 minutes into it: no I/O, a look at each
// row's key and cells.
func BenchmarkNoteWritten(b *testing.B) {
	g := newRig(b, mapping.DefaultLayout())
	now := time.Unix(h0+20*60, 0)
	s := rollup.NewScheduler(g.Builder(rollup.Options{}), g.Store, rollup.SchedulerOptions{Now: func() time.Time { return now }})
	s.Check(ctxFor(b))
	puts := make([]store.Put, 2000)
	for i := range puts {
		puts[i] = store.Put{Row: g.Layout.AppendRowKey(nil, []byte{0, 0, 1}, h0, []byte{0, 0, 1, 0, byte(i >> 8), byte(i)}),
			Cells: []store.Cell{{Family: []byte("t"), Qualifier: mapping.AppendMsQualifier(nil, uint32(15_000+i), 0x07)}}}
	}
	ctx := ctxFor(b)
	b.ResetTimer()
	for range b.N {
		if err := s.NoteWritten(ctx, g.Layout, puts); err != nil {
			b.Fatal(err)
		}
	}
}
