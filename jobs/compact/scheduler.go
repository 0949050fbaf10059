package compact

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/internal/hashset"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// Defaults of SchedulerOptions.
const (
	DefaultGrace          = 10 * time.Minute
	DefaultMaxRowsPerHour = 1_000_000
	DefaultCheckInterval  = 30 * time.Second
	// rowTimeout bounds the compaction of one row once started, also when
	// the scheduler is stopping.
	rowTimeout = time.Minute
	// batchRows is the most rows a worker compacts at once (CompactRows).
	batchRows = 64
)

// SchedulerOptions configure a Scheduler. The zero value of every field
// selects its default.
type SchedulerOptions struct {
	// Grace is how long after an hour ended its rows are compacted, so
	// that samples arriving late (Prometheus retrying, remote-write queues
	// draining) land first. Default DefaultGrace.
	Grace time.Duration
	// MaxRowsPerHour bounds the rows remembered for one hour (11 to 21
	// bytes each: a hash in a table at most three quarters full, whatever
	// the key's length). Writes of rows beyond it are counted in
	// promhbase_compaction_rows_untracked_total (once per request that
	// writes such a row), logged once per hour, and the rows left for
	// `promhbase compact`. Default DefaultMaxRowsPerHour.
	MaxRowsPerHour int
	// Concurrency is how many rows are compacted at once. Default the
	// Compactor's.
	Concurrency int
	// CheckInterval is how often the scheduler looks for hours that are
	// due. Default DefaultCheckInterval.
	CheckInterval time.Duration
	// Registerer receives the scheduler's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger logs one line per hour compacted; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Scheduler compacts the rows this process wrote, once their hour ended
// plus a grace period. The write path tells it the rows it wrote
// (NoteRows); Run compacts them in the background. It is safe for
// concurrent use.
//
// Memory is bounded: at most MaxRowsPerHour rows per hour are remembered,
// and only for hours from the past up to one hour ahead (rows further in
// the future are not remembered). Rows of hours that are due are handed to
// the compactor at the next check, so at any time only the hours still
// open or in their grace period hold rows. Rows not compacted when the
// process stops (or beyond the cap) stay as they are, readable, until
// `promhbase compact` compacts them.
type Scheduler struct {
	c    *Compactor
	opts SchedulerOptions

	seed maphash.Seed // of the rows' hashes

	mu       sync.Mutex
	hours    map[uint32]*hourRows
	last     *hourRows // the hour NoteRows saw last
	pending  int       // rows remembered, all hours
	untrack  int       // rows not remembered since the last flush into the metric
	capHours []uint32  // hours whose cap was hit since the last log

	noted sync.Pool // NoteRows's *[]notedRow, reused

	m schedulerMetrics
}

// maxPooledNotes bounds the scratch NoteRows keeps for reuse (in rows).
const maxPooledNotes = 1 << 16

// notedRow is a row NoteRows saw: its hour, its keyed hash and its put.
type notedRow struct {
	hour uint32
	put  int32
	hash uint64
}

// hourRows are the rows remembered for one hour: not their keys but a
// keyed 64-bit hash of each (11 to 21 bytes a row, see hashset.Set) and the metrics they
// belong to. Once the hour is due, the rows of those metrics in the hour
// are scanned and the ones whose hash was remembered compacted. Two rows
// whose hashes agree (about 1 in 10^7 for a million rows an hour) leave
// one of them uncompacted, which reads the same and which `promhbase
// compact` compacts.
type hourRows struct {
	hour    uint32
	rows    hashset.Set // keyed hashes of the row keys
	metrics map[string]struct{}
	full    bool // the cap was hit (logged once)
	// tries is how many times the hour's rows were handed to the
	// compactor already: rows that failed (a region server died, a
	// region moved for too long) are handed again at the next check, up
	// to maxTries times in all.
	tries int
}

// maxTries is how many times the scheduler tries a row whose compaction
// failed before it leaves it to `promhbase compact`.
const maxTries = 5

type schedulerMetrics struct {
	compacted    prometheus.Counter
	unchanged    prometheus.Counter
	skipped      *prometheus.CounterVec
	cellsDeleted prometheus.Counter
	errors       prometheus.Counter
	untracked    prometheus.Counter
	pending      prometheus.GaugeFunc
	batches      prometheus.Counter
}

// NewScheduler returns a Scheduler that compacts with c. It registers its
// metrics (promhbase_compaction_*) on opts.Registerer.
func NewScheduler(c *Compactor, opts SchedulerOptions) (*Scheduler, error) {
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.MaxRowsPerHour <= 0 {
		opts.MaxRowsPerHour = DefaultMaxRowsPerHour
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = c.opts.Concurrency
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = DefaultCheckInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Scheduler{
		c: c, opts: opts,
		hours: map[uint32]*hourRows{},
		seed:  maphash.MakeSeed(),
	}
	s.m = schedulerMetrics{
		compacted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_compaction_rows_compacted_total", Help: "Rows rewritten into one compacted column.",
		}),
		unchanged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_compaction_rows_unchanged_total", Help: "Rows that needed no compaction (one data-point cell).",
		}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_compaction_rows_skipped_total", Help: "Rows left as they are, by reason.",
		}, []string{"reason"}),
		cellsDeleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_compaction_cells_deleted_total", Help: "Cells replaced by compacted columns.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_compaction_errors_total", Help: "Rows whose compaction failed (they stay readable; `promhbase compact` retries them).",
		}),
		untracked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_compaction_rows_untracked_total", Help: "Rows written but not remembered for compaction, counted per request that wrote them (hour cap hit, or hour more than an hour ahead); `promhbase compact` compacts them.",
		}),
		pending: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "promhbase_compaction_pending_rows", Help: "Rows remembered and waiting for their hour to end.",
		}, s.pendingRows),
		batches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_compaction_hours_total", Help: "Hour batches compacted.",
		}),
	}
	for _, r := range reasons() {
		s.m.skipped.WithLabelValues(r)
	}
	if opts.Registerer != nil {
		for _, col := range []prometheus.Collector{s.m.compacted, s.m.unchanged, s.m.skipped, s.m.cellsDeleted, s.m.errors, s.m.untracked, s.m.pending, s.m.batches} {
			if err := opts.Registerer.Register(col); err != nil {
				return nil, fmt.Errorf("register compaction metrics: %w", err)
			}
		}
	}
	return s, nil
}

