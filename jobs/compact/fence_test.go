package compact

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/jobs/deletion"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
)

// fenceEnv is an env with two series of 12 single cells in hour t0, and
// their row keys.
func fenceEnv(t *testing.T) (e *env, rowA, rowB []byte) {
	t.Helper()
	e = newEnv(t, mapping.DefaultLayout())
	var samples []prompb.Sample
	for i := range 12 {
		samples = append(samples, prompb.Sample{Timestamp: t0*1000 + int64(i)*300_000, Value: float64(i)})
	}
	e.write(promSeries("m", []string{"job", "a"}, samples...), promSeries("m", []string{"job", "b"}, samples...))
	rows := e.rows()
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	return e, rows[0].Key, rows[1].Key
}

// compactPaused starts a compaction of row by c that stops once it has
// read the row, and returns then: closing proceed lets it go on, compacted
// is closed when it has finished. Later compactions by c do not stop.
func compactPaused(t *testing.T, c *Compactor, row []byte) (proceed, compacted chan struct{}) {
	t.Helper()
	reading := make(chan struct{})
	proceed, compacted = make(chan struct{}), make(chan struct{})
	c.afterRead = func([]byte) {
		select {
		case <-reading:
		default:
			close(reading)
			<-proceed
		}
	}
	go func() {
		defer close(compacted)
		if _, err := c.CompactRow(ctxFor(t), row); err != nil {
			t.Error(err)
		}
	}()
	<-reading
	return proceed, compacted
}

// after reports whether ch is closed within d.
func after(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// TestHoldWaitsForCompactionInFlight: Hold returns only once the
// compaction of a held row that read the row before has finished.
func TestHoldWaitsForCompactionInFlight(t *testing.T) {
	e, rowA, _ := fenceEnv(t)
	c := e.compactor()
	proceed, compacted := compactPaused(t, c, rowA)
	held := make(chan struct{})
	var release func()
	go func() {
		defer close(held)
		var err error
		if release, err = c.Hold(ctxFor(t), rowA, append(rowA, 0)); err != nil {
			t.Error(err)
		}
	}()
	if after(held, 50*time.Millisecond) {
		t.Fatal("Hold returned while a compaction of the row was in flight")
	}
	close(proceed)
	<-held
	if n := len(dataCells(e.row(rowA))); n != 1 {
		t.Errorf("Hold returned before the compaction in flight finished: the row has %d cells, want 1", n)
	}
	release()
	release() // twice is harmless
	<-compacted
}

// TestCompactRowWaitsForHold: a held row is compacted once the hold is
// released; rows outside the hold are compacted meanwhile.
func TestCompactRowWaitsForHold(t *testing.T) {
	e, rowA, rowB := fenceEnv(t)
	c := e.compactor()
	release, err := c.Hold(ctxFor(t), rowA, append(rowA, 0))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if res, err := c.CompactRow(ctxFor(t), rowA); err != nil || res.Outcome != Compacted {
			t.Errorf("held row: %+v %v, want compacted after the release", res, err)
		}
	}()
	if res, err := c.CompactRow(ctxFor(t), rowB); err != nil || res.Outcome != Compacted {
		t.Errorf("row outside the hold: %+v %v, want compacted", res, err)
	}
	if after(done, 50*time.Millisecond) {
		t.Fatal("a held row was compacted")
	}
	if n := len(dataCells(e.row(rowA))); n != 12 {
		t.Errorf("held row has %d cells, want 12", n)
	}
	release()
	<-done
	if n := len(dataCells(e.row(rowA))); n != 1 {
		t.Errorf("row after the release has %d cells, want 1", n)
	}

	// A compaction waiting for a hold gives up with its context.
	release, err = c.Hold(ctxFor(t), rowA, append(rowA, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctxFor(t), 20*time.Millisecond)
	defer cancel()
	if _, err := c.CompactRow(ctx, rowA); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CompactRow of a held row with a context ending: %v, want DeadlineExceeded", err)
	}
}

