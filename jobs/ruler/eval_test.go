package ruler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"

	"github.com/promhbase/promhbase/store"
)

// TestCatchUp: the missed aligned evaluations after r:last that an
// evaluation makes up, and how many it leaves out (too_old): those older
// than the catch-up window and those past maxCatchUpEvals.
func TestCatchUp(t *testing.T) {
	for _, tc := range []struct {
		name       string
		interval   time.Duration
		window     time.Duration
		last       time.Duration // before the evaluation's aligned time; 0: never evaluated
		wantMissed int
		wantTooOld int
	}{
		{name: "never evaluated", interval: 10 * time.Second, window: time.Minute},
		{name: "evaluated last interval", interval: 10 * time.Second, window: time.Minute, last: 10 * time.Second},
		{name: "evaluated a millisecond ago", interval: 10 * time.Second, window: time.Minute, last: time.Millisecond},
		{name: "two missed", interval: 10 * time.Second, window: time.Minute, last: 30 * time.Second, wantMissed: 2},
		{name: "some past the window", interval: 10 * time.Second, window: time.Minute, last: 100 * time.Second, wantMissed: 6, wantTooOld: 3},
		{name: "all past the window", interval: 10 * time.Second, window: 5 * time.Second, last: 35 * time.Second, wantTooOld: 3},
		{name: "past maxCatchUpEvals", interval: time.Second, window: time.Hour, last: 200 * time.Second, wantMissed: maxCatchUpEvals, wantTooOld: 199 - maxCatchUpEvals},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := rules.NewGroup(rules.GroupOptions{Name: "g", File: "ns", Interval: tc.interval, Opts: &rules.ManagerOptions{}})
			at := g.EvalTimestamp(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
			var last int64
			if tc.last > 0 {
				last = at.Add(-tc.last).UnixMilli()
			}
			missed, tooOld := catchUp(g, last, at, tc.window)
			if len(missed) != tc.wantMissed || tooOld != tc.wantTooOld {
				t.Fatalf("catchUp: %d missed, %d too old; want %d, %d", len(missed), tooOld, tc.wantMissed, tc.wantTooOld)
			}
			for i, m := range missed {
				if !m.Before(at) || m.UnixMilli() <= last || (i > 0 && m.Sub(missed[i-1]) != tc.interval) {
					t.Errorf("missed[%d] = %s: want aligned, after last %d and before %s", i, m, last, at)
				}
			}
		})
	}
}

// TestTransient: the errors an evaluation may not meet again leave it
// unrecorded (made up by the next iteration); a rule's own error does
// not, or its group would never go on.
func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{promql.ErrStorage{Err: errors.New("scan failed")}, true},
		{fmt.Errorf("expanding series: %w", store.ErrUnavailable), true},
		{promql.ErrQueryTimeout("query evaluation"), true},
		{promql.ErrQueryCanceled("query evaluation"), true},
		{fmt.Errorf("write: %w", context.DeadlineExceeded), true},
		{context.Canceled, true},
		{errors.New("vector contains metrics with the same labelset after applying rule labels"), false},
		{errors.New("many-to-many matching not allowed: matching labels must be unique on one side"), false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestEvaluatedSince: a group's evaluation counts only when every rule
// was evaluated in it (Group.Eval skips the rules left once the group
// is stopped, with no error).
func TestEvaluatedSince(t *testing.T) {
	expr, err := parser.NewParser(parser.Options{}).ParseExpr("vector(1)")
	if err != nil {
		t.Fatal(err)
	}
	g := rules.NewGroup(rules.GroupOptions{Name: "g", File: "ns", Interval: time.Minute,
		Rules: []rules.Rule{rules.NewRecordingRule("r", expr, labels.EmptyLabels())},
		Opts: &rules.ManagerOptions{Metrics: noMetrics(), Appendable: nopAppendable{},
			QueryFunc: func(context.Context, string, time.Time) (promql.Vector, error) { return promql.Vector{}, nil }}})
	began := time.Now()
	if evaluatedSince(g, began) {
		t.Fatal("a group never evaluated counts as evaluated")
	}
	rules.DefaultEvalIterationFunc(context.Background(), g, time.Now())
	if !evaluatedSince(g, began) {
		t.Error("an evaluated group does not count")
	}
}

// nopAppendable takes every sample and keeps none.
type nopAppendable struct{}

func (nopAppendable) Appender(context.Context) storage.Appender { return nopAppender{} }

type nopAppender struct{ storage.Appender }

func (nopAppender) Append(storage.SeriesRef, labels.Labels, int64, float64) (storage.SeriesRef, error) {
	return 0, nil
}
func (nopAppender) SetOptions(*storage.AppendOptions) {}
func (nopAppender) Commit() error                     { return nil }
func (nopAppender) Rollback() error                   { return nil }
