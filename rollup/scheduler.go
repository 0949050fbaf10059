package rollup

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// Progress is where the hours built are recorded: one row of the table of
// the shortest built interval, key 0x00 (a key no data row has: every
// rollup key of every metric is longer, and no metric's key range holds
// it, so a TSD's scans never meet it), family t, two cells of u64
// big-endian Unix seconds:
//
//	promhbase.first   the first hour built
//	promhbase.next    the hour after the last one built
//	promhbase.want    the oldest hour written: the data's oldest hour at
//	                  the first start, lowered by writes into earlier
//	                  hours. The hours [want-1h, first) are built
//	                  backwards, hour by hour, in the background: a
//	                  window is (S, S+W], so the last window of the hour
//	                  before want holds a sample at want's first instant.
//
// The rollups of every hour in [first, next) are built, but for hours a
// late write made stale since (which only the process that took the
// write knows: see Scheduler.NoteRows).
var progressRow = []byte{0x00}

// IsProgressRow reports whether key is the progress row (which also holds
// the build lease): a scan over a whole rollup table meets it first, and
// it is no rollup row.
func IsProgressRow(key []byte) bool { return bytes.Equal(key, progressRow) }

const (
	progressFirst = "promhbase.first"
	progressNext  = "promhbase.next"
	progressWant  = "promhbase.want"
)

// ReadWant returns the oldest hour written (Unix s; ok false: none
// recorded).
func ReadWant(ctx context.Context, st store.Store, table string) (want int64, ok bool, err error) {
	row, err := st.Get(ctx, table, progressRow, Family)
	if err != nil {
		return 0, false, fmt.Errorf("rollup: read progress from %s: %w", table, err)
	}
	for _, c := range row.Cells {
		if string(c.Qualifier) == progressWant && len(c.Value) == 8 {
			return int64(binary.BigEndian.Uint64(c.Value)), true, nil
		}
	}
	return 0, false, nil
}

// LowerWant records want as the oldest hour written unless an earlier one
// is recorded.
func LowerWant(ctx context.Context, st store.Store, table string, want int64) error {
	for range 16 {
		old, ok, err := ReadWant(ctx, st, table)
		if err != nil || (ok && old <= want) {
			return err
		}
		var expected []byte
		if ok {
			expected = binary.BigEndian.AppendUint64(nil, uint64(old))
		}
		put := store.Put{Row: progressRow, Cells: []store.Cell{{Family: []byte(Family), Qualifier: []byte(progressWant),
			Value: binary.BigEndian.AppendUint64(nil, uint64(want))}}}
		done, err := st.CheckAndPut(ctx, table, put, Family, progressWant, expected)
		if err != nil {
			return fmt.Errorf("rollup: record progress in %s: %w", table, err)
		}
		if done {
			return nil
		}
	}
	return fmt.Errorf("rollup: record progress in %s: too many concurrent updates", table)
}

// ReadProgress returns the hours built, [first, next) (Unix s), as
// recorded in st; ok is false when nothing is recorded.
func ReadProgress(ctx context.Context, st store.Store, table string) (first, next int64, ok bool, err error) {
	row, err := st.Get(ctx, table, progressRow, Family)
	if err != nil {
		return 0, 0, false, fmt.Errorf("rollup: read progress from %s: %w", table, err)
	}
	var haveFirst, haveNext bool
	for _, c := range row.Cells {
		if len(c.Value) != 8 {
			continue
		}
		v := int64(binary.BigEndian.Uint64(c.Value))
		switch string(c.Qualifier) {
		case progressFirst:
			first, haveFirst = v, true
		case progressNext:
			next, haveNext = v, true
		}
	}
	return first, next, haveFirst && haveNext && first <= next, nil
}