func (s *Scheduler) pendingRows() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return float64(s.pending)
}

// NoteRows remembers the rows of puts for compaction. It is the write
// path's hook (ingest.RowNoter): per row a hash and one map lookup, and
// an insert the first time a row is seen in its hour. It never blocks on
// the store and keeps nothing of puts. The rows' hours and hashes are
// computed before the lock is taken, so that writers hold it only for the
// lookups.
func (s *Scheduler) NoteRows(puts []store.Put) {
	if len(puts) == 0 {
		return
	}
	np, _ := s.noted.Get().(*[]notedRow)
	if np == nil {
		np = new([]notedRow)
	}
	noted := (*np)[:0]
	for i := range puts {
		key := puts[i].Row
		hour, ok := s.c.opts.Layout.BaseTimeOf(key)
		if !ok {
			continue
		}
		noted = append(noted, notedRow{hour: hour, hash: maphash.Bytes(s.seed, key), put: int32(i)})
	}
	defer func() {
		if cap(noted) <= maxPooledNotes { // a huge request's scratch goes
			*np = noted[:0]
			s.noted.Put(np)
		}
	}()
	s.mu.Lock()
	for _, n := range noted {
		hr := s.last
		if hr == nil || hr.hour != n.hour {
			if hr = s.hourLocked(n.hour); hr == nil {
				s.untrack++
				continue
			}
			s.last = hr
		}
		if hr.rows.Has(n.hash) {
			continue
		}
		if hr.rows.Len() >= s.opts.MaxRowsPerHour {
			s.untrack++
			if !hr.full {
				hr.full = true
				s.capHours = append(s.capHours, n.hour)
			}
			continue
		}
		hr.rows.Add(n.hash)
		if metric := s.c.opts.Layout.MetricOf(puts[n.put].Row); !hasKey(hr.metrics, metric) {
			hr.metrics[string(metric)] = struct{}{}
		}
		s.pending++
	}
	untracked, capHours := s.untrack, s.capHours
	s.untrack, s.capHours = 0, nil
	s.mu.Unlock()
	if untracked > 0 {
		s.m.untracked.Add(float64(untracked))
	}
	for _, h := range capHours {
		s.opts.Logger.Warn("compaction: too many rows written in one hour to remember them all; the others stay uncompacted until `promhbase compact` runs over that hour",
			"hour", hourTime(h), "max_rows_per_hour", s.opts.MaxRowsPerHour)
	}
}

