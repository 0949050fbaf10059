// Package embedded is the one-machine backend of store.Store, on the Pebble
// LSM engine. It needs no other process: promhbase runs with it on a laptop
// or a single server, and switches to store/hbase when it outgrows one
// machine.
//
// Layout of a Pebble key (one per cell):
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
// Each table keeps one version per cell (VERSIONS=1): a write replaces the
// cell, except that a cell written with an explicit timestamp older than the
// stored one is dropped, as HBase would keep it hidden behind the newer
// version. Writes are committed with fsync before they are acknowledged.
//
// The tables of Options.BufferTables (the data table: a cell a sample) are
// written through the row buffer instead (rowbuf.go): their recent cells
// in memory a row at a time with their own log, ingested into Pebble as
// sorted sstables that hold one key a row, not one a cell (a run: the
// row's cells of that flush packed into one value; see runs.go); every
// read merges the buffer with Pebble's runs and cell keys.
//
// Atomicity per row: rows hash to one of 256 lock stripes. Put holds the
// stripes of its rows shared while it applies its batch (exclusive for rows
// that carry explicit timestamps, which it must compare); Increment,
// CheckAndPut and Delete hold their row's stripe exclusively while they read
// and write. So a bounded Delete never removes a version written after it
// read the stored one, and Increment and CheckAndPut see no concurrent write
// of their row. Locks are held only while a batch is applied to the
// memtable; the fsync that makes it durable happens after they are released.
package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/promhbase/promhbase/internal/arena"
	"github.com/promhbase/promhbase/store"
)

const rowLocks = 256

// Options configure the embedded store.
type Options struct {
	// NoSync skips the fsync of each write; for benchmarks and tests only.
	NoSync bool
	// Tables lists the tables that exist. Operations on other tables fail
	// with store.ErrTableNotFound. Empty means every table exists.
	Tables []string
	// CacheBytes is Pebble's block cache; 0 means DefaultCacheBytes.
	CacheBytes int64
	// BufferTables lists the tables whose puts go to the row buffer (see
	// rowBuffer) instead of Pebble's memtable: tables written a cell at a
	// time in rows that take many cells, as the data table is.
	BufferTables []string
	// BufferBytes is the row buffer's size at which it is flushed into
	// Pebble; 0 means DefaultRowBufferBytes. Writers wait when it holds
	// twice this while a flush runs.
	BufferBytes int64
}

// DefaultCacheBytes is the default block cache: enough to keep the index
// and filter blocks of a store of some hundred million samples, so that
// point reads (UID lookups, check-and-puts of new UIDs) do not go to disk.
// Measured with a first contact of 1 M new series (each with a new label
// value): 128 MiB took 40 s, 256 MiB and 1 GiB 21 s.
const DefaultCacheBytes = 256 << 20

// Store is a store.Store on a Pebble database in one directory.
type Store struct {
	db     *pebble.DB
	wo     *pebble.WriteOptions
	tables map[string]bool
	seed   maphash.Seed
	locks  [rowLocks]sync.RWMutex
	now    func() time.Time
	// cacheBytes is the block cache's capacity.
	cacheBytes int64
	// rb holds the recent cells of Options.BufferTables; nil when none.
	rb *rowBuffer
	// committed counts batches committed to Pebble, synced the count the
	// last sync of Pebble's WAL covered: a sync with nothing new skips it.
	committed, synced atomic.Uint64
}

var _ store.Store = (*Store)(nil)

// Open opens (creating when needed) the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = DefaultCacheBytes
	}
	cache := pebble.NewCache(opts.CacheBytes)
	defer cache.Unref() // the DB holds its own reference
	po := &pebble.Options{Logger: quietLogger{}, Cache: cache}
	// Bloom filters on every level but the last: a point read of a key
	// that is absent (the forward row of a new name, a check-and-put
	// expecting absence) skips the tables that cannot hold it instead of
	// reading their blocks. The last level holds most of the data, and
	// hashing every key a compaction writes into it cost 7 % of the CPU
	// of a sustained write; a point read there reads one table's blocks,
	// mostly from the block cache.
	po.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	po.Levels[0].EnsureL0Defaults()
	for i := 1; i < len(po.Levels)-1; i++ {
		po.Levels[i].FilterPolicy = po.Levels[0].FilterPolicy
	}
	po.Levels[len(po.Levels)-1].FilterPolicy = pebble.NoFilterPolicy
	// 64 MiB memtables (Pebble's default is 4 MiB), as CockroachDB runs:
	// a first contact with 100 k series writes that much in a second, and
	// small memtables turn it into a stream of L0 flushes whose
	// compactions, and the point reads across the many L0 files, took
	// half the CPU (100 k series × 10 rounds: 248 k -> 390 k samples/s).
	// A memtable grows from 256 KiB as it fills, so an idle store pays
	// little. L0 was then compacted when it held 4 flushes' worth
	// (Pebble's default) instead of 2: every sample's cell lands in the
	// current hour of its series, so each flush overlaps most of the base
	// level, and merging more flushes into it at once halves that
	// rewrite. Both together: 20 k series × 400 rounds 537 k -> 735 k
	// samples/s, CPU per sample -26 %.
	//
	// With the data table in the row buffer the memtables hold only what
	// new series write (UIDs, TSMeta, index cells): 32 MiB then, which at
	// 1 M series (3 rounds) kept the peak RSS at 564 MB against 618 MB
	// with 64 MiB, at the same speed.
	po.MemTableSize = 64 << 20
	if len(opts.BufferTables) > 0 {
		po.MemTableSize = 32 << 20
	}
	// L0 is compacted when it holds 8 flushes' worth, not 4, and writes
	// stop at 24 files (Pebble's 12 would stall them soon after): a
	// first contact writes UID, TSMeta and index rows at random keys
	// across the whole base level, and merging twice as many flushes
	// into it at once halves that rewrite. 1 M series × 3 rounds, two
	// alternating pairs: first round 14.2 / 15.1 s -> 12.8 / 13.1 s,
	// 150-158 k -> 170-171 k samples/s; 20 k × 100 and 100 k × 20 wrote
	// 5-15 % faster and read no slower (the reads merge the more L0
	// tables through their bloom filters and sublevels).
	po.MemTableStopWritesThreshold = 4
	po.L0CompactionThreshold = 8
	po.L0StopWritesThreshold = 24
	po.EnsureDefaults()
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("open embedded store %q: %w", dir, err)
	}
	s := &Store{db: db, wo: pebble.Sync, seed: maphash.MakeSeed(), now: time.Now, cacheBytes: opts.CacheBytes}
	if opts.NoSync {
		s.wo = pebble.NoSync
	}
	if len(opts.Tables) > 0 {
		s.tables = make(map[string]bool, len(opts.Tables))
		for _, t := range opts.Tables {
			s.tables[t] = true
		}
	}
	// A table that holds runs stays buffered: its runs are newer than its
	// cell keys only while every put goes through the buffer (runs.go).
	marked, err := runTables(db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open embedded store %q: %w", dir, err)
	}
	for _, t := range marked {
		if !slices.Contains(opts.BufferTables, t) && s.checkTable(t) == nil {
			opts.BufferTables = append(slices.Clip(opts.BufferTables), t)
		}
	}
	if len(opts.BufferTables) > 0 {
		for _, t := range opts.BufferTables {
			if err := s.checkTable(t); err != nil {
				db.Close()
				return nil, fmt.Errorf("buffered table: %w", err)
			}
		}
		budget := opts.BufferBytes
		if budget <= 0 {
			budget = DefaultRowBufferBytes
		}
		if s.rb, err = openRowBuffer(dir, db, po, opts.BufferTables, marked, budget, opts.NoSync); err != nil {
			db.Close()
			return nil, fmt.Errorf("open embedded store %q: %w", dir, err)
		}
		s.rb.wal.beforeSync = s.syncPebbleIfDue
	} else if segs, _ := walSegments(filepath.Join(dir, rowBufferDir)); len(segs) > 0 {
		// The log of a run that buffered: into Pebble now, before anything
		// newer is written, then away.
		rb, err := openRowBuffer(dir, db, po, nil, marked, DefaultRowBufferBytes, opts.NoSync)
		if err == nil {
			err = rb.close()
		}
		if err == nil {
			err = os.RemoveAll(filepath.Join(dir, rowBufferDir))
		}
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("open embedded store %q: ingest the row buffer's log: %w", dir, err)
		}
	}
	return s, nil
}