// RecordProgress records that the hours [from, to) are built, extending
// the recorded span where it meets it (or starting it when none is
// recorded), with check-and-puts, so that processes recording at once do
// not undo each other. A built span that does not meet the recorded one
// is not recorded.
func RecordProgress(ctx context.Context, st store.Store, table string, from, to int64) (first, next int64, err error) {
	for range 16 {
		f, n, ok, err := ReadProgress(ctx, st, table)
		if err != nil {
			return 0, 0, err
		}
		nf, nn := f, n
		switch {
		case !ok:
			nf, nn = from, to
		case from <= n && to >= f:
			nf, nn = min(f, from), max(n, to)
		}
		if ok && nf == f && nn == n {
			return f, n, nil
		}
		done := true
		for _, c := range []struct {
			q        string
			old, new int64
			had      bool
		}{{progressFirst, f, nf, ok}, {progressNext, n, nn, ok}} {
			if c.had && c.old == c.new {
				continue
			}
			var expected []byte
			if c.had {
				expected = binary.BigEndian.AppendUint64(nil, uint64(c.old))
			}
			put := store.Put{Row: progressRow, Cells: []store.Cell{{Family: []byte(Family), Qualifier: []byte(c.q),
				Value: binary.BigEndian.AppendUint64(nil, uint64(c.new))}}}
			okPut, err := st.CheckAndPut(ctx, table, put, Family, c.q, expected)
			if err != nil {
				return 0, 0, fmt.Errorf("rollup: record progress in %s: %w", table, err)
			}
			if !okPut {
				done = false
				break
			}
		}
		if done {
			if err := store.Sync(ctx, st); err != nil {
				return 0, 0, fmt.Errorf("rollup: record progress in %s: %w", table, err)
			}
			return nf, nn, nil
		}
	}
	return 0, 0, fmt.Errorf("rollup: record progress in %s: too many concurrent updates", table)
}

// SchedulerOptions configure a Scheduler; zero values select defaults.
type SchedulerOptions struct {
	// Grace is how long after an hour ended its rollups are built, so
	// that late samples land first (as compaction's grace). Default 10m.
	Grace time.Duration
	// CheckInterval is how often the scheduler looks for due hours.
	// Default 30s.
	CheckInterval time.Duration
	// MaxHoursPerCycle bounds the hours one check builds. Default 24.
	MaxHoursPerCycle int
	Registerer       prometheus.Registerer
	Logger           *slog.Logger
	Now              func() time.Time
	// Built, when set, is told of each hour (Unix s) whose rollups a
	// build wrote, first builds and builds again alike: for caches of
	// answers read from them.
	Built func(hour int64)
}

// Scheduler builds the rollups of each hour once it has ended plus the
// grace, from where the recorded progress ends (at the first start: the
// hour before the current one), and rebuilds the hours that late writes
// changed. Covered tells the query path how far the rollups reach. It is
// safe for concurrent use.
type Scheduler struct {
	b     *Builder
	st    store.Store
	table string
	opts  SchedulerOptions

	mu          sync.Mutex
	first, next int64              // recorded progress (Unix s); next 0: not read yet
	want        int64              // the oldest hour written (Unix s): [want-1h, first) is to build
	wantNoted   bool               // want was lowered by NoteRows: record it
	dirty       map[int64]struct{} // built hours a write changed since
	building    int64              // the hour being built (-1: none): a write into it makes it stale
	lastNoted   int64              // the hour NoteRows saw last (-1: none)

	built, rebuilt, failures prometheus.Counter
	cellsWritten             prometheus.Counter
	leaseWait                prometheus.Counter
}

// NewScheduler returns a Scheduler building with b over st.
func NewScheduler(b *Builder, st store.Store, opts SchedulerOptions) *Scheduler {
	if opts.Grace <= 0 {
		opts.Grace = 10 * time.Minute
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = 30 * time.Second
	}
	if opts.MaxHoursPerCycle <= 0 {
		opts.MaxHoursPerCycle = 24
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Scheduler{b: b, st: st, opts: opts, dirty: map[int64]struct{}{}, lastNoted: -1, building: -1}
	if len(b.intervals) > 0 {
		s.table = b.intervals[0].Table
	}
	s.built = prometheus.NewCounter(prometheus.CounterOpts{Name: "promhbase_rollup_hours_built_total", Help: "Hours whose rollups were built."})
	s.rebuilt = prometheus.NewCounter(prometheus.CounterOpts{Name: "promhbase_rollup_hours_rebuilt_total", Help: "Hours whose rollups were built again after late writes."})
	s.failures = prometheus.NewCounter(prometheus.CounterOpts{Name: "promhbase_rollup_failures_total", Help: "Builds of an hour's rollups that failed (retried at the next check)."})
	s.cellsWritten = prometheus.NewCounter(prometheus.CounterOpts{Name: "promhbase_rollup_cells_written_total", Help: "Rollup cells written."})
	s.leaseWait = prometheus.NewCounter(prometheus.CounterOpts{Name: "promhbase_rollup_lease_wait_seconds_total",
		Help: "Time builds waited for the build lease while another process (a replica, promhbase rollup, a deletion) built."})
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(s.built, s.rebuilt, s.failures, s.cellsWritten, s.leaseWait,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "promhbase_rollup_built_until_timestamp_seconds",
				Help: "End of the span of hours whose rollups are built (queries read raw samples after it)."},
				func() float64 { return float64(s.Covered() / 1000) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "promhbase_rollup_built_from_timestamp_seconds",
				Help: "Start of the span of hours whose rollups are built (queries read raw samples before it)."},
				func() float64 { f, _ := s.Span(); return float64(f / 1000) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "promhbase_rollup_hours_stale",
				Help: "Built hours that late writes changed, waiting to be built again."},
				func() float64 { s.mu.Lock(); defer s.mu.Unlock(); return float64(len(s.dirty)) }))
	}
	return s
}

