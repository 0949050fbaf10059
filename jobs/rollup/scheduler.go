package rollup

import (
	"context"
	"log/slog"
	"maps"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// SchedulerOptions configure a Scheduler; zero values select defaults.
type SchedulerOptions struct {
	// Grace is how long after an hour ended its rollups are built, so
	// that late samples land first (as compaction's grace). Default 10m;
	// never less than MinBuildAge.
	Grace time.Duration
	// CheckInterval is how often the scheduler looks for due hours.
	// Default 30s.
	CheckInterval time.Duration
	// RefreshInterval is how old the record of the hours built that
	// queries read (Hours) may grow before it is read again from the
	// store: how long another process's writes into built hours may go
	// unseen by this one's queries. Default CheckInterval, at most 5s.
	RefreshInterval time.Duration
	// MaxHoursPerCycle bounds the hours one check builds. Default 24.
	MaxHoursPerCycle int
	Registerer       prometheus.Registerer
	Logger           *slog.Logger
	// Now is the clock of the hours due and of the writes checked
	// (NoteWritten); nil: time.Now. The Builder's should be the same.
	Now func() time.Time
	// Built, when set, is told of each hour (Unix s) whose rollups a
	// build wrote, first builds and builds again alike: for caches of
	// answers read from them.
	Built func(hour int64)
}

// Scheduler builds the rollups of each hour once it has ended plus the
// grace, the hours of the data written before (back to the hour before
// the oldest hour written), and the hours late writes made stale, as the
// progress row records them (progress.go), which every process sharing
// the tables reads and writes. Hours tells queries which hours are built;
// NoteWritten marks the hours a write made stale. It is safe for
// concurrent use.
type Scheduler struct {
	b     *Builder
	st    store.Store
	table string
	opts  SchedulerOptions

	read    sync.Mutex // one read of the progress row at a time
	startMu sync.Mutex
	started bool // the first check recorded the oldest hour written (under startMu)

	mu     sync.Mutex
	prog   *Progress // as last read, with this process's changes since; nil: not read yet
	hours  Hours     // prog's hours built (never changed once handed out)
	stale  bool      // hours is to compute again from prog
	readAt time.Time // when prog was read (time.Now)
	gen    uint64    // changes of prog by this process: a read under way when it changes is read again

	built, rebuilt, failures prometheus.Counter
	cellsWritten             prometheus.Counter
	leaseWait                prometheus.Counter
}

// NewScheduler returns a Scheduler building with b over st.
func NewScheduler(b *Builder, st store.Store, opts SchedulerOptions) *Scheduler {
	opts.Grace = max(opts.Grace, MinBuildAge)
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = 30 * time.Second
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = min(opts.CheckInterval, 5*time.Second)
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
	s := &Scheduler{b: b, st: st, opts: opts}
	if len(b.intervals) > 0 {
		s.table = b.progressTable()
	}
	s.built = prometheus.NewCounter(prometheus.CounterOpts{Name: "promhbase_rollup_hours_built_total", Help: "Hours whose rollups were built and recorded."})
	s.rebuilt = prometheus.NewCounter(prometheus.CounterOpts{Name: "promhbase_rollup_hours_rebuilt_total", Help: "Hours whose rollups were built again after late writes."})
	s.failures = prometheus.NewCounter(prometheus.CounterOpts{Name: "promhbase_rollup_failures_total", Help: "Builds of an hour's rollups that failed (retried at the next check)."})
	s.cellsWritten = prometheus.NewCounter(prometheus.CounterOpts{Name: "promhbase_rollup_cells_written_total", Help: "Rollup cells written."})
	s.leaseWait = prometheus.NewCounter(prometheus.CounterOpts{Name: "promhbase_rollup_lease_wait_seconds_total",
		Help: "Time builds waited for the build lease while another process (a replica, promhbase rollup, a deletion) built."})
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(s.built, s.rebuilt, s.failures, s.cellsWritten, s.leaseWait,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "promhbase_rollup_built_until_timestamp_seconds",
				Help: "End of the newest run of hours whose rollups are built and current (queries read raw samples for every hour not built)."},
				func() float64 { _, to := s.Span(); return float64(to / 1000) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "promhbase_rollup_built_from_timestamp_seconds",
				Help: "Start of the newest run of hours whose rollups are built and current; 0 when it reaches back to the oldest hour written."},
				func() float64 { f, _ := s.Span(); return float64(f / 1000) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "promhbase_rollup_hours_stale",
				Help: "Hours that writes changed since their rollups were built, waiting to be built again."},
				func() float64 {
					s.mu.Lock()
					defer s.mu.Unlock()
					if s.prog == nil {
						return 0
					}
					return float64(s.prog.StaleCount())
				}))
	}
	return s
}

