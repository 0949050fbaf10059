package query

import (
	"testing"

	"github.com/promhbase/promhbase/jobs/rollup"
)

// foldRequest is a rate over 1h at a step of 1h, exact, on 5m windows,
// and the samples of one series over a day: 15 s scrapes with jitter,
// from start on.
func foldRequest(tb testing.TB, step, offset int64) (*WindowRequest, []Sample) {
	tb.Helper()
	iv, ok := rollup.Default().Interval("5m")
	if !ok {
		tb.Fatal("no 5m interval")
	}
	const start, hour = int64(1_700_002_800_000), int64(3_600_000)
	r := &WindowRequest{Interval: iv, Func: WinRate, Range: hour, Start: start + offset, End: start + 24*hour, Step: step, Exact: true}
	var pts []Sample
	v := 0.0
	for t := start - hour + 1; t <= start+24*hour; t += 15_000 {
		v += float64(t % 7)
		pts = append(pts, Sample{T: t + t%5, V: v})
	}
	return r, pts
}

// TestFoldPieces: fold puts each sample in the piece the cutter gives
// it, as a call per sample would, at steps on and off the windows' ends.
func TestFoldPieces(t *testing.T) {
	for _, c := range []struct{ step, offset int64 }{{3_600_000, 0}, {2016_000, 431_000}, {60_000, 7_000}} {
		r, pts := foldRequest(t, c.step, c.offset)
		cut := r.cutter()
		got := r.fold(pts, cut)
		want := &winAcc{}
		for _, p := range pts {
			from, end := cut(p.T)
			w := rollup.Window{End: end}
			w.Add(p.T, p.V)
			w.Finish()
			want.add(r, from, &w)
		}
		if got.n > want.n || len(got.ranges) != len(want.ranges) {
			t.Fatalf("step %d: %d pieces, %d steps; want at most %d, %d steps", c.step, got.n, len(got.ranges), want.n, len(want.ranges))
		}
		for j := range got.ranges {
			g, w := got.ranges[j], want.ranges[j]
			if g.Count != w.Count || g.FirstT != w.FirstT || g.LastT != w.LastT || g.First != w.First || g.Last != w.Last || g.Resets != w.Resets {
				t.Errorf("step %d, range %d: %+v, want %+v", c.step, j, g, w)
			}
		}
	}
}

// BenchmarkFold times folding a day of one series' raw samples into the
// pieces of a joined selection's raw part (rate[1h] at a 1h step).
func BenchmarkFold(b *testing.B) {
	r, pts := foldRequest(b, 3_600_000, 0)
	cut := r.cutter()
	b.ReportAllocs()
	for b.Loop() {
		r.fold(pts, cut)
	}
}