// buffered reports whether table's puts go to the row buffer.
func (s *Store) buffered(table string) bool { return s.rb != nil && s.rb.buffered(table) }

// Close closes the database.
func (s *Store) Close() error {
	if err := s.sync(); err != nil {
		return fmt.Errorf("close embedded store: %w", err)
	}
	if s.rb != nil {
		if err := s.rb.close(); err != nil {
			s.db.Close()
			return fmt.Errorf("close embedded store: %w", err)
		}
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close embedded store: %w", err)
	}
	return nil
}

// Sync makes every write so far durable (Increment and CheckAndPut are
// not synced on their own).
func (s *Store) Sync(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return s.sync()
}

func (s *Store) checkTable(table string) error {
	if table == "" || bytes.IndexByte([]byte(table), 0) >= 0 {
		return fmt.Errorf("table name %q: %w", table, store.ErrInvalid)
	}
	if s.tables != nil && !s.tables[table] {
		return fmt.Errorf("table %q: %w", table, store.ErrTableNotFound)
	}
	return nil
}

// appendRowPrefix appends table 0x00 escape(row) 0x00 0x01.
func appendRowPrefix(dst []byte, table string, row []byte) []byte {
	dst = appendEscapedPrefix(dst, table, row)
	return append(dst, 0x00, 0x01)
}

// appendEscapedPrefix appends table 0x00 escape(row), without terminator: the
// lower bound of every row >= row.
//
// OpenTSDB row keys are mostly zero bytes (the high bytes of small UIDs),
// so the row is copied a byte at a time rather than between zeros found
// with bytes.IndexByte (BenchmarkCellKey: 236 -> 49 ns for a key of ten
// tags).
func appendEscapedPrefix(dst []byte, table string, row []byte) []byte {
	dst = append(dst, table...)
	dst = append(dst, 0x00)
	n := len(dst)
	dst = slices.Grow(dst, 2*len(row))[:n+2*len(row)]
	for _, c := range row {
		dst[n] = c
		n++
		if c == 0 {
			dst[n] = 0xFF
			n++
		}
	}
	return dst[:n]
}

func appendCellKey(dst []byte, table string, row, family, qualifier []byte) []byte {
	dst = appendRowPrefix(dst, table, row)
	dst = append(dst, family...)
	dst = append(dst, 0x00)
	return append(dst, qualifier...)
}

// splitKey decodes a Pebble key after the table prefix: it returns the row
// key (unescaped, appended to rowBuf), family and qualifier.
func splitKey(rest, rowBuf []byte) (row, family, qualifier []byte, err error) {
	row, n, err := splitRow(rest, rowBuf)
	if err != nil {
		return nil, nil, nil, err
	}
	family, qualifier, err = splitColumn(rest[n:])
	return row, family, qualifier, err
}

// splitRow decodes the row of a Pebble key after the table prefix: the row
// key (unescaped, appended to rowBuf) and the length of its encoding,
// terminator included. No other row's encoding starts with that many
// bytes of it: 0x00 0x01 occurs in an encoded row only as its terminator.
//
// A byte at a time, as appendEscapedPrefix, for the same reason
// (BenchmarkSplitKey: 284 -> 65 ns).
func splitRow(rest, rowBuf []byte) (row []byte, n int, err error) {
	row = slices.Grow(rowBuf[:0], len(rest))
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if c != 0 {
			row = append(row, c)
			continue
		}
		if i+1 == len(rest) {
			break
		}
		switch rest[i+1] {
		case 0xFF:
			row = append(row, 0)
			i++
		case 0x01:
			return row, i + 2, nil
		default:
			return nil, 0, fmt.Errorf("corrupt embedded key %x", rest)
		}
	}
	return nil, 0, fmt.Errorf("corrupt embedded key %x", rest)
}

// splitColumn decodes family 0x00 qualifier.
func splitColumn(rest []byte) (family, qualifier []byte, err error) {
	j := bytes.IndexByte(rest, 0)
	if j < 0 {
		return nil, nil, fmt.Errorf("corrupt embedded key: no family terminator in %x", rest)
	}
	return rest[:j], rest[j+1:], nil
}

// appendValue appends the stored form of c's value: its version (the
// cell's timestamp, or *now, the batch's write time in milliseconds, read
// from the clock once a batch and kept there) ‖ the value.
func (s *Store) appendValue(dst []byte, c store.Cell, now *uint64) []byte {
	ts := c.Timestamp
	if ts == 0 {
		if *now == 0 {
			*now = uint64(s.now().UnixMilli())
		}
		ts = *now
	}
	dst = binary.BigEndian.AppendUint64(dst, ts)
	return append(dst, c.Value...)
}

