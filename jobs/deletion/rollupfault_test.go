package deletion

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/promhbase/promhbase/jobs/compact"
	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/faultstore"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/teststack"
)

// storeCalls names every call a delete with rollups makes that its
// failures pick (faultstore): "put TABLE", "delete TABLE" and "progress"
// (a check-and-put of a day's cell of the rollups' progress row).
func storeCalls(c faultstore.Call) string {
	switch c.Method {
	case faultstore.Put, faultstore.Delete:
		return string(c.Method) + " " + c.Table
	case faultstore.CheckAndPut:
		if strings.HasPrefix(c.Qualifier, "promhbase.hours.") {
			return "progress"
		}
	}
	return ""
}

// rollupRig is the rig with the rollup tables: writeSet's series,
// compacted, with the hours t0 .. t0+3h built.
func rollupRig(t *testing.T) *rig {
	g := &rig{Stack: teststack.New(t, teststack.Options{Layout: mapping.DefaultLayout(), Exemplars: true, Index: true, Rollups: true}),
		now: time.Unix(t0+30*24*3600, 0)}
	g.c = compact.New(g.Store, compact.Options{DataTable: g.Tables.Data, UIDTable: g.Tables.UID, Layout: g.Layout, Now: func() time.Time { return g.now }})
	g.writeSet()
	g.compactAll()
	b := g.builderOn(g.Store)
	for h := int64(t0); h < t0+4*3600; h += 3600 {
		if st, err := b.BuildHour(ctxFor(t), h); err != nil || st.Recorded != 1 {
			t.Fatalf("build of %d: %+v, %v", h, st, err)
		}
	}
	return g
}

func (g *rig) builderOn(st store.Store) *rollup.Builder {
	g.T.Helper()
	b, err := rollup.NewBuilder(st, rollup.Options{Config: g.Rollups, DataTable: g.Tables.Data, UIDTable: g.Tables.UID, Layout: g.Layout, Concurrency: 1})
	if err != nil {
		g.T.Fatal(err)
	}
	return b
}

// rollupRows returns the cells of every rollup row but the progress row
// by the hour of their windows: "table key hour" -> the cells rendered.
func (g *rig) rollupRows() map[string]string {
	g.T.Helper()
	cells := map[string][]store.Cell{}
	for _, iv := range g.builderOn(g.Store).Intervals() {
		for _, r := range g.Rows(iv.Table, "") {
			if rollup.IsProgressRow(r.Key) {
				continue
			}
			base, ok := g.Layout.BaseTimeOf(r.Key)
			if !ok {
				g.T.Fatalf("rollup row %x of %s: no base time", r.Key, iv.Table)
			}
			for _, c := range r.Cells {
				_, index, _, ok := mapping.ParseRollupQualifier(c.Qualifier)
				if !ok {
					g.T.Fatalf("rollup row %x of %s: qualifier %x", r.Key, iv.Table, c.Qualifier)
				}
				hour := (iv.WindowEnd(base, index) - 1) / 1000 / 3600 * 3600
				k := fmt.Sprintf("%s %x %d", iv.Table, r.Key, hour)
				cells[k] = append(cells[k], c)
			}
		}
	}
	out := map[string]string{}
	for k, cs := range cells {
		out[k] = renderCells(cs)
	}
	return out
}

// rollupHour returns the hour of a key of rollupRows.
func rollupHour(key string) int64 {
	var table, row string
	var hour int64
	if _, err := fmt.Sscanf(key, "%s %s %d", &table, &row, &hour); err != nil {
		panic(key)
	}
	return hour
}

// builtHours returns the hours recorded built, as queries read them.
func (g *rig) builtHours() rollup.Hours {
	g.T.Helper()
	p, err := rollup.ReadProgress(ctxFor(g.T), g.Store, g.Tables.Rollup5m)
	if err != nil {
		g.T.Fatal(err)
	}
	return p.Hours()
}

