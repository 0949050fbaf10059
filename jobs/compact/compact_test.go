package compact

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/storetest"
)

// hostSeries returns n series of metric over hours hours from t0, one
// sample every step (jittered by a few ms), values from val.
func hostSeries(metric string, n, hours int, step time.Duration, val func(i, j int) float64) []prompb.TimeSeries {
	var out []prompb.TimeSeries
	for i := range n {
		var smp []prompb.Sample
		for j := 0; int64(j)*step.Milliseconds() < int64(hours)*3600_000; j++ {
			ts := int64(t0)*1000 + int64(j)*step.Milliseconds() + int64(j%7)
			smp = append(smp, prompb.Sample{Timestamp: ts, Value: val(i, j)})
		}
		out = append(out, promSeries(metric, []string{"instance", fmt.Sprintf("host-%d", i), "job", "node"}, smp...))
	}
	return out
}

// writeBySample writes series as Prometheus does: each request carries the
// next sample of every series, so every cell gets its own version.
func (e *env) writeBySample(ss []prompb.TimeSeries) {
	e.T.Helper()
	for j := 0; ; j++ {
		var req []prompb.TimeSeries
		for _, s := range ss {
			if j < len(s.Samples) {
				req = append(req, prompb.TimeSeries{Labels: s.Labels, Samples: s.Samples[j : j+1]})
			}
		}
		if len(req) == 0 {
			return
		}
		e.write(req...)
	}
}

var specialValues = []float64{
	0, 1, -1, 127, 128, -32769, 1 << 40, 0.5, 0.1, 1e300, -2.5e-300,
	math.Inf(1), math.Inf(-1), math.Float64frombits(0x7ff0000000000002), // staleness marker
	math.Float64frombits(0x7ff8000000000001), math.Float64frombits(0xfff8dead0000beef), math.Copysign(0, -1),
}

// TestCompactPreservesReads writes through the real write path across
// several hours, compacts, and checks that every row became one cell, that
// reads are bit for bit what they were, that each compacted column decodes
// to exactly the row's merged points, that single-point rows are left as
// they were, and that compacting again changes nothing.
func TestCompactPreservesReads(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layout mapping.Layout
		write  func(e *env)
	}{
		{"values of every encoding", mapping.DefaultLayout(), func(e *env) {
			e.writeBySample(hostSeries("node_values", 3, 3, 61*time.Second, func(i, j int) float64 {
				return specialValues[(i+j)%len(specialValues)]
			}))
		}},
		{"salted", salted(), func(e *env) {
			e.writeBySample(hostSeries("node_salted", 8, 2, 5*time.Minute, func(i, j int) float64 { return float64(i*1000 + j) }))
		}},
		{"single-point rows", mapping.DefaultLayout(), func(e *env) {
			e.writeBySample(hostSeries("node_sparse", 2, 4, time.Hour, func(i, j int) float64 { return float64(j) + 0.25 }))
		}},
		{"overwritten samples", mapping.DefaultLayout(), func(e *env) {
			ss := hostSeries("node_over", 2, 2, 10*time.Minute, func(i, j int) float64 { return float64(j) })
			e.writeBySample(ss)
			for i := range ss { // the same timestamps again, other values and encodings
				for j := range ss[i].Samples {
					ss[i].Samples[j].Value = float64(j) + 0.1
				}
			}
			e.writeBySample(ss)
		}},
		{"one request per series", mapping.DefaultLayout(), func(e *env) {
			for _, s := range hostSeries("node_batched", 3, 2, 30*time.Second, func(i, j int) float64 { return float64(i) / 3 }) {
				e.write(s)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.layout)
			tc.write(e)
			before := e.rows()
			readBefore := e.read()
			if readBefore == "" {
				t.Fatal("nothing written")
			}
			st := e.compactAll(e.c)
			if st.Skipped > 0 || st.Rows != len(before) {
				t.Errorf("stats %s, want %d rows and none skipped", st, len(before))
			}
			after := e.rows()
			if len(after) != len(before) {
				t.Fatalf("%d rows after compaction, %d before", len(after), len(before))
			}
			wantCompacted := 0
			for i, b := range before {
				checkCompactedRow(t, e, b, after[i])
				if len(dataCells(b)) > 1 {
					wantCompacted++
				}
			}
			if st.Compacted != wantCompacted {
				t.Errorf("%d rows compacted, want %d", st.Compacted, wantCompacted)
			}
			if got := e.read(); got != readBefore {
				t.Errorf("reads changed by compaction\nbefore:\n%s\nafter:\n%s", readBefore, got)
			}
			again := e.compactAll(e.compactor())
			if again.Compacted != 0 || again.Unchanged != len(before) {
				t.Errorf("second compaction: %s, want every row unchanged", again)
			}
			if got := e.rows(); renderRows(got) != renderRows(after) {
				t.Errorf("second compaction changed rows")
			}
		})
	}
}