// addPut adds the cells of p to b. A cell with an explicit timestamp is
// compared with the stored version, which the caller must hold the row's
// stripe exclusively for: an older cell is left out.
func (s *Store) addPut(r pebble.Reader, b *pebble.Batch, table string, p store.Put, kbuf, vbuf []byte, now *uint64) ([]byte, []byte, error) {
	if len(p.Row) == 0 {
		return kbuf, vbuf, fmt.Errorf("put with an empty row key: %w", store.ErrInvalid)
	}
	for _, c := range p.Cells {
		if len(c.Family) == 0 || bytes.IndexByte(c.Family, 0) >= 0 {
			return kbuf, vbuf, fmt.Errorf("row %x: family %q: %w", p.Row, c.Family, store.ErrInvalid)
		}
		kbuf = appendCellKey(kbuf[:0], table, p.Row, c.Family, c.Qualifier)
		if c.Timestamp != 0 {
			ts, found, err := storedVersion(r, kbuf)
			if err != nil {
				return kbuf, vbuf, fmt.Errorf("put row %x: %w", p.Row, err)
			}
			if found && ts > c.Timestamp {
				continue // a newer version hides it
			}
		}
		vbuf = s.appendValue(vbuf[:0], c, now)
		if err := b.Set(kbuf, vbuf, nil); err != nil {
			return kbuf, vbuf, fmt.Errorf("batch set row %x: %w", p.Row, err)
		}
	}
	return kbuf, vbuf, nil
}

// storedVersion returns the timestamp of the cell stored under the Pebble
// key k.
func storedVersion(r pebble.Reader, k []byte) (uint64, bool, error) {
	v, closer, err := r.Get(k)
	if err == pebble.ErrNotFound {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read cell version: %w", err)
	}
	defer closer.Close()
	if len(v) < 8 {
		return 0, false, fmt.Errorf("corrupt embedded value of %d bytes", len(v))
	}
	return binary.BigEndian.Uint64(v), true, nil
}

// Put writes every put in one batch, durable (fsync) before it returns.
func (s *Store) Put(ctx context.Context, table string, puts []store.Put) error {
	if err := s.PutDeferred(ctx, table, puts); err != nil || len(puts) == 0 {
		return err
	}
	if err := s.sync(); err != nil {
		return fmt.Errorf("put %d rows into %s: %w", len(puts), table, err)
	}
	return nil
}

// PutDeferred is Put without the fsync (store.DeferredPutter): the puts are
// visible at once and durable with the next Put, Sync or Close.
func (s *Store) PutDeferred(ctx context.Context, table string, puts []store.Put) error {
	if err := s.checkTable(table); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put into %s: %w", table, err)
	}
	if len(puts) == 0 {
		return nil
	}
	var set stripeSet
	for _, p := range puts {
		set.add(s.stripe(p.Row), hasVersion(p.Cells))
	}
	set.lock(&s.locks)
	err := s.apply(table, puts)
	set.unlock(&s.locks)
	return err
}

func hasVersion(cells []store.Cell) bool {
	for _, c := range cells {
		if c.Timestamp != 0 {
			return true
		}
	}
	return false
}

// apply commits the puts to the memtable and the WAL without fsync. The
// caller holds the stripes of their rows.
func (s *Store) apply(table string, puts []store.Put) error {
	if s.buffered(table) {
		return s.bufApply(table, puts)
	}
	b := s.db.NewBatch()
	defer b.Close()
	var kbuf, vbuf []byte
	var now uint64
	var err error
	order := rowOrder(puts)
	for j := range puts {
		i := j
		if order != nil {
			i = order[j]
		}
		if kbuf, vbuf, err = s.addPut(s.db, b, table, puts[i], kbuf, vbuf, &now); err != nil {
			return err
		}
	}
	if err := s.commit(b); err != nil {
		return fmt.Errorf("put %d rows into %s: %w", len(puts), table, err)
	}
	return nil
}

// rowOrder returns the indexes of puts in ascending row order, puts of
// one row in their given order (a later one's cells replace an earlier
// one's), or nil when puts are in that order already. Pebble inserts a
// batch into its memtable key by key, each search starting from where the
// last one ended: in key order a search covers the keys between two of
// the batch's, not the whole memtable, as the random keys of a first
// contact's UID, TSMeta and index rows would.
func rowOrder(puts []store.Put) []int {
	sorted := true
	for i := 1; i < len(puts) && sorted; i++ {
		sorted = bytes.Compare(puts[i-1].Row, puts[i].Row) <= 0
	}
	if sorted {
		return nil
	}
	idx := make([]int, len(puts))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return bytes.Compare(puts[a].Row, puts[b].Row) })
	return idx
}

// bufApply adds puts to the row buffer. The caller holds the stripes of
// their rows (exclusively for those with explicit timestamps). Cells
// written without a timestamp take the batch's time; a cell with an
// explicit one older than the stored version is left out, as in addPut.
func (s *Store) bufApply(table string, puts []store.Put) error {
	out := puts
	copied := false
	size := 0
	for i, p := range puts {
		if len(p.Row) == 0 {
			return fmt.Errorf("put with an empty row key: %w", store.ErrInvalid)
		}
		size += len(p.Row) + 16
		for _, c := range p.Cells {
			size += len(c.Family) + len(c.Qualifier) + len(c.Value) + 32
		}
		if size > maxBufferedPut {
			return fmt.Errorf("put of more than %d bytes into %s: %w", maxBufferedPut, table, store.ErrInvalid)
		}
		var keep []store.Cell
		dropped := false
		for j, c := range p.Cells {
			if err := checkColumn(c.Family, c.Qualifier); err != nil {
				return fmt.Errorf("row %x: %w", p.Row, err)
			}
			if len(c.Value) > maxBufferedValue {
				return fmt.Errorf("row %x: value of %d bytes, more than %d: %w", p.Row, len(c.Value), maxBufferedValue, store.ErrInvalid)
			}
			drop := false
			if c.Timestamp != 0 {
				ts, found, err := s.version(table, p.Row, c.Family, c.Qualifier)
				if err != nil {
					return fmt.Errorf("put row %x: %w", p.Row, err)
				}
				drop = found && ts > c.Timestamp
			}
			if drop && !dropped {
				dropped = true
				keep = append(keep, p.Cells[:j]...)
			}
			if dropped && !drop {
				keep = append(keep, c)
			}
		}
		if dropped {
			if !copied {
				out = slices.Clone(puts)
				copied = true
			}
			out[i].Cells = keep
		}
	}
	if _, err := s.rb.put(table, out, uint64(s.now().UnixMilli())); err != nil {
		return fmt.Errorf("put %d rows into %s: %w", len(puts), table, err)
	}
	return nil
}

// Bounds of what the row buffer takes: a put is one record of its log
// (maxWALRecord), a cell's value one record of a block (sizes are u32).
// Remote write requests are far smaller (--web.max-request-bytes).
const (
	maxBufferedPut   = maxWALRecord / 2
	maxBufferedValue = 64 << 20
)

// version returns the version of a cell of a buffered table: the row
// buffer's, else Pebble's.
func (s *Store) version(table string, row, family, qualifier []byte) (uint64, bool, error) {
	if c, ok := s.rb.lookup(table, row, family, qualifier); ok {
		return c.ts, !c.dead, nil
	}
	_, ts, found, err := s.pebbleCell(table, row, family, qualifier)
	return ts, found, err
}

