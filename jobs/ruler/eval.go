package ruler

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"

	"github.com/promhbase/promhbase/store"
)

// maxCatchUpEvals bounds the missed evaluations one iteration makes up,
// whatever the catch-up window.
const maxCatchUpEvals = 100

// The reasons of promhbase_ruler_evaluations_skipped_total.
const (
	skippedLeaseLost = "lease_lost"      // another replica holds the group
	skippedDone      = "done"            // r:last says it was evaluated
	skippedTooOld    = "too_old"         // missed, past the catch-up window or maxCatchUpEvals
	skippedNoLast    = "last_unreadable" // r:last could not be read: the next iteration makes it up
)

// evalIteration is the rules.GroupEvalIterationFunc of a tenant's groups:
// each evaluation is of a group whose lease this replica holds (renewed
// first; lost: the evaluation is skipped and the group dropped at the
// next sync), after the aligned timestamps a previous holder missed (from
// r:last, within the catch-up window), never at or before r:last, and is
// recorded in r:last. When r:last cannot be read the iteration is skipped:
// evaluating without it could leave the missed timestamps before it
// unmade forever, while the next iteration that reads it makes this one
// up with them.
func (ts *tenantState) evalIteration(ctx context.Context, g *rules.Group, at time.Time) {
	key := rules.GroupKey(g.File(), g.Name())
	l := ts.lease(key)
	if l == nil {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, ts.r.cfg.LeaseDuration)
	defer cancel()
	held, err := l.renew(lctx)
	if err != nil {
		ts.logger.Warn("cannot renew a rule group's lease", "group", key, "err", err)
	}
	if !held || !l.valid() {
		ts.r.m.skipped.WithLabelValues(skippedLeaseLost).Inc()
		return
	}
	last, err := l.last(lctx)
	if err != nil {
		ts.logger.Warn("cannot read a rule group's last evaluation; the next iteration makes this one up", "group", key, "at", at, "err", err)
		ts.r.m.skipped.WithLabelValues(skippedNoLast).Inc()
		return
	}
	atMs := at.UnixMilli()
	if last >= atMs {
		// Another replica (or this one, before a restart) evaluated it.
		ts.r.m.skipped.WithLabelValues(skippedDone).Inc()
		return
	}
	missed, tooOld := catchUp(g, last, at, ts.r.cfg.CatchUpWindow)
	if tooOld > 0 {
		ts.r.m.skipped.WithLabelValues(skippedTooOld).Add(float64(tooOld))
	}
	for _, t := range missed {
		if !ts.evalOnce(ctx, g, l, t) {
			return
		}
		ts.r.m.caughtUp.Inc()
	}
	ts.evalOnce(ctx, g, l, at)
}

// evalOnce evaluates g at t and records it in r:last; false: the lease
// is lost, or ctx ended during the evaluation, which then stays
// unrecorded (its queries and appends failed or may have: the next holder
// makes it up from r:last rather than leaving a gap).
func (ts *tenantState) evalOnce(ctx context.Context, g *rules.Group, l *groupLease, t time.Time) bool {
	if !l.valid() {
		return false
	}
	failed := new(atomic.Bool)
	began := time.Now()
	rules.DefaultEvalIterationFunc(context.WithValue(ctx, commitFailedKey{}, failed), g, t)
	if ctx.Err() != nil {
		return false
	}
	if !evaluatedSince(g, began) {
		// The group was stopped (replaced by a new version of it) during
		// the evaluation: Prometheus's Group.Eval then returns without
		// evaluating the rules left, and without an error.
		ts.logger.Warn("a rule group stopped during its evaluation; the next iteration makes it up", "group", rules.GroupKey(g.File(), g.Name()), "at", t)
		return false
	}
	if failed.Load() || storeFailed(g) {
		// A sample the store did not take (its write failed, or a query
		// could not read): left unrecorded, for the next iteration to make
		// up from r:last rather than leave a gap.
		ts.logger.Warn("a rule group's evaluation met a failing store; the next iteration makes it up", "group", rules.GroupKey(g.File(), g.Name()), "at", t)
		return false
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ts.r.cfg.LeaseDuration)
	defer cancel()
	ok, err := l.setLast(lctx, t.UnixMilli())
	if err != nil {
		ts.logger.Warn("cannot record a rule group's evaluation", "group", rules.GroupKey(g.File(), g.Name()), "err", err)
		return true
	}
	return ok
}

