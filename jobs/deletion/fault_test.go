package deletion

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/faultstore"
)

// dataCalls names the calls a delete's failures pick (faultstore):
// "put" and "delete" the puts and deletes of table.
func dataCalls(table string) func(faultstore.Call) string {
	return func(c faultstore.Call) string {
		if c.Table != table || c.Method == faultstore.CheckAndPut {
			return ""
		}
		return string(c.Method)
	}
}

// faultDelete returns the delete the fault tests fail: the series of job
// "a" (gone) from t0+25m to t0+2h25m (start, end), which cuts the rows of
// the hours t0 and t0+2h and deletes those of t0+1h whole.
func faultDelete() (ms []*labels.Matcher, gone []string, start, end int64) {
	h := int64(t0) * 1000
	return []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "a")}, []string{seriesA, seriesC, seriesH},
		h + 25*60*1000, h + 2*hourMs + 25*60*1000
}

// faultRig writes the four series of writeSet, compacts them, and writes
// a late sample of series A and C into the hour t0+2h, whose rows then
// hold a compacted column and a single cell (cut whole, planRowCut),
// while the rows of hour t0 hold one compacted column (cut column by
// column).
func faultRig(t *testing.T) *rig {
	g := newRig(t, mapping.DefaultLayout())
	g.writeSet()
	g.compactAll()
	late := int64(t0)*1000 + 2*hourMs + 5*60*1000 + 7
	g.write(floats(labelsOf("m", "job", "a", "instance", "x"), late), floats(labelsOf("other", "job", "a", "instance", "x"), late))
	return g
}

// sampleTokens parses rig.data's rendering into series -> time -> token.
func sampleTokens(rendered string) map[string]map[int64]string {
	out := map[string]map[int64]string{}
	for line := range strings.Lines(rendered) {
		name, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), ":")
		m := map[int64]string{}
		for tok := range strings.FieldsSeq(rest) {
			ts, _, _ := strings.Cut(strings.TrimPrefix(tok, "h"), "=")
			t, err := strconv.ParseInt(ts, 10, 64)
			if err != nil {
				panic(tok)
			}
			m[t] = tok
		}
		out[name] = m
	}
	return out
}

// checkBeforeOrAfter checks that the samples read (got) are those read
// before the delete (before) with, for each series selected (gone) and
// hour, the samples in [start, end] either all there or all gone: the
// state before or the state after of each row, never a sample outside the
// range lost, never part of a row's cut.
func checkBeforeOrAfter(t *testing.T, got, before string, gone []string, start, end int64) {
	t.Helper()
	g, b := sampleTokens(got), sampleTokens(before)
	for name, bm := range b {
		gm := g[name]
		selected := false
		for _, s := range gone {
			selected = selected || s == name
		}
		hours := map[int64][2]int{} // hour -> in range: [kept, gone]
		for ts, tok := range bm {
			in := selected && ts >= start && ts <= end
			switch {
			case gm[ts] == tok && in:
				n := hours[ts/hourMs]
				n[0]++
				hours[ts/hourMs] = n
			case gm[ts] == tok:
			case in && gm[ts] == "":
				n := hours[ts/hourMs]
				n[1]++
				hours[ts/hourMs] = n
			default:
				t.Errorf("series %s: sample %q read as %q", name, tok, gm[ts])
			}
		}
		for h, n := range hours {
			if n[0] > 0 && n[1] > 0 {
				t.Errorf("series %s, hour %d: %d samples of the range kept, %d gone: part of a cut", name, h*hourMs, n[0], n[1])
			}
		}
		for ts, tok := range gm {
			if bm[ts] == "" {
				t.Errorf("series %s: sample %q not written", name, tok)
			}
		}
	}
	for name := range g {
		if b[name] == nil {
			t.Errorf("series %s not written", name)
		}
	}
}

// dataRows renders every data row: key, then its cells.
func (g *rig) dataRows() string {
	g.T.Helper()
	var sb strings.Builder
	for _, r := range g.Rows(g.Tables.Data, "") {
		fmt.Fprintf(&sb, "%x: %s\n", r.Key, renderCells(r.Cells))
	}
	return sb.String()
}

// TestDeleteFaultAtEachStep fails a delete over part of compacted rows
// (the hours t0 and t0+2h cut, t0+1h deleted whole) at each of its calls
// that change the data table in turn: each put of the
// kept points (refused, or applied with its answer lost) and each delete
// (refused, which also is the process stopping between a put and the
// delete that follows it, or applied with its answer lost). The delete
// reports the failure; reads then show each row as it was or as cut,
// never a sample outside the range lost nor part of a cut; the delete run
// again leaves every row as one delete with no failure does, its kept
// points' bytes exactly, and reads as the delete should.
func TestDeleteFaultAtEachStep(t *testing.T) {
	t.Parallel()
	ms, gone, start, end := faultDelete()
	deleter := func(g *rig, st store.Store) *Deleter { return g.deleterOn(st, Options{Concurrency: 1, Now: time.Now}) }

	// The delete with no failure, counting its calls.
	ref := faultRig(t)
	before := ref.data()
	counter := &faultstore.Store{Store: ref.Store, Name: dataCalls(ref.Tables.Data)}
	refStats, err := deleter(ref, counter).Delete(ctxFor(t), ms, start, end)
	if err != nil {
		t.Fatal(err)
	}
	if refStats.RowsRewritten < 4 || refStats.Rows < 3 {
		t.Fatalf("the delete: %s; want at least 4 rows cut and 3 deleted whole", refStats)
	}
	wantData, wantRows := ref.data(), ref.dataRows()
	if wantData != without(before, gone, start, end) {
		t.Fatalf("data after the delete:\n%s\nwant\n%s", wantData, without(before, gone, start, end))
	}
	calls := counter.Calls()
	t.Logf("the delete: %s; calls on the data table: %v", refStats, calls)
	if calls["put"] == 0 || calls["delete"] == 0 {
		t.Fatalf("calls on the data table %v: want puts and deletes", calls)
	}

	for _, f := range counter.Faults("put", "delete") {
		t.Run(f.String(), func(t *testing.T) {
			g := faultRig(t)
			if got := g.data(); got != before {
				t.Fatalf("data written:\n%s\nwant\n%s", got, before)
			}
			fs := &faultstore.Store{Store: g.Store, Name: dataCalls(g.Tables.Data), Fault: f}
			_, err := deleter(g, fs).Delete(ctxFor(t), ms, start, end)
			fs.CheckFailed(t, "the failing delete", err)
			checkBeforeOrAfter(t, g.data(), before, gone, start, end)

			// Run again, as the operator does.
			if _, err := deleter(g, g.Store).Delete(ctxFor(t), ms, start, end); err != nil {
				t.Fatal(err)
			}
			if got := g.data(); got != wantData {
				t.Errorf("data after the delete run again:\n%s\nwant\n%s", got, wantData)
			}
			if got := g.dataRows(); got != wantRows {
				t.Errorf("rows after the delete run again:\n%s\nwant\n%s", got, wantRows)
			}
			// And compacted: still the same samples.
			g.compactAll()
			if got := g.data(); got != wantData {
				t.Errorf("data after compaction:\n%s\nwant\n%s", got, wantData)
			}
		})
	}
}