// TestDeleteWithRollupsFaultAtEachStep fails a delete over part of
// compacted rows whose hours' rollups are built at each of its calls that
// change the store in turn: the check-and-puts that mark the hours of the
// windows the range cuts written, the deletes of rollup cells, the puts
// and deletes of the data table, those of the exemplar and index tables,
// and the rebuild of the cut hours (its puts of rollup cells and its
// check-and-puts); each refused, or applied with its answer lost. After
// the failure every rollup row read for an hour recorded built is as it
// was before the delete or as the delete leaves it (no row part rebuilt,
// no cut window trusted with the samples it still holds gone, or gone
// with the samples still there), and the data reads as before or after
// the delete row by row (checkBeforeOrAfter). Run again, the delete
// leaves the rollup rows, the hours built and the data as one delete with
// no failure does.
func TestDeleteWithRollupsFaultAtEachStep(t *testing.T) {
	if testbackend.Name() != "embedded" {
		// Its failures pick their calls by table name, and each rig on
		// HBase makes tables of new names: it failed nothing there. The
		// embedded run (make test's) checks the rewrite's order.
		t.Skip("embedded only: PROMHBASE_TEST_BACKEND unset runs this test")
	}
	t.Parallel()
	ms, gone, start, end := faultDelete()
	deleter := func(g *rig, st store.Store) *Deleter {
		return g.deleterOn(st, Options{Concurrency: 1, Rollups: g.builderOn(st)})
	}

	ref := rollupRig(t)
	before, rowsBefore, hoursBefore := ref.data(), ref.rollupRows(), ref.builtHours()
	counter := &faultstore.Store{Store: ref.Store, Name: storeCalls}
	st, err := deleter(ref, counter).Delete(ctxFor(t), ms, start, end)
	if err != nil {
		t.Fatal(err)
	}
	wantData, wantRows, wantHours := ref.data(), ref.rollupRows(), ref.builtHours()
	if wantData != without(before, gone, start, end) {
		t.Fatalf("data after the delete:\n%s\nwant\n%s", wantData, without(before, gone, start, end))
	}
	if st.RollupCells == 0 || wantHours.String() != hoursBefore.String() {
		t.Fatalf("the delete: %s, hours built %v, before %v; want rollup cells deleted, the same hours built", st, wantHours, hoursBefore)
	}
	t.Logf("the delete: %s; its calls: %v (in order %q)", st, counter.Calls(), counter.Order())

	for _, f := range counter.Faults() {
		t.Run(f.String(), func(t *testing.T) {
			// Each on a rig of its own: side by side (on HBase each
			// takes seconds of table creation).
			t.Parallel()
			g := rollupRig(t)
			fs := &faultstore.Store{Store: g.Store, Name: storeCalls, Fault: f}
			_, err := deleter(g, fs).Delete(ctxFor(t), ms, start, end)
			fs.CheckFailed(t, "the failing delete", err)
			data := g.data()
			checkBeforeOrAfter(t, data, before, gone, start, end)
			built := g.builtHours()
			rows := g.rollupRows()
			for _, key := range slices.Sorted(mapsKeys(rowsBefore, wantRows, rows)) {
				got, was, will := rows[key], rowsBefore[key], wantRows[key]
				if built.Contains(rollupHour(key)) && got != was && got != will {
					t.Errorf("hour recorded built, its windows of rollup row %s:\n%s\nneither as before\n%s\nnor as after\n%s", key, got, was, will)
				}
			}
			// The windows the range cuts (of the hours t0 and t0+2h),
			// in an hour recorded built, must match the samples read:
			// as before the delete or as after it.
			for _, eh := range []int64{t0, t0 + 2*3600} {
				if !built.Contains(eh) {
					continue
				}
				hourStart, hourEnd := eh*1000, eh*1000+hourMs-1
				rawAfter := sliceHours(data, hourStart, hourEnd) == sliceHours(wantData, hourStart, hourEnd)
				rawBefore := sliceHours(data, hourStart, hourEnd) == sliceHours(before, hourStart, hourEnd)
				for _, key := range slices.Sorted(mapsKeys(rowsBefore, wantRows)) {
					if rollupHour(key) != eh || rowsBefore[key] == wantRows[key] {
						continue
					}
					if (rows[key] == wantRows[key] && !rawAfter) || (rows[key] == rowsBefore[key] && !rawBefore) {
						t.Errorf("hour %d recorded built, rollup row %s as after the delete %v, samples as after %v, as before %v",
							eh, key, rows[key] == wantRows[key], rawAfter, rawBefore)
					}
				}
			}

			// Run again, as the operator does.
			if _, err := deleter(g, g.Store).Delete(ctxFor(t), ms, start, end); err != nil {
				t.Fatal(err)
			}
			if got := g.data(); got != wantData {
				t.Errorf("data after the delete run again:\n%s\nwant\n%s", got, wantData)
			}
			if got := g.builtHours(); got.String() != wantHours.String() {
				t.Errorf("hours built after the delete run again: %v, want %v", got, wantHours)
			}
			got := g.rollupRows()
			for _, key := range slices.Sorted(mapsKeys(got, wantRows)) {
				if got[key] != wantRows[key] {
					t.Errorf("rollup row %s after the delete run again:\n%s\nwant\n%s", key, got[key], wantRows[key])
				}
			}
		})
	}
}

// mapsKeys returns the keys of ms, each once.
func mapsKeys(ms ...map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		seen := map[string]bool{}
		for _, m := range ms {
			for k := range m {
				if !seen[k] {
					seen[k] = true
					if !yield(k) {
						return
					}
				}
			}
		}
	}
}

// sliceHours returns what rig.data rendered shows in [from, to].
func sliceHours(rendered string, from, to int64) string {
	var sb strings.Builder
	for name, m := range sampleTokens(rendered) {
		for _, t := range slices.Sorted(func(yield func(int64) bool) {
			for t := range m {
				if !yield(t) {
					return
				}
			}
		}) {
			if t >= from && t <= to {
				fmt.Fprintf(&sb, "%s %s\n", name, m[t])
			}
		}
	}
	lines := strings.SplitAfter(sb.String(), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "")
}
