package compact

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testlog"
)

// newScheduler returns a Scheduler on the env's compactor and clock, told
// of every row the env's writer writes.
func newScheduler(t *testing.T, e *env, opts SchedulerOptions) (*Scheduler, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	opts.Registerer = prometheus.NewRegistry()
	opts.Now = func() time.Time { return e.now }
	s, err := NewScheduler(e.c, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.Writer = ingest.New(e.Mapper, e.Store, ingest.Options{Table: e.Tables.Data, RowNoter: s})
	return s, logs
}

// cellsByHour returns, per base hour, the cell counts of its rows.
func (e *env) cellsByHour() map[uint32][]int {
	e.T.Helper()
	out := map[uint32][]int{}
	for _, r := range e.rows() {
		_, _, base, _, err := e.Layout.ParseRowKey(r.Key)
		if err != nil {
			e.T.Fatal(err)
		}
		out[base] = append(out[base], len(r.Cells))
	}
	return out
}

func allOne(counts []int) bool {
	for _, n := range counts {
		if n != 1 {
			return false
		}
	}
	return len(counts) > 0
}

// TestSchedulerCompactsEndedHours: rows are compacted once their hour has
// ended plus the grace period, hour by hour, and rows written late into a
// compacted hour are compacted at the next check.
func TestSchedulerCompactsEndedHours(t *testing.T) {
	e := newEnv(t, mapping.DefaultLayout())
	s, logs := newScheduler(t, e, SchedulerOptions{Grace: 10 * time.Minute})
	e.now = time.Unix(t0+2*3600+5*60, 0) // hour t0+1h ended 5 minutes ago
	e.writeBySample(hostSeries("sched", 3, 3, 20*time.Minute, func(i, j int) float64 { return float64(i*j) + 0.5 }))
	read := e.read()
	if got := testutil.ToFloat64(s.m.pending); got != 9 {
		t.Fatalf("pending rows %v, want 9 (3 series x 3 hours)", got)
	}

	s.CompactDue(ctxFor(t))
	byHour := e.cellsByHour()
	if !allOne(byHour[t0]) || allOne(byHour[t0+3600]) || allOne(byHour[t0+7200]) {
		t.Fatalf("cells per row by hour %v: want only hour %d compacted", byHour, t0)
	}
	if c, p := testutil.ToFloat64(s.m.compacted), testutil.ToFloat64(s.m.pending); c != 3 || p != 6 {
		t.Errorf("compacted %v, pending %v; want 3 and 6", c, p)
	}

	e.now = e.now.Add(5 * time.Minute) // hour t0+1h is past its grace
	s.CompactDue(ctxFor(t))
	byHour = e.cellsByHour()
	if !allOne(byHour[t0]) || !allOne(byHour[t0+3600]) || allOne(byHour[t0+7200]) {
		t.Fatalf("cells per row by hour %v: want hours %d and %d compacted", byHour, t0, t0+3600)
	}
	if got := testutil.ToFloat64(s.m.cellsDeleted); got != 6*3 {
		t.Errorf("cells deleted %v, want 18", got)
	}
	if got := e.read(); got != read {
		t.Errorf("reads changed:\n%s\nwant\n%s", got, read)
	}

	// A late sample into the first hour: its row is noted again and
	// compacted at the next check.
	e.write(promSeries("sched", []string{"instance", "host-1", "job", "node"}, prompb.Sample{Timestamp: t0*1000 + 123, Value: 7}))
	s.CompactDue(ctxFor(t))
	if byHour = e.cellsByHour(); !allOne(byHour[t0]) {
		t.Errorf("after a late sample and a check, hour %d rows hold %v cells", t0, byHour[t0])
	}
	if got := testutil.ToFloat64(s.m.compacted); got != 7 {
		t.Errorf("compacted %v, want 7", got)
	}
	if n := logs.Count("compacted hour"); n != 3 {
		t.Errorf("%d hour batches logged, want 3:\n%s", n, logs.String())
	}
	if got := testutil.ToFloat64(s.m.errors); got != 0 {
		t.Errorf("errors %v", got)
	}
}

// TestSchedulerSalted: the rows of a salted table, spread over the salt
// buckets, are all found and compacted, and reads do not change.
func TestSchedulerSalted(t *testing.T) {
	e := newEnv(t, salted())
	s, _ := newScheduler(t, e, SchedulerOptions{Grace: time.Minute})
	e.now = time.Unix(t0+3*3600, 0)
	e.writeBySample(hostSeries("salty", 12, 2, 15*time.Minute, func(i, j int) float64 { return float64(i + j) }))
	read := e.read()
	if got := testutil.ToFloat64(s.m.pending); got != 24 {
		t.Fatalf("pending rows %v, want 24 (12 series x 2 hours)", got)
	}
	s.CompactDue(ctxFor(t))
	for hour, counts := range e.cellsByHour() {
		if !allOne(counts) {
			t.Errorf("hour %d: cells per row %v, want all compacted", hour, counts)
		}
	}
	if c := testutil.ToFloat64(s.m.compacted); c != 24 {
		t.Errorf("compacted %v, want 24", c)
	}
	if got := e.read(); got != read {
		t.Errorf("reads changed:\n%s\nwant\n%s", got, read)
	}
}

// TestSchedulerCap: past MaxRowsPerHour rows of an hour are not remembered;
// that is counted and logged once, and `compact` (CompactRange) still
// compacts them.
func TestSchedulerCap(t *testing.T) {
	e := newEnv(t, mapping.DefaultLayout())
	s, logs := newScheduler(t, e, SchedulerOptions{MaxRowsPerHour: 2})
	e.now = time.Unix(t0+3*3600, 0)
	e.writeBySample(hostSeries("capped", 5, 1, 30*time.Minute, func(i, j int) float64 { return float64(j) }))
	if got := testutil.ToFloat64(s.m.untracked); got != 2*3 {
		t.Errorf("untracked %v, want 6 (3 rows over the cap, in each of 2 requests)", got)
	}
	if n := logs.Count("too many rows"); n != 1 {
		t.Errorf("cap logged %d times, want once:\n%s", n, logs.String())
	}
	s.CompactDue(ctxFor(t))
	counts := e.cellsByHour()[t0]
	ones := 0
	for _, n := range counts {
		if n == 1 {
			ones++
		}
	}
	if ones != 2 {
		t.Errorf("cells per row %v: want the 2 remembered rows compacted", counts)
	}
	e.compactAll(e.compactor())
	if counts := e.cellsByHour()[t0]; !allOne(counts) {
		t.Errorf("after CompactRange cells per row %v, want all 1", counts)
	}
}

// TestSchedulerFarFuture: rows of hours more than an hour ahead are not
// remembered, so bad timestamps cannot pile hours up.
func TestSchedulerFarFuture(t *testing.T) {
	e := newEnv(t, mapping.DefaultLayout())
	s, _ := newScheduler(t, e, SchedulerOptions{})
	e.now = time.Unix(t0, 0)
	e.write(promSeries("future", nil, prompb.Sample{Timestamp: (t0 + 3*3600) * 1000, Value: 1}))
	e.write(promSeries("future", nil, prompb.Sample{Timestamp: (t0 + 3600) * 1000, Value: 1}))
	if u, p := testutil.ToFloat64(s.m.untracked), testutil.ToFloat64(s.m.pending); u != 1 || p != 1 {
		t.Errorf("untracked %v, pending %v; want 1 and 1", u, p)
	}
}

// TestSchedulerRun: Run compacts due hours on its own and returns promptly
// once its context ends.
func TestSchedulerRun(t *testing.T) {
	e := newEnv(t, mapping.DefaultLayout())
	s, _ := newScheduler(t, e, SchedulerOptions{CheckInterval: 5 * time.Millisecond})
	e.now = time.Unix(t0+5*3600, 0)
	e.writeBySample(hostSeries("run", 2, 1, 15*time.Minute, func(i, j int) float64 { return float64(j) }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // when the wait fails
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	poll.Until(t, time.Minute, 5*time.Millisecond, "2 hours compacted by Run", func() (bool, string) {
		n := testutil.ToFloat64(s.m.compacted)
		return n >= 2, fmt.Sprintf("%v compacted", n)
	})
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if got := testutil.ToFloat64(s.m.compacted); got != 2 {
		t.Errorf("compacted %v, want 2", got)
	}
}

// TestNoteRowsIgnoresShortKeys: keys too short to hold a base time (not
// data rows) are ignored.
func TestNoteRowsIgnoresShortKeys(t *testing.T) {
	e := newEnv(t, mapping.DefaultLayout())
	s, _ := newScheduler(t, e, SchedulerOptions{})
	s.NoteRows([]store.Put{{Row: []byte{1, 2}}, {Row: nil}})
	if got := testutil.ToFloat64(s.m.pending); got != 0 {
		t.Errorf("pending %v, want 0", got)
	}
}

// failingDeletes is a store whose first fails Deletes fail, as they do
// when a region server dies between a compaction's put and its delete.
type failingDeletes struct {
	store.Store
	mu    sync.Mutex
	fails int
}

func (f *failingDeletes) Delete(ctx context.Context, table string, row []byte, columns []store.Column) error {
	f.mu.Lock()
	fail := f.fails > 0
	f.fails--
	f.mu.Unlock()
	if fail {
		return store.ErrUnavailable
	}
	return f.Store.Delete(ctx, table, row, columns)
}

// TestSchedulerRetriesFailedRows: rows whose compaction failed half way
// (the compacted cell put, the replaced cells not deleted) are tried again
// at the next checks until they are compacted, and given up after
// maxTries.
func TestSchedulerRetriesFailedRows(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fails     int
		compacted bool
	}{
		{"once", 3, true},
		{"every try", 1 << 30, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mapping.DefaultLayout())
			fd := &failingDeletes{Store: e.Store, fails: tc.fails}
			e.c = New(fd, Options{DataTable: e.Tables.Data, UIDTable: e.Tables.UID, Layout: e.Layout, Now: func() time.Time { return e.now }})
			s, logs := newScheduler(t, e, SchedulerOptions{Grace: 10 * time.Minute})
			e.now = time.Unix(t0+3600+15*60, 0) // hour t0 ended 15 minutes ago
			e.writeBySample(hostSeries("retry", 3, 1, 20*time.Minute, func(i, j int) float64 { return float64(i + j) }))
			read := e.read()
			for range maxTries + 2 {
				s.CompactDue(ctxFor(t))
			}
			byHour := e.cellsByHour()
			if allOne(byHour[t0]) != tc.compacted {
				t.Fatalf("cells per row %v; compacted %v, want %v", byHour[t0], allOne(byHour[t0]), tc.compacted)
			}
			if got := e.read(); got != read {
				t.Errorf("reads changed:\n%s\nwant\n%s", got, read)
			}
			if n := logs.Count("retry=\"at the next check\""); tc.compacted && n != 1 || !tc.compacted && n != maxTries-1 {
				t.Errorf("%d batches retried:\n%s", n, logs.String())
			}
			if !tc.compacted && logs.Count("left for `promhbase compact`") != 1 {
				t.Errorf("the last try does not say the rows are left:\n%s", logs.String())
			}
			if got := testutil.ToFloat64(s.m.pending); got != 0 {
				t.Errorf("pending %v, want 0", got)
			}
		})
	}
}
