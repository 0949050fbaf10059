package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// writeSeries writes n float samples, one every 10 s from t0 (ms, on an
// hour), to the series of lbls (name, value pairs).
func writeSeries(t testing.TB, m *series.Mapper, st store.Store, t0 int64, n int, value func(i int) float64, lbls ...string) {
	t.Helper()
	ctx := context.Background()
	var ml []mapping.Label
	for i := 0; i < len(lbls); i += 2 {
		ml = append(ml, mapping.Label{Name: []byte(lbls[i]), Value: []byte(lbls[i+1])})
	}
	s, err := m.Resolve(ctx, []byte(fmt.Sprint(lbls)), ml)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[uint32]*store.Put{}
	var order []uint32
	for i := range n {
		ts := t0 + int64(i)*10_000
		base := uint32(ts / 3_600_000 * 3600)
		p := rows[base]
		if p == nil {
			p = &store.Put{Row: m.AppendRowKey(nil, s, base)}
			rows[base] = p
			order = append(order, base)
		}
		val, flags := mapping.AppendValue(nil, value(i))
		p.Cells = append(p.Cells, store.Cell{Family: []byte("t"), Qualifier: mapping.AppendMsQualifier(nil, uint32(ts-int64(base)*1000), flags), Value: val})
	}
	var puts []store.Put
	for _, b := range order {
		puts = append(puts, *rows[b])
	}
	if err := st.Put(ctx, "tsdb", puts); err != nil {
		t.Fatal(err)
	}
}

const t0 = int64(1_700_002_800_000) // on an hour

// TestStreamChunks: a series comes back as chunks in time order, not
// overlapping, at most MaxSamplesPerChunk floats each, every sample bit
// for bit; the budget is all given back once the series are released.
func TestStreamChunks(t *testing.T) {
	q, m, st := newQuerier(t)
	val := func(i int) float64 {
		switch i {
		case 7:
			return math.NaN()
		case 8:
			return math.Inf(-1)
		}
		return float64(i)*0.1 + 3
	}
	writeSeries(t, m, st, t0, 1000, val, "__name__", "m", "a", "1") // 2.8 hours
	b := q.NewBudget()
	var got []*ChunkSeries
	err := q.Stream(context.Background(), b, t0, t0+1<<40, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")}, func(cs *ChunkSeries) error {
		got = append(got, cs)
		return nil
	})
	if err != nil || len(got) != 1 {
		t.Fatalf("%d series, %v", len(got), err)
	}
	cs := got[0]
	if cs.Samples != 1000 || len(cs.Chunks) != 9 {
		t.Errorf("%d samples in %d chunks, want 1000 in 9", cs.Samples, len(cs.Chunks))
	}
	if held := b.Held(); held != cs.Bytes || held <= 0 {
		t.Errorf("budget holds %d, the series was charged %d", held, cs.Bytes)
	}
	i, prevMax := 0, int64(math.MinInt64)
	for _, c := range cs.Chunks {
		if c.Enc != chunkenc.EncXOR || c.MinT <= prevMax || c.MaxT < c.MinT {
			t.Fatalf("chunk %v [%d, %d] after %d", c.Enc, c.MinT, c.MaxT, prevMax)
		}
		prevMax = c.MaxT
		it, err := c.Iterator(nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			if ts != t0+int64(i)*10_000 || math.Float64bits(v) != math.Float64bits(val(i)) {
				t.Fatalf("sample %d: %d %v", i, ts, v)
			}
			if n == 0 && ts != c.MinT {
				t.Errorf("chunk starts at %d, MinT %d", ts, c.MinT)
			}
			i++
			n++
		}
		if n > MaxSamplesPerChunk {
			t.Errorf("chunk of %d samples", n)
		}
	}
	if i != 1000 {
		t.Errorf("%d samples decoded", i)
	}
	b.Release(cs.Bytes)
	if b.Held() != 0 {
		t.Errorf("budget holds %d after the release", b.Held())
	}
}