// commit applies b without waiting for the fsync: see sync.
func (s *Store) commit(b *pebble.Batch) error {
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("commit: %w: %w", store.ErrUnavailable, err)
	}
	s.committed.Add(1)
	return nil
}

// sync makes every write so far durable, when the store syncs: Pebble's
// WAL is one sequence, so its fsync covers all earlier batches (skipped
// when none was committed since the last), and the row buffer's log's
// covers everything appended to it.
func (s *Store) sync() error {
	if !s.wo.Sync {
		return nil
	}
	if s.rb != nil {
		// Its group commit syncs Pebble's WAL first (syncPebbleIfDue).
		if err := s.rb.wal.waitDurable(s.rb.wal.position()); err != nil {
			return fmt.Errorf("sync: %w: %w", store.ErrUnavailable, err)
		}
	}
	if err := s.syncPebbleIfDue(); err != nil {
		return fmt.Errorf("sync: %w: %w", store.ErrUnavailable, err)
	}
	return nil
}

// syncPebbleIfDue syncs Pebble's WAL when a batch was committed since the
// last sync (which then covers it: the WAL is one sequence).
func (s *Store) syncPebbleIfDue() error {
	if !s.wo.Sync {
		return nil
	}
	target := s.committed.Load()
	if s.synced.Load() >= target {
		return nil
	}
	if err := s.db.LogData(nil, s.wo); err != nil {
		return err
	}
	for {
		cur := s.synced.Load()
		if cur >= target || s.synced.CompareAndSwap(cur, target) {
			return nil
		}
	}
}

// Get returns the row's cells, restricted to family when not empty: a
// scan of the one row, which merges the row buffer's layers as every scan
// does.
func (s *Store) Get(ctx context.Context, table string, row []byte, family string) (store.Row, error) {
	if err := s.checkTable(table); err != nil {
		return store.Row{}, err
	}
	// row ‖ 0x00 is the first key after row.
	sc := s.Scan(ctx, store.ScanRequest{Table: table, Start: row, Stop: append(bytes.Clone(row), 0), Family: family})
	defer sc.Close()
	r := store.Row{Key: bytes.Clone(row)}
	if sc.Next() {
		for _, c := range sc.Row().Cells {
			r.Cells = append(r.Cells, store.Cell{
				Family: bytes.Clone(c.Family), Qualifier: bytes.Clone(c.Qualifier),
				Value: bytes.Clone(c.Value), Timestamp: c.Timestamp,
			})
		}
	}
	if err := sc.Err(); err != nil {
		return store.Row{}, fmt.Errorf("get row %x from %s: %w", row, table, err)
	}
	return r, nil
}

// stripe returns the lock stripe of row.
func (s *Store) stripe(row []byte) int {
	return int(maphash.Bytes(s.seed, row) % rowLocks)
}

// lockRow locks row's stripe exclusively and returns it.
func (s *Store) lockRow(row []byte) *sync.RWMutex {
	m := &s.locks[s.stripe(row)]
	m.Lock()
	return m
}

// stripeSet is a set of lock stripes, each wanted shared or exclusive.
type stripeSet struct {
	shared, exclusive [rowLocks / 64]uint64
}

func (ss *stripeSet) add(stripe int, exclusive bool) {
	if exclusive {
		ss.exclusive[stripe/64] |= 1 << (stripe % 64)
	} else {
		ss.shared[stripe/64] |= 1 << (stripe % 64)
	}
}

// lock takes the stripes in ascending order, exclusive where wanted so, so
// that two sets never wait for each other in a cycle.
func (ss *stripeSet) lock(locks *[rowLocks]sync.RWMutex) {
	for w := range ss.shared {
		for all := ss.shared[w] | ss.exclusive[w]; all != 0; all &= all - 1 {
			i := bits.TrailingZeros64(all)
			if ss.exclusive[w]&(1<<i) != 0 {
				locks[w*64+i].Lock()
			} else {
				locks[w*64+i].RLock()
			}
		}
	}
}

func (ss *stripeSet) unlock(locks *[rowLocks]sync.RWMutex) {
	for w := range ss.shared {
		for all := ss.shared[w] | ss.exclusive[w]; all != 0; all &= all - 1 {
			i := bits.TrailingZeros64(all)
			if ss.exclusive[w]&(1<<i) != 0 {
				locks[w*64+i].Unlock()
			} else {
				locks[w*64+i].RUnlock()
			}
		}
	}
}

// GetCell returns the value of one cell, found false when it is absent: a
// point read, which the bloom filters answer without reading a table that
// cannot hold the cell (store.CellGetter).
func (s *Store) GetCell(ctx context.Context, table string, row []byte, family, qualifier string) ([]byte, bool, error) {
	if err := s.checkTable(table); err != nil {
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, false, fmt.Errorf("get cell of row %x in %s: %w", row, table, err)
	}
	return s.getCell(table, row, family, qualifier)
}

func (s *Store) getCell(table string, row []byte, family, qualifier string) ([]byte, bool, error) {
	if s.buffered(table) {
		if c, ok := s.rb.lookup(table, row, []byte(family), []byte(qualifier)); ok {
			if c.dead {
				return nil, false, nil
			}
			return c.value, true, nil
		}
	}
	v, _, found, err := s.pebbleCell(table, row, []byte(family), []byte(qualifier))
	return v, found, err
}

// GetCells reads one cell (family:qualifier) of each of rows, in one pass
// of one iterator over the rows' keys in order: values[i] and found[i]
// answer rows[i] (both of len(rows)). Sorted seeks let the iterator move
// on from where it is, and a prefix seek consults the bloom filters,
// which a new name's absent forward row needs; many point reads cost
// about half what as many Gets do.
func (s *Store) GetCells(ctx context.Context, table string, rows [][]byte, family, qualifier string, values [][]byte, found []bool) error {
	if err := s.checkTable(table); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("get cells of %d rows in %s: %w", len(rows), table, err)
	}
	if s.buffered(table) {
		// A point read each: the buffer's layers, then Pebble as it is
		// then (one iterator for all could predate a flush that moved a
		// cell from a layer into Pebble).
		for i, row := range rows {
			v, ok, err := s.getCell(table, row, family, qualifier)
			if err != nil {
				return err
			}
			values[i], found[i] = v, ok
		}
		return nil
	}
	keys := make([][]byte, len(rows))
	order := make([]int, len(rows))
	var buf []byte
	for i, row := range rows {
		at := len(buf)
		buf = appendCellKey(buf, table, row, []byte(family), []byte(qualifier))
		keys[i] = buf[at:len(buf):len(buf)]
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	it, err := s.db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("get cells of %d rows in %s: %w", len(rows), table, err)
	}
	defer it.Close()
	for n, i := range order {
		if n%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("get cells of %d rows in %s: %w", len(rows), table, err)
			}
		}
		values[i], found[i] = nil, false
		if !it.SeekPrefixGE(keys[i]) || !bytes.Equal(it.Key(), keys[i]) {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("read cell %s:%s of row %x in %s: %w", family, qualifier, rows[i], table, err)
		}
		if len(v) < 8 {
			return fmt.Errorf("corrupt embedded value of %d bytes", len(v))
		}
		values[i], found[i] = bytes.Clone(v[8:]), true
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("get cells of %d rows in %s: %w", len(rows), table, err)
	}
	return nil
}

