// Package retention deletes samples once they are older than the
// retention time (--storage.retention.time), or, on a store that can tell
// its size (the embedded store), the oldest hours while the tables take
// more than the retention size (--storage.retention.size), as Prometheus
// drops its oldest blocks.
//
// Age is the samples' own: a row of the data table holds one series' hour
// (row key [salt] metric-UID hour tags, the hour as 4 bytes of Unix
// seconds), and a row expires once its whole hour is older than now minus
// the retention time. A sample written today with a timestamp of last year
// (a backfill) expires by its timestamp, at once. Samples live on up to an
// hour past the retention time, since rows go whole, never cut: the hour
// that holds the cutoff stays until it has entirely passed.
//
// A cycle (Retention.Cycle; Run repeats it every Options.Interval, one
// minute by default) walks the keys of the data table metric by metric,
// each salt bucket: it seeks the first row of a metric and, when that
// row's hour is before the cutoff, deletes the metric's rows
// [prefix‖hour 0, prefix‖cutoff) with store.DeleteRows (one range delete
// on the embedded store; a scan and deletes in batches elsewhere), then
// seeks past the metric. Every metric in the table is found this way,
// also those another writer (an OpenTSDB TSD, with random metric UIDs)
// created, and the work is a few seeks a metric when nothing expired. The
// exemplar table, whose rows have the data rows' keys, is walked the same
// way; in the series index (tsdb-index) the rows of the days entirely
// before the cutoff go (rows 'K', 'N' and 'V' of those days), and the
// index writer of this process (Options.IndexWriter) forgets having
// written them, so that samples written into those days again are
// indexed again. UIDs (tsdb-uid), metric metadata and the TSMeta rows of
// tsdb-meta, which are not kept by time, stay. Then, on a store.Reclaimer (the embedded store),
// the space is given back to the filesystem at once.
//
// On HBase a family TTL cannot do this job: it counts from each cell's
// HBase timestamp, the time it was written, so backfilled samples would
// live a whole TTL from their write. Deleting by the hour in the row key
// expires samples by their own time, and also expires the rows and cells
// OpenTSDB's TSDs wrote into the same tables (annotations in a row go with
// it). Reads stop seeing deleted rows at once; HBase frees their space at
// its next major compaction of each region.
//
// With a size limit, a cycle first applies the time cutoff, then, while
// the tables (data, exemplar and index, as store.TableSizer counts them)
// take more than the limit, moves the cutoff forward over the oldest hours
// present, estimating from the bytes per hour how many to drop, at most
// maxSizeSteps times a cycle; the hour being written now is never
// dropped.
//
// Each resolution keeps its own time: raw samples (the data and exemplar
// tables) Options.RawTime when shorter, each rollup table the shorter of
// its RollupTable.Time and Options.Time, its rows going whole once their
// row span has expired.
package retention

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// DefaultInterval is how often Run runs a cycle.
const DefaultInterval = time.Minute

// maxSizeSteps bounds the times one cycle moves the cutoff to get under
// the size limit; the next cycle goes on.
const maxSizeSteps = 8

// IndexForgetter is the series index writer of this process
// (index.Writer): told the days whose cells retention deleted, it writes
// their cells again when a series is written into those days anew (a
// backfill older than the retention, until the next cycle deletes it).
type IndexForgetter interface {
	Forget(fromDay, toDay uint32)
}