// TestStreamBudget: past the byte budget a query fails with
// ErrTooManyBytes, past the sample budget with ErrTooManySamples, and the
// sample budget counts every query that shares it.
func TestStreamBudget(t *testing.T) {
	q, m, st := newQuerier(t)
	for i := range 20 {
		writeSeries(t, m, st, t0, 360, func(j int) float64 { return float64(i*j) * 1.37 }, "__name__", "m", "i", fmt.Sprint(i))
	}
	name := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")}
	drain := func(b *Budget) error {
		return q.Stream(context.Background(), b, t0, t0+1<<40, name, func(cs *ChunkSeries) error {
			b.Release(cs.Bytes)
			return nil
		})
	}
	if err := drain(NewBudget(7200, 1<<30)); err != nil {
		t.Fatalf("within the budget: %v", err)
	}
	if err := drain(NewBudget(7200, 4096)); !errors.Is(err, ErrTooManyBytes) {
		t.Errorf("4 KiB budget: %v, want ErrTooManyBytes", err)
	}
	if err := drain(NewBudget(7199, 1<<30)); !errors.Is(err, ErrTooManySamples) {
		t.Errorf("7199 samples: %v, want ErrTooManySamples", err)
	}
	shared := NewBudget(10000, 1<<30)
	if err := drain(shared); err != nil {
		t.Fatalf("first query: %v", err)
	}
	if err := drain(shared); !errors.Is(err, ErrTooManySamples) {
		t.Errorf("second query on the same budget: %v, want ErrTooManySamples", err)
	}
	if shared.Held() != 0 {
		t.Errorf("budget holds %d after both queries", shared.Held())
	}
}

// gatedStore holds the scans of one metric UID until gate is closed.
type gatedStore struct {
	store.Store
	metric []byte
	gate   chan struct{}
}

func (g *gatedStore) Scan(ctx context.Context, req store.ScanRequest) store.Scanner {
	if req.Table == "tsdb" && len(req.Start) >= len(g.metric) && string(req.Start[:len(g.metric)]) == string(g.metric) {
		select {
		case <-g.gate:
		case <-ctx.Done():
		}
	}
	return g.Store.Scan(ctx, req)
}