// TestHoldGivesUpWithItsContext: a Hold whose context ends while a
// compaction is in flight fails and holds nothing.
func TestHoldGivesUpWithItsContext(t *testing.T) {
	e, rowA, _ := fenceEnv(t)
	c := e.compactor()
	proceed, compacted := compactPaused(t, c, rowA)
	ctx, cancel := context.WithTimeout(ctxFor(t), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Hold(ctx, rowA, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Hold: %v, want DeadlineExceeded", err)
	}
	close(proceed)
	<-compacted
	// Nothing is held: the row compacts again at once.
	if _, err := c.CompactRow(ctxFor(t), rowA); err != nil {
		t.Fatal(err)
	}
}

// TestDeleteDuringCompaction: a compaction reads a row, a delete of some
// of its samples runs, the compaction puts its compacted cell. With the
// compactor as the deletion's fence the delete waits for the compaction
// and the deleted samples stay deleted. Without it (a compactor of
// another process): on the embedded store, where a delete leaves no
// marker, the compaction puts them back, the race the fence closes; on
// HBase the delete's marker hides the compaction's put and the delete
// rewrote the samples it keeps, so the deleted samples stay deleted. In
// every case no sample outside the range is lost.
func TestDeleteDuringCompaction(t *testing.T) {
	for _, fenced := range []bool{true, false} {
		t.Run(map[bool]string{true: "fenced", false: "unfenced"}[fenced], func(t *testing.T) {
			e, rowA, _ := fenceEnv(t)
			before := e.read()
			c := e.compactor()
			proceed, compacted := compactPaused(t, c, rowA)
			opts := deletion.Options{DataTable: e.Tables.Data, Layout: e.Layout}
			if fenced {
				opts.Fence = c
			}
			d, err := deletion.New(e.Store, e.Querier, opts)
			if err != nil {
				t.Fatal(err)
			}
			deleted := make(chan struct{})
			start, end := int64(t0*1000+300_000), int64(t0*1000+900_000)
			go func() {
				defer close(deleted)
				ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "a")}
				if _, err := d.Delete(ctxFor(t), ms, start, end); err != nil {
					t.Error(err)
				}
			}()
			if fenced && after(deleted, 50*time.Millisecond) {
				t.Fatal("the delete ran while a compaction of its row was in flight")
			}
			if !fenced {
				<-deleted
			}
			close(proceed)
			<-compacted
			<-deleted
			got := e.read()
			line := func(rendered, job string) string {
				for l := range strings.Lines(rendered) {
					if strings.HasPrefix(l, `{__name__="m", job="`+job+`"}:`) {
						return strings.TrimSuffix(l, "\n")
					}
				}
				return ""
			}
			lineA, lineB := line(got, "a"), line(got, "b")
			wantA, wantB := line(before, "a"), line(before, "b")
			var kept []string
			for _, tok := range strings.Fields(wantA)[2:] { // after the labels
				ts, _, ok := strings.Cut(tok, "=")
				if n, err := strconv.ParseInt(ts, 10, 64); ok && err == nil && n >= start && n <= end {
					continue
				}
				kept = append(kept, tok)
			}
			for _, tok := range kept {
				if !strings.Contains(" "+lineA+" ", " "+tok+" ") {
					t.Errorf("sample %s outside the deleted range is lost:\n%s", tok, got)
				}
			}
			if lineB != wantB {
				t.Errorf("the other series changed:\n%s\nwant\n%s", lineB, wantB)
			}
			back := strings.Contains(lineA, "1700003100000=")
			switch raced := !fenced && testbackend.Name() == "embedded"; {
			case !raced && back:
				t.Errorf("a deleted sample came back:\n%s", got)
			case raced && !back:
				t.Errorf("unfenced on the embedded store: the race did not show:\n%s", got)
			}
		})
	}
}