func hasKey(m map[string]struct{}, k []byte) bool {
	_, ok := m[string(k)]
	return ok
}

// hourLocked returns the rows of hour, creating them, or nil when the hour
// is too far ahead to remember rows for.
func (s *Scheduler) hourLocked(hour uint32) *hourRows {
	if hr := s.hours[hour]; hr != nil {
		return hr
	}
	if int64(hour) > s.opts.Now().Unix()+mapping.MaxTimespan {
		return nil
	}
	hr := &hourRows{hour: hour, metrics: map[string]struct{}{}}
	s.hours[hour] = hr
	return hr
}

// Run compacts due hours every CheckInterval until ctx ends. Then it lets
// the rows being compacted finish (each within a minute), logs how many
// remembered rows were left, and returns.
func (s *Scheduler) Run(ctx context.Context) {
	t := time.NewTicker(s.opts.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			left, hours := s.pending, len(s.hours)
			s.mu.Unlock()
			if left > 0 {
				s.opts.Logger.Info("compaction stopped; rows of hours not compacted yet stay as written until `promhbase compact` runs over them",
					"rows", left, "hours", hours)
			}
			return
		case <-t.C:
			s.CompactDue(ctx)
		}
	}
}

// CompactDue compacts, oldest first, the rows of every hour that ended at
// least Grace ago, and logs one line per hour. When ctx ends it stops
// taking rows; rows it did not reach are dropped (and logged).
func (s *Scheduler) CompactDue(ctx context.Context) {
	for _, hr := range s.takeDue() {
		if ctx.Err() != nil {
			s.opts.Logger.Info("compaction stopped; rows of an hour left uncompacted", "hour", hourTime(hr.hour), "rows", hr.rows.Len())
			continue
		}
		s.compactHour(ctx, hr)
	}
}

// takeDue removes the due hours from the scheduler and returns them, oldest
// first.
func (s *Scheduler) takeDue() []*hourRows {
	deadline := s.opts.Now().Add(-s.opts.Grace).Unix() - mapping.MaxTimespan
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []*hourRows
	for h, hr := range s.hours {
		if int64(h) <= deadline {
			due = append(due, hr)
			delete(s.hours, h)
			s.pending -= hr.rows.Len()
			if s.last == hr {
				s.last = nil
			}
		}
	}
	slices.SortFunc(due, func(a, b *hourRows) int { return int(int64(a.hour) - int64(b.hour)) })
	return due
}

