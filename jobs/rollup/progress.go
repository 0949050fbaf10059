package rollup

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"time"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// The progress row records which hours are built, where every process
// sharing the tables (serve replicas, `promhbase rollup`, deletions) reads
// it: row 0x00 of the table of the shortest built interval (a key no data
// row has: every rollup key of every metric is longer, and no metric's key
// range holds it, so a TSD's scans never meet it), family t:
//
//	promhbase.want              u64 BE Unix s: the oldest hour written (the
//	                            data's oldest hour at the first start, or the
//	                            hour after the one then due; lowered by
//	                            writes into earlier hours). The hours from
//	                            the one before it (whose last window holds
//	                            a sample at its first instant) are to build.
//	promhbase.hours.YYYY-MM-DD  the hours of that UTC day: three u32 BE
//	                            bitmaps (bit i: the hour from i:00), built,
//	                            building and written
//	promhbase.lease             the build lease (lease.go)
//
// An hour is built when its bit of built is set: its rollups are built and
// no write into it, nor at the first instant of the next hour (which its
// last window holds), came since its build began. Queries read rollups for
// the hours built only, raw samples for every other (query.SelectWindows).
// The bits change only by check-and-puts of the day's cell:
//
//   - a build of hour H (Builder.BuildHour) sets H's building before it
//     reads the hour; once its cells are written it sets built and clears
//     building and written, if building is still set;
//   - a write into H, once stored and before it is acknowledged
//     (Builder.MarkWritten), clears H's built and building and sets
//     written, where either is set.
//
// So a build that began before a write and may have missed it never
// records H built, and a write acknowledged while H is built is in its
// rollups. Writes into an hour that ended less than MinBuildAge ago (less
// the skew between clocks) skip the check: no build records such an hour
// (Settled).
//
// Versions before this one recorded a span, promhbase.first and
// promhbase.next; they are neither read nor written any more.
var progressRow = []byte{0x00}

// IsProgressRow reports whether key is the progress row (which also holds
// the build lease): a scan over a whole rollup table meets it first, and
// it is no rollup row.
func IsProgressRow(key []byte) bool { return bytes.Equal(key, progressRow) }

const (
	progressWant  = "promhbase.want"
	progressHours = "promhbase.hours."
)

// MinBuildAge is how long after an hour ended a build of it may be
// recorded: a build of a younger hour writes its cells but leaves the hour
// unbuilt, so that the samples that arrive a little after their hour
// ended, as a matter of course, need no check.
const MinBuildAge = 5 * time.Minute

// clockSkew is how far the clocks of the processes sharing the tables may
// be apart.
const clockSkew = time.Minute

// Settled reports whether a build of hour (Unix s) may have read it at now
// (by any process's clock): writes into a settled hour are checked against
// the hours built (Builder.MarkWritten).
func Settled(hour int64, now time.Time) bool { return hour <= lastSettled(now) }

// lastSettled returns the last hour settled at now (see Settled).
func lastSettled(now time.Time) int64 {
	return now.Unix() - mapping.MaxTimespan - int64((MinBuildAge-clockSkew)/time.Second)
}

// recordable reports whether a build of hour at now may record it built.
func recordable(hour int64, now time.Time) bool {
	return hour+mapping.MaxTimespan+int64(MinBuildAge/time.Second) <= now.Unix()
}

// dayBits are the bitmaps of one day's cell.
type dayBits struct{ built, building, written uint32 }

const dayBitsBytes = 12

func (d dayBits) value() []byte {
	v := make([]byte, 0, dayBitsBytes)
	v = binary.BigEndian.AppendUint32(v, d.built)
	v = binary.BigEndian.AppendUint32(v, d.building)
	return binary.BigEndian.AppendUint32(v, d.written)
}

// parseDayBits reads a day's cell; ok false: not a day's cell.
func parseDayBits(v []byte) (d dayBits, ok bool) {
	if len(v) != dayBitsBytes {
		return d, false
	}
	return dayBits{binary.BigEndian.Uint32(v), binary.BigEndian.Uint32(v[4:]), binary.BigEndian.Uint32(v[8:])}, true
}

// dayQualifier is the qualifier of the day starting at day (Unix s).
func dayQualifier(day int64) []byte {
	return time.Unix(day, 0).UTC().AppendFormat([]byte(progressHours), time.DateOnly)
}

// parseDayQualifier returns the day (Unix s) of a day's qualifier.
func parseDayQualifier(q []byte) (day int64, ok bool) {
	s, ok := bytes.CutPrefix(q, []byte(progressHours))
	if !ok {
		return 0, false
	}
	t, err := time.Parse(time.DateOnly, string(s))
	return t.Unix(), err == nil
}

// dayOf returns the day (Unix s) of hour and hour's bit in its cell.
func dayOf(hour int64) (day int64, bit uint32) {
	day = hour - hour%mapping.DaySeconds
	return day, 1 << ((hour - day) / mapping.MaxTimespan)
}

// Progress is what the progress row records: the oldest hour written and,
// by day, the hours built, being built and written since.
type Progress struct {
	// Want is the oldest hour written (Unix s); HaveWant is false when none
	// is recorded.
	Want     int64
	HaveWant bool
	days     map[int64]dayBits // by day (Unix s)
	cells    map[int64][]byte  // each day's cell as read, for check-and-puts
}