// Increment adds delta to an 8-byte big-endian counter cell. Like
// CheckAndPut it is not synced on its own: Pebble's WAL keeps the order of
// commits, so the next synced write (a Put, Sync or Close) makes it
// durable with everything before it. promhbase acknowledges nothing that
// depends on a UID or a metadata update before such a write (the data of
// a request comes after its UIDs), and a UID assignment costs no fsync.
func (s *Store) Increment(ctx context.Context, table string, row []byte, family, qualifier string, delta int64) (int64, error) {
	if err := s.checkTable(table); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("increment %x in %s: %w", row, table, err)
	}
	return s.increment(table, row, family, qualifier, delta)
}

func (s *Store) increment(table string, row []byte, family, qualifier string, delta int64) (int64, error) {
	defer s.lockRow(row).Unlock()
	v, found, err := s.getCell(table, row, family, qualifier)
	if err != nil {
		return 0, err
	}
	var cur int64
	if found {
		if len(v) != 8 {
			return 0, fmt.Errorf("increment %s:%s of row %x in %s: cell holds %d bytes, not 8: %w", family, qualifier, row, table, len(v), store.ErrInvalid)
		}
		cur = int64(binary.BigEndian.Uint64(v))
	}
	cur += delta
	err = s.apply(table, []store.Put{{Row: row, Cells: []store.Cell{{
		Family: []byte(family), Qualifier: []byte(qualifier), Value: binary.BigEndian.AppendUint64(nil, uint64(cur)),
	}}}})
	if err != nil {
		return 0, err
	}
	return cur, nil
}

// CheckAndPut writes put when the cell holds expected (absent when empty).
// Not synced on its own: see Increment.
func (s *Store) CheckAndPut(ctx context.Context, table string, put store.Put, family, qualifier string, expected []byte) (bool, error) {
	if err := s.checkTable(table); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("check-and-put row %x in %s: %w", put.Row, table, err)
	}
	return s.checkAndPut(table, put, family, qualifier, expected)
}

func (s *Store) checkAndPut(table string, put store.Put, family, qualifier string, expected []byte) (bool, error) {
	defer s.lockRow(put.Row).Unlock()
	v, found, err := s.getCell(table, put.Row, family, qualifier)
	if err != nil {
		return false, err
	}
	if len(expected) == 0 {
		if found {
			return false, nil
		}
	} else if !found || !bytes.Equal(v, expected) {
		return false, nil
	}
	if err := s.apply(table, []store.Put{put}); err != nil {
		return false, err
	}
	return true, nil
}

// CheckAndPutBatch runs the check-and-puts of ops in rounds of at most
// casRound: each round under one lock round (the rows' stripes, taken
// exclusively) and one commit (store.BatchCheckAndPutter). Each check sees
// the puts before it in ops. Not synced: see Increment.
func (s *Store) CheckAndPutBatch(ctx context.Context, table string, ops []store.CondPut, written []bool) (err error) {
	if err := s.checkTable(table); err != nil {
		return err
	}
	if len(written) != len(ops) {
		return fmt.Errorf("check-and-put batch: %d results for %d ops: %w", len(written), len(ops), store.ErrInvalid)
	}
	clear(written)
	defer func() {
		if err != nil {
			clear(written)
		}
	}()
	for len(ops) > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("check-and-put %d rows in %s: %w", len(ops), table, err)
		}
		n := min(len(ops), casRound)
		if err := s.casRound(table, ops[:n], written[:n]); err != nil {
			return err
		}
		ops, written = ops[n:], written[n:]
	}
	return nil
}

// casRound bounds the check-and-puts that hold their stripes together: a
// round of thousands would hold nearly every stripe, stalling every write
// while it runs.
const casRound = 256

func (s *Store) casRound(table string, ops []store.CondPut, written []bool) error {
	var set stripeSet
	for i := range ops {
		set.add(s.stripe(ops[i].Put.Row), true)
	}
	set.lock(&s.locks)
	defer set.unlock(&s.locks)
	if s.buffered(table) {
		return s.casRoundBuffered(table, ops, written)
	}
	// The checks after a put must see it. Cells with explicit versions
	// need an indexed batch (the version comparison reads through it);
	// otherwise the round remembers what it wrote, as a point read of the
	// database costs less than one through an indexed batch.
	var b *pebble.Batch
	var r pebble.Reader = s.db
	indexed := slices.ContainsFunc(ops, func(op store.CondPut) bool { return hasVersion(op.Put.Cells) })
	if indexed {
		b = s.db.NewIndexedBatch()
		r = b
	} else {
		b = s.db.NewBatch()
	}
	defer b.Close()
	var mine map[string][]byte
	var kbuf, vbuf []byte
	var now uint64
	for i := range ops {
		op := &ops[i]
		kbuf = appendCellKey(kbuf[:0], table, op.Put.Row, []byte(op.Family), []byte(op.Qualifier))
		v, found := mine[string(kbuf)]
		if !found {
			var err error
			if v, found, err = readCell(r, kbuf); err != nil {
				return fmt.Errorf("check-and-put %s:%s of row %x in %s: %w", op.Family, op.Qualifier, op.Put.Row, table, err)
			}
		}
		if len(op.Expected) == 0 && found || len(op.Expected) > 0 && (!found || !bytes.Equal(v, op.Expected)) {
			continue
		}
		var err error
		if kbuf, vbuf, err = s.addPut(r, b, table, op.Put, kbuf, vbuf, &now); err != nil {
			return err
		}
		if !indexed {
			if mine == nil {
				mine = map[string][]byte{}
			}
			for _, c := range op.Put.Cells {
				mine[string(appendCellKey(nil, table, op.Put.Row, c.Family, c.Qualifier))] = c.Value
			}
		}
		written[i] = true
	}
	if err := s.commit(b); err != nil {
		return fmt.Errorf("check-and-put %d rows in %s: %w", len(ops), table, err)
	}
	return nil
}

// casRoundBuffered is casRound on a buffered table: each put goes to the
// row buffer before the next check, which reads through it. The caller
// holds the rows' stripes.
func (s *Store) casRoundBuffered(table string, ops []store.CondPut, written []bool) error {
	for i := range ops {
		op := &ops[i]
		v, found, err := s.getCell(table, op.Put.Row, op.Family, op.Qualifier)
		if err != nil {
			return fmt.Errorf("check-and-put %s:%s of row %x in %s: %w", op.Family, op.Qualifier, op.Put.Row, table, err)
		}
		if len(op.Expected) == 0 && found || len(op.Expected) > 0 && (!found || !bytes.Equal(v, op.Expected)) {
			continue
		}
		if err := s.bufApply(table, []store.Put{op.Put}); err != nil {
			return err
		}
		written[i] = true
	}
	return nil
}

