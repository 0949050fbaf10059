package embedded

import (
	"bytes"
	"maps"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports what the embedded store holds in memory and owes to
// compaction, read from Pebble's metrics at each scrape:
//
//	promhbase_embedded_block_cache_{bytes,entries,max_bytes}   block cache
//	promhbase_embedded_block_cache_{hits,misses}_total
//	promhbase_embedded_memtable_bytes, _memtables              memtables, flushing ones included
//	promhbase_embedded_l0_tables                               tables in level 0
//	promhbase_embedded_compaction_debt_bytes                   bytes compactions still have to rewrite
//	promhbase_embedded_wal_bytes                               live write-ahead log
//	promhbase_embedded_row_buffer_{bytes,rows,cells}           row buffer, the one being flushed included
//	promhbase_embedded_row_buffer_flushes_total, _flush_errors_total
//	promhbase_embedded_row_buffer_presorts_total              new rows put in key order ahead of reads
//	promhbase_embedded_settles_total, _settle_errors_total     settles (settle.go), failed background ones
//	promhbase_embedded_free_disk_bytes                         free space on the store's filesystem (the disk guard's last reading)
//	promhbase_embedded_disk_full_total                         writes that met a full disk (ENOSPC)
//	promhbase_store_table_bytes{table}                         a table's bytes on disk (TableBytes)
//	promhbase_store_log_bytes{log="rowbuf"|"pebble_wal"}       the logs' files on disk
//
// The tables are Options.Tables, or when it is empty those the store
// holds keys of.
func (s *Store) Collector() prometheus.Collector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("promhbase_embedded_"+name, help, nil, nil)
	}
	return &pebbleCollector{s: s, descs: [...]*prometheus.Desc{
		d("block_cache_bytes", "Bytes of blocks held by the embedded store's block cache (Pebble); the memtables' reservations against its capacity are not included."),
		d("block_cache_entries", "Blocks held by the embedded store's block cache."),
		d("block_cache_max_bytes", "Capacity of the embedded store's block cache (--storage.embedded.cache-bytes)."),
		d("block_cache_hits_total", "Block cache lookups that found their block."),
		d("block_cache_misses_total", "Block cache lookups that read their block from disk."),
		d("memtable_bytes", "Bytes allocated by the embedded store's memtables, those waiting to be flushed included (not the one kept for reuse); they count against the block cache's capacity."),
		d("memtables", "Memtables of the embedded store, those waiting to be flushed included."),
		d("l0_tables", "Tables in level 0 of the embedded store."),
		d("compaction_debt_bytes", "Estimated bytes the embedded store's compactions have yet to rewrite."),
		d("wal_bytes", "Bytes of the embedded store's live write-ahead log."),
		d("row_buffer_bytes", "Bytes held by the embedded store's row buffer (the data table's recent cells), the one being flushed included; they count against the block cache's capacity."),
		d("row_buffer_rows", "Rows in the embedded store's row buffer, the one being flushed included."),
		d("row_buffer_cells", "Cells in the embedded store's row buffer, the one being flushed included."),
		d("row_buffer_flushes_total", "Flushes of the row buffer into the embedded store's tables."),
		d("row_buffer_flush_errors_total", "Flushes of the row buffer that failed (retried; writers wait once the buffer holds twice its budget)."),
		d("row_buffer_presorts_total", "Times the row buffer's new rows were put in key order in the background, ahead of the reads that need them."),
		d("settles_total", "Settles of the embedded store: compactions of the key ranges written or deleted since the last one down to the bottom level, in the background or on request."),
		d("settle_errors_total", "Background settles that failed (their ranges are settled at the next one)."),
		d("free_disk_bytes", "Free space on the embedded store's filesystem, read once a second; below --storage.min-free-disk-space-bytes the store is read-only (promhbase_storage_read_only)."),
		d("disk_full_total", "Writes of the embedded store that met a full disk (ENOSPC): each removed the ballast and turned the store read-only until space returned."),
	},
		tableBytes: prometheus.NewDesc("promhbase_store_table_bytes", "Bytes a table takes on disk: the store's estimate of its compressed files, logs and memory not included.", []string{"table"}, nil),
		logBytes:   prometheus.NewDesc("promhbase_store_log_bytes", "Bytes of a write-ahead log's files on disk: the row buffer's (rowbuf) and Pebble's (pebble_wal, with the files it keeps for reuse).", []string{"log"}, nil),
	}
}

// pebbleCollector is the prometheus.Collector of Store.Collector.
type pebbleCollector struct {
	s                    *Store
	descs                [20]*prometheus.Desc
	tableBytes, logBytes *prometheus.Desc
}

func (c *pebbleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	ch <- c.tableBytes
	ch <- c.logBytes
}

func (c *pebbleCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.s.db.Metrics()
	var rb rowBufferStats
	if c.s.rb != nil {
		rb = c.s.rb.stats()
	}
	g, k := prometheus.GaugeValue, prometheus.CounterValue
	for i, v := range [...]struct {
		t prometheus.ValueType
		v float64
	}{
		{g, float64(m.BlockCache.Size)},
		{g, float64(m.BlockCache.Count)},
		{g, float64(c.s.cacheBytes)},
		{k, float64(m.BlockCache.Hits)},
		{k, float64(m.BlockCache.Misses)},
		{g, float64(m.MemTable.Size)},
		{g, float64(m.MemTable.Count)},
		{g, float64(m.Levels[0].TablesCount)},
		{g, float64(m.Compact.EstimatedDebt)},
		{g, float64(m.WAL.Size)},
		{g, float64(rb.bytes)},
		{g, float64(rb.rows)},
		{g, float64(rb.cells)},
		{k, float64(rb.flushes)},
		{k, float64(rb.errors)},
		{k, float64(rb.presorts)},
		{k, float64(c.s.settler.settles.Load())},
		{k, float64(c.s.settler.errors.Load())},
		{g, float64(c.s.guard.free.Load())},
		{k, float64(c.s.guard.fullEvents.Load())},
	} {
		ch <- prometheus.MustNewConstMetric(c.descs[i], v.t, v.v)
	}
	for _, t := range c.s.tableNames() {
		lower, upper, _ := rowRange(t, nil, nil)
		if n, err := c.s.db.EstimateDiskUsage(lower, upper); err == nil {
			ch <- prometheus.MustNewConstMetric(c.tableBytes, g, float64(n), t)
		}
	}
	rowbuf, wal := c.s.logBytes()
	ch <- prometheus.MustNewConstMetric(c.logBytes, g, float64(rowbuf), "rowbuf")
	ch <- prometheus.MustNewConstMetric(c.logBytes, g, float64(wal), "pebble_wal")
}

// tableNames returns Options.Tables, sorted, or when it is empty the
// tables the store holds keys of: a seek past each table's keys finds the
// next table.
func (s *Store) tableNames() []string {
	if s.tables != nil {
		return slices.Sorted(maps.Keys(s.tables))
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{0x01}})
	if err != nil {
		return nil
	}
	defer it.Close()
	var names []string
	for ok := it.First(); ok; {
		k := it.Key()
		i := bytes.IndexByte(k, 0)
		if i <= 0 {
			break // not a table's key
		}
		names = append(names, string(k[:i]))
		ok = it.SeekGE(append(k[:i:i], 0x01))
	}
	return names
}
