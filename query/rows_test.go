package query

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
)

// TestRows: Rows hands on every row of the selected series whose hour
// overlaps the range, each once, in bounded batches of one scan each, in
// key order; the rows of other series and hours stay out, and fn may
// delete what it gets. On the backend PROMHBASE_TEST_BACKEND chooses.
func TestRows(t *testing.T) {
	const base = 1700002800
	var table string
	write := func(t *testing.T) (*Querier, store.Store) {
		t.Helper()
		st, tb := testbackend.New(t)
		table = tb.Data
		m := layoutMapper(t, st, mapping.DefaultLayout(), uid.UIDOptions{Table: tb.UID})
		// A reader with caches of its own, as another process would have.
		q := New(st, layoutMapper(t, st, mapping.DefaultLayout(), uid.UIDOptions{Table: tb.UID}), Options{DataTable: tb.Data, UIDTable: tb.UID})
		ctx := context.Background()
		for _, name := range []string{"m", "other"} {
			for i := range 10 {
				lbls := []mapping.Label{{Name: []byte("__name__"), Value: []byte(name)}, {Name: []byte("i"), Value: fmt.Appendf(nil, "%d", i)}}
				s, err := m.Resolve(ctx, fmt.Appendf(nil, "%s%d", name, i), lbls)
				if err != nil {
					t.Fatal(err)
				}
				for h := range int64(4) {
					hour := base + h*3600
					q, v := mapping.AppendSampleCell(nil, hour, hour*1000+1, float64(i))
					if err := st.Put(ctx, table, []store.Put{{Row: m.AppendRowKey(nil, s, uint32(hour)), Cells: []store.Cell{{Family: []byte("t"), Qualifier: q, Value: v}}}}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		return q, st
	}
	sel := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"), labels.MustNewMatcher(labels.MatchRegexp, "i", "[0-4]")}
	// Hours 1 and 2: from the last millisecond of hour 0 is not in them.
	start, end := int64(base+3600)*1000, int64(base+3*3600)*1000-1
	for _, tc := range []struct {
		name      string
		req       RowsRequest
		maxBatch  int
		wantRows  int
		deleteAll bool
	}{
		{"batches of 4", RowsRequest{Start: start, End: end, Matchers: sel, BatchRows: 4}, 4, 10, false},
		{"batches of one row by bytes", RowsRequest{Start: start, End: end, Matchers: sel, BatchBytes: 1}, 1, 10, false},
		{"default bounds", RowsRequest{Start: start, End: end, Matchers: sel}, DefaultRowsBatch, 10, false},
		{"fn deletes what it gets", RowsRequest{Start: start, End: end, Matchers: sel, BatchRows: 3}, 3, 10, true},
		{"a range inside an hour", RowsRequest{Start: start + 5, End: start + 6, Matchers: sel}, DefaultRowsBatch, 5, false},
		{"empty range", RowsRequest{Start: end, End: start, Matchers: sel}, 0, 0, false},
		{"no exemplar table", RowsRequest{Start: start, End: end, Matchers: sel, Exemplars: true}, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, st := write(t)
			seen := map[string]bool{}
			var last []byte
			err := q.Rows(context.Background(), tc.req, func(batch []MatchedRow) error {
				if len(batch) == 0 || len(batch) > tc.maxBatch {
					t.Errorf("batch of %d rows, want 1..%d", len(batch), tc.maxBatch)
				}
				for _, r := range batch {
					if seen[string(r.Row.Key)] {
						t.Errorf("row %x met twice", r.Row.Key)
					}
					seen[string(r.Row.Key)] = true
					if bytes.Compare(r.Row.Key, last) <= 0 {
						t.Errorf("row %x after %x", r.Row.Key, last)
					}
					last = r.Row.Key
					if r.Labels.Get("__name__") != "m" || r.Labels.Get("i") > "4" || len(r.Row.Cells) != 1 {
						t.Errorf("row of %s with %d cells", r.Labels, len(r.Row.Cells))
					}
					b, _ := mapping.DefaultLayout().BaseTimeOf(r.Row.Key)
					if int64(b)*1000+mapping.MaxOffsetMs <= tc.req.Start || int64(b)*1000 > tc.req.End {
						t.Errorf("row of hour %d outside the range", b)
					}
					if tc.deleteAll {
						if err := st.Delete(context.Background(), table, r.Row.Key, nil); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != tc.wantRows {
				t.Errorf("%d rows, want %d", len(seen), tc.wantRows)
			}
			if tc.deleteAll {
				got, err := q.Select(context.Background(), start, end, sel...)
				if err != nil || len(got) != 0 {
					t.Errorf("after deleting every row handed on: %d series, %v", len(got), err)
				}
			}
		})
	}
}