// readCell reads the value of the cell under the Pebble key k from r (the
// database or an indexed batch over it), without its version.
func readCell(r pebble.Reader, k []byte) ([]byte, bool, error) {
	v, closer, err := r.Get(k)
	if err == pebble.ErrNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read cell: %w", err)
	}
	defer closer.Close()
	if len(v) < 8 {
		return nil, false, fmt.Errorf("corrupt embedded value of %d bytes", len(v))
	}
	return bytes.Clone(v[8:]), true, nil
}

// Delete removes columns of a row, or the whole row. It holds the row's
// stripe exclusively while it compares the stored versions with the
// columns' bounds and applies the deletes.
func (s *Store) Delete(ctx context.Context, table string, row []byte, columns []store.Column) error {
	if err := s.checkTable(table); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete row %x in %s: %w", row, table, err)
	}
	if err := s.delete(table, row, columns); err != nil {
		return err
	}
	if err := s.sync(); err != nil {
		return fmt.Errorf("delete in row %x of %s: %w", row, table, err)
	}
	return nil
}

func (s *Store) delete(table string, row []byte, columns []store.Column) error {
	if s.buffered(table) {
		// No flush may run while a delete reaches into the row buffer:
		// see rowBuffer.
		s.rb.flushMu.Lock()
		defer s.rb.flushMu.Unlock()
	}
	defer s.lockRow(row).Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	if len(columns) == 0 {
		p := appendRowPrefix(nil, table, row)
		if err := b.DeleteRange(p, store.PrefixEnd(p), nil); err != nil {
			return fmt.Errorf("delete row %x in %s: %w", row, table, err)
		}
	}
	versions, err := s.versionsFor(table, row, columns)
	if err != nil {
		return fmt.Errorf("delete in row %x of %s: %w", row, table, err)
	}
	var k []byte
	var killed []killColumn // the columns deleted, for the row buffer
	for _, c := range columns {
		if len(c.Family) == 0 || bytes.IndexByte(c.Family, 0) >= 0 {
			return fmt.Errorf("delete in row %x of %s: family %q: %w", row, table, c.Family, store.ErrInvalid)
		}
		k = appendCellKey(k[:0], table, row, c.Family, c.Qualifier)
		if c.Timestamp != 0 {
			var ts uint64
			var found bool
			if versions != nil {
				ts, found = versions.get(c.Family, c.Qualifier)
			} else if s.buffered(table) {
				if ts, found, err = s.version(table, row, c.Family, c.Qualifier); err != nil {
					return fmt.Errorf("delete %s:%x of row %x in %s: %w", c.Family, c.Qualifier, row, table, err)
				}
			} else {
				if ts, found, err = storedVersion(s.db, k); err != nil {
					return fmt.Errorf("delete %s:%x of row %x in %s: %w", c.Family, c.Qualifier, row, table, err)
				}
			}
			if !found || ts > c.Timestamp {
				continue // nothing at or before the bound
			}
		}
		if err := b.Delete(k, nil); err != nil {
			return fmt.Errorf("delete %s:%x of row %x in %s: %w", c.Family, c.Qualifier, row, table, err)
		}
		killed = append(killed, killColumn{family: c.Family, qualifier: c.Qualifier})
	}
	if s.buffered(table) && len(killed) > 0 {
		if err := s.deleteFromRuns(b, table, row, killedSet(killed)); err != nil {
			return fmt.Errorf("delete in row %x of %s: %w", row, table, err)
		}
	}
	if b.Empty() {
		return nil
	}
	if err := s.commit(b); err != nil {
		return fmt.Errorf("delete in row %x of %s: %w", row, table, err)
	}
	if s.buffered(table) && (len(columns) == 0 || len(killed) > 0) {
		// After Pebble's tombstones, so that a reader never sees an older
		// version come back between the two. No columns: the whole row.
		s.rb.kill(table, row, killed)
	}
	return nil
}

// columnVersions are the columns of a row with their versions, sorted by
// column, their names in one buffer.
type columnVersions struct {
	cols []columnVersion
}

type columnVersion struct {
	family, qualifier []byte
	ts                uint64
}

// get returns the version of column family:qualifier.
func (cv *columnVersions) get(family, qualifier []byte) (uint64, bool) {
	i, found := slices.BinarySearchFunc(cv.cols, columnVersion{family: family, qualifier: qualifier}, func(a, b columnVersion) int {
		return cmpCol(a.family, a.qualifier, b.family, b.qualifier)
	})
	if !found {
		return 0, false
	}
	return cv.cols[i].ts, true
}

// versionsFor returns the stored versions of the row's columns when many
// columns have bounds, which one scan of the row reads faster than a
// point lookup each; nil when few do.
func (s *Store) versionsFor(table string, row []byte, columns []store.Column) (*columnVersions, error) {
	bounded := 0
	for _, c := range columns {
		if c.Timestamp != 0 {
			bounded++
		}
	}
	if bounded < 8 {
		return nil, nil
	}
	sc := s.Scan(context.Background(), store.ScanRequest{Table: table, Start: row, Stop: append(bytes.Clone(row), 0)})
	defer sc.Close()
	cv := &columnVersions{}
	if sc.Next() {
		cells := sc.Row().Cells // sorted by column
		n := 0
		for _, c := range cells {
			n += len(c.Family) + len(c.Qualifier)
		}
		names := make([]byte, 0, n)
		cv.cols = make([]columnVersion, len(cells))
		for i, c := range cells {
			at := len(names)
			names = append(append(names, c.Family...), c.Qualifier...)
			f := len(c.Family)
			cv.cols[i] = columnVersion{family: names[at : at+f : at+f], qualifier: names[at+f : len(names) : len(names)], ts: c.Timestamp}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read cell versions of row %x in %s: %w", row, table, err)
	}
	return cv, nil
}

// CompactAll flushes the memtable and compacts the whole database, so that
// its files hold only live cells (deleted and replaced ones are dropped).
// Pebble compacts in the background on its own; this is for tools and
// measurements that want the settled size at once.
func (s *Store) CompactAll(ctx context.Context) error {
	if s.rb != nil {
		if err := s.rb.flush(); err != nil {
			return fmt.Errorf("flush row buffer: %w", err)
		}
	}
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("flush embedded store: %w", err)
	}
	if err := s.db.Compact(ctx, []byte{0x00}, []byte{0xFF, 0xFF, 0xFF, 0xFF}, true); err != nil {
		return fmt.Errorf("compact embedded store: %w", err)
	}
	return nil
}