// Span returns the rollups' reach in Unix ms: the windows that end in
// (from, to] are built and current (to stops at the first stale hour).
// When every hour wanted is built (the span reaches back to the oldest
// data known), from is 0: no raw sample lies before the span. Before the
// first check both are 0.
func (s *Scheduler) Span() (from, to int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	to = s.next
	for h := range s.dirty {
		to = min(to, h)
	}
	if to < s.first {
		to = s.first
	}
	from = s.first * 1000
	if s.next > 0 && s.first <= s.want-mapping.MaxTimespan && to > s.first {
		from = 0
	}
	return from, to * 1000
}

// Covered is Span's end.
func (s *Scheduler) Covered() int64 {
	_, to := s.Span()
	return to
}

// NoteRows tells the scheduler of rows written to the data table: a row
// of hour H makes the rollups of H and of the hour before (whose last
// window holds H's first millisecond) stale where they are built, until
// the next check builds them again; a row older than every hour written
// before lowers the oldest hour written, and the check builds the hours
// before the built span backwards.
func (s *Scheduler) NoteRows(l mapping.Layout, puts []store.Put) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == 0 {
		return
	}
	for _, p := range puts {
		base, ok := l.BaseTimeOf(p.Row)
		if !ok {
			continue
		}
		h := int64(base)
		if s.building >= 0 && (h == s.building || h-mapping.MaxTimespan == s.building) {
			// The build may have read the row before the write.
			s.dirty[s.building] = struct{}{}
		}
		if h == s.lastNoted || h > s.next {
			continue
		}
		s.lastNoted = h
		if h < s.want {
			s.want, s.wantNoted = h, true
		}
		for _, b := range []int64{h, h - mapping.MaxTimespan} {
			if b >= s.first && b < s.next {
				s.dirty[b] = struct{}{}
			}
		}
	}
}