// checkCompactedRow checks one row after compaction against itself before.
func checkCompactedRow(t *testing.T, e *env, before, after store.Row) {
	t.Helper()
	if !bytes.Equal(before.Key, after.Key) {
		t.Fatalf("row %x became %x", before.Key, after.Key)
	}
	if len(after.Cells) != 1 {
		t.Errorf("row %x: %d cells after compaction, want 1: %s", after.Key, len(after.Cells), renderCells(after.Cells))
		return
	}
	if len(before.Cells) == 1 {
		if renderCells(before.Cells) != renderCells(after.Cells) {
			t.Errorf("single-cell row %x changed: %s -> %s", before.Key, renderCells(before.Cells), renderCells(after.Cells))
		}
		return
	}
	c := after.Cells[0]
	want := e.merged(before)
	_, _, base, _, _ := e.Layout.ParseRowKey(after.Key)
	got, err := mapping.AppendPoints(nil, base, c.Qualifier, c.Value)
	if err != nil {
		t.Fatalf("row %x: compacted cell %X=%X does not decode: %v", after.Key, c.Qualifier, c.Value, err)
	}
	if renderPoints(got) != renderPoints(want) {
		t.Errorf("row %x: compacted cell decodes to\n%s\nwant the merged points\n%s", after.Key, renderPoints(got), renderPoints(want))
	}
	if len(c.Qualifier) != 4*len(want) {
		t.Errorf("row %x: qualifier of %d bytes for %d points, want 4 per point", after.Key, len(c.Qualifier), len(want))
	}
	if len(want) > 1 && c.Value[len(c.Value)-1] != mapping.MetaPlain {
		t.Errorf("row %x: meta byte %#x, want 0x00", after.Key, c.Value[len(c.Value)-1])
	}
	if c.Timestamp != maxVersion(before.Cells) {
		t.Errorf("row %x: compacted cell version %d, want the newest merged %d", after.Key, c.Timestamp, maxVersion(before.Cells))
	}
}

func renderRows(rows []store.Row) string {
	var b bytes.Buffer
	for _, r := range rows {
		fmt.Fprintf(&b, "%X: %s\n", r.Key, renderCells(r.Cells))
	}
	return b.String()
}

