package embedded

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/memrows"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// TestCollector: the store's metrics register, show the configured block
// cache capacity, and follow what was written and read.
func TestCollector(t *testing.T) {
	s := openTemp(t, Options{NoSync: true, CacheBytes: 8 << 20, BufferTables: []string{"b"}})
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
	// 20 without labels, the bytes of tables b and t, of the two logs.
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 24 {
		t.Fatalf("%d series gathered, %v; want 24", n, err)
	}
	for _, tc := range []struct {
		name   string
		labels []string // name, value pairs
		ok     func(float64) bool
	}{
		{"promhbase_embedded_block_cache_max_bytes", nil, func(v float64) bool { return v == 8<<20 }},
		{"promhbase_embedded_block_cache_bytes", nil, func(v float64) bool { return v > 0 }},
		{"promhbase_embedded_memtable_bytes", nil, func(v float64) bool { return v > 0 }},
		{"promhbase_embedded_memtables", nil, func(v float64) bool { return v >= 1 }},
		{"promhbase_embedded_wal_bytes", nil, func(v float64) bool { return v >= 0 }},
		{"promhbase_embedded_row_buffer_bytes", nil, func(v float64) bool { return v >= memrows.FirstChunkBytes }},
		{"promhbase_embedded_row_buffer_rows", nil, func(v float64) bool { return v == 5 }},
		{"promhbase_embedded_row_buffer_cells", nil, func(v float64) bool { return v == 5 }},
		{"promhbase_embedded_row_buffer_flushes_total", nil, func(v float64) bool { return v == 1 }},
		{"promhbase_embedded_row_buffer_flush_errors_total", nil, func(v float64) bool { return v == 0 }},
		{"promhbase_embedded_row_buffer_presorts_total", nil, func(v float64) bool { return v >= 0 }},
		{"promhbase_embedded_settles_total", nil, func(v float64) bool { return v == 0 }},
		{"promhbase_embedded_settle_errors_total", nil, func(v float64) bool { return v == 0 }},
		// 100 values of 1000 zero bytes (zstd: some hundred bytes), in a
		// table since CompactAll.
		{"promhbase_store_table_bytes", []string{"table", "t"}, func(v float64) bool { return v > 100 && v < 1<<20 }},
		{"promhbase_store_table_bytes", []string{"table", "b"}, func(v float64) bool { return v > 0 && v < 1<<20 }},
		// The 5 puts since the flush.
		{"promhbase_store_log_bytes", []string{"log", "rowbuf"}, func(v float64) bool { return v > 0 && v < 1<<20 }},
		{"promhbase_store_log_bytes", []string{"log", "pebble_wal"}, func(v float64) bool { return v >= 0 }},
	} {
		name := tc.name
		for i := 0; i+1 < len(tc.labels); i += 2 {
			name += fmt.Sprintf("{%s=%q}", tc.labels[i], tc.labels[i+1])
		}
		t.Run(name, func(t *testing.T) {
			if v := testproc.GatherSum(t, reg, tc.name, tc.labels...); !tc.ok(v) {
				t.Errorf("%s = %v", name, v)
			}
		})
	}
}