// TableBytes returns the bytes of the store's live sstables: its data as
// stored on disk (prefix-compressed, snappy), without the WAL and the
// memtable. After CompactAll it is the settled size of every live cell.
func (s *Store) TableBytes() uint64 {
	return s.db.Metrics().Table.Local.LiveSize
}

// Scan returns a scanner over [req.Start, req.Stop).
func (s *Store) Scan(ctx context.Context, req store.ScanRequest) store.Scanner {
	if err := s.checkTable(req.Table); err != nil {
		return &scanner{err: err}
	}
	sc := &scanner{ctx: ctx, tlen: len(req.Table) + 1, cellMem: arena.Arena{ChunkSize: rowArenaChunk}}
	if req.RowMatch != nil {
		sc.match = req.RowMatch
	} else if req.RowRegex != "" {
		re, err := regexp.Compile(req.RowRegex)
		if err != nil {
			return &scanner{err: fmt.Errorf("row regex %q: %w: %w", req.RowRegex, store.ErrInvalid, err)}
		}
		sc.re = re
	}
	if req.Family != "" {
		sc.family = []byte(req.Family)
	}
	lower := appendEscapedPrefix(nil, req.Table, req.Start)
	var upper []byte
	if len(req.Stop) > 0 {
		upper = appendEscapedPrefix(nil, req.Table, req.Stop)
	} else {
		upper = append([]byte(req.Table), 0x01)
	}
	if bytes.Compare(lower, upper) >= 0 {
		sc.done = true
		return sc
	}
	var layers []*memRows
	var it *pebble.Iterator
	var err error
	if s.buffered(req.Table) {
		// The layers and the Pebble iterator are taken together: a flush
		// that ends in between would leave its cells in neither.
		s.rb.mu.Lock()
		layers = s.rb.layersLocked(req.Table)
		it, err = s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		s.rb.mu.Unlock()
	} else {
		it, err = s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	}
	if err != nil {
		return &scanner{err: fmt.Errorf("scan %s: %w", req.Table, err)}
	}
	for _, m := range layers {
		sc.mem = append(sc.mem, newMemRowIter(m, req.Start, req.Stop))
	}
	sc.it = it
	sc.valid = it.First()
	return sc
}

type scanner struct {
	ctx    context.Context
	it     *pebble.Iterator
	re     *regexp.Regexp
	match  func([]byte) bool // the request's RowMatch, used instead of re
	family []byte
	tlen   int
	valid  bool
	done   bool
	err    error

	row     store.Row
	key     []byte      // current row key
	next    []byte      // row key of the iterator's position
	nextN   int         // length of next's encoding in the iterator's key
	seekKey []byte      // skipRow's seek key
	cellMem arena.Arena // the current row's cells
	latin1  []byte
	raw     []byte // encoding of the current row in Pebble keys
	scanned int

	// mem are the row buffer's layers, newest first, merged a row at a
	// time with Pebble's rows (decoded is set while next holds the row of
	// the Pebble iterator's position).
	mem      []*memRowIter
	decoded  bool
	memCells []memCell
	overlay  []store.Cell
	runs     [][]byte     // the current row's runs, in cellMem
	runCells []store.Cell // the cells of one of them
}

// rowArenaChunk is the chunk size of a scanner's row arena: the cells of
// the row being read are copied into it, so that their slices point at
// bytes that do not move while the row is assembled; each row reuses the
// chunks (a Row is valid only until the next Next).
const rowArenaChunk = 32 << 10

func (sc *scanner) Row() store.Row { return sc.row }
func (sc *scanner) Err() error     { return sc.err }

func (sc *scanner) Close() error {
	sc.done = true
	if sc.it != nil {
		err := sc.it.Close()
		sc.it = nil
		if err != nil {
			return fmt.Errorf("close scanner: %w", err)
		}
	}
	return nil
}

func (sc *scanner) fail(err error) bool {
	sc.err = err
	sc.Close()
	return false
}

// Next assembles the next row: from consecutive cell keys of Pebble's,
// and from the row buffer's layers, whose cells of the same row replace
// Pebble's column by column.
func (sc *scanner) Next() bool {
	if sc.done || sc.err != nil {
		return false
	}
	for {
		sc.scanned++
		if sc.scanned%1024 == 0 {
			if err := sc.ctx.Err(); err != nil {
				return sc.fail(fmt.Errorf("scan: %w", err))
			}
		}
		if sc.valid && !sc.decoded {
			row, n, err := splitRow(sc.it.Key()[sc.tlen:], sc.next)
			if err != nil {
				return sc.fail(err)
			}
			sc.next, sc.nextN, sc.decoded = row, n, true
		}
		if !sc.valid {
			if err := sc.it.Error(); err != nil {
				return sc.fail(fmt.Errorf("scan: %w", err))
			}
		}
		// The smallest row of the sources.
		row, have := sc.next, sc.valid
		for _, mi := range sc.mem {
			if k, ok := mi.row(); ok && (!have || bytes.Compare(k, row) < 0) {
				row, have = k, true
			}
		}
		if !have {
			sc.Close()
			return false
		}
		inPebble := sc.valid && bytes.Equal(sc.next, row)
		if sc.match != nil && !sc.match(row) {
			sc.skip(row, inPebble)
			continue
		}
		if sc.re != nil {
			sc.latin1 = latin1(sc.latin1[:0], row) // kept: no allocation per row
			if !sc.re.Match(sc.latin1) {
				sc.skip(row, inPebble)
				continue
			}
		}
		if ok := sc.readRow(row, inPebble); ok || sc.err != nil {
			return ok
		}
	}
}

// skip moves every source past row.
func (sc *scanner) skip(row []byte, inPebble bool) {
	for _, mi := range sc.mem {
		if k, ok := mi.row(); ok && bytes.Equal(k, row) {
			mi.pos++
		}
	}
	if inPebble {
		sc.valid, sc.decoded = sc.skipRow(), false
	}
}

// skipRow moves the iterator past the current row.
func (sc *scanner) skipRow() bool {
	// The first key past the row: table prefix ‖ row prefix, incremented
	// as store.PrefixEnd does, built in seekKey (no allocation).
	k := append(sc.seekKey[:0], sc.it.Key()[:sc.tlen]...)
	k = appendRowPrefix(k, "", sc.next)
	k = append(k[:sc.tlen], k[sc.tlen+1:]...) // appendRowPrefix's leading byte is not part of the key
	sc.seekKey = k
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] != 0xFF {
			k[i]++
			return sc.it.SeekGE(k[:i+1])
		}
	}
	return false
}

