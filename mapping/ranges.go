package mapping

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"

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
