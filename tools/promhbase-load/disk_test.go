package main

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/prompb"
)

func testGenConfig() genConfig {
	return genConfig{series: 250, targets: 3, span: 2 * time.Hour, interval: 15 * time.Second, jitter: 5 * time.Millisecond, seed: 7,
		end: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)}
}

type sampleKey struct {
	series string
	ts     int64
}

// collectRequests decodes every request streamRequests makes with
// gogo's generated code and returns the samples by series and time.
func collectRequests(t *testing.T, g genConfig, shards, batch int) (map[sampleKey]float64, []string) {
	t.Helper()
	got := map[sampleKey]float64{}
	lastTS := map[string]int64{}
	var order []string
	n, err := streamRequests(g, shards, batch, func(sh int, req []byte, samples int) error {
		var wr prompb.WriteRequest
		if err := proto.Unmarshal(req, &wr); err != nil {
			t.Fatalf("request does not decode: %v", err)
		}
		if len(wr.Timeseries) != samples || samples > batch {
			t.Fatalf("request of %d series, said %d, batch %d", len(wr.Timeseries), samples, batch)
		}
		for _, ts := range wr.Timeseries {
			if len(ts.Samples) != 1 {
				t.Fatalf("%d samples in a series, want 1", len(ts.Samples))
			}
			key := labelsString(ts.Labels)
			s := ts.Samples[0]
			if last, ok := lastTS[key]; ok && s.Timestamp <= last {
				t.Fatalf("%s: timestamp %d after %d: a series' samples must come in time order", key, s.Timestamp, last)
			}
			if _, ok := lastTS[key]; !ok {
				order = append(order, key)
			}
			lastTS[key] = s.Timestamp
			got[sampleKey{key, s.Timestamp}] = s.Value
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != g.samples() || int64(len(got)) != g.samples() {
		t.Fatalf("streamed %d samples, %d distinct, want %d", n, len(got), g.samples())
	}
	return got, order
}

func labelsString(ls []prompb.Label) string {
	b := labels.NewScratchBuilder(len(ls))
	for _, l := range ls {
		b.Add(l.Name, l.Value)
	}
	b.Sort()
	return b.Labels().String()
}

func TestDiskGeneratorRemoteWrite(t *testing.T) {
	t.Parallel()
	g := testGenConfig()
	got, order := collectRequests(t, g, 4, 333)
	if len(order) != g.series {
		t.Fatalf("%d series, want %d", len(order), g.series)
	}
	// Deterministic: another run (other shards and batches) sends the same
	// samples; another seed does not.
	again, _ := collectRequests(t, g, 1, 2000)
	for k, v := range got {
		if w, ok := again[k]; !ok || math.Float64bits(w) != math.Float64bits(v) {
			t.Fatalf("%v: %v then %v", k, v, w)
		}
	}
	g2 := g
	g2.seed++
	other, _ := collectRequests(t, g2, 4, 333)
	same := 0
	for k, v := range got {
		if other[k] == v {
			same++
		}
	}
	if same > len(got)*9/10 {
		t.Errorf("another seed gives %d of %d samples alike", same, len(got))
	}

	// Shape: timestamps within the span, on the target's phase ± jitter;
	// all series of a target share them; counters never go down except at
	// resets; 2-decimal gauges have two decimals.
	tsOf := map[string]map[int64]bool{} // instance -> timestamps
	var counters, gauges2, consts int
	for k, v := range got {
		if k.ts < g.startMs() || k.ts >= g.endMs() {
			t.Fatalf("%v outside [%d, %d)", k, g.startMs(), g.endMs())
		}
		_, inst, _ := strings.Cut(k.series, `instance="`)
		inst, _, _ = strings.Cut(inst, `"`)
		if tsOf[inst] == nil {
			tsOf[inst] = map[int64]bool{}
		}
		tsOf[inst][k.ts] = true
		switch {
		case strings.Contains(k.series, "_total"):
			counters++
			if v != math.Trunc(v) || v < 0 {
				t.Fatalf("counter %v = %v, want a whole number", k, v)
			}
		case strings.Contains(k.series, "node_load1{"), strings.Contains(k.series, "temp_celsius"):
			gauges2++
			if r := math.Round(v * 100); math.Abs(r/100-v) > 1e-12 {
				t.Fatalf("gauge %v = %v, want two decimals", k, v)
			}
		case strings.Contains(k.series, "node_memory_MemTotal_bytes"):
			consts++
			if v != 16<<30 {
				t.Fatalf("constant %v = %v", k, v)
			}
		}
	}
	if counters == 0 || gauges2 == 0 || consts == 0 {
		t.Fatalf("counters %d, 2-decimal gauges %d, constants %d", counters, gauges2, consts)
	}
	if len(tsOf) != g.targets {
		t.Fatalf("%d instances, want %d", len(tsOf), g.targets)
	}
	for inst, tss := range tsOf {
		if len(tss) != g.rounds() {
			t.Errorf("%s: %d distinct timestamps, want one a round (%d): a target's series share their scrape's", inst, len(tss), g.rounds())
		}
		var jittered bool
		var prev int64
		first := true
		for ts := g.startMs(); ts < g.endMs()+g.intervalMs(); ts++ {
			if !tss[ts] {
				continue
			}
			if !first {
				d := ts - prev - g.intervalMs()
				if d < -2*g.jitter.Milliseconds() || d > 2*g.jitter.Milliseconds() {
					t.Fatalf("%s: scrapes %d ms apart", inst, ts-prev)
				}
				jittered = jittered || d != 0
			}
			prev, first = ts, false
		}
		if !jittered {
			t.Errorf("%s: no jitter", inst)
		}
	}
}

// TestDiskOpenMetrics parses writeOpenMetrics' text with Prometheus's own
// parser (as promtool does) and wants exactly the samples remote write
// sends: same series, same millisecond timestamps, same values.
func TestDiskOpenMetrics(t *testing.T) {
	t.Parallel()
	g := testGenConfig()
	want, _ := collectRequests(t, g, 3, 500)
	var buf bytes.Buffer
	n, err := writeOpenMetrics(&buf, g)
	if err != nil || n != g.samples() {
		t.Fatalf("writeOpenMetrics: %d samples, %v", n, err)
	}
	if !bytes.HasSuffix(buf.Bytes(), []byte("# EOF\n")) {
		t.Fatal("no # EOF at the end")
	}
	p := textparse.NewOpenMetricsParser(buf.Bytes(), labels.NewSymbolTable())
	seen := 0
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		if e != textparse.EntrySeries {
			continue
		}
		_, ts, v := p.Series()
		var l labels.Labels
		p.Labels(&l)
		if ts == nil {
			t.Fatalf("%s: no timestamp", l)
		}
		w, ok := want[sampleKey{l.String(), *ts}]
		if !ok || math.Float64bits(w) != math.Float64bits(v) {
			t.Fatalf("%s @%d = %v: remote write has %v (found %v)", l, *ts, v, w, ok)
		}
		seen++
	}
	if seen != len(want) {
		t.Fatalf("parsed %d samples, want %d", seen, len(want))
	}
}

func TestDiskOpenMetricsTimestamp(t *testing.T) {
	t.Parallel()
	for _, ts := range []int64{0, 1, 999, 1000, 1767225600123, 1767225600999, 1767225601000} {
		line := string(appendOpenMetricsSample(nil, `m{a="b"} `, ts, 1.5))
		input := []byte(line + "# EOF\n")
		p := textparse.NewOpenMetricsParser(input, labels.NewSymbolTable())
		if _, err := p.Next(); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		_, got, v := p.Series()
		if got == nil || *got != ts || v != 1.5 {
			t.Errorf("%q parses as %v, %v; want %d", line, got, v, ts)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	t.Parallel()
	m, err := parseMetrics(strings.NewReader(`# HELP x y
# TYPE vm_parts gauge
vm_parts{type="storage/inmemory"} 0
vm_active_merges{type="storage/small"} 2
promhbase_compaction_pending_rows 12
promhbase_x{a="has } brace"} 3.5 1700000000
go_gc 1e+06
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{`vm_parts{type="storage/inmemory"}`: 0, `vm_active_merges{type="storage/small"}`: 2,
		"promhbase_compaction_pending_rows": 12, `promhbase_x{a="has } brace"}`: 3.5, "go_gc": 1e6}
	if len(m) != len(want) {
		t.Fatalf("got %v", m)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
}

func TestDiskKinds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind func(string) string
		path string
		want string
	}{
		{promhbaseKind, "000123.sst", "sstables"},
		{promhbaseKind, "000124.log", "Pebble WAL"},
		{promhbaseKind, "rowbuf/0000000000000001.wal", "row buffer logs"},
		{promhbaseKind, "rowbuf/free.wal.reuse", "row buffer logs"},
		{promhbaseKind, "MANIFEST-000001", "other"},
		{promhbaseKind, "ballast", reservedKind},
		{vmKind, "data/small/2026_01/123_456/values.bin", "data parts"},
		{vmKind, "data/big/2026_01/x/timestamps.bin", "data parts"},
		{vmKind, "indexdb/1A2B/parts.json", "indexdb"},
		{vmKind, "data/indexdb/1A2B/items.bin", "indexdb"},
		{vmKind, "cache/metricName_tsid/data.bin", "cache"},
		{vmKind, "flock.lock", "other"},
		{prometheusKind, "01J0000000000000000000000/chunks/000001", "chunks"},
		{prometheusKind, "01J0000000000000000000000/index", "index"},
		{prometheusKind, "01J0000000000000000000000/meta.json", "other"},
	} {
		if got := tc.kind(filepath.FromSlash(tc.path)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestMeasureDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "rowbuf"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int{"1.sst": 1000, "2.sst": 24, "3.log": 7, "rowbuf/1.wal": 100, "OPTIONS": 3, "ballast": 4096} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	u, err := measureDir(dir, promhbaseKind)
	if err != nil {
		t.Fatal(err)
	}
	if u.bytes != 1134 || u.files != 5 || u.kinds["sstables"].bytes != 1024 || u.kinds["sstables"].files != 2 ||
		u.kinds["row buffer logs"].bytes != 100 || u.kinds["Pebble WAL"].bytes != 7 || u.kinds["other"].bytes != 3 ||
		u.kinds[reservedKind] != nil || u.reserved.bytes != 4096 || u.reserved.files != 1 {
		t.Fatalf("measureDir = %+v (sstables %+v)", u, *u.kinds["sstables"])
	}
}

func TestDiskStep(t *testing.T) {
	t.Parallel()
	d := diskOptions{queryParts: 300}
	if s := promDuration(stepOf(genConfig{span: 24 * time.Hour}, d)); s != "288s" {
		t.Errorf("24h step %s", s)
	}
	if s := promDuration(stepOf(genConfig{span: 7 * 24 * time.Hour}, d)); s != "2016s" {
		t.Errorf("7d step %s", s)
	}
}

func TestDiskQueryStep(t *testing.T) {
	t.Parallel()
	d := diskOptions{queryParts: 300, queryStep: model.Duration(time.Hour)}
	if s := promDuration(stepOf(genConfig{span: 30 * 24 * time.Hour}, d)); s != "3600s" {
		t.Errorf("--query.step=1h: step %s", s)
	}
	for res, want := range map[string]string{"0s": "raw", "raw": "raw", "0": "raw", "auto": "auto", "5m": "5m"} {
		if got := resolutionName(res); got != want {
			t.Errorf("resolutionName(%q) = %q, want %q", res, got, want)
		}
	}
}

func TestCompareMatrices(t *testing.T) {
	t.Parallel()
	ref := matrix{`{a="1"}`: {0: 1, 1000: 2, 2000: 0, 3000: math.NaN()}, `{a="2"}`: {0: 5}}
	other := matrix{`{a="1"}`: {0: 1, 1000: 2 * (1 + 1e-6), 2000: 0, 3000: math.NaN(), 4000: 1}}
	a := compareMatrices(ref, other)
	if a.compared != 4 || a.onlyRef != 1 || a.onlyIn != 1 || a.over != 1 || a.series != 1 {
		t.Fatalf("compareMatrices = %+v", a)
	}
	if math.Abs(a.worst-1e-6/(1+1e-6)) > 1e-15 || !strings.Contains(a.worstAt, `{a="1"}`) || a.median != 0 {
		t.Fatalf("worst %g at %q, median %g", a.worst, a.worstAt, a.median)
	}
	if d := relDiff(math.NaN(), 1); !math.IsInf(d, 1) {
		t.Errorf("relDiff(NaN, 1) = %g", d)
	}
}

// TestRollupJoinedOption: --rollup.joined takes whole hours shorter than
// the data, with promhbase among the systems, and loads with rollups off.
func TestRollupJoinedOption(t *testing.T) {
	for _, c := range []struct {
		joined, span time.Duration
		systems      []string
		ok           bool
	}{
		{24 * time.Hour, 30 * 24 * time.Hour, nil, true},
		{90 * time.Minute, 30 * 24 * time.Hour, nil, false},
		{30 * 24 * time.Hour, 30 * 24 * time.Hour, nil, false},
		{24 * time.Hour, 30 * 24 * time.Hour, []string{sysVM}, false},
	} {
		d := diskOptions{rollupJoined: model.Duration(c.joined), span: model.Duration(c.span), systems: c.systems, vm: "vm",
			prometheus: "p", promtool: "pt", repeats: 1, queryParts: 1}
		_, err := checkDiskOptions(options{batch: 1, concurrency: 1}, &d)
		if (err == nil) != c.ok || (c.ok && !d.rollupAfterLoad) {
			t.Errorf("--rollup.joined=%s over %s on %v: error %v, after load %v; want ok %v", c.joined, c.span, c.systems, err, d.rollupAfterLoad, c.ok)
		}
	}
}