// Run checks for due hours every CheckInterval until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	t := time.NewTicker(s.opts.CheckInterval)
	defer t.Stop()
	for {
		if s.Check(ctx) && ctx.Err() == nil {
			continue // behind: go on at once
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Check builds the stale hours, then the due hours after the recorded
// progress, then the wanted hours before it, backwards (at most
// MaxHoursPerCycle hours in all), and records the progress. It reports
// whether hours are left to build.
func (s *Scheduler) Check(ctx context.Context) (behind bool) {
	if s.table == "" {
		return false
	}
	due := (s.opts.Now().Add(-s.opts.Grace).Unix()/mapping.MaxTimespan - 1) * mapping.MaxTimespan // the last hour due
	s.mu.Lock()
	next := s.next
	dirty := make([]int64, 0, len(s.dirty))
	for h := range s.dirty {
		dirty = append(dirty, h)
	}
	s.mu.Unlock()
	slices.Sort(dirty)
	if next == 0 {
		first, n, ok, err := ReadProgress(ctx, s.st, s.table)
		if err != nil {
			s.failures.Inc()
			s.opts.Logger.Warn("rollups: cannot read progress; retrying at the next check", "err", err)
			return false
		}
		// The first check of this process: the data's oldest hour, in
		// case a write older than the oldest recorded was taken by a
		// process that stopped before recording it.
		oldest, found, err := s.b.OldestHour(ctx)
		if err == nil && found && oldest <= max(due, n) {
			err = LowerWant(ctx, s.st, s.table, oldest)
		}
		if !ok && err == nil {
			// The first start: forwards from the hour due now, and
			// backwards over the data already there.
			first, n, err = RecordProgress(ctx, s.st, s.table, due, due)
		}
		if err != nil {
			s.failures.Inc()
			s.opts.Logger.Warn("rollups: cannot record progress; retrying at the next check", "err", err)
			return false
		}
		want, wok, err := ReadWant(ctx, s.st, s.table)
		if err != nil {
			s.failures.Inc()
			return false
		}
		if !wok {
			// Nothing written before the span: no hour before it
			// to build.
			want = first + mapping.MaxTimespan
		}
		s.mu.Lock()
		s.first, s.next, s.want = first, n, min(want, first+mapping.MaxTimespan)
		s.mu.Unlock()
		next = n
	}
	for _, h := range dirty {
		if ctx.Err() != nil {
			return false
		}
		done := s.startBuilding(h)
		s.mu.Lock()
		delete(s.dirty, h)
		s.mu.Unlock()
		_, err := s.buildHour(ctx, h)
		done()
		if err != nil {
			s.mu.Lock()
			s.dirty[h] = struct{}{}
			s.mu.Unlock()
			return false
		}
		s.rebuilt.Inc()
	}
	built := 0
	for h := next; h <= due && built < s.opts.MaxHoursPerCycle; h += mapping.MaxTimespan {
		if ctx.Err() != nil {
			return false
		}
		if !s.buildAndRecord(ctx, h) {
			return false
		}
		built++
	}
	// Backwards over the wanted hours.
	s.mu.Lock()
	want, first, noted := s.want, s.first, s.wantNoted
	s.wantNoted = false
	s.mu.Unlock()
	if noted {
		if err := LowerWant(ctx, s.st, s.table, want); err != nil {
			s.mu.Lock()
			s.wantNoted = true
			s.mu.Unlock()
		}
	}
	for h := first - mapping.MaxTimespan; h >= want-mapping.MaxTimespan && h >= 0 && built < s.opts.MaxHoursPerCycle; h -= mapping.MaxTimespan {
		if ctx.Err() != nil {
			return false
		}
		if !s.buildAndRecord(ctx, h) {
			return false
		}
		built++
	}
	// Another process (a replica, `promhbase rollup`) may have built
	// further, or wants earlier hours.
	if first, n, ok, err := ReadProgress(ctx, s.st, s.table); err == nil && ok {
		s.mu.Lock()
		s.first, s.next = min(s.first, first), max(s.next, n)
		s.mu.Unlock()
	}
	if want, ok, err := ReadWant(ctx, s.st, s.table); err == nil && ok {
		s.mu.Lock()
		s.want = min(s.want, want)
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return built > 0 && (s.next <= due || s.first > max(s.want-mapping.MaxTimespan, 0))
}

// buildAndRecord builds hour h and records it as built.
func (s *Scheduler) buildAndRecord(ctx context.Context, h int64) bool {
	done := s.startBuilding(h)
	defer done()
	if _, err := s.buildHour(ctx, h); err != nil {
		return false
	}
	first, n, err := RecordProgress(ctx, s.st, s.table, h, h+mapping.MaxTimespan)
	if err != nil {
		s.failures.Inc()
		s.opts.Logger.Warn("rollups: cannot record progress; retrying at the next check", "err", err)
		return false
	}
	s.built.Inc()
	s.mu.Lock()
	s.first, s.next = first, n
	s.mu.Unlock()
	return true
}

// building marks h as the hour being built until done is called: a write
// into it meanwhile (or into the next hour's first millisecond) makes it
// stale, since the build may have read its rows before the write; done
// is called once the hour counts as built (recorded), so that no write
// falls between.
func (s *Scheduler) startBuilding(h int64) (done func()) {
	s.mu.Lock()
	s.building, s.lastNoted = h, -1
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.building = -1
		s.mu.Unlock()
	}
}

func (s *Scheduler) buildHour(ctx context.Context, h int64) (BuildStats, error) {
	start := time.Now()
	stats, err := s.b.BuildHour(ctx, h)
	if s.opts.Built != nil {
		s.opts.Built(h)
	}
	s.cellsWritten.Add(float64(stats.Cells))
	s.leaseWait.Add(stats.LeaseWait.Seconds())
	if err != nil {
		if ctx.Err() == nil {
			s.failures.Inc()
			s.opts.Logger.Warn("rollups: build of an hour failed; retrying at the next check", "hour", time.Unix(h, 0).UTC(), "err", err)
		}
		return stats, err
	}
	s.opts.Logger.Info("built rollups", "hour", time.Unix(h, 0).UTC(), "series", stats.Series, "cells", stats.Cells,
		"duration", time.Since(start).Round(time.Millisecond), "lease_wait", stats.LeaseWait.Round(time.Millisecond))
	return stats, nil
}
