package mapping

import (
	"errors"
	"math"
	"testing"
)

// FuzzAppendRawPoints: the raw walker accepts exactly the cells
// AppendPoints accepts, finds the same points, and a compacted column built
// from its points (when the cell's points are sorted and distinct) decodes
// to the same points again, bit for bit.
func FuzzAppendRawPoints(f *testing.F) {
	seeds := []struct{ q, v string }{
		{"07B0", "2A"}, {"07BB", "000000003F000000"}, {"F078900F", "3FB999999999999A"},
		{"0000F00177000021F7A1200B", "0105FF9CC020000001"}, {"07B007C0", "010200"},
		{"050000", "07B02AF078900F3FB999999999999A"}, {"01007B", "7B7D"}, {"", ""},
		{"07B4", "0000002A"}, {"F0", ""}, {"050000", "F078"}, {"07B7", "2A"},
	}
	for _, s := range seeds {
		f.Add(uint32(1292148000), unhex(f, s.q), unhex(f, s.v))
	}
	f.Fuzz(func(t *testing.T, base uint32, q, v []byte) {
		pts, perr := AppendPoints(nil, base, q, v)
		raw, rerr := AppendRawPoints([]RawPoint{{T: -1}}, base, q, v)
		if (perr == nil) != (rerr == nil) {
			t.Fatalf("AppendPoints error %v, AppendRawPoints error %v", perr, rerr)
		}
		if rerr != nil {
			if !errors.Is(rerr, ErrMalformedCell) || len(raw) != 1 {
				t.Fatalf("error %v (dst %d points): want ErrMalformedCell and dst unchanged", rerr, len(raw))
			}
			return
		}
		raw = raw[1:]
		if len(raw) != len(pts) {
			t.Fatalf("%d raw points, %d points", len(raw), len(pts))
		}
		sorted := true
		for i := range raw {
			r := &raw[i]
			got, err := AppendPoints(nil, base, r.Qualifier(), r.Value)
			if err != nil || len(got) != 1 {
				t.Fatalf("raw point %d (%X=%X) does not decode alone: %v", i, r.Qualifier(), r.Value, err)
			}
			if got[0].T != pts[i].T || got[0].T != r.T || math.Float64bits(got[0].V) != math.Float64bits(pts[i].V) {
				t.Fatalf("raw point %d = %v (T %d), point %v", i, got[0], r.T, pts[i])
			}
			if i > 0 && raw[i-1].T >= r.T {
				sorted = false
			}
		}
		if !sorted || len(raw) == 0 {
			return
		}
		cq, cv := AppendCompactedRaw(nil, nil, raw)
		again, err := AppendPoints(nil, base, cq, cv)
		if err != nil || len(again) != len(pts) {
			t.Fatalf("compacted %X=%X: %d points, %v", cq, cv, len(again), err)
		}
		for i := range pts {
			if again[i].T != pts[i].T || math.Float64bits(again[i].V) != math.Float64bits(pts[i].V) {
				t.Fatalf("compacted point %d = %v, want %v", i, again[i], pts[i])
			}
		}
	})
}
