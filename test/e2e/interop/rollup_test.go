package interop

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/server"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/hbase"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
	"github.com/promhbase/promhbase/test/testkit/testrollup"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// TestOpenTSDBReadsRollups: a TSD given promhbase's rollup configuration
// (tsd.rollups.config, the JSON Config.AppendJSON writes) reads the
// rollups serve's background builder (rollup.Scheduler, started on empty
// tables) computed from a backfill written through promhbase:
// /api/query with downsample 1h-sum, -count, -min, -max and -avg (and the
// same at 5m) answers, for every window, what promhbase computed (read
// back with rollup.Decoder, itself checked against the samples with the
// right-closed rule), stamped at the window's start. The rollup rows also
// hold promhbase's own aggregation ids (64 on), which the TSD's scans
// must leave out for its answers to be right.
//
// The data runs from exactly 2024-02-29T22:00Z over three hours, so the
// 5m table's rows (1d span) and the 1h table's rows (1n span) change at
// midnight, the first of March; the samples fall every 15 s, on every
// 5-minute and hour boundary. The first sample's windows end at 22:00
// and belong to the hour before the data's first: the builder builds
// that hour too.
func TestOpenTSDBReadsRollups(t *testing.T) {
	t.Parallel()
	bothLayouts(t, testRollups)
}

const (
	rollupH0    = int64(1709244000) // 2024-02-29T22:00:00Z, Unix s
	rollupHours = 3
)

// rollupSeries is one series of the test: its labels (the metric apart)
// and samples.
type rollupSeries struct {
	metric  string
	tags    map[string]string
	samples []point
}

func (s rollupSeries) String() string { return fmt.Sprintf("%s%v", s.metric, s.tags) }

func (s rollupSeries) prompb() prompb.TimeSeries {
	ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: s.metric}}}
	for _, k := range sortedKeys(s.tags) {
		ts.Labels = append(ts.Labels, prompb.Label{Name: k, Value: s.tags[k]})
	}
	for _, p := range s.samples {
		ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: p.t, Value: p.v})
	}
	return ts
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// rollupTestSeries returns a counter with resets (one exactly on an hour
// boundary) and two gauges with non-integer values, sampled every 15 s
// from h0 to a minute after h0+3h.
func rollupTestSeries() []rollupSeries {
	counter := rollupSeries{metric: "rollup_requests_total", tags: map[string]string{"job": "api", "instance": "a"}}
	gaugeA := rollupSeries{metric: "rollup_temperature", tags: map[string]string{"job": "api", "instance": "a"}}
	gaugeB := rollupSeries{metric: "rollup_temperature", tags: map[string]string{"job": "api", "instance": "b"}}
	c := 5000.0
	for i := 0; i <= rollupHours*240+4; i++ {
		tms := (rollupH0 + int64(i)*15) * 1000
		switch i {
		case 300: // h0+1h15m, a 5-minute boundary
			c = 3
		case 480: // h0+2h, an hour boundary
			c = 0
		case 481:
			c = 7
		default:
			c += float64((i%7+7)%7 + 1)
		}
		counter.samples = append(counter.samples, point{tms, c})
		gaugeA.samples = append(gaugeA.samples, point{tms, 20 + float64(i%53)*0.173 - float64(i%11)*0.61})
		gaugeB.samples = append(gaugeB.samples, point{tms, float64(i%17)/3 - 2.5 + math.Sin(float64(i)/9)*1e-3})
	}
	return []rollupSeries{counter, gaugeA, gaugeB}
}

// newRollupTables creates fresh data, UID, meta, index and rollup tables
// in the test HBase, dropped when the test ends.
func newRollupTables(t *testing.T, layout mapping.Layout) (*hbase.Store, testbackend.Tables) {
	t.Helper()
	st := testbackend.NewHBaseStore(t)
	sfx := tableSuffix(layout)
	tb := testbackend.Tables{Data: "tsdb_rollup_" + sfx, UID: "tsdb-uid_rollup_" + sfx, Meta: "tsdb-meta_rollup_" + sfx, Index: "tsdb-index_rollup_" + sfx,
		Rollup5m: "tsdb-rollup-5m_rollup_" + sfx, Rollup1h: "tsdb-rollup-1h_rollup_" + sfx,
		RollupAgg5m: "tsdb-rollup-agg-5m_rollup_" + sfx, RollupAgg1h: "tsdb-rollup-agg-1h_rollup_" + sfx}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := st.CreateTables(ctx, hbase.TablesConfig{DataTable: tb.Data, UIDTable: tb.UID, MetaTable: tb.Meta, IndexTable: tb.Index,
		RollupTables: tb.RollupTables(), SaltWidth: layout.SaltWidth, SaltBuckets: layout.SaltBuckets}); err != nil {
		testbackend.HBaseMissing(t, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := st.DropTables(ctx, append([]string{tb.Data, tb.UID, tb.Meta, tb.Index}, tb.RollupTables()...)...); err != nil {
			t.Logf("drop tables: %v", err)
		}
	})
	return st, tb
}