// Options configure a Retention. Time and Size of zero keep everything.
type Options struct {
	// Time is the retention time: an hour of rows is deleted once it has
	// entirely passed now minus Time. 0 keeps samples whatever their age.
	Time time.Duration
	// Size, in bytes, bounds what the data, exemplar and index tables take
	// on disk: past it the oldest hours go. Only on a store.TableSizer
	// (the embedded store); 0 sets no bound.
	Size int64
	// RawTime, when shorter than Time (or Time is 0), is the retention
	// of raw samples: the data and exemplar tables (Thanos's
	// --retention.resolution-raw); the series index and the rollups keep
	// Time. 0: Time.
	RawTime time.Duration
	// Rollups are the rollup tables and their retention (see
	// RollupTable).
	Rollups []RollupTable
	// Interval is how often Run runs a cycle; DefaultInterval when 0.
	Interval time.Duration
	// DataTable is the data table, "tsdb" when empty. ExemplarTable and
	// IndexTable (the series index's tsdb-index) are left alone when
	// empty.
	DataTable, ExemplarTable, IndexTable string
	// Layout is the row-key layout of the data and exemplar tables.
	Layout mapping.Layout
	// IndexWriter, when set, is the series index writer of this process:
	// it forgets having written the cells of the days retention deleted.
	IndexWriter IndexForgetter
	// Registerer takes the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger takes one line a cycle; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Labels returns the labels of the series of a row, for the streams
	// of a Policy (SetPolicy); nil: no streams.
	Labels LabelsFunc
	// Deleted, when set, is told after each cycle (failed ones too) the
	// time before which that cycle may have deleted samples of any table
	// (the latest of its cutoffs): for caches of answers that read them.
	Deleted func(before time.Time)
}

// RollupTable is a rollup table and its retention. A row of it is deleted
// once its whole row span (a day of 5m rollups, a month of 1h rollups) is
// older than now minus the shorter of Time and Options.Time (either 0:
// the other; both 0: kept), so rollups live up to a row span past it.
type RollupTable struct {
	Table string
	Span  mapping.RowSpan
	Time  time.Duration
}

// retentionOf is the shorter of two retention times, 0 meaning none.
func retentionOf(a, b time.Duration) time.Duration {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// Retention deletes what is older than the retention. It is safe for
// concurrent use; cycles run one at a time.
type Retention struct {
	st   store.Store
	opts Options

	cycleMu sync.Mutex
	policy  atomic.Pointer[Policy]
	// passDone holds, by table, what the last stream pass over it
	// applied (streamPass); under cycleMu.
	passDone map[string]string
	// streamHi is the latest cutoff of the streams' last cycle (Unix
	// seconds; 0: no streams), backfilled whether rows were written
	// below it since (NoteWritten).
	streamHi   atomic.Int64
	backfilled atomic.Bool

	cutoff       prometheus.Gauge
	oldest       prometheus.Gauge
	rowsDeleted  *prometheus.CounterVec
	rangesDone   *prometheus.CounterVec
	cycles       prometheus.Counter
	failures     prometheus.Counter
	storeBytes   prometheus.Gauge
	cycleSeconds prometheus.Gauge
}

// New returns a Retention over st. It fails when the layout is not valid,
// Time or Size is negative, or Size is set and st cannot tell its size
// (not a store.TableSizer).
func New(st store.Store, opts Options) (*Retention, error) {
	if opts.Time < 0 {
		return nil, fmt.Errorf("retention time %s is negative", opts.Time)
	}
	if opts.Size < 0 {
		return nil, fmt.Errorf("retention size %d bytes is negative", opts.Size)
	}
	if opts.Size > 0 {
		if _, ok := store.As[store.TableSizer](st); !ok {
			return nil, fmt.Errorf("retention size %d bytes: the store cannot tell its size (only the embedded store can)", opts.Size)
		}
	}
	if err := opts.Layout.Validate(); err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.DataTable == "" {
		opts.DataTable = mapping.DefaultDataTable
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Retention{st: st, opts: opts, passDone: map[string]string{},
		cutoff: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "promhbase_retention_cutoff_timestamp_seconds",
			Help: "The retention cutoff of the last cycle (Unix seconds, an hour boundary): rows of earlier hours are deleted. 0 before the first cycle or when nothing is cut.",
		}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "promhbase_oldest_sample_timestamp_seconds",
			Help: "The hour (Unix seconds) of the oldest row of the data table after the last retention cycle; 0 when the table is empty.",
		}),
		rowsDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_retention_rows_deleted_total",
			Help: "Rows deleted by retention, by table, where the store counts them (a store that deletes a range in one step does not; see promhbase_retention_ranges_deleted_total).",
		}, []string{"table"}),
		rangesDone: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_retention_ranges_deleted_total",
			Help: "Row ranges (a metric's expired hours in one salt bucket, or an index kind's expired days) deleted by retention, by table.",
		}, []string{"table"}),
		cycles: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_retention_cycles_total", Help: "Retention cycles run.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_retention_cycle_failures_total", Help: "Retention cycles that failed; the next cycle goes on where they stopped.",
		}),
		storeBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "promhbase_retention_store_bytes", Help: "The bytes of the data, exemplar and index tables on disk at the end of the last cycle (with a retention size only).",
		}),
		cycleSeconds: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "promhbase_retention_last_cycle_duration_seconds", Help: "How long the last retention cycle took.",
		}),
	}
	if opts.Registerer != nil {
		for _, c := range []prometheus.Collector{r.cutoff, r.oldest, r.rowsDeleted, r.rangesDone, r.cycles, r.failures, r.storeBytes, r.cycleSeconds} {
			if err := opts.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("register retention metrics: %w", err)
			}
		}
	}
	return r, nil
}

