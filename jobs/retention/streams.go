package retention

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// Stream keeps the series its matchers select for Period, as Loki's
// retention_stream: of the streams that select a series, the one of the
// highest Priority decides (on a tie, the longest Period); a series no
// stream selects keeps the policy's Time.
type Stream struct {
	Matchers []*labels.Matcher
	Priority int
	Period   time.Duration
}

// Policy is a tenant's retention, changed at runtime (SetPolicy): Time,
// when set, replaces Options.Time (Loki's retention_period), and Streams
// keep the series they select for periods of their own. Options.RawTime
// and each rollup table's Time still cut shorter where they are.
type Policy struct {
	Time    time.Duration
	Streams []Stream
}

// LabelsFunc returns the labels of the series of a row: its metric UID
// and its tags (series.Mapper.Labels).
type LabelsFunc func(ctx context.Context, metric, tags []byte) (labels.Labels, error)

// SetPolicy puts p in force from the next cycle. Streams need
// Options.Labels, to tell which series a row holds.
func (r *Retention) SetPolicy(p Policy) error {
	for _, s := range p.Streams {
		if s.Period <= 0 {
			return fmt.Errorf("retention stream %v: period %s, want a positive one", s.Matchers, s.Period)
		}
	}
	if p.Time < 0 {
		return fmt.Errorf("retention time %s is negative", p.Time)
	}
	if len(p.Streams) > 0 && r.opts.Labels == nil {
		return errors.New("retention streams need the series' labels (Options.Labels)")
	}
	r.policy.Store(&p)
	return nil
}

// NoteWritten tells the retention of rows written (their keys): rows of
// hours a retention stream expired already (a backfill) have the next
// cycle pass over the streams again, not an hour later. Cheap without
// streams: one atomic load.
func (r *Retention) NoteWritten(puts []store.Put) {
	hi := r.streamHi.Load()
	if hi <= 0 || r.backfilled.Load() {
		return
	}
	for _, p := range puts {
		if base, ok := r.opts.Layout.BaseTimeOf(p.Row); ok && int64(base) < hi {
			r.backfilled.Store(true)
			return
		}
	}
}

// horizon is what one cycle applies: the time of series no stream
// selects, and the streams.
type horizon struct {
	now     time.Time
	time    time.Duration // 0: forever
	streams []Stream
}

// horizonNow returns the policy in force at now.
func (r *Retention) horizonNow(now time.Time) horizon {
	h := horizon{now: now, time: r.opts.Time}
	if p := r.policy.Load(); p != nil {
		if p.Time > 0 {
			h.time = p.Time
		}
		h.streams = p.Streams
	}
	return h
}

// longest is the longest time any series keeps (0: forever): what may
// go for every series alike.
func (h horizon) longest() time.Duration {
	if h.time == 0 {
		return 0
	}
	l := h.time
	for _, s := range h.streams {
		l = max(l, s.Period)
	}
	return l
}

// periods returns every time a series may keep, the policy's first.
func (h horizon) periods() []time.Duration {
	out := []time.Duration{h.time}
	for _, s := range h.streams {
		out = append(out, s.Period)
	}
	return out
}

// periodOf returns the time the series of ls keeps.
func (h horizon) periodOf(ls labels.Labels) time.Duration {
	best, found := Stream{}, false
	for _, s := range h.streams {
		if !matches(s.Matchers, ls) {
			continue
		}
		if !found || s.Priority > best.Priority || s.Priority == best.Priority && s.Period > best.Period {
			best, found = s, true
		}
	}
	if found {
		return best.Period
	}
	return h.time
}

func matches(ms []*labels.Matcher, ls labels.Labels) bool {
	for _, m := range ms {
		if !m.Matches(ls.Get(m.Name)) {
			return false
		}
	}
	return true
}

// hourCutoff is the hour boundary before which rows of a series keeping
// t go (0: none), with raw, when shorter, the table's own limit.
func (h horizon) hourCutoff(t, raw time.Duration) int64 {
	t = retentionOf(t, raw)
	if t <= 0 {
		return 0
	}
	return max(0, h.now.Add(-t).Unix()/mapping.MaxTimespan*mapping.MaxTimespan)
}

// spanCutoff is the row span's base before which a rollup table's rows
// of a series keeping t go (0: none), with rt.Time, when shorter.
func (h horizon) spanCutoff(t time.Duration, rt RollupTable) int64 {
	t = retentionOf(t, rt.Time)
	if t <= 0 {
		return 0
	}
	c := h.now.Add(-t).Unix()
	if c <= 0 {
		return 0
	}
	return int64(rt.Span.BaseTime(uint32(min(c, math.MaxUint32))))
}