// TestLateSampleSurvives: a sample written into a row after the compactor
// read it (before its put, or between its put and its delete) survives,
// and wins over the value the compacted cell holds for its timestamp.
func TestLateSampleSurvives(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stage string // afterRead or afterPut
		late  prompb.Sample
	}{
		{"new timestamp after read", "afterRead", prompb.Sample{Timestamp: t0*1000 + 3_599_999, Value: 42}},
		// Same encoding (int8): the same qualifier as the cell the
		// compactor read and deletes, bounded by the version it read.
		{"overwrite after read", "afterRead", prompb.Sample{Timestamp: t0*1000 + 600_000, Value: 99}},
		{"overwrite in another encoding after read", "afterRead", prompb.Sample{Timestamp: t0*1000 + 600_000, Value: 4.25}},
		{"new timestamp between put and delete", "afterPut", prompb.Sample{Timestamp: t0*1000 + 1, Value: -7}},
		{"overwrite between put and delete", "afterPut", prompb.Sample{Timestamp: t0*1000 + 1_200_000, Value: 77}},
		{"overwrite in another encoding between put and delete", "afterPut", prompb.Sample{Timestamp: t0*1000 + 600_000, Value: 1e100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mapping.DefaultLayout())
			labels := []string{"instance", "a"}
			var smp []prompb.Sample
			for j := range 6 {
				smp = append(smp, prompb.Sample{Timestamp: t0*1000 + int64(j)*600_000, Value: float64(j)})
			}
			for _, s := range smp {
				e.write(promSeries("late_metric", labels, s))
			}
			key := e.rows()[0].Key
			version := maxVersion(e.row(key).Cells)
			fired := false
			hook := func(row []byte) {
				if fired || !bytes.Equal(row, key) {
					return
				}
				fired = true
				storetest.WaitPast(int64(version))
				e.write(promSeries("late_metric", labels, tc.late))
				// Whatever the compactor writes next gets a later store
				// time than the late sample, should it take the store's
				// time.
				storetest.WaitPast(time.Now().UnixMilli())
			}
			c := e.compactor()
			if tc.stage == "afterRead" {
				c.afterRead = hook
			} else {
				c.afterPut = hook
			}
			res, err := c.CompactRow(ctxFor(t), key)
			if err != nil {
				t.Fatal(err)
			}
			if !fired || res.Outcome != Compacted || res.CellsDeleted != len(smp) {
				t.Fatalf("result %+v (hook fired %v), want compacted with %d cells deleted", res, fired, len(smp))
			}
			want := map[int64]float64{}
			for _, s := range smp {
				want[s.Timestamp] = s.Value
			}
			want[tc.late.Timestamp] = tc.late.Value
			wantRead := renderModel(want)
			if got := e.read(); got != wantRead {
				t.Errorf("read after compaction with a late sample:\n%s\nwant\n%s", got, wantRead)
			}
			if n := len(e.row(key).Cells); n != 2 {
				t.Errorf("row holds %d cells, want the compacted one and the late one", n)
			}
			// The next compaction folds the late sample in.
			res, err = e.compactor().CompactRow(ctxFor(t), key)
			if err != nil || res.Outcome != Compacted {
				t.Fatalf("second compaction: %+v, %v", res, err)
			}
			if r := e.row(key); len(r.Cells) != 1 {
				t.Errorf("after the second compaction the row holds %s, want one cell", renderCells(r.Cells))
			}
			if got := e.read(); got != wantRead {
				t.Errorf("read after the second compaction:\n%s\nwant\n%s", got, wantRead)
			}
		})
	}
}

// renderModel renders the one series late_metric{instance="a"} as read
// renders it.
func renderModel(m map[int64]float64) string {
	ts := make([]int64, 0, len(m))
	for t := range m {
		ts = append(ts, t)
	}
	slicesSort(ts)
	var b bytes.Buffer
	b.WriteString(`{__name__="late_metric", instance="a"}:`)
	for _, t := range ts {
		fmt.Fprintf(&b, " %d=%016x", t, math.Float64bits(m[t]))
	}
	b.WriteByte('\n')
	return b.String()
}

