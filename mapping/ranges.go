package mapping

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/promhbase/promhbase/store"
)

// KeyRange is the row keys in [Start, Stop); a nil Stop runs to the end of
// the table.
type KeyRange struct {
	Start, Stop []byte
}

// MetricRanges returns the key ranges that hold the rows of metric whose
// base time lies in the hours of [from, to] (Unix seconds, inclusive): one
// range per salt bucket,
//
//	[salt] metric hour(from)  ..  [salt] metric hour(to)+3600
//
// as OpenTSDB's scanners bound them. It returns nil when the range is empty
// or lies beyond the 32-bit base time.
func (l Layout) MetricRanges(metric []byte, from, to int64) []KeyRange {
	if to < from || to < 0 {
		return nil
	}
	from = max(from, 0) / MaxTimespan * MaxTimespan
	if from > math.MaxUint32 {
		return nil
	}
	next := to/MaxTimespan*MaxTimespan + MaxTimespan
	buckets := 1
	if l.SaltWidth > 0 {
		buckets = l.SaltBuckets
	}
	out := make([]KeyRange, 0, buckets)
	for b := range buckets {
		prefix := append(l.AppendSalt(nil, b), metric...)
		r := KeyRange{Start: binary.BigEndian.AppendUint32(prefix[:len(prefix):len(prefix)], uint32(from))}
		if next <= math.MaxUint32 {
			r.Stop = binary.BigEndian.AppendUint32(prefix[:len(prefix):len(prefix)], uint32(next))
		} else {
			r.Stop = store.PrefixEnd(prefix)
		}
		out = append(out, r)
	}
	return out
}

// MetricUIDs lists the metric UIDs of a UID table: the id:metrics cells of
// its forward rows (of width bytes; others are not UIDs of this layout).
func MetricUIDs(ctx context.Context, st interface {
	Scan(ctx context.Context, req store.ScanRequest) store.Scanner
}, table string, width int) ([][]byte, error) {
	sc := st.Scan(ctx, store.ScanRequest{Table: table, Start: []byte{0x01}, Family: uidFamilyID})
	defer sc.Close()
	var uids [][]byte
	for sc.Next() {
		for _, cell := range sc.Row().Cells {
			if string(cell.Qualifier) == KindMetric.Qualifier() && len(cell.Value) == width {
				uids = append(uids, bytes.Clone(cell.Value))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("list metric UIDs in %s: %w", table, err)
	}
	return uids, nil
}

// MetricNames lists the metric names of a UID table from its reverse rows:
// the name:metrics cells of the rows of UIDs 1 up to the metrics counter
// (row 0x00, id:metrics), so that the scan reads about as many rows as
// there are metrics (and the tag UIDs that share those numbers), never the
// forward rows of every tag value. Names are sorted, each once (a name
// stored in its Latin-1 and its legacy UTF-8 form has two UIDs).
func MetricNames(ctx context.Context, st interface {
	Get(ctx context.Context, table string, row []byte, family string) (store.Row, error)
	Scan(ctx context.Context, req store.ScanRequest) store.Scanner
}, table string, width int) ([]string, error) {
	row, err := st.Get(ctx, table, maxIDRow, uidFamilyID)
	if err != nil {
		return nil, fmt.Errorf("read uid counters of %s: %w", table, err)
	}
	var max uint64
	for _, c := range row.Cells {
		if string(c.Qualifier) == KindMetric.Qualifier() && len(c.Value) == 8 {
			max = binary.BigEndian.Uint64(c.Value)
		}
	}
	names := []string{}
	if max == 0 {
		return names, nil
	}
	uid := func(id uint64) []byte {
		return binary.BigEndian.AppendUint64(nil, id)[8-width:]
	}
	req := store.ScanRequest{Table: table, Start: uid(1), Family: uidFamilyName}
	if width >= 8 || max+1 < uint64(1)<<(8*width) {
		req.Stop = uid(max + 1)
	} else {
		req.Stop = store.PrefixEnd(uid(1<<(8*width) - 1))
	}
	sc := st.Scan(ctx, req)
	defer sc.Close()
	for sc.Next() {
		r := sc.Row()
		if len(r.Key) != width {
			continue // a forward row that sorts among the UIDs
		}
		for _, c := range r.Cells {
			if string(c.Qualifier) == KindMetric.Qualifier() {
				names = append(names, nameFromStored(c.Value))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("list metric names in %s: %w", table, err)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