// streamPass deletes the rows of table that the streams expire before
// the range cuts reach them: the rows of hours in [lo, hi) (lo: where the
// range cut stopped; hi: the latest cutoff of any period) whose series'
// own cutoff (cutoffOf its period) lies past their base time. It runs
// when the cutoffs changed since its last pass over table (hours move
// once an hour), so a cycle costs a key scan of those hours at most once
// an hour per table; a backfill older than its stream's period goes at
// the next hour's pass.
func (r *Retention) streamPass(ctx context.Context, h horizon, table string, lo int64, cutoffOf func(time.Duration) int64, res *Result) error {
	if len(h.streams) == 0 {
		return nil
	}
	var cuts []int64
	for _, p := range h.periods() {
		cuts = append(cuts, cutoffOf(p))
	}
	hi := slices.Max(cuts)
	sig := fmt.Sprint(cuts, h.streams)
	if hi <= lo || r.passDone[table] == sig {
		return nil
	}
	kept := map[string]int64{} // metric ‖ tags -> the series' cutoff
	err := r.eachMetric(ctx, table, func(prefix, _ []byte) error {
		return r.cutSeriesRows(ctx, h, table, prefix, lo, hi, kept, cutoffOf, res)
	})
	if err != nil && !errors.Is(err, store.ErrTableNotFound) { // a table not kept (exemplars, a rollup)
		return err
	}
	r.passDone[table] = sig
	return nil
}

// eachMetric calls fn with the key prefix (salt ‖ metric UID) of every
// metric of table, in each salt bucket, and the metric's first key.
func (r *Retention) eachMetric(ctx context.Context, table string, fn func(prefix, first []byte) error) error {
	l := r.opts.Layout
	buckets := 1
	if l.SaltWidth > 0 {
		buckets = l.SaltBuckets
	}
	prefixLen := l.SaltWidth + l.MetricWidth
	for b := range buckets {
		salt := l.AppendSalt(nil, b)
		stop := store.PrefixEnd(salt)
		from := salt
		for {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("retention streams of %s: %w", table, err)
			}
			key, err := store.FirstKey(ctx, r.st, table, from, stop)
			if err != nil {
				return err
			}
			if key == nil {
				break // the bucket's end
			}
			if len(key) < prefixLen+mapping.TimestampBytes {
				from = append(bytes.Clone(key), 0) // the first key after: not a row of this layout
				continue
			}
			prefix := key[:prefixLen:prefixLen]
			if err := fn(prefix, key); err != nil {
				return err
			}
			if from = store.PrefixEnd(prefix); from == nil || (stop != nil && bytes.Compare(from, stop) >= 0) {
				break
			}
		}
	}
	return nil
}

// cutSeriesRows deletes the rows of one metric (prefix) of hours in
// [lo, hi) whose series' cutoff lies past their base time; kept caches
// each series' cutoff.
func (r *Retention) cutSeriesRows(ctx context.Context, h horizon, table string, prefix []byte, lo, hi int64, kept map[string]int64, cutoffOf func(time.Duration) int64, res *Result) error {
	start := binary.BigEndian.AppendUint32(bytes.Clone(prefix), uint32(lo))
	stop := binary.BigEndian.AppendUint32(bytes.Clone(prefix), uint32(min(hi, math.MaxUint32)))
	sc := r.st.Scan(ctx, store.ScanRequest{Table: table, Start: start, Stop: stop, KeysOnly: true})
	var doomed [][]byte
	for sc.Next() {
		key := sc.Row().Key
		base, ok := r.opts.Layout.BaseTimeOf(key)
		if !ok {
			continue
		}
		metric, tags := key[r.opts.Layout.SaltWidth:len(prefix)], key[len(prefix)+mapping.TimestampBytes:]
		cut, err := r.seriesCutoff(ctx, h, metric, tags, kept, cutoffOf)
		if err != nil {
			sc.Close()
			return err
		}
		if int64(base) < cut {
			doomed = append(doomed, bytes.Clone(key))
		}
	}
	err := sc.Err()
	sc.Close()
	if err != nil {
		return fmt.Errorf("retention streams: scan %s: %w", table, err)
	}
	if len(doomed) == 0 {
		return nil
	}
	if err := store.Parallel(ctx, len(doomed), 16, func(ctx context.Context, i int) error {
		return r.st.Delete(ctx, table, doomed[i], nil)
	}); err != nil {
		return fmt.Errorf("retention streams: delete rows of %s: %w", table, err)
	}
	res.RowsDeleted[table] += int64(len(doomed))
	r.rowsDeleted.WithLabelValues(table).Add(float64(len(doomed)))
	res.Ranges[table]++
	r.rangesDone.WithLabelValues(table).Inc()
	return nil
}