func testRollups(t *testing.T, layout mapping.Layout) {
	st, tables := newRollupTables(t, layout)
	// 1. serve's background builder, started on empty tables, its clock
	// an hour and a quarter after the data's last hour began.
	cfg := tables.RollupConfig()
	ph := startPromhbase(t, st, tables, layout, testserver.Options{Rollup: &server.RollupConfig{Enabled: true, Config: cfg,
		CheckInterval: 20 * time.Millisecond, Now: func() time.Time { return time.Unix(rollupH0+(rollupHours+1)*3600+15*60, 0) }}})
	waitGauge(t, ph, "the first check", func(until, _, _ float64) bool { return until > 0 })

	// 2. Samples through promhbase's remote write, older than every hour
	// built: the builder builds backwards down to the hour before the
	// first sample's.
	all := rollupTestSeries()
	var req []prompb.TimeSeries
	for _, s := range all {
		req = append(req, s.prompb())
	}
	ph.send(t, req)
	waitGauge(t, ph, "the backfill's rollups", func(until, from, stale float64) bool {
		return from == 0 && stale == 0 && until == float64(rollupH0+(rollupHours+1)*3600)
	})
	b, err := rollup.NewBuilder(st, rollup.Options{Config: cfg, DataTable: tables.Data, UIDTable: tables.UID, Layout: layout})
	if err != nil {
		t.Fatal(err)
	}

	// 3. What promhbase computed, read back, and checked against the
	// samples: every window, the first sample's included.
	ids, err := cfg.IDs()
	if err != nil {
		t.Fatal(err)
	}
	from, to := (rollupH0-3600)*1000, (rollupH0+(rollupHours+1)*3600)*1000
	type key struct {
		series   int
		interval string
	}
	stored := map[key][]rollup.DecodedWindow{}
	for _, iv := range b.Intervals() {
		got, byID := readRollups(t, st, iv, ids, layout)
		for _, id := range []byte{ids.Sum, ids.Count, ids.Max, ids.Min, rollup.IDFirst, rollup.IDLast, rollup.IDResets, rollup.IDTimes} {
			if byID[id] == 0 {
				t.Errorf("%s table: no cell of aggregation id %d", iv.Name, id)
			}
		}
		t.Logf("%s table %s: cells by aggregation id %v", iv.Name, iv.Table, byID)
		for i, s := range all {
			ws := got[string(tsuidOf(t, ph, s))]
			stored[key{i, iv.Name}] = ws
			checkWindows(t, fmt.Sprintf("%s windows of %s", iv.Name, s), ws, s.samples, iv.Seconds()*1000, from, to)
		}
	}

	// 4. A TSD with the same rollup configuration.
	cfgFile := filepath.Join(t.TempDir(), "rollups.json")
	if err := os.WriteFile(cfgFile, cfg.AppendJSON(nil), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startTSD(t, tables, layout, "tsd.rollups.enable = true", "tsd.rollups.config = "+cfgFile)

	// 5. Every aggregate of every series at both intervals, over the hours
	// built and the next one (which has no rollups: no point there, as
	// the TSD does not fall back to raw data).
	for _, iv := range b.Intervals() {
		width := iv.Seconds() * 1000
		for i, s := range all {
			ws := stored[key{i, iv.Name}]
			for _, agg := range []string{"sum", "count", "min", "max", "avg"} {
				ds := iv.Name + "-" + agg
				got := d.queryRollup(t, from, to+3600_000, s.metric, s.tags, ds)
				what := fmt.Sprintf("OpenTSDB %s of %s", ds, s)
				if len(got) != len(ws) {
					t.Errorf("%s: %d points, want %d\n got %v", what, len(got), len(ws), got)
					continue
				}
				for j, w := range ws {
					want := point{t: w.End - width}
					exact := true
					switch agg {
					case "sum":
						want.v, exact = w.Sum, false
					case "count":
						want.v = float64(w.Count)
					case "min":
						want.v = w.Min
					case "max":
						want.v = w.Max
					case "avg":
						want.v, exact = w.Sum/float64(w.Count), false
					}
					if g := got[j]; g.t != want.t || !closeTo(g.v, want.v, exact) {
						t.Errorf("%s: point %d = %v (%s), want %v (window (%s, %s])", what, j, g, time.UnixMilli(g.t).UTC().Format(time.RFC3339), want,
							time.UnixMilli(w.End-width).UTC().Format(time.RFC3339), time.UnixMilli(w.End).UTC().Format(time.RFC3339))
					}
				}
				if len(ws) > 0 && !t.Failed() && i == 0 && (agg == "sum" || agg == "avg") {
					t.Logf("%s: %d points, first %v, last %v", what, len(got), got[0], got[len(got)-1])
				}
			}
		}
	}
}

// closeTo compares a TSD's value with promhbase's: bit for bit when
// exact, else within 1e-9 relative.
func closeTo(got, want float64, exact bool) bool {
	if exact {
		return math.Float64bits(got) == math.Float64bits(want)
	}
	return got == want || math.Abs(got-want) <= 1e-9*math.Max(math.Abs(got), math.Abs(want))
}

// tsuidOf returns the TSUID of a series promhbase stored.
func tsuidOf(t *testing.T, ph *promhbase, s rollupSeries) []byte {
	t.Helper()
	lbls := []mapping.Label{{Name: []byte("__name__"), Value: []byte(s.metric)}}
	for _, k := range sortedKeys(s.tags) {
		lbls = append(lbls, mapping.Label{Name: []byte(k), Value: []byte(s.tags[k])})
	}
	ser, err := ph.mapper.Resolve(context.Background(), []byte("rollup-check"+s.String()), lbls)
	if err != nil {
		t.Fatal(err)
	}
	return ser.TSUID()
}

// readRollups reads every window of iv's table, by TSUID, and counts the
// table's cells by aggregation id.
func readRollups(t *testing.T, st store.Store, iv rollup.Interval, ids rollup.IDs, layout mapping.Layout) (map[string][]rollup.DecodedWindow, map[byte]int) {
	t.Helper()
	dec := rollup.NewDecoder(ids)
	sc := st.Scan(context.Background(), store.ScanRequest{Table: iv.Table, Family: rollup.Family})
	defer sc.Close()
	out := map[string][]rollup.DecodedWindow{}
	byID := map[byte]int{}
	for sc.Next() {
		row := sc.Row()
		if rollup.IsProgressRow(row.Key) {
			continue // the builds' progress and lease, no rollup row
		}
		salt, metric, base, tags, err := layout.ParseRowKey(row.Key)
		if err != nil {
			t.Fatalf("%s row %x: %v", iv.Table, row.Key, err)
		}
		if want := layout.AppendSalt(nil, layout.SaltBucket(metric, tags)); !bytes.Equal(salt, want) {
			t.Errorf("%s row %x: salt %x, want %x", iv.Table, row.Key, salt, want)
		}
		if b, _, err := iv.Locate(base); err != nil || b != base {
			t.Errorf("%s row %x: base time %d is not a row base of %s (%d, %v)", iv.Table, row.Key, base, iv.RowSpan, b, err)
		}
		for _, c := range row.Cells {
			if id, _, _, ok := mapping.ParseRollupQualifier(c.Qualifier); ok {
				byID[id]++
			}
		}
		ws, err := dec.Decode(iv, base, row.Cells, math.MinInt64, math.MaxInt64)
		if err != nil {
			t.Fatalf("%s row %x: %v", iv.Table, row.Key, err)
		}
		k := string(metric) + string(tags)
		out[k] = append(out[k], ws...)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for k := range out {
		slices.SortFunc(out[k], func(a, b rollup.DecodedWindow) int { return int(a.End - b.End) })
	}
	return out, byID
}

// checkWindows checks the windows promhbase stored against those of the
// samples with the right-closed rule: the windows (E-width, E] with E in
// (from, to] that hold a sample.
func checkWindows(t *testing.T, what string, got []rollup.DecodedWindow, samples []point, width, from, to int64) {
	t.Helper()
	ss := make([]testrollup.Sample, len(samples))
	for i, s := range samples {
		ss[i] = testrollup.Sample{T: s.t, V: s.v}
	}
	want := testrollup.Windows(ss, width, from, to)
	if len(got) != len(want) {
		t.Fatalf("%s: %d windows, want %d", what, len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Has&rollup.HasAll != rollup.HasAll || g.End != w.End || g.Count != w.Count || g.Min != w.Min || g.Max != w.Max ||
			!closeTo(g.Sum, w.Sum, false) || g.First != w.First || g.Last != w.Last || g.FirstT != w.FirstT || g.LastT != w.LastT ||
			!closeTo(g.Resets, w.Resets, false) {
			t.Errorf("%s: window %d = %+v, want %+v", what, i, g.Window, w)
		}
	}
}

// queryRollup asks /api/query for one series downsampled by ds ("1h-sum"),
// from rollups only, and returns its points (ms) in time order.
func (d *tsd) queryRollup(t *testing.T, start, end int64, metric string, tags map[string]string, ds string) []point {
	t.Helper()
	return onePoints(t, metric, d.queryAPI(t, start, end,
		map[string]any{"aggregator": "sum", "metric": metric, "tags": tags, "downsample": ds, "rollupUsage": "ROLLUP_NOFALLBACK"}))
}

// waitGauge polls the rollup builder's gauges of ph (built until, built
// from, hours stale) until done holds, failing t after two minutes.
func waitGauge(t *testing.T, ph *promhbase, what string, done func(until, from, stale float64) bool) {
	t.Helper()
	poll.Until(t, 2*time.Minute, 50*time.Millisecond, what, func() (bool, string) {
		g := func(name string) float64 { return testproc.GatherSum(t, ph.srv.Registry, name) }
		until, from, stale := g("promhbase_rollup_built_until_timestamp_seconds"), g("promhbase_rollup_built_from_timestamp_seconds"),
			g("promhbase_rollup_hours_stale")
		return done(until, from, stale), fmt.Sprintf("built until %v, from %v, %v hours stale", until, from, stale)
	})
}
