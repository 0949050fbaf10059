package uid

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// MetricUIDs lists the metric UIDs of a UID table: the id:metrics cells of
// its forward rows (of width bytes; others are not UIDs of this layout).
func MetricUIDs(ctx context.Context, st interface {
	Scan(ctx context.Context, req store.ScanRequest) store.Scanner
}, table string, width int) ([][]byte, error) {
	sc := st.Scan(ctx, store.ScanRequest{Table: table, Start: []byte{0x01}, Family: FamilyID})
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
	row, err := st.Get(ctx, table, maxIDRow, FamilyID)
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
	req := store.ScanRequest{Table: table, Start: uid(1), Family: FamilyName}
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
				names = append(names, mapping.NameFromStored(c.Value))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("list metric names in %s: %w", table, err)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
