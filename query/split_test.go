package query

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
)

// countingStore counts the data table's scans; SplitRange is the
// embedded store's.
type countingStore struct {
	*embedded.Store
	scans atomic.Int64
}

func (c *countingStore) Scan(ctx context.Context, req store.ScanRequest) store.Scanner {
	if req.Table == "tsdb" {
		c.scans.Add(1)
	}
	return c.Store.Scan(ctx, req)
}

// TestSplitScans: a metric's scan cut into parts that run at once (the
// store a RangeSplitter, several cores) answers exactly as one scan does,
// through Select and Stream, with series whose hours fell into different
// parts joined in time order; StreamFloats as Stream.
func TestSplitScans(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	ctx := context.Background()
	st := &countingStore{Store: openStore(t, embedded.Options{BufferTables: []string{"tsdb"}, SplitPartBytes: 64 << 10})}
	m := coldMapper(t, st)
	const series, samples = 400, 3 * 360 // three hours, one every 10 s
	for i := range series {
		writeSeries(t, m, st, t0, samples, func(j int) float64 { return float64(i*samples+j) / 4 },
			"__name__", "split_me", "instance", fmt.Sprintf("host-%03d", i), "job", "node")
	}
	sel := labels.MustNewMatcher(labels.MatchEqual, "__name__", "split_me")
	answer := func(conc int, start, end int64) (sel1, stream1 string, scans int64) {
		t.Helper()
		q := New(st, m, Options{ScanConcurrency: conc})
		before := st.scans.Load()
		got, err := q.Select(ctx, start, end, sel)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != series {
			t.Fatalf("concurrency %d: %d series, want %d", conc, len(got), series)
		}
		scans = st.scans.Load() - before
		var c strings.Builder
		err = q.Stream(ctx, q.NewBudget(), start, end, []*labels.Matcher{sel}, func(cs *ChunkSeries) error {
			last := int64(-1 << 63)
			for _, ch := range cs.Chunks {
				if ch.MinT <= last || ch.MaxT < ch.MinT {
					return fmt.Errorf("%s: chunk [%d, %d] after %d", cs.Labels, ch.MinT, ch.MaxT, last)
				}
				last = ch.MaxT
			}
			fs, _, err := DecodeChunks(cs.Chunks)
			if err != nil {
				return err
			}
			if len(fs) != cs.Samples {
				return fmt.Errorf("%s: %d samples decoded, %d counted", cs.Labels, len(fs), cs.Samples)
			}
			fmt.Fprintln(&c, cs.Labels, fs)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// StreamFloats: the same samples, raw.
		var f strings.Builder
		err = q.StreamFloats(ctx, q.NewBudget(), start, end, []*labels.Matcher{sel}, func(cs *ChunkSeries) error {
			if len(cs.Chunks) != 0 || len(cs.Floats) != cs.Samples {
				return fmt.Errorf("%s: %d chunks, %d floats, %d counted", cs.Labels, len(cs.Chunks), len(cs.Floats), cs.Samples)
			}
			fmt.Fprintln(&f, cs.Labels, cs.Floats)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if f.String() != c.String() {
			t.Errorf("concurrency %d: StreamFloats answered differently from Stream", conc)
		}
		return seriesString(got), c.String(), scans
	}
	for _, tc := range []struct {
		name       string
		start, end int64
	}{
		{"hours: cut at hours", t0 - 3600_000, t0 + 4*3600_000},
		{"within an hour: cut by the store", t0 + 60_000, t0 + 1800_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oneSel, oneStream, oneScans := answer(1, tc.start, tc.end)
			sel4, stream4, scans4 := answer(4, tc.start, tc.end)
			if oneScans != 1 || scans4 < 2 {
				t.Fatalf("scans of the data table: %d with concurrency 1, %d with 4; want 1 and several", oneScans, scans4)
			}
			if sel4 != oneSel {
				t.Error("Select: the split scans answered differently from one scan")
			}
			if stream4 != oneStream {
				t.Error("Stream: the split scans answered differently from one scan")
			}
			if !strings.HasPrefix(oneStream, oneSel[:strings.IndexByte(oneSel, '\n')]) {
				t.Errorf("Stream and Select disagree: %.80q vs %.80q", oneStream, oneSel)
			}
		})
	}
}