// seriesCutoff returns the cutoff of the series of metric and tags
// (cached in kept): its period's, by the streams that select it.
func (r *Retention) seriesCutoff(ctx context.Context, h horizon, metric, tags []byte, kept map[string]int64, cutoffOf func(time.Duration) int64) (int64, error) {
	k := string(metric) + string(tags)
	if c, ok := kept[k]; ok {
		return c, nil
	}
	ls, err := r.opts.Labels(ctx, metric, tags)
	if err != nil {
		return 0, fmt.Errorf("retention streams: labels of series %x %x: %w", metric, tags, err)
	}
	c := cutoffOf(h.periodOf(ls))
	kept[k] = c
	return c, nil
}

// streamIndex deletes the series index's 'S' cells of the days in
// [loDay, hiDay) that lie entirely before their series' cutoff (hourly
// cutoffs, as the data rows'), and has the index writer forget those
// days. The day rows 'K', 'N', 'V' stay until the longest time passes
// them (cutIndex).
func (r *Retention) streamIndex(ctx context.Context, h horizon, loDay, hiDay uint32, res *Result) error {
	table := r.opts.IndexTable
	if table == "" || len(h.streams) == 0 || hiDay <= loDay {
		return nil
	}
	kept := map[string]int64{}
	cutoffOf := func(t time.Duration) int64 { return h.hourCutoff(t, 0) }
	// Cells go by whole days: a pass is due when some period's cutoff
	// passed a day's end.
	var days []int64
	for _, p := range h.periods() {
		days = append(days, cutoffOf(p)/mapping.DaySeconds)
	}
	sig := fmt.Sprint(loDay, days, h.streams)
	if r.passDone[table] == sig {
		return nil
	}
	deleted := 0
	for day := loDay; day < hiDay; day++ {
		n, err := r.streamIndexDay(ctx, h, day, kept, cutoffOf)
		if err != nil && !errors.Is(err, store.ErrTableNotFound) {
			return err
		}
		deleted += n
	}
	if deleted > 0 {
		res.Ranges[table]++
		r.rangesDone.WithLabelValues(table).Inc()
		if r.opts.IndexWriter != nil {
			r.opts.IndexWriter.Forget(loDay, hiDay-1)
		}
	}
	r.passDone[table] = sig
	return nil
}

// streamIndexDay deletes day's 'S' cells of series whose cutoff is past
// the day's end, and returns how many.
func (r *Retention) streamIndexDay(ctx context.Context, h horizon, day uint32, kept map[string]int64, cutoffOf func(time.Duration) int64) (int, error) {
	table := r.opts.IndexTable
	prefix := mapping.AppendIndexSeriesPrefix(nil, day, nil)
	sc := r.st.Scan(ctx, store.ScanRequest{Table: table, Start: prefix, Stop: store.PrefixEnd(prefix), Family: mapping.IndexFamily})
	type doomedRow struct {
		key  []byte
		cols []store.Column
	}
	var doomed []doomedRow
	dayEnd := int64(day+1) * mapping.DaySeconds
	for sc.Next() {
		row := sc.Row()
		_, mb, ok := mapping.IndexSeriesRowOf(row.Key)
		if !ok || len(mb) < 2 {
			continue
		}
		metric := mb[:len(mb)-1]
		var cols []store.Column
		for _, c := range row.Cells {
			cut, err := r.seriesCutoff(ctx, h, metric, c.Qualifier, kept, cutoffOf)
			if err != nil {
				sc.Close()
				return 0, err
			}
			if dayEnd <= cut {
				cols = append(cols, store.Column{Family: []byte(mapping.IndexFamily), Qualifier: bytes.Clone(c.Qualifier)})
			}
		}
		if len(cols) > 0 {
			doomed = append(doomed, doomedRow{bytes.Clone(row.Key), cols})
		}
	}
	err := sc.Err()
	sc.Close()
	if err != nil {
		return 0, fmt.Errorf("retention streams: scan %s: %w", table, err)
	}
	n := 0
	for _, d := range doomed {
		if err := r.st.Delete(ctx, table, d.key, d.cols); err != nil {
			return n, fmt.Errorf("retention streams: delete %d series of %s row %x: %w", len(d.cols), table, d.key, err)
		}
		n += len(d.cols)
	}
	return n, nil
}