func slicesSort(ts []int64) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j] < ts[j-1]; j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// TestConcurrentCompactors runs several compactors over the same rows at
// once, with and without the write path adding and overwriting samples in
// those rows meanwhile: nothing is lost, nothing is read twice, and once
// the writes stop one more compaction leaves one cell per row.
func TestConcurrentCompactors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		compactors int
		lateWrites bool
	}{
		{"four compactors", 4, false},
		{"four compactors and late writes", 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mapping.DefaultLayout())
			ss := hostSeries("node_concurrent", 10, 3, 2*time.Minute, func(i, j int) float64 { return float64(i + j) })
			e.writeBySample(ss)
			model := map[string]map[int64]float64{}
			for _, s := range ss {
				m := map[int64]float64{}
				for _, p := range s.Samples {
					m[p.Timestamp] = p.Value
				}
				model[s.Labels[1].Value] = m
			}
			var wg sync.WaitGroup
			errs := make(chan error, tc.compactors+1)
			for range tc.compactors {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st, err := e.compactor().CompactRange(ctxFor(t), time.Unix(0, 0), e.now, nil)
					if err == nil && st.Errors > 0 {
						err = st.FirstError
					}
					errs <- err
				}()
			}
			if tc.lateWrites {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := range 30 {
						i := k % len(ss)
						s := ss[i]
						p := s.Samples[(k*7)%len(s.Samples)]
						p.Value = -float64(k) - 0.5 // overwrite
						fresh := prompb.Sample{Timestamp: p.Timestamp + 17, Value: float64(k)}
						e.write(prompb.TimeSeries{Labels: s.Labels, Samples: []prompb.Sample{p, fresh}})
						model[s.Labels[1].Value][p.Timestamp] = p.Value
						model[s.Labels[1].Value][fresh.Timestamp] = fresh.Value
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			want := renderHostModel("node_concurrent", model)
			if got := e.read(); got != want {
				t.Fatalf("read after concurrent compactions:\n%s\nwant\n%s", got, want)
			}
			if tc.lateWrites {
				e.compactAll(e.compactor())
				if got := e.read(); got != want {
					t.Fatalf("read after the final compaction:\n%s\nwant\n%s", got, want)
				}
			}
			for _, r := range e.rows() {
				if len(r.Cells) != 1 {
					t.Errorf("row %x holds %d cells, want 1: %s", r.Key, len(r.Cells), renderCells(r.Cells))
				}
			}
		})
	}
}

