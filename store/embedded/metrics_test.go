package embedded

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/promhbase/promhbase/store"
)

// TestCollector: the store's metrics register, show the configured block
// cache capacity, and follow what was written and read.
func TestCollector(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoSync: true, CacheBytes: 8 << 20, BufferTables: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	reg := prometheus.NewRegistry()
	if err := reg.Register(s.Collector()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 100 {
		if err := s.Put(ctx, "t", []store.Put{{Row: []byte{byte(i)}, Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: make([]byte, 1000)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	bput := func(n int) {
		for i := range n {
			if err := s.Put(ctx, "b", []store.Put{{Row: []byte{byte(i)}, Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: []byte{1}}}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	bput(10)
	// Flushed to a table, then read back through the block cache.
	if err := s.CompactAll(ctx); err != nil {
		t.Fatal(err)
	}
	bput(5)
	if _, err := s.Get(ctx, "t", []byte{7}, ""); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 16 {
		t.Fatalf("%d series gathered, %v; want 16", n, err)
	}
	for _, tc := range []struct {
		name string
		ok   func(float64) bool
	}{
		{"promhbase_embedded_block_cache_max_bytes", func(v float64) bool { return v == 8<<20 }},
		{"promhbase_embedded_block_cache_bytes", func(v float64) bool { return v > 0 }},
		{"promhbase_embedded_memtable_bytes", func(v float64) bool { return v > 0 }},
		{"promhbase_embedded_memtables", func(v float64) bool { return v >= 1 }},
		{"promhbase_embedded_wal_bytes", func(v float64) bool { return v >= 0 }},
		{"promhbase_embedded_row_buffer_bytes", func(v float64) bool { return v >= 1<<20 }},
		{"promhbase_embedded_row_buffer_rows", func(v float64) bool { return v == 5 }},
		{"promhbase_embedded_row_buffer_cells", func(v float64) bool { return v == 5 }},
		{"promhbase_embedded_row_buffer_flushes_total", func(v float64) bool { return v == 1 }},
		{"promhbase_embedded_row_buffer_flush_errors_total", func(v float64) bool { return v == 0 }},
		{"promhbase_embedded_row_buffer_presorts_total", func(v float64) bool { return v >= 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() != tc.name {
					continue
				}
				m := mf.GetMetric()[0]
				v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
				if !tc.ok(v) {
					t.Errorf("%s = %v", tc.name, v)
				}
				return
			}
			t.Errorf("%s not gathered", tc.name)
		})
	}
}