// Enabled reports whether the options or the policy in force delete
// anything (a time, a size or a stream set).
func (r *Retention) Enabled() bool {
	if r.opts.Time > 0 || r.opts.Size > 0 || r.opts.RawTime > 0 {
		return true
	}
	if p := r.policy.Load(); p != nil && (p.Time > 0 || len(p.Streams) > 0) {
		return true
	}
	for _, t := range r.opts.Rollups {
		if t.Time > 0 {
			return true
		}
	}
	return false
}

// Result says what a cycle did.
type Result struct {
	// Cutoff is the hour boundary before which rows were deleted (the
	// later of the time cutoff and the size cutoff); zero when nothing
	// was cut.
	Cutoff time.Time
	// BySize reports whether the size limit moved the cutoff past the
	// time cutoff.
	BySize bool
	// Oldest is the hour of the oldest row left in the data table; zero
	// when it is empty.
	Oldest time.Time
	// RowsDeleted counts the rows deleted by table, where the store
	// counts them (not on a store.RowRangeDeleter).
	RowsDeleted map[string]int64
	// Ranges counts the row ranges deleted by table.
	Ranges map[string]int
	// Bytes is the tables' size at the end of the cycle (with a size
	// limit only).
	Bytes int64
}

// measureEvery is how many Intervals apart Run's cycles are when the
// options delete nothing: such a cycle only finds the oldest hour kept
// (promhbase_oldest_sample_timestamp_seconds), a few seeks a metric.
const measureEvery = 15

