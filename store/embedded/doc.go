// Package embedded is the one-machine backend of store.Store, on the Pebble
// LSM engine: it keeps promhbase's tables (rows of cells, one version a
// cell, as HBase does) in one directory and needs no other process.
// promhbase runs with it on a laptop or a single server, and switches to
// store/hbase when it outgrows one machine.
//
// Layout of a Pebble key (one per cell; keys.go):
//
//	table 0x00 escape(row) 0x00 0x01 family 0x00 qualifier
//
// escape(row) writes every 0x00 byte of the row key as 0x00 0xFF, so that
// the terminator 0x00 0x01 sorts before any continuation and Pebble's key
// order is HBase's row order (unsigned bytes, a prefix before its
// extensions). Table and family names never contain 0x00.
//
// Pebble value: u64 big-endian cell timestamp (Unix ms) ‖ cell value.
//
// A run (runs.go) packs the cells of one row that one flush of the row
// buffer wrote into one key, which sorts before the row's cell keys:
//
//	table 0x00 escape(row) 0x00 0x01 0x00 seq
//
// Its value is u8 1 ‖ the cells (generic), or u8 2 ‖ the bytes the
// table's RowCodec (codec.go, Options.RowCodecs: the data table's dense
// codec) packed them into.
//
// Keys that start with 0x00 (no table's do) hold the store's own state:
// the last flush's sequence number and the tables that hold runs.
//
// Each table keeps one version per cell (VERSIONS=1): a write replaces the
// cell, except that a cell written with an explicit timestamp older than the
// stored one is dropped, as HBase would keep it hidden behind the newer
// version. Writes are committed with fsync before they are acknowledged.
//
// The tables of Options.BufferTables (the data table: a cell a sample) are
// written through the row buffer instead (rowbuf.go): their recent cells
// in memory a row at a time (package memrows) with their own log (package
// wlog; its records' payloads in record.go),
// ingested into Pebble as sorted sstables that hold one run a row, not one
// key a cell; every read merges the buffer with Pebble's runs and cell
// keys. A put (rowbuf_put.go) finds its rows under a table buffer's read
// lock, which puts share, and appends its cells under its write lock,
// taken in the order of the puts' records in the log.
//
// Atomicity per row: rows hash to one of 256 lock stripes (locks.go). Put
// holds the stripes of its rows shared while it applies its batch
// (exclusive for rows that carry explicit timestamps, which it must
// compare); Increment, CheckAndPut and Delete hold their row's stripe
// exclusively while they read and write. So a bounded Delete never removes
// a version written after it read the stored one, and Increment and
// CheckAndPut see no concurrent write of their row. Locks are held only
// while a batch is applied to the memtable; the fsync that makes it
// durable happens after they are released.
//
// Space (settle.go, logs.go): Close flushes the row buffer and Pebble's
// memtable, so that neither log holds anything to replay, and leaves no
// log file behind; the row buffer's log keeps one retired segment file
// for reuse, cut to the buffer's budget. A background settle compacts the
// key ranges deletes touched down to the bottom level (zstd, 32 KiB
// blocks) at its next wake-up (Options.SettleInterval), and once writes
// stop flushes both logs and compacts the ranges flushes wrote too;
// Reclaim does that at once. DeleteRows removes a range of rows with one
// range tombstone and one record of the row buffer's log.
//
// Files by job: store.go (Open, Close, Sync, Pebble's options, TableBytes),
// keys.go (key and value encoding), locks.go (row stripes), write.go (Put
// and the writers that apply puts), atomic.go (Increment, check-and-puts),
// delete.go, deleterows.go (DeleteRows), read.go (Get, GetCell, GetCells),
// scan.go, split.go (SplitRange), settle.go (the settle, Reclaim),
// logs.go (Pebble's log at Close, the logs' sizes), metrics.go, and the
// row buffer's rowbuf*.go, record.go, runs.go and codec.go (RowCodec);
// its rows in memory are the package memrows, its log the package wlog.
//
// Directory: Pebble's files (sstables, MANIFEST, OPTIONS, its NNNNNN.log
// write-ahead log while open) and rowbuf/: the row buffer's log segments
// (%016d.wal), free.wal.reuse (a retired segment kept for reuse) and,
// during a flush, ingest.sst.
//
// Besides: bulk.go (store.BulkPutter: an import's rows that the row buffer
// does not hold, written straight into an ingested sstable as runs),
// snapshot.go (snapshots as Pebble checkpoints), namespace.go (namespaces
// as key prefixes).
//
// The settle also finds at open what an earlier process left unsettled
// (every table above Pebble's bottom level) and settles it as it would have
// (settle.go).
package embedded
