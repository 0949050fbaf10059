package query

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series/index"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
)

// scanCounter counts the data-table scans per metric UID.
type scanCounter struct {
	store.Store
	mu    sync.Mutex
	scans map[string]int
}

func (s *scanCounter) Scan(ctx context.Context, req store.ScanRequest) store.Scanner {
	if req.Table == "tsdb" && len(req.Start) >= 3 {
		s.mu.Lock()
		s.scans[string(req.Start[:3])]++
		s.mu.Unlock()
	}
	return s.Store.Scan(ctx, req)
}

// TestIndexedSelectors: a selector without a metric name scans the metrics
// the series index names for its matchers and days, plus the metrics the
// index never saw (written by another writer, such as an OpenTSDB TSD),
// and not the indexed metrics that have no such series those days.
func TestIndexedSelectors(t *testing.T) {
	ctx := context.Background()
	emb := openStore(t, embedded.Options{Tables: []string{"tsdb", "tsdb-uid", "tsdb-meta", "tsdb-index"}})
	st := &scanCounter{Store: emb, scans: map[string]int{}}
	layout := mapping.DefaultLayout()
	m := coldMapper(t, st)
	w := index.NewWriter(st, index.Options{MetaTable: "tsdb-meta", IndexTable: "tsdb-index", Layout: layout}, nil)
	if err := w.MarkCoverage(ctx, 0); err != nil {
		t.Fatal(err)
	}
	const day = int64(mapping.DaySeconds * 1000)
	t0 := 19700 * day
	put := func(name, job string, ts int64, indexed bool) []byte {
		t.Helper()
		s, err := m.Resolve(ctx, []byte(name+job), []mapping.Label{{Name: []byte("__name__"), Value: []byte(name)}, {Name: []byte("job"), Value: []byte(job)}})
		if err != nil {
			t.Fatal(err)
		}
		base := ts / 1000 / 3600 * 3600
		q := mapping.AppendMsQualifier(nil, uint32(ts-base*1000), 0)
		if err := st.Put(ctx, "tsdb", []store.Put{{Row: m.AppendRowKey(nil, s, uint32(base)), Cells: []store.Cell{{Family: []byte("t"), Qualifier: q, Value: []byte{1}}}}}); err != nil {
			t.Fatal(err)
		}
		if indexed {
			if err := w.Write(ctx, []index.Entry{{Series: s, Day: mapping.DayOf(ts)}}); err != nil {
				t.Fatal(err)
			}
		}
		return s.Metric
	}
	a := put("a_total", "node", t0+1000, true)
	tsd := put("tsd_put", "node", t0+2000, false)   // another writer's metric
	other := put("other", "api", t0+3000, true)     // no job="node" series
	old := put("old_total", "node", t0-3*day, true) // indexed, not on these days
	q := New(st, m, Options{Index: index.NewReader(st, "tsdb-index", m.UIDs(), layout)})
	ss, err := q.Select(ctx, t0, t0+time.Hour.Milliseconds(), labels.MustNewMatcher(labels.MatchEqual, "job", "node"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range ss {
		got = append(got, s.Labels.Get("__name__"))
	}
	if want := []string{"a_total", "tsd_put"}; !slices.Equal(got, want) {
		t.Errorf("{job=\"node\"} selected %q, want %q", got, want)
	}
	for name, uid := range map[string][]byte{"a_total": a, "tsd_put": tsd} {
		if st.scans[string(uid)] == 0 {
			t.Errorf("%s not scanned", name)
		}
	}
	for name, uid := range map[string][]byte{"other": other, "old_total": old} {
		if n := st.scans[string(uid)]; n != 0 {
			t.Errorf("%s scanned %d times; the index says it has no such series those days", name, n)
		}
	}
}