// catchUp returns the aligned evaluation timestamps of g after last and
// before at, at most window before at (and at most maxCatchUpEvals, the
// latest): the evaluations a group that moved between replicas, or
// whose replica stopped, missed; and how many missed ones it leaves out
// (older than the window, or past maxCatchUpEvals). last 0 (never
// evaluated) misses none.
func catchUp(g *rules.Group, last int64, at time.Time, window time.Duration) (missed []time.Time, tooOld int) {
	iv := g.Interval()
	if last <= 0 || iv <= 0 {
		return nil, 0
	}
	// Aligned timestamps have nanoseconds, r:last milliseconds: the
	// first missed is the first at or after the millisecond after last.
	aligned := func(t time.Time) time.Time {
		a := g.EvalTimestamp(t.UnixNano())
		if a.Before(t) {
			a = a.Add(iv)
		}
		return a
	}
	lo := time.UnixMilli(last + 1)
	first := aligned(lo)
	if w := at.Add(-window); lo.Before(w) {
		lo = w
	}
	from := aligned(lo)
	end := from
	if at.Before(end) {
		end = at
	}
	if first.Before(end) {
		tooOld = int((end.Sub(first) + iv - 1) / iv)
	}
	for t := from; t.Before(at); t = t.Add(iv) {
		missed = append(missed, t)
	}
	if len(missed) > maxCatchUpEvals {
		tooOld += len(missed) - maxCatchUpEvals
		missed = missed[len(missed)-maxCatchUpEvals:]
	}
	return missed, tooOld
}

// loader is the rules manager's GroupLoader: a "file" is a rule
// namespace, its groups those of the namespace this replica holds (set
// before each Update).
type loader struct {
	parser parser.Parser
	groups map[string][]rulefmt.RuleGroup
}

func (l *loader) Load(identifier string, _ bool, _ model.ValidationScheme) (*rulefmt.RuleGroups, []error) {
	return &rulefmt.RuleGroups{Groups: l.groups[identifier]}, nil
}

func (l *loader) Parse(query string) (parser.Expr, error) { return l.parser.ParseExpr(query) }

// parses reports whether every expression of g parses; a group that does
// not is left out (the configuration API validates what it stores, so
// only a group written otherwise can fail).
func parses(p parser.Parser, g rulefmt.RuleGroup) error {
	for _, r := range g.Rules {
		if _, err := p.ParseExpr(r.Expr); err != nil {
			return err
		}
	}
	return nil
}

// commitFailedKey is the context key of the flag an evaluation's
// appenders set when a commit fails (appender.Commit).
type commitFailedKey struct{}

// noteCommitFailed sets ctx's commit-failed flag, if it has one.
func noteCommitFailed(ctx context.Context) {
	if f, ok := ctx.Value(commitFailedKey{}).(*atomic.Bool); ok {
		f.Store(true)
	}
}

// storeFailed reports whether a rule of g failed its last evaluation for
// a passing reason (transient): a query that could not read or did not
// finish. A rule that fails on its own (a bad expression, many-to-many
// matching) does not count: it would fail again, and its group must go
// on.
func storeFailed(g *rules.Group) bool {
	for _, r := range g.Rules() {
		err := r.LastError()
		if err == nil {
			continue
		}
		if transient(err) {
			return true
		}
	}
	return false
}

// transient reports whether an evaluation's error may not happen again:
// the store's (promql.ErrStorage, store.ErrUnavailable), or a query that
// timed out or was canceled (promql.ErrQueryTimeout, ErrQueryCanceled,
// a context's deadline or cancelation).
func transient(err error) bool {
	if _, ok := errors.AsType[promql.ErrStorage](err); ok {
		return true
	}
	if _, ok := errors.AsType[promql.ErrQueryTimeout](err); ok {
		return true
	}
	if _, ok := errors.AsType[promql.ErrQueryCanceled](err); ok {
		return true
	}
	return errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// evaluatedSince reports whether every rule of g was evaluated at or
// after began (each rule's evaluation timestamp is when its evaluation
// started): false when Group.Eval skipped some.
func evaluatedSince(g *rules.Group, began time.Time) bool {
	for _, r := range g.Rules() {
		if r.GetEvaluationTimestamp().Before(began) {
			return false
		}
	}
	return true
}