// Run runs a cycle every Interval until ctx ends; the first at once. A
// failed cycle is logged and counted, and the next one goes on. When the
// options delete nothing, the cycles only measure the oldest hour kept,
// every measureEvery Intervals.
func (r *Retention) Run(ctx context.Context) {
	t := time.NewTicker(r.opts.Interval)
	defer t.Stop()
	for tick := 0; ; tick++ {
		// Asked at every tick: a policy set at runtime may enable it.
		if r.Enabled() || tick%measureEvery == 0 {
			_, _ = r.Cycle(ctx) // logged and counted by Cycle
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Cycle runs one retention pass now (see the package doc) and logs one
// line. On error some ranges may have been deleted; the next cycle
// deletes the rest.
func (r *Retention) Cycle(ctx context.Context) (Result, error) {
	r.cycleMu.Lock()
	defer r.cycleMu.Unlock()
	began := time.Now()
	res, reach, err := r.cycle(ctx)
	if reach > 0 && r.opts.Deleted != nil {
		r.opts.Deleted(time.Unix(reach, 0))
	}
	r.cycles.Inc()
	r.cycleSeconds.Set(time.Since(began).Seconds())
	attrs := []any{"cutoff", timeOrNone(res.Cutoff), "by_size", res.BySize, "oldest", timeOrNone(res.Oldest),
		"ranges", res.Ranges, "rows_deleted", res.RowsDeleted, "took", time.Since(began).Round(time.Millisecond)}
	if r.opts.Size > 0 {
		attrs = append(attrs, "bytes", res.Bytes, "size_limit", r.opts.Size)
	}
	if err != nil {
		if ctx.Err() != nil {
			// Stopped, not failed: the next cycle goes on.
			r.opts.Logger.Debug("retention cycle stopped", append(attrs, "err", err)...)
			return res, err
		}
		r.failures.Inc()
		r.opts.Logger.Warn("retention cycle failed", append(attrs, "err", err)...)
		return res, err
	}
	if !res.Oldest.IsZero() {
		r.oldest.Set(float64(res.Oldest.Unix()))
	} else {
		r.oldest.Set(0)
	}
	if len(res.Ranges) > 0 {
		r.opts.Logger.Info("retention cycle", attrs...)
	} else {
		r.opts.Logger.Debug("retention cycle", attrs...)
	}
	return res, nil
}

func timeOrNone(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339)
}

// cycle is Cycle without the bookkeeping.
//
// reach is the latest cutoff of any table (Unix seconds; 0: none).
func (r *Retention) cycle(ctx context.Context) (res Result, reach int64, err error) {
	res, err = r.cycleTables(ctx, &reach)
	return res, reach, err
}

func (r *Retention) cycleTables(ctx context.Context, reach *int64) (Result, error) {
	res := Result{RowsDeleted: map[string]int64{}, Ranges: map[string]int{}}
	now := r.opts.Now()
	h := r.horizonNow(now)
	// What goes for every series alike is cut by row ranges; what the
	// streams expire earlier, row by row (streamPass).
	longest := h.longest()
	nowHour := now.Unix() / mapping.MaxTimespan * mapping.MaxTimespan
	cutoff := h.hourCutoff(longest, r.opts.RawTime) // Unix seconds, an hour boundary; 0: none
	// The series index keeps what rollups need: the longest time.
	indexCutoff := h.hourCutoff(longest, 0)
	rollupRanges := 0
	for _, rt := range r.opts.Rollups {
		before := res.Ranges[rt.Table]
		spanOf := func(t time.Duration) int64 { return h.spanCutoff(t, rt) }
		if base := spanOf(longest); base > 0 {
			*reach = max(*reach, base)
			if _, err := r.walk(ctx, rt.Table, base, &res); err != nil && !errors.Is(err, store.ErrTableNotFound) {
				return res, err
			}
		}
		if err := r.streamPass(ctx, h, rt.Table, spanOf(longest), spanOf, &res); err != nil {
			return res, err
		}
		rollupRanges += res.Ranges[rt.Table] - before
	}
	if rc, ok := store.As[store.Reclaimer](r.st); ok && rollupRanges > 0 {
		if err := rc.Reclaim(ctx); err != nil {
			return res, fmt.Errorf("reclaim the space of expired rollups: %w", err)
		}
	}
	*reach = max(*reach, cutoff)
	oldest, err := r.cut(ctx, cutoff, indexCutoff, &res)
	if err != nil {
		return res, err
	}
	if err := r.cutStreams(ctx, h, cutoff, indexCutoff, reach, &res); err != nil {
		return res, err
	}
	if r.opts.Size > 0 {
		for step := 0; ; step++ {
			total, err := r.tableBytes(ctx)
			if err != nil {
				return res, err
			}
			res.Bytes = total
			r.storeBytes.Set(float64(total))
			if total <= r.opts.Size || oldest < 0 || step == maxSizeSteps {
				break
			}
			// Hours to drop: the excess over the bytes an hour takes on
			// average over the hours present, at least one; never the
			// hour being written.
			span := max(1, (nowHour-oldest)/mapping.MaxTimespan+1)
			perHour := max(1, total/span)
			hours := max(1, (total-r.opts.Size+perHour-1)/perHour)
			next := min(oldest+hours*mapping.MaxTimespan, nowHour)
			if next <= cutoff || next <= oldest {
				break // only the current hour is left
			}
			cutoff = next
			*reach = max(*reach, cutoff)
			res.BySize = true
			if oldest, err = r.cut(ctx, cutoff, cutoff, &res); err != nil {
				return res, err
			}
		}
	}
	if cutoff > 0 {
		res.Cutoff = time.Unix(cutoff, 0)
	}
	r.cutoff.Set(float64(cutoff))
	if oldest >= 0 {
		res.Oldest = time.Unix(oldest, 0)
	}
	return res, nil
}

// cut deletes what lies before cutoff (Unix seconds, an hour boundary; 0:
// nothing) in the data and exemplar tables and before indexCutoff in the
// series index, reclaims the space, and returns the hour of the data
// table's oldest row left (-1: none).
func (r *Retention) cut(ctx context.Context, cutoff, indexCutoff int64, res *Result) (oldest int64, err error) {
	before := 0
	for _, n := range res.Ranges {
		before += n
	}
	oldest, err = r.walk(ctx, r.opts.DataTable, cutoff, res)
	if err != nil {
		return oldest, err
	}
	// The exemplar and index tables may not exist (exemplars or the
	// series index off): nothing to cut there.
	if r.opts.ExemplarTable != "" {
		if _, err := r.walk(ctx, r.opts.ExemplarTable, cutoff, res); err != nil && !errors.Is(err, store.ErrTableNotFound) {
			return oldest, err
		}
	}
	if r.opts.IndexTable != "" && indexCutoff >= mapping.DaySeconds {
		err := r.cutIndex(ctx, uint32(min(indexCutoff/mapping.DaySeconds, math.MaxUint32)), res)
		if err != nil && !errors.Is(err, store.ErrTableNotFound) {
			return oldest, err
		}
	}
	after := 0
	for _, n := range res.Ranges {
		after += n
	}
	if after > before {
		if rc, ok := store.As[store.Reclaimer](r.st); ok {
			if err := rc.Reclaim(ctx); err != nil {
				return oldest, fmt.Errorf("reclaim the space of expired rows: %w", err)
			}
		}
	}
	return oldest, nil
}

// walk visits every metric of table, in each salt bucket, deletes its rows
// of hours before cutoff (0: none), and returns the hour of the oldest row
// left (-1: none).
func (r *Retention) walk(ctx context.Context, table string, cutoff int64, res *Result) (int64, error) {
	oldest := int64(-1)
	keep := func(base uint32) {
		if oldest < 0 || int64(base) < oldest {
			oldest = int64(base)
		}
	}
	var cut [mapping.TimestampBytes]byte
	binary.BigEndian.PutUint32(cut[:], uint32(min(cutoff, math.MaxUint32)))
	err := r.eachMetric(ctx, table, func(prefix, key []byte) error {
		base := binary.BigEndian.Uint32(key[len(prefix):])
		if cutoff <= 0 || int64(base) >= cutoff {
			keep(base)
			return nil
		}
		first := append(bytes.Clone(prefix), 0, 0, 0, 0)
		last := append(bytes.Clone(prefix), cut[:]...)
		if cutoff > math.MaxUint32 {
			last = store.PrefixEnd(prefix)
		}
		if err := r.deleteRange(ctx, table, first, last, res); err != nil {
			return err
		}
		kept, err := store.FirstKey(ctx, r.st, table, last, store.PrefixEnd(prefix))
		if err != nil {
			return err
		}
		if kept != nil {
			if base, ok := r.opts.Layout.BaseTimeOf(kept); ok {
				keep(base)
			}
		}
		return nil
	})
	return oldest, err
}

// cutIndex deletes the series index's rows of the days before day: the
// rows 'K', 'N', 'V' and 'S' of each day. The rows 'A' (every metric ever
// indexed) and 'C' (coverage) stay.
func (r *Retention) cutIndex(ctx context.Context, day uint32, res *Result) error {
	table := r.opts.IndexTable
	touched := false // some rows deleted, maybe in part
	defer func() {
		if touched && r.opts.IndexWriter != nil {
			r.opts.IndexWriter.Forget(0, day-1)
		}
	}()
	for _, kind := range []byte{mapping.IndexKindTagKs, mapping.IndexKindMetrics, mapping.IndexKindValues, mapping.IndexKindSeries} {
		start := mapping.AppendIndexDayKey(nil, kind, 0)
		stop := mapping.AppendIndexDayKey(nil, kind, day)
		// A range with nothing in it costs a seek, not a delete.
		first, err := store.FirstKey(ctx, r.st, table, start, stop)
		if err != nil {
			return err
		}
		if first == nil {
			continue
		}
		touched = true
		if err := r.deleteRange(ctx, table, start, stop, res); err != nil {
			return err
		}
	}
	return nil
}

// deleteRange deletes the rows [start, stop) of table and counts them
// (where the store does) and the range.
func (r *Retention) deleteRange(ctx context.Context, table string, start, stop []byte, res *Result) error {
	n, err := store.DeleteRows(ctx, r.st, table, start, stop)
	if n > 0 {
		res.RowsDeleted[table] += n
		r.rowsDeleted.WithLabelValues(table).Add(float64(n))
	}
	if err != nil {
		return fmt.Errorf("retention of %s: %w", table, err)
	}
	res.Ranges[table]++
	r.rangesDone.WithLabelValues(table).Inc()
	return nil
}

// tableBytes returns what the tables retention shrinks take on disk.
func (r *Retention) tableBytes(ctx context.Context) (int64, error) {
	ts, ok := store.As[store.TableSizer](r.st)
	if !ok {
		return 0, errors.New("the store cannot tell its size")
	}
	var total int64
	for _, t := range []string{r.opts.DataTable, r.opts.ExemplarTable, r.opts.IndexTable} {
		if t == "" {
			continue
		}
		n, err := ts.TableBytes(ctx, t)
		if errors.Is(err, store.ErrTableNotFound) && t != r.opts.DataTable {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("size of table %s: %w", t, err)
		}
		total += n
	}
	return total, nil
}

// cutStreams deletes what the streams expire before the longest time
// does: rows of the data and exemplar tables past their series' cutoff
// (from cutoff, where the range cuts stopped), and their 'S' cells of the
// series index (from indexCutoff's day); reach takes the latest cutoff.
func (r *Retention) cutStreams(ctx context.Context, h horizon, cutoff, indexCutoff int64, reach *int64, res *Result) error {
	if len(h.streams) == 0 {
		r.streamHi.Store(0)
		return nil
	}
	rawOf := func(t time.Duration) int64 { return h.hourCutoff(t, r.opts.RawTime) }
	hiRaw := int64(0)
	for _, p := range h.periods() {
		hiRaw = max(hiRaw, rawOf(p))
	}
	*reach = max(*reach, hiRaw)
	// Rows written below the cutoffs from now on are backfills the next
	// cycle passes over; those written since the last cycle, this one.
	r.streamHi.Store(max(hiRaw, h.hourCutoff(h.longest(), 0), 1))
	if r.backfilled.Swap(false) {
		clear(r.passDone)
	}
	for _, table := range []string{r.opts.DataTable, r.opts.ExemplarTable} {
		if table == "" {
			continue
		}
		if err := r.streamPass(ctx, h, table, cutoff, rawOf, res); err != nil {
			return err
		}
	}
	hi := int64(0)
	for _, p := range h.periods() {
		hi = max(hi, h.hourCutoff(p, 0))
	}
	return r.streamIndex(ctx, h, uint32(indexCutoff/mapping.DaySeconds), uint32(hi/mapping.DaySeconds), res)
}
