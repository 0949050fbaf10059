package query

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/dense"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
)

// packedCounter is a store that counts the packed cells its scans
// return.
type packedCounter struct {
	store.Store
	packed int
}

func (p *packedCounter) Scan(ctx context.Context, req store.ScanRequest) store.Scanner {
	return &countingScanner{Scanner: p.Store.Scan(ctx, req), n: &p.packed}
}

type countingScanner struct {
	store.Scanner
	n *int
}

func (c *countingScanner) Next() bool {
	if !c.Scanner.Next() {
		return false
	}
	for _, cell := range c.Row().Cells {
		if cell.Packed() {
			*c.n++
		}
	}
	return true
}

// TestSelectSettledPacked: samples of settled rows, which the embedded
// store keeps in the dense form and a query reads straight from it
// (packed cells), come back exactly as written: integers, floats, the
// staleness marker, -0 and infinities, rows cut by the range, and a row
// with a newer cell written after it settled.
func TestSelectSettledPacked(t *testing.T) {
	ctx := context.Background()
	es := openStore(t, embedded.Options{BufferTables: []string{"tsdb"}, RowCodecs: map[string]embedded.RowCodec{"tsdb": &dense.Pool{}}})
	st := &packedCounter{Store: es}
	m := coldMapper(t, st)
	q := New(st, m, Options{})

	const base = uint32(1700002800)
	const hours = 3
	stale := math.Float64frombits(value.StaleNaN)
	special := []float64{stale, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), 1e300, 0.1}
	want := map[string][]mapping.Point{}
	var puts []store.Put
	for sIdx := range 4 {
		ser, err := m.Resolve(ctx, fmt.Appendf(nil, "k%d", sIdx), []mapping.Label{
			{Name: []byte("__name__"), Value: []byte("m")}, {Name: []byte("i"), Value: fmt.Appendf(nil, "%d", sIdx)}})
		if err != nil {
			t.Fatal(err)
		}
		for h := range uint32(hours) {
			hb := base + 3600*h
			var pts []mapping.Point
			for j := range 240 {
				v := float64(j*(sIdx+1)) / 4 // integers and quarters
				if sIdx == 3 {
					v = special[j%len(special)]
				}
				pts = append(pts, mapping.Point{T: int64(hb)*1000 + int64(j)*15000 + int64(j%3), V: v})
			}
			cq, cv := mapping.AppendCompacted(nil, nil, hb, pts)
			puts = append(puts, store.Put{Row: m.AppendRowKey(nil, ser, hb), Cells: []store.Cell{{Family: []byte("t"), Qualifier: cq, Value: cv, Timestamp: 5}}})
			want[fmt.Sprint(sIdx)] = append(want[fmt.Sprint(sIdx)], pts...)
		}
	}
	if err := st.Put(ctx, "tsdb", puts); err != nil {
		t.Fatal(err)
	}
	if err := es.Reclaim(ctx); err != nil { // flushes the row buffer: the rows settle packed
		t.Fatal(err)
	}
	// A newer sample in series 0's first row, after it settled.
	late := mapping.Point{T: int64(base)*1000 + 45000, V: 99}
	val, flags := mapping.AppendValue(nil, late.V)
	if err := st.Put(ctx, "tsdb", []store.Put{{Row: puts[0].Row, Cells: []store.Cell{{Family: []byte("t"), Qualifier: mapping.AppendMsQualifier(nil, 45000, flags), Value: val, Timestamp: 9}}}}); err != nil {
		t.Fatal(err)
	}
	want["0"][3] = late

	for _, rng := range [][2]int64{{0, 1 << 42}, {int64(base)*1000 + 1800_000, int64(base)*1000 + 2*3600_000 + 7}} {
		st.packed = 0
		got, err := q.Select(ctx, rng[0], rng[1], labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 4 {
			t.Fatalf("%d series, want 4", len(got))
		}
		for _, s := range got {
			var exp []mapping.Point
			for _, p := range want[s.Labels.Get("i")] {
				if p.T >= rng[0] && p.T <= rng[1] {
					exp = append(exp, p)
				}
			}
			if len(s.Samples) != len(exp) {
				t.Fatalf("range %v: series %s: %d samples, want %d", rng, s.Labels, len(s.Samples), len(exp))
			}
			for i, p := range exp {
				g := s.Samples[i]
				if g.T != p.T || math.Float64bits(g.V) != math.Float64bits(p.V) {
					t.Fatalf("range %v: series %s sample %d = %d %x, want %d %x", rng, s.Labels, i, g.T, math.Float64bits(g.V), p.T, math.Float64bits(p.V))
				}
			}
		}
		if st.packed == 0 {
			t.Errorf("range %v: no packed cell read: the test does not test the packed path", rng)
		}
		checkFloatSelection(t, q, rng[0], rng[1], labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
	}
}