// Hours returns the hours whose rollups are built and current, for
// queries: as recorded in the store, read again when older than the
// refresh interval, with this process's own changes since. When the store
// cannot be read, it returns what was read last (none before the first
// read: queries read raw samples), so that a query does not turn to raw
// samples that retention may have deleted.
func (s *Scheduler) Hours(ctx context.Context) Hours {
	if s.table == "" {
		return nil
	}
	if h, ok := s.fresh(); ok {
		return h
	}
	if err := s.refresh(ctx, true); err != nil {
		s.opts.Logger.Warn("rollups: cannot read which hours are built; using the hours read last", "err", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prog == nil {
		return nil
	}
	return s.hoursLocked()
}

// fresh returns the hours built when they were read within the refresh
// interval.
func (s *Scheduler) fresh() (Hours, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prog == nil || time.Since(s.readAt) > s.opts.RefreshInterval {
		return nil, false
	}
	return s.hoursLocked(), true
}

// hoursLocked returns prog's hours built (s.mu held).
func (s *Scheduler) hoursLocked() Hours {
	if s.stale {
		s.hours, s.stale = s.prog.Hours(), false
	}
	return s.hours
}

// refresh reads the progress row again. With ifOld, it does not when
// another call read it within the refresh interval meanwhile.
func (s *Scheduler) refresh(ctx context.Context, ifOld bool) error {
	s.read.Lock()
	defer s.read.Unlock()
	if _, ok := s.fresh(); ok && ifOld {
		return nil
	}
	for range 4 {
		s.mu.Lock()
		gen := s.gen
		s.mu.Unlock()
		at := time.Now()
		p, err := ReadProgress(ctx, s.st, s.table)
		if err != nil {
			return err
		}
		s.mu.Lock()
		if s.gen == gen {
			s.prog, s.stale, s.readAt = p, true, at
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock() // changed meanwhile: the read may miss the change
	}
	return nil // the changes are in prog; read at the next call
}

// change applies f to prog (nothing before the first read).
func (s *Scheduler) change(f func(p *Progress)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prog == nil {
		return
	}
	f(s.prog)
	s.stale = true
	s.gen++
}

// Span returns the newest run of hours built, in Unix ms: the windows that
// end in (from, to] are built and current. When the run reaches back to
// the hour before the oldest hour written, from is 0: no raw sample lies
// before it. Both are 0 when no hour is built or nothing is read yet.
func (s *Scheduler) Span() (from, to int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prog == nil {
		return 0, 0
	}
	h := s.hoursLocked()
	if len(h) == 0 {
		return 0, 0
	}
	last := h[len(h)-1]
	from = last.From * 1000
	if s.prog.HaveWant && last.From <= s.prog.Want-mapping.MaxTimespan {
		from = 0
	}
	return from, last.To * 1000
}

// NoteWritten tells the scheduler of rows written to the data table, once
// the store took them and before the write is acknowledged: the hours a
// build may have read (Settled) that they were written into, and the hour
// before each row with a sample at its first instant (whose last window
// holds it), are marked written in the progress row where they are built
// or being built, so that every process reads them raw until they are
// built again; a row older than the oldest hour written lowers it. Rows of
// younger hours cost a look at their key (and at their cells' qualifiers
// past the first minutes of an hour); the others a read of the progress
// row, and a check-and-put where an hour was built.
func (s *Scheduler) NoteWritten(ctx context.Context, l mapping.Layout, puts []store.Put) error {
	if s.table == "" {
		return nil
	}
	hours, oldest := settledHours(l, puts, s.opts.Now())
	if len(hours) == 0 {
		return nil
	}
	if err := s.lowerWant(ctx, oldest); err != nil {
		return err
	}
	// Before and after the store's: a read meanwhile may find them
	// built still.
	forget := func(p *Progress) {
		for _, h := range hours {
			day, bit := dayOf(h)
			if d, ok := p.days[day]; ok && d.built&bit != 0 {
				d.built &^= bit
				d.written |= bit
				p.days[day] = d
			}
		}
	}
	s.change(forget)
	_, err := s.b.MarkWritten(ctx, hours)
	s.change(forget)
	return err
}

// settledHours returns the hours puts make stale that a build may have
// read at now (see NoteWritten), and the oldest hour written among them
// (math.MaxInt64: none).
func settledHours(l mapping.Layout, puts []store.Put, now time.Time) (hours []int64, oldest int64) {
	oldest = 1<<63 - 1
	settled := lastSettled(now)
	last := int64(-1)
	for i := range puts {
		p := &puts[i]
		base, ok := l.BaseTimeOf(p.Row)
		if !ok {
			continue
		}
		h := int64(base)
		if h <= settled && h != last {
			oldest = min(oldest, h)
			if !slices.Contains(hours, h) {
				hours = append(hours, h)
			}
		}
		last = h
		// The hour before, when the row holds its last window's end.
		if prev := h - mapping.MaxTimespan; prev < 0 || prev > settled || (len(hours) > 0 && slices.Contains(hours, prev)) {
			continue
		}
		for _, c := range p.Cells {
			if mapping.MayHoldFirstInstant(c.Qualifier) {
				hours = append(hours, h-mapping.MaxTimespan)
				break
			}
		}
	}
	return hours, oldest
}

// lowerWant records hour as the oldest hour written when it is older than
// the one recorded.
func (s *Scheduler) lowerWant(ctx context.Context, hour int64) error {
	s.mu.Lock()
	known := s.prog != nil && s.prog.HaveWant && s.prog.Want <= hour
	s.mu.Unlock()
	if known || hour == 1<<63-1 {
		return nil
	}
	if err := LowerWant(ctx, s.st, s.table, hour); err != nil {
		return err
	}
	s.change(func(p *Progress) {
		if !p.HaveWant || hour < p.Want {
			p.Want, p.HaveWant = hour, true
		}
	})
	return nil
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

// Check reads the progress row, then builds the stale hours due, then the
// hours due not built, newest first, back to the hour before the oldest
// hour written (at most MaxHoursPerCycle hours in all). At the first
// check it records the oldest hour written: the data's oldest, or the
// hour after the one due on empty tables. It reports whether hours are
// left to build.
func (s *Scheduler) Check(ctx context.Context) (behind bool) {
	if s.table == "" {
		return false
	}
	due := s.due()
	if err := s.start(ctx, due); err != nil {
		s.failures.Inc()
		s.opts.Logger.Warn("rollups: cannot record the oldest hour written; retrying at the next check", "err", err)
		return false
	}
	if err := s.refresh(ctx, false); err != nil {
		s.failures.Inc()
		s.opts.Logger.Warn("rollups: cannot read progress; retrying at the next check", "err", err)
		return false
	}
	s.mu.Lock()
	todo, more := toBuild(s.prog, due, s.opts.MaxHoursPerCycle)
	s.mu.Unlock()
	for _, h := range todo {
		if ctx.Err() != nil || s.build(ctx, h) != nil {
			return false
		}
	}
	return more
}

// due returns the last hour due (Unix s): ended the grace ago.
func (s *Scheduler) due() int64 {
	return (s.opts.Now().Add(-s.opts.Grace).Unix()/mapping.MaxTimespan - 1) * mapping.MaxTimespan
}

// start records, once, the oldest hour written as the data's oldest hour
// (in case a process that took an older write stopped before recording
// it), or the hour after due when that is older or no data is there: the
// first start builds forwards from the hour due, and backwards over the
// data already there.
func (s *Scheduler) start(ctx context.Context, due int64) error {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if s.started {
		return nil
	}
	want := due + mapping.MaxTimespan
	oldest, found, err := s.b.OldestHour(ctx)
	if err != nil {
		return err
	}
	if found {
		want = min(want, oldest)
	}
	if err := LowerWant(ctx, s.st, s.table, want); err != nil {
		return err
	}
	s.started = true
	return nil
}

// toBuild returns the hours to build at most n of (Unix s): the stale
// hours up to due, then those not built from due back to the hour before
// p's oldest hour written, newest first; more reports hours left beyond
// n.
func toBuild(p *Progress, due int64, n int) (todo []int64, more bool) {
	days := slices.Sorted(maps.Keys(p.days))
	slices.Reverse(days)
	add := func(day int64, m uint32) bool {
		for ; m != 0; m &^= 1 << (31 - bits.LeadingZeros32(m)) {
			if len(todo) == n {
				return false
			}
			todo = append(todo, day+int64(31-bits.LeadingZeros32(m))*mapping.MaxTimespan)
		}
		return true
	}
	dueDay, _ := dayOf(due)
	for _, day := range days {
		if d := p.days[day]; day <= dueDay && !add(day, d.written&^d.built&hoursIn(day, 0, due)) {
			return todo, true
		}
	}
	lo := due
	if p.HaveWant {
		lo = max(p.Want-mapping.MaxTimespan, 0)
	}
	loDay, _ := dayOf(lo)
	for day := dueDay; day >= loDay; day -= mapping.DaySeconds {
		d := p.days[day]
		if !add(day, hoursIn(day, lo, due)&^(d.built|d.written)) {
			return todo, true
		}
	}
	return todo, false
}

// hoursIn returns the bits of the hours of day in [lo, hi].
func hoursIn(day, lo, hi int64) uint32 {
	var m uint32
	for i := range int64(24) {
		if h := day + i*mapping.MaxTimespan; h >= lo && h <= hi {
			m |= 1 << i
		}
	}
	return m
}

// build builds hour h and notes it built (when it was recorded).
func (s *Scheduler) build(ctx context.Context, h int64) error {
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
		return err
	}
	if stats.Recorded > 0 {
		s.built.Inc()
		s.change(func(p *Progress) {
			day, bit := dayOf(h)
			d := p.days[day]
			d.built |= bit
			d.building &^= bit
			d.written &^= bit
			p.days[day] = d
		})
	}
	s.rebuilt.Add(float64(stats.Rebuilt))
	s.opts.Logger.Info("built rollups", "hour", time.Unix(h, 0).UTC(), "series", stats.Series, "cells", stats.Cells, "recorded", stats.Recorded > 0,
		"duration", time.Since(start).Round(time.Millisecond), "lease_wait", stats.LeaseWait.Round(time.Millisecond))
	return nil
}
