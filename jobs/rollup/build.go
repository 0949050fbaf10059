package rollup

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/cells"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
)

// HourMs is an hour in milliseconds: the unit rollups are built in.
const HourMs = mapping.MaxTimespan * 1000

// Options configure a Builder.
type Options struct {
	Config    *Config
	DataTable string // "tsdb" by default
	UIDTable  string // "tsdb-uid" by default
	Layout    mapping.Layout
	// Concurrency is how many metric and salt-bucket scans run at once;
	// 0 means 2.
	Concurrency int
	// PutBatch is how many rows one Put writes; 0 means 512.
	PutBatch int
	// LeaseTTL is how long the build lease lasts unless renewed (see
	// lease.go); 0 means DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Now is the clock that says whether an hour built is old enough to
	// record (MinBuildAge); nil: time.Now.
	Now func() time.Time
}

// Builder computes the rollups of hours of the data table: for every
// series, the windows of each rollup interval that end in the hour's
// (H, H+1h], from the samples in (H, H+1h] (the rows of hour H and the
// sample at exactly H+1h, the first of the next hour's row), written as
// OpenTSDB rollup cells into the interval's table. Building an hour again
// rewrites its cells. It is safe for concurrent use; builds of every
// process sharing the tables run one at a time (the build lease, lease.go).
//
// Only intervals whose width divides an hour are built (5m and 1h by
// default); longer ones are left to other writers.
type Builder struct {
	st        store.Store
	opts      Options
	ids       IDs
	intervals []Interval
	leased    bool // the build lease is held for it (Exclusive): builds take none
}