// ReadProgress returns what table's progress row records.
func ReadProgress(ctx context.Context, st store.Store, table string) (*Progress, error) {
	row, err := st.Get(ctx, table, progressRow, Family)
	if err != nil {
		return nil, fmt.Errorf("rollup: read progress from %s: %w", table, err)
	}
	p := &Progress{days: map[int64]dayBits{}, cells: map[int64][]byte{}}
	for _, c := range row.Cells {
		if string(c.Qualifier) == progressWant && len(c.Value) == 8 {
			p.Want, p.HaveWant = int64(binary.BigEndian.Uint64(c.Value)), true
			continue
		}
		day, ok := parseDayQualifier(c.Qualifier)
		if !ok {
			continue
		}
		d, ok := parseDayBits(c.Value)
		if !ok {
			continue // changed only by a check-and-put on its exact bytes
		}
		p.days[day], p.cells[day] = d, bytes.Clone(c.Value)
	}
	return p, nil
}

// Built reports whether the rollups of hour (Unix s) are built and
// current.
func (p *Progress) Built(hour int64) bool {
	day, bit := dayOf(hour)
	return p.days[day].built&bit != 0
}

// Stale reports whether hour was written since its rollups were built (or
// a build of it began) and is not built again.
func (p *Progress) Stale(hour int64) bool {
	day, bit := dayOf(hour)
	d := p.days[day]
	return d.written&bit != 0 && d.built&bit == 0
}

// StaleCount returns the number of stale hours.
func (p *Progress) StaleCount() int {
	n := 0
	for _, d := range p.days {
		for m := d.written &^ d.built; m != 0; m &= m - 1 {
			n++
		}
	}
	return n
}

// Hours returns the hours built.
func (p *Progress) Hours() Hours {
	var out Hours
	for _, day := range slices.Sorted(maps.Keys(p.days)) {
		for m := p.days[day].built; m != 0; m &= m - 1 {
			out = out.add(day + int64(bits.TrailingZeros32(m))*mapping.MaxTimespan)
		}
	}
	return out
}

// changeHours applies change to the bits of each hour's day in table's
// progress row, with a check-and-put for each day whose bits it changes,
// reading the row again when another process changed a cell first.
// change gets a day's bits and the bits of that day's hours in hours, and
// reports whether it changed d. It returns each changed day's bits as
// written.
func changeHours(ctx context.Context, st store.Store, table string, hours []int64, change func(d *dayBits, of uint32) bool) (map[int64]dayBits, error) {
	pending := map[int64]uint32{}
	for _, h := range hours {
		day, bit := dayOf(h)
		pending[day] |= bit
	}
	written := map[int64]dayBits{}
	for range 16 {
		p, err := ReadProgress(ctx, st, table)
		if err != nil {
			return written, err
		}
		for _, day := range slices.Sorted(maps.Keys(pending)) {
			d := p.days[day]
			if !change(&d, pending[day]) {
				delete(pending, day)
				continue
			}
			put := store.Put{Row: progressRow, Cells: []store.Cell{{Family: []byte(Family), Qualifier: dayQualifier(day), Value: d.value()}}}
			ok, err := st.CheckAndPut(ctx, table, put, Family, string(dayQualifier(day)), p.cells[day])
			if err != nil {
				return written, fmt.Errorf("rollup: record progress in %s: %w", table, err)
			}
			if ok {
				written[day] = d
				delete(pending, day)
			}
		}
		if len(pending) == 0 {
			return written, nil
		}
	}
	return written, fmt.Errorf("rollup: record progress in %s: too many concurrent updates", table)
}

// ReadWant returns the oldest hour written (Unix s; ok false: none
// recorded).
func ReadWant(ctx context.Context, st store.Store, table string) (want int64, ok bool, err error) {
	p, err := ReadProgress(ctx, st, table)
	if err != nil {
		return 0, false, err
	}
	return p.Want, p.HaveWant, nil
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

// beginHour records that a build of hour begins (its building bit).
func (b *Builder) beginHour(ctx context.Context, hour int64) error {
	_, err := changeHours(ctx, b.st, b.progressTable(), []int64{hour}, func(d *dayBits, bit uint32) bool {
		if d.building&bit != 0 {
			return false
		}
		d.building |= bit
		return true
	})
	return err
}

// endHour records hour built and current unless a write came since
// beginHour (its building bit is gone). It reports whether it recorded it
// and whether it was written since it was last built.
func (b *Builder) endHour(ctx context.Context, hour int64) (recorded, wasStale bool, err error) {
	_, err = changeHours(ctx, b.st, b.progressTable(), []int64{hour}, func(d *dayBits, bit uint32) bool {
		recorded, wasStale = false, false
		if d.building&bit == 0 {
			return false
		}
		recorded, wasStale = true, d.written&bit != 0
		d.built |= bit
		d.building &^= bit
		d.written &^= bit
		return true
	})
	return recorded, wasStale, err
}

// MarkWritten records that hours (Unix s) were written: each one built, or
// being built, is no longer (a build under way does not record it), and
// is to build again; the others are left as they are. Call it once the
// write is stored and before it is acknowledged, for every hour written
// that a build may have read (Settled), and for the hour before a row
// with a sample at its first instant. It reports whether it made an hour
// stale.
func (b *Builder) MarkWritten(ctx context.Context, hours []int64) (changed bool, err error) {
	if len(b.intervals) == 0 || len(hours) == 0 {
		return false, nil
	}
	written, err := changeHours(ctx, b.st, b.progressTable(), hours, func(d *dayBits, of uint32) bool {
		hit := (d.built | d.building) & of
		if hit == 0 {
			return false
		}
		d.built &^= hit
		d.building &^= hit
		d.written |= hit
		return true
	})
	if len(written) > 0 && err == nil {
		// Before the write is acknowledged: on a store whose
		// check-and-puts become durable with its next write.
		err = store.Sync(ctx, b.st)
	}
	if err != nil {
		return len(written) > 0, fmt.Errorf("rollup: mark %d hours written in %s: %w", len(hours), b.progressTable(), err)
	}
	return len(written) > 0, nil
}

// progressTable is the table of the progress row and the build lease.
func (b *Builder) progressTable() string { return b.intervals[0].Table }