// compactHour compacts the rows of one hour with Concurrency workers.
func (s *Scheduler) compactHour(ctx context.Context, hr *hourRows) {
	start := time.Now()
	metrics := make([]string, 0, len(hr.metrics))
	for m := range hr.metrics {
		metrics = append(metrics, m)
	}
	slices.Sort(metrics) // neighbouring rows share regions
	work := make(chan []byte)
	var (
		mu     sync.Mutex
		stats  Stats
		wg     sync.WaitGroup
		failed [][]byte
	)
	for range s.opts.Concurrency {
		wg.Go(func() {
			s.compactRows(ctx, work, func(keys [][]byte, results []Result, errs []error) {
				mu.Lock()
				defer mu.Unlock()
				for i, k := range keys {
					s.record(results[i], errs[i])
					stats.Add(results[i], errs[i])
					if errs[i] != nil {
						// A compaction that failed between its put and its
						// delete leaves the row with both (reads are
						// unchanged; OpenTSDB's fsck counts duplicates):
						// try the row again.
						failed = append(failed, k)
					}
				}
			})
		})
	}
	// The rows of the hour's metrics, those remembered handed to the
	// workers as the scans reach them.
	fed := 0
	var scanErr error
	h := int64(hr.hour)
feed:
	for _, m := range metrics {
		for _, r := range s.c.opts.Layout.MetricRanges([]byte(m), h, h) {
			req := store.ScanRequest{Table: s.c.opts.DataTable, Start: r.Start, Stop: r.Stop, Family: family}
			err := s.c.scanRows(ctx, req, func(row store.Row) error {
				if !hr.rows.Has(maphash.Bytes(s.seed, row.Key)) {
					return nil
				}
				select {
				case work <- bytes.Clone(row.Key):
					fed++
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if err != nil {
				scanErr = err
				break feed
			}
		}
	}
	close(work)
	wg.Wait()
	left := 0
	if scanErr != nil {
		// The rows the scans did not reach stay as written.
		left = max(hr.rows.Len()-fed, 0)
		if ctx.Err() == nil {
			s.m.errors.Inc()
			if stats.FirstError == nil {
				stats.FirstError = scanErr
			}
		}
	}

	retry := ""
	if ctx.Err() == nil && (scanErr != nil || len(failed) > 0) {
		if hr.tries+1 < maxTries {
			retry = "at the next check"
			s.retry(hr, scanErr != nil, failed)
		} else {
			retry = "no more: left for `promhbase compact`"
		}
	}

	s.m.batches.Inc()
	level := slog.LevelInfo
	if stats.Errors > 0 || left > 0 {
		level = slog.LevelWarn
	}
	attrs := []any{"hour", hourTime(hr.hour), "rows", hr.rows.Len(), "compacted", stats.Compacted, "cells_deleted", stats.CellsDeleted,
		"unchanged", stats.Unchanged, "skipped", stats.Skipped, "errors", stats.Errors, "duration", time.Since(start).Round(time.Millisecond)}
	if left > 0 {
		attrs = append(attrs, "left_uncompacted", left)
	}
	if stats.FirstError != nil {
		attrs = append(attrs, "first_error", stats.FirstError)
	}
	if retry != "" {
		attrs = append(attrs, "try", hr.tries+1, "retry", retry)
	}
	s.opts.Logger.Log(ctx, level, "compacted hour", attrs...)
}

// retry hands rows of hr to the next check again: all of them when the
// scans failed (the rows not reached are not known), else the failed
// ones, merged with the rows written into the hour since.
func (s *Scheduler) retry(hr *hourRows, all bool, failed [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.hours[hr.hour]
	if next == nil {
		next = &hourRows{hour: hr.hour, metrics: map[string]struct{}{}}
		s.hours[hr.hour] = next
	}
	next.tries = max(next.tries, hr.tries+1)
	before := next.rows.Len()
	if all {
		hr.rows.Each(func(h uint64) { next.rows.Add(h) })
		for m := range hr.metrics {
			next.metrics[m] = struct{}{}
		}
	} else {
		for _, k := range failed {
			next.rows.Add(maphash.Bytes(s.seed, k))
			if metric := s.c.opts.Layout.MetricOf(k); !hasKey(next.metrics, metric) {
				next.metrics[string(metric)] = struct{}{}
			}
		}
	}
	s.pending += next.rows.Len() - before
}

// record counts one row's outcome in the metrics.
// compactRows is a worker of compactHour: it compacts the rows of work
// in batches (the row it waits for and those already waiting, up to
// batchRows: CompactRows) until work closes, and hands each batch's
// outcomes to done.
func (s *Scheduler) compactRows(ctx context.Context, work <-chan []byte, done func(keys [][]byte, results []Result, errs []error)) {
	keys := make([][]byte, 0, batchRows)
	results, errs := make([]Result, batchRows), make([]error, batchRows)
	for k := range work {
		keys = append(keys[:0], k)
	more:
		for len(keys) < batchRows {
			select {
			case k, ok := <-work:
				if !ok {
					break more
				}
				keys = append(keys, k)
			default:
				break more
			}
		}
		// A batch once started finishes even if ctx ends, so that a stop
		// does not leave a row half done.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rowTimeout)
		clear(errs)
		clear(results)
		s.c.CompactRows(rctx, keys, results[:len(keys)], errs[:len(keys)])
		cancel()
		done(keys, results[:len(keys)], errs[:len(keys)])
	}
}

func (s *Scheduler) record(res Result, err error) {
	if err != nil {
		s.m.errors.Inc()
		return
	}
	switch res.Outcome {
	case Compacted:
		s.m.compacted.Inc()
		s.m.cellsDeleted.Add(float64(res.CellsDeleted))
	case Unchanged:
		s.m.unchanged.Inc()
	case Skipped:
		s.m.skipped.WithLabelValues(res.Reason).Inc()
	}
}

func hourTime(h uint32) string {
	return time.Unix(int64(h), 0).UTC().Format(time.RFC3339)
}
