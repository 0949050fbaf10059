package query

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// randomHistograms returns n native histograms 10 s apart that change
// the way real ones do: buckets appear and disappear, counters reset,
// stretches of gauge histograms and of float histograms.
func randomHistograms(rng *rand.Rand, n int) []HistogramSample {
	layouts := [][]histogram.Span{
		{{Offset: 0, Length: 3}},
		{{Offset: 0, Length: 3}, {Offset: 2, Length: 2}},
		{{Offset: 1, Length: 2}},
		{{Offset: -2, Length: 6}},
	}
	layout := 0
	counts := map[int32]int64{} // bucket index -> count
	var zero int64
	gauge, float := false, false
	out := make([]HistogramSample, 0, n)
	for i := range n {
		switch r := rng.IntN(100); {
		case r < 8:
			layout = rng.IntN(len(layouts))
		case r < 11:
			clear(counts) // a counter reset
			zero = 0
		case r < 13:
			gauge = !gauge
		case r < 15:
			float = !float
		}
		h := &histogram.Histogram{Schema: 3, ZeroThreshold: 1e-128, Sum: float64(i)}
		if gauge {
			h.CounterResetHint = histogram.GaugeType
		}
		zero += int64(rng.IntN(3))
		h.ZeroCount, h.Count = uint64(zero), uint64(zero)
		h.PositiveSpans = layouts[layout]
		var prev int64
		idx := int32(0)
		for _, sp := range h.PositiveSpans {
			idx += sp.Offset
			for range sp.Length {
				counts[idx] += int64(rng.IntN(4))
				if gauge && rng.IntN(3) == 0 {
					counts[idx] /= 2
				}
				h.PositiveBuckets = append(h.PositiveBuckets, counts[idx]-prev)
				prev = counts[idx]
				h.Count += uint64(counts[idx])
				idx++
			}
		}
		s := HistogramSample{T: t0 + int64(i)*10_000, H: h}
		if float {
			s = HistogramSample{T: s.T, FH: h.ToFloat(nil)}
		}
		out = append(out, s)
	}
	return out
}

// TestStreamHistogramsAsEncoded: histograms read back from their cells
// (decoded into the selection's scratch, row after row) make the same
// chunks, byte for byte, as the same histograms each held on its own.
func TestStreamHistogramsAsEncoded(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			q, m, st := newQuerier(t)
			ctx := context.Background()
			hs := randomHistograms(rand.New(rand.NewPCG(seed, 3)), 1000) // 2.8 hours
			s, err := m.Resolve(ctx, []byte("h"), []mapping.Label{{Name: []byte("__name__"), Value: []byte("h")}})
			if err != nil {
				t.Fatal(err)
			}
			var puts []store.Put
			for _, h := range hs {
				base := uint32(h.T / 3_600_000 * 3600)
				if len(puts) == 0 || !bytes.Equal(puts[len(puts)-1].Row, m.AppendRowKey(nil, s, base)) {
					puts = append(puts, store.Put{Row: m.AppendRowKey(nil, s, base)})
				}
				p := &puts[len(puts)-1]
				p.Cells = append(p.Cells, store.Cell{Family: []byte("t"),
					Qualifier: mapping.AppendHistogramQualifier(nil, uint32(h.T-int64(base)*1000)),
					Value:     mapping.AppendHistogramValue(nil, h.H, h.FH)})
			}
			if err := st.Put(ctx, "tsdb", puts); err != nil {
				t.Fatal(err)
			}
			want, err := EncodeChunks(nil, hs)
			if err != nil {
				t.Fatal(err)
			}
			var got []Chunk
			err = q.Stream(ctx, q.NewBudget(), t0, t0+1<<40, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "h")}, func(cs *ChunkSeries) error {
				got = append(got, cs.Chunks...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || len(want) < 10 {
				t.Fatalf("%d chunks, want %d (at least 10)", len(got), len(want))
			}
			for i := range want {
				if got[i].Enc != want[i].Enc || got[i].MinT != want[i].MinT || got[i].MaxT != want[i].MaxT || !bytes.Equal(got[i].Data, want[i].Data) {
					t.Fatalf("chunk %d: %v [%d, %d] %x, want %v [%d, %d] %x", i, got[i].Enc, got[i].MinT, got[i].MaxT, got[i].Data, want[i].Enc, want[i].MinT, want[i].MaxT, want[i].Data)
				}
			}
		})
	}
}