// NewBuilder returns a Builder over st. It returns an error when the
// configuration lacks one of sum, count, max and min.
func NewBuilder(st store.Store, opts Options) (*Builder, error) {
	if opts.Config == nil {
		opts.Config = Default()
	}
	if opts.DataTable == "" {
		opts.DataTable = mapping.DefaultDataTable
	}
	if opts.UIDTable == "" {
		opts.UIDTable = mapping.DefaultUIDTable
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 2
	}
	if opts.PutBatch <= 0 {
		opts.PutBatch = 512
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ids, err := opts.Config.IDs()
	if err != nil {
		return nil, err
	}
	return &Builder{st: st, opts: opts, ids: ids, intervals: Buildable(opts.Config)}, nil
}

// Buildable returns the rollup intervals of c that promhbase builds: those
// whose width divides an hour, shortest first.
func Buildable(c *Config) []Interval {
	var out []Interval
	for _, iv := range c.RollupIntervals() {
		if mapping.MaxTimespan%iv.seconds == 0 {
			out = append(out, iv)
		}
	}
	return out
}

// Intervals returns the intervals b builds, shortest first.
func (b *Builder) Intervals() []Interval { return b.intervals }

// BuildStats counts what building hours did.
type BuildStats struct {
	Series int64 // series with a sample in an hour, summed over the hours
	Cells  int64 // rollup cells written
	Rows   int64 // rollup rows written to (a row a series, interval and hour)
	// LeaseWait is how long the builds waited for the build lease while
	// other processes built.
	LeaseWait time.Duration
	// Recorded counts the hours recorded built and current (progress.go);
	// Rebuilt those of them that were stale (written since built).
	Recorded, Rebuilt int64
}

// Add adds o to s.
func (s *BuildStats) Add(o BuildStats) {
	s.Series += o.Series
	s.Cells += o.Cells
	s.Rows += o.Rows
	s.LeaseWait += o.LeaseWait
	s.Recorded += o.Recorded
	s.Rebuilt += o.Rebuilt
}

// BuildHour builds the rollups of the hour starting at hour (Unix s, a
// multiple of 3600) for every metric of the UID table, holding the build
// lease of the shortest interval's table (waiting for it while another
// build, of this or another process, holds it), and records the hour
// built in the progress row (progress.go) unless a write into it came
// while it was built, or it ended less than MinBuildAge ago: queries read
// its rollups only then.
func (b *Builder) BuildHour(ctx context.Context, hour int64) (BuildStats, error) {
	if hour%mapping.MaxTimespan != 0 || hour < 0 || hour+mapping.MaxTimespan > 0xFFFFFFFF {
		return BuildStats{}, fmt.Errorf("rollup: hour %d is not the start of an hour a row key can hold", hour)
	}
	if len(b.intervals) == 0 {
		return BuildStats{}, nil
	}
	var stats BuildStats
	build := func(ctx context.Context) error {
		record := recordable(hour, b.opts.Now())
		if record {
			if err := b.beginHour(ctx, hour); err != nil {
				return err
			}
		}
		var err error
		if stats, err = b.buildHour(ctx, hour); err != nil || !record {
			return err
		}
		recorded, stale, err := b.endHour(ctx, hour)
		if recorded {
			stats.Recorded++
		}
		if recorded && stale {
			stats.Rebuilt++
		}
		return err
	}
	if b.leased {
		return stats, build(ctx)
	}
	l := newLease(b.st, b.progressTable(), cmp.Or(b.opts.LeaseTTL, DefaultLeaseTTL), time.Now)
	waited, err := l.holding(ctx, build)
	stats.LeaseWait = waited
	return stats, err
}

// Exclusive runs f holding the build lease, so that no build of any
// process runs meanwhile, and hands f a Builder whose builds take no
// lease (it is held). A delete holds it from removing the rollups of the
// windows that held deleted samples to building again the hours it cut:
// a build in between would write those rollups again from the samples
// not deleted yet.
func (b *Builder) Exclusive(ctx context.Context, f func(ctx context.Context, b *Builder) error) error {
	if len(b.intervals) == 0 || b.leased {
		return f(ctx, b)
	}
	l := newLease(b.st, b.progressTable(), cmp.Or(b.opts.LeaseTTL, DefaultLeaseTTL), time.Now)
	_, err := l.holding(ctx, func(ctx context.Context) error {
		held := *b
		held.leased = true
		return f(ctx, &held)
	})
	return err
}

// buildHour is BuildHour with the lease held.
func (b *Builder) buildHour(ctx context.Context, hour int64) (BuildStats, error) {
	metrics, err := uid.MetricUIDs(ctx, b.st, b.opts.UIDTable, b.opts.Layout.MetricWidth)
	if err != nil {
		return BuildStats{}, fmt.Errorf("rollup: list metrics: %w", err)
	}
	type job struct{ prefix []byte }
	var jobs []job
	for _, m := range metrics {
		buckets := 1
		if b.opts.Layout.SaltWidth > 0 {
			buckets = b.opts.Layout.SaltBuckets
		}
		for bucket := range buckets {
			jobs = append(jobs, job{prefix: append(b.opts.Layout.AppendSalt(nil, bucket), m...)})
		}
	}
	stats := make([]BuildStats, len(jobs))
	err = store.Parallel(ctx, len(jobs), b.opts.Concurrency, func(ctx context.Context, i int) error {
		s, err := b.buildPrefix(ctx, jobs[i].prefix, hour)
		stats[i] = s
		return err
	})
	var total BuildStats
	for _, s := range stats {
		total.Add(s)
	}
	if err != nil {
		return total, fmt.Errorf("rollup: hour %s: %w", time.Unix(hour, 0).UTC().Format("2006-01-02T15"), err)
	}
	return total, nil
}

// OldestHour returns the hour (Unix s) of the oldest row of the data
// table: a seek to the first row of each metric and salt bucket. found is
// false when the table holds no row.
func (b *Builder) OldestHour(ctx context.Context) (hour int64, found bool, err error) {
	metrics, err := uid.MetricUIDs(ctx, b.st, b.opts.UIDTable, b.opts.Layout.MetricWidth)
	if err != nil {
		return 0, false, fmt.Errorf("rollup: list metrics: %w", err)
	}
	for _, m := range metrics {
		for _, r := range b.opts.Layout.MetricRanges(m, 0, 0xFFFFFFFF) {
			sc := b.st.Scan(ctx, store.ScanRequest{Table: b.opts.DataTable, Start: r.Start, Stop: r.Stop, Family: "t", KeysOnly: true})
			ok := sc.Next()
			if ok {
				if base, okb := b.opts.Layout.BaseTimeOf(sc.Row().Key); okb && (!found || int64(base) < hour) {
					hour, found = int64(base), true
				}
			}
			err := sc.Err()
			sc.Close()
			if err != nil {
				return 0, false, fmt.Errorf("rollup: oldest row of %s: %w", b.opts.DataTable, err)
			}
		}
	}
	return hour, found, nil
}

// hourScan reads the rows of one metric and salt bucket in one hour, in
// tag order.
type hourScan struct {
	sc   store.Scanner
	row  store.Row
	ok   bool
	tags []byte // of row
	plen int
}

func (h *hourScan) next() error {
	h.ok = h.sc.Next()
	if !h.ok {
		return h.sc.Err()
	}
	h.row = h.sc.Row()
	if len(h.row.Key) < h.plen {
		return fmt.Errorf("row key %x shorter than its prefix", h.row.Key)
	}
	h.tags = h.row.Key[h.plen:]
	return nil
}

// buildPrefix builds hour of the metric and salt bucket whose row-key
// prefix (salt ‖ metric UID) is prefix: the rows of the hour and those of
// the next, joined by their tags.
func (b *Builder) buildPrefix(ctx context.Context, prefix []byte, hour int64) (BuildStats, error) {
	plen := len(prefix) + mapping.TimestampBytes
	scan := func(h int64) (*hourScan, error) {
		start := binary.BigEndian.AppendUint32(bytes.Clone(prefix), uint32(h))
		stop := binary.BigEndian.AppendUint32(bytes.Clone(prefix), uint32(h+mapping.MaxTimespan))
		hs := &hourScan{plen: plen, sc: b.st.Scan(ctx, store.ScanRequest{Table: b.opts.DataTable, Start: start, Stop: stop,
			Family: "t", Packed: cells.PackedFormat})}
		err := hs.next()
		return hs, err
	}
	cur, err := scan(hour)
	if cur != nil {
		defer cur.sc.Close()
	}
	if err != nil {
		return BuildStats{}, err
	}
	next, err := scan(hour + mapping.MaxTimespan)
	if next != nil {
		defer next.sc.Close()
	}
	if err != nil {
		return BuildStats{}, err
	}
	w := b.newHourWriter(hour)
	var m, mn cells.Merger
	endMs := (hour + mapping.MaxTimespan) * 1000
	for cur.ok || next.ok {
		var (
			key      []byte
			pts      []mapping.Point
			boundary *mapping.Point
			hists    []int64
		)
		c := 1 // which scans hold this series: 1 cur, 2 next, 3 both
		switch {
		case !next.ok:
		case !cur.ok:
			c = 2
		default:
			switch cmp := bytes.Compare(cur.tags, next.tags); {
			case cmp > 0:
				c = 2
			case cmp == 0:
				c = 3
			}
		}
		if c&1 != 0 {
			key = cur.row.Key
			pts, err = m.Merge(uint32(hour), cur.row.Cells, hour*1000+1, endMs-1)
			if err != nil {
				return w.stats, fmt.Errorf("row %x: %w", cur.row.Key, err)
			}
			hists = appendHistogramTimes(hists, uint32(hour), cur.row.Cells, hour*1000+1, endMs-1)
		}
		if c&2 != 0 {
			if key == nil {
				key = next.row.Key
			}
			bp, err := mn.Merge(uint32(hour+mapping.MaxTimespan), next.row.Cells, endMs, endMs)
			if err != nil {
				return w.stats, fmt.Errorf("row %x: %w", next.row.Key, err)
			}
			if len(bp) > 0 {
				boundary = &bp[0]
			}
			hists = appendHistogramTimes(hists, uint32(hour+mapping.MaxTimespan), next.row.Cells, endMs, endMs)
		}
		if len(pts) > 0 || boundary != nil || len(hists) > 0 {
			if err := w.series(ctx, key, pts, boundary, hists); err != nil {
				return w.stats, err
			}
		}
		if c&1 != 0 {
			if err := cur.next(); err != nil {
				return w.stats, err
			}
		}
		if c&2 != 0 {
			if err := next.next(); err != nil {
				return w.stats, err
			}
		}
	}
	return w.stats, w.flush(ctx)
}

// appendHistogramTimes appends the times of the native-histogram cells of
// a row (base time base) within [from, to].
func appendHistogramTimes(dst []int64, base uint32, cs []store.Cell, from, to int64) []int64 {
	for _, c := range cs {
		if off, ok := mapping.ParseHistogramQualifier(c.Qualifier); ok {
			if t := int64(base)*1000 + int64(off); t >= from && t <= to {
				dst = append(dst, t)
			}
		}
	}
	return dst
}

// hourWriter turns the samples of the series of one hour into rollup
// puts, written a batch at a time.
type hourWriter struct {
	b     *Builder
	hour  int64
	cells *Cells
	puts  map[string][]store.Put // by table
	n     int
	win   []Window
	stats BuildStats
}

func (b *Builder) newHourWriter(hour int64) *hourWriter {
	return &hourWriter{b: b, hour: hour, cells: NewCells(b.ids), puts: make(map[string][]store.Put)}
}

// series adds the rollups of one series: its samples in (hour, hour+1h)
// in time order, the one at hour+1h, if any, and its histogram samples'
// times. key is one of its row keys.
func (w *hourWriter) series(ctx context.Context, key []byte, pts []mapping.Point, boundary *mapping.Point, hists []int64) error {
	w.stats.Series++
	hourMs := w.hour * 1000
	l := w.b.opts.Layout
	at := l.SaltWidth + l.MetricWidth
	for _, iv := range w.b.intervals {
		width := iv.seconds * 1000
		n := int(HourMs / width)
		w.win = w.win[:0]
		for k := range n {
			w.win = append(w.win, Window{End: hourMs + int64(k+1)*width})
		}
		for _, p := range pts {
			w.win[(p.T-hourMs-1)/width].Add(p.T, p.V)
		}
		if boundary != nil {
			w.win[n-1].Add(boundary.T, boundary.V)
		}
		for _, t := range hists {
			w.win[(t-hourMs-1)/width].Histograms++
		}
		var put store.Put
		for k := range w.win {
			win := &w.win[k]
			if win.Count == 0 && win.Histograms == 0 {
				continue
			}
			win.Finish()
			base, index, err := iv.LocateWindow(win.End)
			if err != nil {
				return err
			}
			if put.Row == nil || !bytes.Equal(put.Row[at:at+mapping.TimestampBytes], binary.BigEndian.AppendUint32(nil, base)) {
				if put.Row != nil {
					w.add(iv.Table, put)
				}
				row := bytes.Clone(key)
				binary.BigEndian.PutUint32(row[at:], base)
				put = store.Put{Row: row}
			}
			if put.Cells, err = w.cells.Append(put.Cells, index, width, win, 0); err != nil {
				return err
			}
		}
		if put.Row != nil {
			w.add(iv.Table, put)
		}
	}
	if w.n >= w.b.opts.PutBatch {
		return w.flush(ctx)
	}
	return nil
}

func (w *hourWriter) add(table string, p store.Put) {
	w.puts[table] = append(w.puts[table], p)
	w.n++
	w.stats.Rows++
	w.stats.Cells += int64(len(p.Cells))
}

// flush writes the puts gathered so far.
func (w *hourWriter) flush(ctx context.Context) error {
	for table, puts := range w.puts {
		if len(puts) == 0 {
			continue
		}
		if err := w.b.st.Put(ctx, table, puts); err != nil {
			return fmt.Errorf("write %d rows of %s: %w", len(puts), table, err)
		}
		w.puts[table] = puts[:0]
	}
	w.n = 0
	return nil
}