func renderHostModel(metric string, model map[string]map[int64]float64) string {
	var b bytes.Buffer
	for i := range len(model) {
		// host-0 .. host-9 sort as strings in this order for fewer than 11.
		host := fmt.Sprintf("host-%d", i)
		m := model[host]
		ts := make([]int64, 0, len(m))
		for t := range m {
			ts = append(ts, t)
		}
		slicesSort(ts)
		fmt.Fprintf(&b, `{__name__=%q, instance=%q, job="node"}:`, metric, host)
		for _, t := range ts {
			fmt.Fprintf(&b, " %d=%016x", t, math.Float64bits(m[t]))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// cellAt builds a data-point cell with a 4-byte millisecond qualifier.
func cellAt(offMs uint32, v float64, version uint64) store.Cell {
	val, flags := mapping.AppendValue(nil, v)
	return store.Cell{Family: []byte(family), Qualifier: mapping.AppendMsQualifier(nil, offMs, flags), Value: val, Timestamp: version}
}

// secondCell builds a cell as OpenTSDB writes seconds: a 2-byte qualifier
// and a long of 8 bytes.
func secondCell(offSec uint16, v int64, version uint64) store.Cell {
	q := []byte{byte(offSec >> 4), byte(offSec<<4) | 0x7}
	val := make([]byte, 8)
	for i := range 8 {
		val[i] = byte(v >> (56 - 8*i))
	}
	return store.Cell{Family: []byte(family), Qualifier: q, Value: val, Timestamp: version}
}

func compactedCell(pts []mapping.Point, version uint64) store.Cell {
	q, v := mapping.AppendCompacted(nil, nil, t0, pts)
	return store.Cell{Family: []byte(family), Qualifier: q, Value: v, Timestamp: version}
}

// manyCells returns n single cells, one every 200 ms, of one version.
func manyCells(n int) []store.Cell {
	out := make([]store.Cell, n)
	for i := range out {
		out[i] = cellAt(uint32(i*200), float64(i), 1000)
	}
	return out
}

func pt(offMs int64, v float64) mapping.Point { return mapping.Point{T: t0*1000 + offMs, V: v} }

// TestCompactRow covers the rows OpenTSDB and promhbase may leave, written
// cell by cell with chosen versions.
func TestCompactRow(t *testing.T) {
	annotation := store.Cell{Family: []byte(family), Qualifier: []byte{0x01, 0x00, 0x7B}, Value: []byte(`{"startTime":1700002923,"description":"deploy"}`), Timestamp: 900}
	appendCol := store.Cell{Family: []byte(family), Qualifier: mapping.AppendColumnQualifier(),
		Value: append(mapping.AppendMsQualifier(nil, 5000, 0), 9), Timestamp: 950}
	for _, tc := range []struct {
		name     string
		cells    []store.Cell
		want     Result
		wantRead []mapping.Point // nil: the same as before
		wantRow  string          // the row's cells after; empty: as before
	}{
		{name: "missing row", want: Result{Outcome: Unchanged}},
		{name: "single cell", cells: []store.Cell{cellAt(1000, 1, 1000)}, want: Result{Outcome: Unchanged}},
		{name: "one compacted column", cells: []store.Cell{compactedCell([]mapping.Point{pt(1000, 1), pt(2000, 2)}, 1000)}, want: Result{Outcome: Unchanged}},
		{
			name:    "single cells",
			cells:   []store.Cell{cellAt(3000, 3, 1003), cellAt(1000, 1, 1001), cellAt(2000, 2.5, 1002)},
			want:    Result{Outcome: Compacted, Points: 3, Put: true, CellsDeleted: 3},
			wantRow: renderCells([]store.Cell{compactedCell([]mapping.Point{pt(1000, 1), pt(2000, 2.5), pt(3000, 3)}, 1003)}),
		},
		{
			name:    "annotation kept",
			cells:   []store.Cell{cellAt(1000, 1, 1001), annotation, cellAt(2000, 2, 1002)},
			want:    Result{Outcome: Compacted, Points: 2, Put: true, CellsDeleted: 2},
			wantRow: renderCells([]store.Cell{annotation, compactedCell([]mapping.Point{pt(1000, 1), pt(2000, 2)}, 1002)}),
		},
		{
			name:  "append column: row untouched",
			cells: []store.Cell{cellAt(1000, 1, 1001), appendCol, cellAt(2000, 2, 1002)},
			want:  Result{Outcome: Skipped, Reason: ReasonAppendColumn},
		},
		{
			name:    "compacted column and a later point",
			cells:   []store.Cell{compactedCell([]mapping.Point{pt(1000, 1), pt(2000, 2)}, 1000), cellAt(1500, 1.5, 2000)},
			want:    Result{Outcome: Compacted, Points: 3, Put: true, CellsDeleted: 2},
			wantRow: renderCells([]store.Cell{compactedCell([]mapping.Point{pt(1000, 1), pt(1500, 1.5), pt(2000, 2)}, 2000)}),
		},
		{
			name:    "compacted qualifier already there, same value",
			cells:   []store.Cell{compactedCell([]mapping.Point{pt(1000, 1), pt(2000, 2)}, 1000), cellAt(2000, 2, 2000)},
			want:    Result{Outcome: Compacted, Points: 2, Put: false, CellsDeleted: 1},
			wantRow: renderCells([]store.Cell{compactedCell([]mapping.Point{pt(1000, 1), pt(2000, 2)}, 1000)}),
		},
		{
			name:    "compacted qualifier already there, newer value",
			cells:   []store.Cell{compactedCell([]mapping.Point{pt(1000, 1), pt(2000, 2)}, 1000), cellAt(2000, 3, 2000)},
			want:    Result{Outcome: Compacted, Points: 2, Put: true, CellsDeleted: 1},
			wantRow: renderCells([]store.Cell{compactedCell([]mapping.Point{pt(1000, 1), pt(2000, 3)}, 2000)}),
		},
		{
			name:    "older single cell loses to the compacted column",
			cells:   []store.Cell{compactedCell([]mapping.Point{pt(1000, 1), pt(2000, 2)}, 2000), cellAt(2000, 3, 1000)},
			want:    Result{Outcome: Compacted, Points: 2, Put: false, CellsDeleted: 1},
			wantRow: renderCells([]store.Cell{compactedCell([]mapping.Point{pt(1000, 1), pt(2000, 2)}, 2000)}),
		},
		{
			name:     "second and millisecond cells of one instant: the newer wins",
			cells:    []store.Cell{secondCell(5, 50, 1000), cellAt(5000, 5.5, 2000)},
			want:     Result{Outcome: Compacted, Points: 1, Put: false, CellsDeleted: 1},
			wantRead: []mapping.Point{pt(5000, 5.5)},
			wantRow:  renderCells([]store.Cell{cellAt(5000, 5.5, 2000)}),
		},
		{
			name:  "OpenTSDB second cells",
			cells: []store.Cell{secondCell(1, 10, 1000), secondCell(3599, -10, 1001), secondCell(60, 1<<40, 1002)},
			want:  Result{Outcome: Compacted, Points: 3, Put: true, CellsDeleted: 3},
			// The 8-byte integers stay 8 bytes, the qualifiers 2 bytes.
			wantRow: renderCells([]store.Cell{{Family: []byte(family),
				Qualifier: unhex("0017 03C7 E0F7"),
				Value:     unhex("000000000000000A 0000010000000000 FFFFFFFFFFFFFFF6 00"), Timestamp: 1002}}),
		},
		{
			name:  "point outside the hour",
			cells: []store.Cell{secondCell(3700, 1, 1000), secondCell(1, 1, 1001)},
			want:  Result{Outcome: Skipped, Reason: ReasonOutsideHour},
		},
		{
			name:  "too many points",
			cells: manyCells(MaxPoints + 1),
			want:  Result{Outcome: Skipped, Reason: ReasonTooManyPoints},
		},
		{
			name:  "malformed cell",
			cells: []store.Cell{cellAt(1000, 1, 1000), {Family: []byte(family), Qualifier: []byte{0xF0, 0, 0, 0x07}, Value: []byte{1}, Timestamp: 1001}},
			want:  Result{Outcome: Skipped, Reason: ReasonMalformed},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mapping.DefaultLayout())
			key := e.Layout.AppendRowKey(nil, []byte{0, 0, 1}, t0, []byte{0, 0, 1, 0, 0, 2})
			if len(tc.cells) > 0 {
				if err := e.Store.Put(ctxFor(t), e.Tables.Data, []store.Put{{Row: key, Cells: tc.cells}}); err != nil {
					t.Fatal(err)
				}
			}
			before := e.row(key)
			var readBefore []mapping.Point
			if tc.want.Reason != ReasonMalformed && tc.want.Reason != ReasonAppendColumn {
				readBefore = e.merged(before)
			}
			res, err := e.c.CompactRow(ctxFor(t), key)
			if err != nil {
				t.Fatal(err)
			}
			if res != tc.want {
				t.Errorf("result %+v, want %+v", res, tc.want)
			}
			after := e.row(key)
			wantRow := tc.wantRow
			if wantRow == "" {
				wantRow = renderCells(before.Cells)
			}
			if got := renderCells(after.Cells); got != wantRow {
				t.Errorf("row after:\n%s\nwant\n%s", got, wantRow)
			}
			if readBefore != nil {
				wantRead := readBefore
				if tc.wantRead != nil {
					wantRead = tc.wantRead
				}
				if got := e.merged(after); renderPoints(got) != renderPoints(wantRead) {
					t.Errorf("read after: %s, want %s", renderPoints(got), renderPoints(wantRead))
				}
			}
		})
	}
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// TestCompactKeepsBytes: compaction moves every point's qualifier and value
// bytes into the compacted column unchanged, whoever wrote them, as
// OpenTSDB's compaction does: integers beyond 2^53, 2-byte second
// qualifiers, 8-byte doubles that a float32 holds, integral doubles, and
// the meta byte 0x01 when second and millisecond qualifiers mix.
func TestCompactKeepsBytes(t *testing.T) {
	cell := func(q, v string, version uint64) store.Cell {
		return store.Cell{Family: []byte(family), Qualifier: unhex(q), Value: unhex(v), Timestamp: version}
	}
	for _, tc := range []struct {
		name          string
		cells         []store.Cell
		wantQ, wantV  string
		wantPoints    int
		wantDeleted   int
		wantUnchanged bool
	}{
		{
			name: "OpenTSDB integers and floats of every width",
			cells: []store.Cell{
				cell("00A0", "05", 1),                   // 10 s, int8 5
				cell("0141", "7FFF", 1),                 // 20 s, int16 32767
				cell("01E3", "7FFFFFFF", 1),             // 30 s, int32
				cell("0287", "0020000000000001", 1),     // 40 s, int64 2^53+1
				cell("0327", "7FFFFFFFFFFFFFFF", 1),     // 50 s, int64 max
				cell("03CB", "3F800000", 1),             // 60 s, float32 1.0
				cell("046F", "3FF0000000000000", 1),     // 70 s, float64 1.0 (integral double)
				cell("050F", "3FE0000000000000", 1),     // 80 s, float64 0.5 (fits a float32)
				cell("F0927C0F", "3FB999999999999A", 2), // 150 000 ms, float64 0.1 (promhbase)
				cell("F0927C40", "07", 2),               // 150 001 ms, int8 7 (promhbase)
			},
			wantQ:      "00A0 0141 01E3 0287 0327 03CB 046F 050F F0927C0F F0927C40",
			wantV:      "05 7FFF 7FFFFFFF 0020000000000001 7FFFFFFFFFFFFFFF 3F800000 3FF0000000000000 3FE0000000000000 3FB999999999999A 07 01",
			wantPoints: 10, wantDeleted: 10,
		},
		{
			name: "seconds only: meta 0x00",
			cells: []store.Cell{
				cell("00A0", "05", 1),
				cell("0287", "0020000000000001", 1),
			},
			wantQ: "00A0 0287", wantV: "05 0020000000000001 00", wantPoints: 2, wantDeleted: 2,
		},
		{
			name: "a compacted column and new cells merge, bytes kept",
			cells: []store.Cell{
				cell("00A0 0287", "05 0020000000000001 00", 5),
				cell("0141", "7FFF", 6),
				cell("F0927C0F", "3FB999999999999A", 7),
			},
			wantQ: "00A0 0141 0287 F0927C0F", wantV: "05 7FFF 0020000000000001 3FB999999999999A 01", wantPoints: 4, wantDeleted: 3,
		},
		{
			name: "the newest version of a repeated instant wins, second vs ms form",
			cells: []store.Cell{
				cell("00A0", "05", 1),       // 10 s
				cell("F009C400", "06", 2),   // 10 000 ms, newer
				cell("0141", "3F800000", 1), // 20 s: flags say int16, 4 bytes
			},
			// OpenTSDB's fix-up for single 2-byte cells: the value length
			// wins, so the qualifier is written with length bits 3.
			wantQ: "F009C400 0143", wantV: "06 3F800000 01", wantPoints: 2, wantDeleted: 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mapping.DefaultLayout())
			key := e.Layout.AppendRowKey(nil, []byte{0, 0, 1}, t0, []byte{0, 0, 1, 0, 0, 2})
			if err := e.Store.Put(ctxFor(t), e.Tables.Data, []store.Put{{Row: key, Cells: tc.cells}}); err != nil {
				t.Fatal(err)
			}
			res, err := e.c.CompactRow(ctxFor(t), key)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != Compacted || res.Points != tc.wantPoints || res.CellsDeleted != tc.wantDeleted {
				t.Errorf("result %+v, want compacted, %d points, %d deleted", res, tc.wantPoints, tc.wantDeleted)
			}
			after := dataCells(e.row(key))
			if len(after) != 1 {
				t.Fatalf("row after compaction: %s", renderCells(after))
			}
			if got, want := fmt.Sprintf("%X", after[0].Qualifier), fmt.Sprintf("%X", unhex(tc.wantQ)); got != want {
				t.Errorf("qualifier %s, want %s", got, want)
			}
			if got, want := fmt.Sprintf("%X", after[0].Value), fmt.Sprintf("%X", unhex(tc.wantV)); got != want {
				t.Errorf("value %s, want %s", got, want)
			}
		})
	}
}
