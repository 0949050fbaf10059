package embedded

import (
	"bytes"
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/memrows"
)

// Cutting a scan's range into parts of about equal data
// (store.RangeSplitter), so that the query layer can scan the parts at
// once, one core each.

const (
	// minSplitRows is the fewest buffered rows a part must get for the
	// buffer's rows to be cut.
	minSplitRows = 32
	// DefaultSplitPartBytes is the least data (Pebble's estimate of its
	// tables' bytes, or the buffer's) a part must get for a range to be
	// cut, by default (Options.SplitPartBytes): below it a scan of its
	// own costs more than it saves. The split's estimates (about 0.2 ms),
	// each part's series set up again, and the join of the parts'
	// series: at 64 KiB, the queries of 20-80 series of a day (0.3-0.6 MiB
	// of settled rows) took 6-9 % longer on two cores than unsplit, and
	// those of 640 series (5 MiB) were as fast either way.
	DefaultSplitPartBytes = 1 << 20
	// splitProbes bounds the estimates a split key of Pebble's tables is
	// searched with (each halves the interval of keys it may be in):
	// eight put a cut within 1/256 of the interval between the range's
	// first and last keys (a tenth of an hour of a day's rows), and cost
	// a query of few series less than 16 did (each estimate walks the
	// tables' index).
	splitProbes = 8
)

var _ store.RangeSplitter = (*Store)(nil)

// SplitRange returns at most n-1 row keys, each a row stored in the table
// (possibly deleted since), that
// cut [start, stop) into parts of about equal data (store.RangeSplitter).
// When the row buffer holds enough rows of the range, it is cut at the
// quantiles of the buffer's sorted rows: the recent rows of a table
// written a row per series and hour are the same series as the older
// ones in Pebble, unless most of Pebble's bytes lie before the first
// buffered row (older hours). Otherwise it is cut where Pebble's estimate
// of its tables' bytes (EstimateDiskUsage: data blocks, or coarser index
// partitions) reaches each fraction, each cut moved forward to the first
// row that starts there. A range of too little data is not cut; the
// memtable's bytes (UID, index and meta tables) are not counted.
func (s *Store) SplitRange(ctx context.Context, table string, start, stop []byte, n int) ([][]byte, error) {
	if err := s.checkTable(table); err != nil {
		return nil, err
	}
	if n < 2 {
		return nil, nil
	}
	lower, upper, ok := rowRange(table, start, stop)
	if !ok {
		return nil, nil
	}
	onDisk, err := s.db.EstimateDiskUsage(lower, upper)
	if err != nil {
		return nil, fmt.Errorf("split %s: %w", table, err)
	}
	if s.buffered(table) {
		buf := s.bufferedRange(table, start, stop)
		if buf.count() >= n*minSplitRows {
			// The buffer's rows stand for Pebble's too unless most of
			// Pebble's bytes come before the first of them (older hours).
			first := appendEscapedPrefix(nil, table, buf.srt.Key(buf.srt.Order[buf.lo]))
			before, err := s.db.EstimateDiskUsage(lower, first)
			if err != nil {
				return nil, fmt.Errorf("split %s: %w", table, err)
			}
			if before <= onDisk/2 {
				if buf.bytes+int64(onDisk) < int64(n)*s.splitPart {
					return nil, nil
				}
				return buf.cut(n), nil
			}
		}
	}
	if onDisk < uint64(n)*uint64(s.splitPart) {
		return nil, nil
	}
	return s.splitTables(ctx, table, start, lower, upper, onDisk, n)
}

// bufferedRange is the rows of a row-buffer layer in a range: order[lo:hi]
// indexes rows, whose keys are in chunks.
type bufferedRange struct {
	srt    memrows.Sorted
	lo, hi int
	bytes  int64 // estimated: the layer's bytes a row times the rows
}

// count returns the rows in the range.
func (b bufferedRange) count() int { return b.hi - b.lo }

// cut returns the keys of the rows at the n-quantiles of the range.
func (b bufferedRange) cut(n int) [][]byte {
	keys := make([][]byte, 0, n-1)
	for i := 1; i < n; i++ {
		k := b.srt.Key(b.srt.Order[b.lo+i*b.count()/n])
		keys = append(keys, bytes.Clone(k))
	}
	return keys
}

// bufferedRange returns the rows in [start, stop) of the buffer's layer
// that holds the most of them.
func (s *Store) bufferedRange(table string, start, stop []byte) bufferedRange {
	var best bufferedRange
	for _, m := range s.rb.layers(table) {
		srt := m.Sorted()
		r := bufferedRange{srt: srt, lo: srt.Search(start), hi: len(srt.Order)}
		if len(stop) > 0 {
			r.hi = srt.Search(stop)
		}
		if r.count() <= best.count() {
			continue
		}
		m.RLock()
		perRow := m.Bytes() / int64(max(m.Len(), 1))
		m.RUnlock()
		r.bytes = perRow * int64(r.count())
		best = r
	}
	return best
}

// splitTables cuts [lower, upper) (Pebble keys of [start, ...)) where
// Pebble's estimate of its tables' bytes from lower reaches k/n of total,
// each cut moved to the first row that starts at or after it.
func (s *Store) splitTables(ctx context.Context, table string, start, lower, upper []byte, total uint64, n int) ([][]byte, error) {
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("split %s: %w", table, err)
	}
	defer it.Close()
	tlen := len(table) + 1
	// The search runs between the range's first and last keys: the keys
	// of a metric fill a sliver of the space between the bounds.
	if !it.First() {
		if err := it.Error(); err != nil {
			return nil, fmt.Errorf("split %s: %w", table, err)
		}
		return nil, nil
	}
	first := bytes.Clone(it.Key())
	if !it.Last() {
		if err := it.Error(); err != nil {
			return nil, fmt.Errorf("split %s: %w", table, err)
		}
		return nil, nil
	}
	last := bytes.Clone(it.Key())
	var keys [][]byte
	prev := start
	for k := 1; k < n; k++ {
		target := total * uint64(k) / uint64(n)
		a, b := first, last
		for range splitProbes {
			mid := midKey(a, b)
			used, err := s.db.EstimateDiskUsage(lower, mid)
			if err != nil {
				return nil, fmt.Errorf("split %s: %w", table, err)
			}
			if used < target {
				a = mid
			} else {
				b = mid
			}
		}
		if !it.SeekGE(b) {
			break
		}
		row, _, err := splitRow(it.Key()[tlen:], nil)
		if err != nil {
			return nil, fmt.Errorf("split %s: %w", table, err)
		}
		if bytes.Compare(row, prev) <= 0 {
			continue // a part too small to hold a row of its own
		}
		keys = append(keys, row)
		prev = row
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("split %s: %w", table, err)
	}
	return keys, nil
}

// midKey returns a key halfway between a and b (a < b) in byte order:
// both read as big-endian fractions, their mean, one byte longer than
// the longer of them (a itself when no key lies between them that way).
// a <= midKey(a, b) < b.
func midKey(a, b []byte) []byte {
	n := max(len(a), len(b)) + 1
	out := make([]byte, n)
	carry := 0
	for i := n - 1; i >= 0; i-- {
		sum := carry
		if i < len(a) {
			sum += int(a[i])
		}
		if i < len(b) {
			sum += int(b[i])
		}
		out[i] = byte(sum)
		carry = sum >> 8
	}
	for i := range out {
		v := carry<<8 | int(out[i])
		out[i] = byte(v >> 1)
		carry = v & 1
	}
	if bytes.Compare(out, b) >= 0 {
		return a // a and b differ only in trailing zeros
	}
	return out
}