// TestStreamFirstMetricFirst: the series of the first metric (in name
// order) are handed on while the scan of a later metric has not ended,
// and the series come in label order.
func TestStreamFirstMetricFirst(t *testing.T) {
	_, m, st := newQuerier(t)
	for _, name := range []string{"a_metric", "b_metric", "c_metric"} {
		for i := range 3 {
			writeSeries(t, m, st, t0, 10, func(j int) float64 { return float64(j) }, "__name__", name, "job", "x", "i", fmt.Sprint(i))
		}
	}
	bUID, err := m.UIDs().ID(context.Background(), uid.KindMetric, "b_metric")
	if err != nil {
		t.Fatal(err)
	}
	gs := &gatedStore{Store: st, metric: bUID, gate: make(chan struct{})}
	q := New(gs, m, Options{ScanConcurrency: 4})
	var got []string
	done := make(chan error, 1)
	go func() {
		done <- q.Stream(context.Background(), q.NewBudget(), t0, t0+1<<40, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "x")}, func(cs *ChunkSeries) error {
			got = append(got, cs.Labels.String())
			if len(got) == 3 {
				// Every series of a_metric is out while b_metric's scan
				// waits: let it go on.
				close(gs.gate)
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("no series handed on while a later metric's scan was held: the stream waits for every scan")
	}
	want := []string{}
	for _, name := range []string{"a_metric", "b_metric", "c_metric"} {
		for i := range 3 {
			want = append(want, fmt.Sprintf(`{__name__=%q, i="%d", job="x"}`, name, i))
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("series\n%v\nwant\n%v", got, want)
	}
}

// BenchmarkReadStream reads 1000 series × 1 hour of 10 s samples (360 000
// samples) through Stream on the embedded store: the samples as chunks,
// not decoded.
func BenchmarkReadStream(b *testing.B) {
	q, m, st := newQuerier(b)
	for i := range 1000 {
		writeSeries(b, m, st, t0, 360, func(j int) float64 { return float64(j) * 1.5 }, "__name__", "bench", "instance", fmt.Sprintf("host-%d", i))
	}
	name := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "bench")}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = 0
		bud := q.NewBudget()
		err := q.Stream(context.Background(), bud, t0, t0+3_600_000, name, func(cs *ChunkSeries) error {
			n += cs.Samples
			bud.Release(cs.Bytes)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	reportSamples(b, n)
}

// TestStreamEarlyLabelName: with a tag name that sorts before __name__
// (upper case), the series of several metrics still come in label order:
// those with the tag before all others.
func TestStreamEarlyLabelName(t *testing.T) {
	q, m, st := newQuerier(t)
	one := func(i int) float64 { return 1 }
	writeSeries(t, m, st, t0, 3, one, "__name__", "a_metric", "job", "x")
	writeSeries(t, m, st, t0, 3, one, "__name__", "b_metric", "job", "x")
	job := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "x")}
	stream := func() []string {
		t.Helper()
		var got []string
		err := q.Stream(context.Background(), q.NewBudget(), t0, t0+1<<40, job, func(cs *ChunkSeries) error {
			got = append(got, cs.Labels.String())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := fmt.Sprint(stream()); got != `[{__name__="a_metric", job="x"} {__name__="b_metric", job="x"}]` {
		t.Errorf("lower-case names: %s", got)
	}
	writeSeries(t, m, st, t0, 3, one, "__name__", "b_metric", "Zone", "eu", "job", "x")
	q.opts.MetricNamesTTL = time.Nanosecond // see the new tag name at once
	want := `[{Zone="eu", __name__="b_metric", job="x"} {__name__="a_metric", job="x"} {__name__="b_metric", job="x"}]`
	if got := fmt.Sprint(stream()); got != want {
		t.Errorf("with Zone:\n%s\nwant\n%s", got, want)
	}
}

// TestStreamFloats: StreamFloats hands on the samples Stream's chunks
// hold, as raw floats, for series spanning hours (rows met by different
// parts of a split scan included), charged to the budget until released.
func TestStreamFloats(t *testing.T) {
	q, m, st := newQuerier(t)
	val := func(i int) float64 { return float64(i%17) * 1.5 }
	writeSeries(t, m, st, t0, 1000, val, "__name__", "m", "a", "1") // 2.8 hours
	writeSeries(t, m, st, t0, 300, val, "__name__", "m", "a", "2")
	writeSeries(t, m, st, t0+3_600_000, 200, val, "__name__", "m", "a", "3")
	ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")}
	collect := func(raw bool) ([]*ChunkSeries, *Budget) {
		t.Helper()
		b := q.NewBudget()
		stream := q.Stream
		if raw {
			stream = q.StreamFloats
		}
		var got []*ChunkSeries
		if err := stream(context.Background(), b, t0+5_000, t0+1<<40, ms, func(cs *ChunkSeries) error {
			got = append(got, cs)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got, b
	}
	want, _ := collect(false)
	got, b := collect(true)
	if len(got) != 3 || len(want) != 3 {
		t.Fatalf("%d series, Stream %d; want 3", len(got), len(want))
	}
	for i, cs := range got {
		fs, _, err := DecodeChunks(want[i].Chunks)
		if err != nil {
			t.Fatal(err)
		}
		if !labels.Equal(cs.Labels, want[i].Labels) || len(cs.Chunks) != 0 || cs.Samples != len(fs) || len(cs.Floats) != len(fs) {
			t.Fatalf("series %d: %s, %d chunks, %d samples, %d floats; want %s with %d", i, cs.Labels, len(cs.Chunks), cs.Samples, len(cs.Floats), want[i].Labels, len(fs))
		}
		for j, f := range cs.Floats {
			if f.T != fs[j].T || math.Float64bits(f.V) != math.Float64bits(fs[j].V) {
				t.Fatalf("series %d sample %d: %v, want %v", i, j, f, fs[j])
			}
		}
		if cs.Bytes < int64(16*len(cs.Floats)) {
			t.Errorf("series %d charged %d bytes for %d floats", i, cs.Bytes, len(cs.Floats))
		}
		b.Release(cs.Bytes)
	}
	if got[0].Floats[0].T != t0+10_000 {
		t.Errorf("first sample at %d, want %d (the range starts after t0)", got[0].Floats[0].T, t0+10_000)
	}
	if b.Held() != 0 {
		t.Errorf("budget holds %d after the releases", b.Held())
	}
}
