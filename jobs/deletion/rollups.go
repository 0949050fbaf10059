package deletion

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/query"
	"github.com/promhbase/promhbase/store"
)

// Rollups of deleted samples: a delete removes the rollup cells of every
// window that held a deleted sample of the selected series (each window
// ending in (E-W, E] with a sample in [start, end]), before the samples
// themselves, so that a re-run of an interrupted delete finds them again
// through the data rows. A window the range cuts (at its two ends) also
// held samples that stay: the hours of those windows are marked written
// first (rollup.Builder.MarkWritten: queries read them raw), and built
// again from the samples left (rollup.Builder.BuildHour) once the samples
// are gone.

// rollupWindows maps a rollup row (table ‖ 0x00 ‖ key) to the indexes of
// its windows to clear.
type rollupWindows map[string][]int

// rollupBatch deletes the rollup cells of the windows of batch's series
// that hold samples in [start, end].
func (d *Deleter) rollupBatch(ctx context.Context, batch []query.MatchedRow, start, end int64, st *Stats) error {
	b := d.opts.Rollups
	l := d.opts.Layout
	at := l.SaltWidth + l.MetricWidth
	rows := rollupWindows{}
	for _, mr := range batch {
		base, ok := l.BaseTimeOf(mr.Row.Key)
		if !ok {
			continue
		}
		first, last := hourBounds(base)
		lo, hi := max(start, first), min(end, last)
		if lo > hi {
			continue
		}
		for _, iv := range b.Intervals() {
			w := iv.Seconds() * 1000
			for e := ceilTo(lo, w); e <= ceilTo(hi, w); e += w {
				rb, index, err := iv.LocateWindow(e)
				if err != nil {
					return err
				}
				key := append(append([]byte(iv.Table), 0), mr.Row.Key...)
				binary.BigEndian.PutUint32(key[len(iv.Table)+1+at:], rb)
				rows[string(key)] = append(rows[string(key)], index)
			}
		}
	}
	for k, indexes := range rows {
		table, key, _ := bytes.Cut([]byte(k), []byte{0})
		row, err := d.st.Get(ctx, string(table), key, rollup.Family)
		if errors.Is(err, store.ErrTableNotFound) {
			continue // no rollup table: no rollups to delete
		}
		if err != nil {
			return fmt.Errorf("rollup row %x of %s: %w", key, table, err)
		}
		var cols []store.Column
		for _, c := range row.Cells {
			if _, index, _, ok := mapping.ParseRollupQualifier(c.Qualifier); ok && slices.Contains(indexes, index) {
				cols = append(cols, store.Column{Family: c.Family, Qualifier: c.Qualifier})
			}
		}
		if len(cols) == 0 {
			continue
		}
		if err := d.st.Delete(ctx, string(table), key, cols); err != nil {
			return fmt.Errorf("rollup row %x of %s: %w", key, table, err)
		}
		st.RollupCells += int64(len(cols))
	}
	return nil
}

// ceilTo rounds t up to a multiple of w.
func ceilTo(t, w int64) int64 {
	if r := t % w; r != 0 {
		if t < 0 {
			return t - r
		}
		return t + w - r
	}
	return t
}

// edgeHours returns the hours of the windows that [start, end] cuts,
// whose other samples stay.
func (d *Deleter) edgeHours(start, end int64) []int64 {
	var hours []int64
	for _, iv := range d.opts.Rollups.Intervals() {
		w := iv.Seconds() * 1000
		if e := ceilTo(start, w); start > e-w+1 {
			hours = append(hours, (e-1)/1000/mapping.MaxTimespan*mapping.MaxTimespan)
		}
		if e := ceilTo(end, w); end < e {
			hours = append(hours, (e-1)/1000/mapping.MaxTimespan*mapping.MaxTimespan)
		}
	}
	slices.Sort(hours)
	hours = slices.Compact(hours)
	return slices.DeleteFunc(hours, func(h int64) bool { return h < 0 })
}

// staleEdges reports whether one of hours (the edge hours) is stale:
// marked written and not built since. A delete stopped after it deleted
// the rollup cells of the windows its range cuts and before it built them
// again leaves them so; run again, it finds those cells gone (no rollup
// cell to delete) and MarkWritten changes nothing, and would leave them
// unbuilt (read raw) until a scheduler's next check. Rebuilt here, the
// re-run finishes what the delete began.
func (d *Deleter) staleEdges(ctx context.Context, hours []int64) (bool, error) {
	ivs := d.opts.Rollups.Intervals()
	if len(ivs) == 0 || len(hours) == 0 {
		return false, nil
	}
	p, err := rollup.ReadProgress(ctx, d.st, ivs[0].Table) // the progress row's table
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(hours, p.Stale), nil
}

// rebuildEdges builds again the hours of the windows that [start, end]
// cuts (marked written before the delete, so that queries read them raw
// meanwhile), recording them built again.
func (d *Deleter) rebuildEdges(ctx context.Context, b *rollup.Builder, start, end int64) error {
	for _, h := range d.edgeHours(start, end) {
		if _, err := b.BuildHour(ctx, h); err != nil {
			return fmt.Errorf("rollups of the hour at %d: %w", h, err)
		}
	}
	return nil
}