// readRow collects the cells of row from Pebble (when inPebble: the row at
// sc.next, whose encoding is the first sc.nextN bytes of the iterator's
// key past the table) and from the row buffer's layers, and moves every
// source past it. It reports false (with no error) when the family filter
// or deletes left the row empty.
func (sc *scanner) readRow(row []byte, inPebble bool) bool {
	sc.key = append(sc.key[:0], row...)
	sc.cellMem.Reset()
	cells := sc.row.Cells[:0]
	if inPebble {
		var ok bool
		if cells, ok = sc.readPebbleRow(cells); !ok {
			return false
		}
		sc.decoded = false
	}
	// Oldest layer first, each newer one replacing its columns.
	for l := len(sc.mem) - 1; l >= 0; l-- {
		mi := sc.mem[l]
		k, ok := mi.row()
		if !ok || !bytes.Equal(k, sc.key) {
			continue
		}
		mi.m.mu.RLock()
		// A row written in column order (samples in time order) after
		// what older layers and Pebble hold of it is appended at once.
		n := len(cells)
		if cells, ok = mi.m.appendAscending(cells, int(mi.order[mi.pos]), sc.family); ok {
			mi.m.mu.RUnlock()
			mi.pos++
			continue
		}
		cells = cells[:n]
		var wiped bool
		sc.memCells, wiped = mi.m.rowCells(sc.memCells[:0], int(mi.order[mi.pos]))
		mi.m.mu.RUnlock()
		mi.pos++
		if wiped {
			cells = cells[:0] // the row was deleted after the older layers' cells
		}
		if sc.family != nil {
			kept := sc.memCells[:0]
			for _, c := range sc.memCells {
				if bytes.Equal(c.family, sc.family) {
					kept = append(kept, c)
				}
			}
			sc.memCells = kept
		}
		cells = sc.overlayCells(cells, sc.memCells)
	}
	sc.row.Cells = cells
	if len(cells) == 0 {
		return false
	}
	sc.row = store.Row{Key: sc.key, Cells: cells}
	return true
}

// overlayCells merges the newer cells (sorted by column, pointing into the
// buffer's memory, which never changes once written) into cells, each
// replacing the cell of its column; a dead one (a tombstone) removes it.
func (sc *scanner) overlayCells(cells []store.Cell, newer []memCell) []store.Cell {
	if len(newer) == 0 {
		return cells
	}
	if len(cells) == 0 {
		for _, c := range newer {
			if !c.dead {
				cells = append(cells, store.Cell{Family: c.family, Qualifier: c.qualifier, Value: c.value, Timestamp: c.ts})
			}
		}
		return cells
	}
	sc.overlay = append(sc.overlay[:0], cells...)
	old := sc.overlay
	cells = cells[:0]
	i, j := 0, 0
	for i < len(old) || j < len(newer) {
		var cmp int
		switch {
		case i == len(old):
			cmp = 1
		case j == len(newer):
			cmp = -1
		default:
			if cmp = bytes.Compare(old[i].Family, newer[j].family); cmp == 0 {
				cmp = bytes.Compare(old[i].Qualifier, newer[j].qualifier)
			}
		}
		if cmp < 0 {
			cells = append(cells, old[i])
			i++
			continue
		}
		c := newer[j]
		if !c.dead {
			cells = append(cells, store.Cell{Family: c.family, Qualifier: c.qualifier, Value: c.value, Timestamp: c.ts})
		}
		j++
		if cmp == 0 {
			i++
		}
	}
	return cells
}

// readPebbleRow appends the cells of the row at sc.next to cells and moves
// the iterator past it. It reports false when it failed.
func (sc *scanner) readPebbleRow(cells []store.Cell) ([]store.Cell, bool) {
	// The row's encoding: the keys of its cells start with it, which
	// spares decoding the row again for each cell.
	sc.raw = append(sc.raw[:0], sc.it.Key()[sc.tlen:sc.tlen+sc.nextN]...)
	runs := sc.runs[:0]
	for sc.valid {
		rest := sc.it.Key()[sc.tlen:]
		if !bytes.HasPrefix(rest, sc.raw) {
			break // the next row, which Next decodes
		}
		col := rest[len(sc.raw):]
		if isRunColumn(col) {
			// A run (they come first, oldest first): kept in the row's
			// arena and laid over the cell keys below.
			v, err := sc.it.ValueAndErr()
			if err != nil {
				return cells, sc.fail(fmt.Errorf("scan: %w", err))
			}
			runs = append(runs, sc.cellMem.Copy(v))
			sc.valid = sc.it.Next()
			continue
		}
		var fam, qual []byte
		if n := len(sc.family); n > 0 && len(col) > n && col[n] == 0 && bytes.Equal(col[:n], sc.family) {
			// The filter's family (names hold no 0x00): no search for
			// the terminator.
			fam, qual = sc.family[:n:n], col[n+1:]
		} else {
			f, q, err := splitColumn(col)
			if err != nil {
				return cells, sc.fail(err)
			}
			if sc.family != nil {
				sc.valid = sc.it.Next() // another family
				continue
			}
			fam, qual = sc.cellMem.Copy(f), q
		}
		v, err := sc.it.ValueAndErr()
		if err != nil {
			return cells, sc.fail(fmt.Errorf("scan: %w", err))
		}
		if len(v) < 8 {
			return cells, sc.fail(fmt.Errorf("corrupt embedded value of %d bytes", len(v)))
		}
		// Qualifier and value in one run of the row's arena.
		b := append(append(sc.cellMem.Alloc(len(qual)+len(v)-8), qual...), v[8:]...)
		cells = append(cells, store.Cell{Family: fam, Qualifier: b[:len(qual):len(qual)],
			Value: b[len(qual):], Timestamp: binary.BigEndian.Uint64(v)})
		sc.valid = sc.it.Next()
	}
	if !sc.valid {
		if err := sc.it.Error(); err != nil {
			return cells, sc.fail(fmt.Errorf("scan: %w", err))
		}
	}
	// The runs are newer than the cell keys, and each than the one before.
	for _, r := range runs {
		if len(cells) == 0 {
			var err error
			if cells, err = appendRunCells(cells, r, sc.family); err != nil {
				return cells, sc.fail(fmt.Errorf("scan: row %x: %w", sc.next, err))
			}
			continue
		}
		var err error
		if sc.runCells, err = appendRunCells(sc.runCells[:0], r, sc.family); err != nil {
			return cells, sc.fail(fmt.Errorf("scan: row %x: %w", sc.next, err))
		}
		cells, sc.overlay = overlayRunCells(cells, sc.runCells, sc.overlay)
	}
	sc.runs = runs[:0]
	return cells, true
}

// latin1 appends b decoded as ISO-8859-1 and encoded as UTF-8: byte x
// becomes the rune U+00xx, as HBase's JAVA regex engine sees a row key.
func latin1(dst, b []byte) []byte {
	for _, c := range b {
		if c < 0x80 {
			dst = append(dst, c)
		} else {
			dst = append(dst, 0xC0|c>>6, 0x80|c&0x3F)
		}
	}
	return dst
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
