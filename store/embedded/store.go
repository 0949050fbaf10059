package embedded

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/wlog"
)

// Options configure the embedded store.
type Options struct {
	// NoSync skips the fsync of each write; for benchmarks and tests only.
	NoSync bool
	// LogSyncInterval, when positive, acknowledges a write of the row
	// buffer's tables once its records are written to the buffer's log
	// file, without waiting for an fdatasync: it survives the process
	// being killed (kill -9), and is on disk within this interval, when
	// the log is fdatasynced in the background (wlog.Options.SyncInterval);
	// a power loss or kernel crash may lose the writes of the last
	// interval. Zero fdatasyncs the log before each write is acknowledged
	// (a group commit). Pebble's WAL (UIDs, the index, metadata) is synced
	// before every acknowledgment either way.
	LogSyncInterval time.Duration
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
	// RowCodecs names the RowCodec of a buffered table (by table): a
	// flush writes the rows the codec packs as runs of format 2 (runs.go).
	// Once a codec has packed a run of a table, every later session must
	// configure it for that table too.
	RowCodecs map[string]RowCodec
	// SettleInterval is how often the background settle wakes (settle.go):
	// deleted ranges are compacted at the next wake-up, and once no write
	// came for a whole interval the logs are flushed into tables and the
	// ranges written since the last settle compacted. 0 means
	// DefaultSettleInterval; negative turns the background settle off
	// (Reclaim still settles on request).
	SettleInterval time.Duration
	// SplitPartBytes is the least data (Pebble's estimate of its tables'
	// bytes, or the buffer's) each part of a range cut by SplitRange must
	// get; 0 means DefaultSplitPartBytes.
	SplitPartBytes int64

	// MinFreeBytes is the free space on the store's filesystem below
	// which the store turns read-only (diskguard.go); 0 turns the
	// watermark off (a full disk still turns it read-only).
	MinFreeBytes int64
	// BallastBytes is the space held in reserve in a ballast file, given
	// back when a write meets a full disk; 0: none.
	BallastBytes int64
	// OnFatal is called with Pebble's message when Pebble meets an error
	// it cannot go on from (a failed write of its log), and when the row
	// buffer's log fails for good (a failed fdatasync: noteLogErr): the
	// process should end (serve exits), as nothing acknowledged since the
	// last good sync may be trusted after it; the next start replays both
	// logs (every record acknowledged is in its file, a torn one ends its
	// replay). Nil panics.
	OnFatal func(msg string)
	// FS is the filesystem of Pebble's files and the row buffer's flush
	// tables; nil is the operating system's. Tests give one that fails
	// chosen operations or drops what was not synced (a power loss).
	FS vfs.FS
	// LogFS is the filesystem of the row buffer's log; nil is the
	// operating system's.
	LogFS wlog.FS

	// diskCheckEvery, when positive, is how often the disk guard reads
	// the free space (tests; diskGuardInterval otherwise).
	diskCheckEvery time.Duration
	// tunePebble, when set, adjusts Pebble's options last (tests and
	// measurements of compression and block sizes).
	tunePebble func(*pebble.Options)
}

// DefaultCacheBytes is the default block cache: enough to keep the index
// and filter blocks of a store of some hundred million samples, so that
// point reads (UID lookups, check-and-puts of new UIDs) do not go to disk.
// Measured with a first contact of 1 M new series (each with a new label
// value): 128 MiB took 40 s, 256 MiB and 1 GiB 21 s.
const DefaultCacheBytes = 256 << 20

// Store is a store.Store on a Pebble database in one directory. Every
// method is safe for concurrent use; Close ends it.
type Store struct {
	db     *pebble.DB
	wo     *pebble.WriteOptions
	tables map[string]bool
	seed   maphash.Seed
	locks  [rowLocks]sync.RWMutex
	now    func() time.Time
	// cacheBytes is the block cache's capacity.
	cacheBytes int64
	// splitPart is Options.SplitPartBytes.
	splitPart int64
	// rb holds the recent cells of Options.BufferTables; nil when none.
	rb *rowBuffer
	// codecs are Options.RowCodecs.
	codecs map[string]RowCodec
	// settler remembers the ranges to settle and settles them.
	settler *settler
	// dir is the store's directory.
	dir string
	// committed counts batches committed to Pebble, synced the count the
	// last sync of Pebble's WAL covered: a sync with nothing new skips it.
	committed, synced atomic.Uint64
	// namespaces are those CreateNamespace made (copied on write; nsMu
	// serializes the writers).
	namespaces atomic.Pointer[map[string]bool]
	nsMu       sync.Mutex
	// guard turns the store read-only when its disk runs low.
	guard *diskGuard
	// fs is Options.FS (vfs.Default when nil).
	fs vfs.FS
	// onFatal is Options.OnFatal; fatalOnce calls it once.
	onFatal   func(msg string)
	fatalOnce sync.Once
}

// The optional interfaces the store has: every one but
// store.CheckAndPutSyncer.
var (
	_ store.Store               = (*Store)(nil)
	_ store.Syncer              = (*Store)(nil)
	_ store.DeferredPutter      = (*Store)(nil)
	_ store.BulkPutter          = (*Store)(nil)
	_ store.BatchCheckAndPutter = (*Store)(nil)
	_ store.CellGetter          = (*Store)(nil)
	_ store.CellsGetter         = (*Store)(nil)
)

// Open opens (creating when needed) the store in dir. A table that holds
// runs (it was buffered before) is buffered whatever opts says; a row
// buffer's log left by an earlier run is ingested into Pebble before Open
// returns. The caller must Close the store, which stops the row buffer's
// goroutines.
func Open(dir string, opts Options) (*Store, error) {
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = DefaultCacheBytes
	}
	cache := pebble.NewCache(opts.CacheBytes)
	defer cache.Unref() // the DB holds its own reference
	s := &Store{wo: pebble.Sync, seed: maphash.MakeSeed(), now: time.Now, cacheBytes: opts.CacheBytes, codecs: opts.RowCodecs, dir: dir, splitPart: opts.SplitPartBytes}
	if s.splitPart <= 0 {
		s.splitPart = DefaultSplitPartBytes
	}
	interval := opts.SettleInterval
	if interval == 0 {
		interval = DefaultSettleInterval
	}
	s.settler = newSettler(s, interval)
	s.fs, s.onFatal = opts.FS, opts.OnFatal
	if s.fs == nil {
		s.fs = vfs.Default
	}
	logFS := opts.LogFS
	if logFS == nil {
		logFS = wlog.OS
	}
	if err := s.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open embedded store %q: %w", dir, err)
	}
	s.guard = newDiskGuard(dir, opts.MinFreeBytes, opts.BallastBytes, freeBytes)
	s.guard.every = opts.diskCheckEvery
	po := pebbleOptions(cache, len(opts.BufferTables) > 0, s.fs)
	po.FS = vfs.OnDiskFull(po.FS, s.guard.diskFull)
	po.Logger = fatalLogger{opts.OnFatal}
	po.EventListener = s.settler.listener()
	if opts.tunePebble != nil {
		opts.tunePebble(po)
	}

	db, err := pebble.Open(dir, po)
	if err != nil {
		s.guard.close(false)
		return nil, fmt.Errorf("open embedded store %q: %w", dir, err)
	}
	s.db = db
	if opts.NoSync {
		s.wo = pebble.NoSync
	}
	if len(opts.Tables) > 0 {
		s.tables = make(map[string]bool, len(opts.Tables))
		for _, t := range opts.Tables {
			s.tables[t] = true
		}
	}
	if err := s.loadNamespaces(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open embedded store %q: %w", dir, err)
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
		if s.rb, err = openRowBuffer(dir, db, po, opts.BufferTables, marked, opts.RowCodecs, budget, wlog.Options{NoSync: opts.NoSync, SyncInterval: opts.LogSyncInterval, FS: logFS}); err != nil {
			db.Close()
			return nil, fmt.Errorf("open embedded store %q: %w", dir, err)
		}
		s.rb.wal.SetBeforeSync(s.syncPebbleIfDue)
		s.rb.onErr = s.noteLogErr
	} else if segs, _ := wlog.SegmentsFS(logFS, filepath.Join(dir, rowBufferDir)); len(segs) > 0 {
		// The log of a run that buffered: into Pebble now, before anything
		// newer is written, then away.
		rb, err := openRowBuffer(dir, db, po, nil, marked, opts.RowCodecs, DefaultRowBufferBytes, wlog.Options{NoSync: opts.NoSync, FS: logFS})
		if err == nil {
			err = rb.close()
		}
		if err == nil {
			err = removeRowBufferDir(s.fs, logFS, filepath.Join(dir, rowBufferDir))
		}
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("open embedded store %q: ingest the row buffer's log: %w", dir, err)
		}
	}
	s.settler.start()
	s.guard.start()
	return s, nil
}

// pebbleOptions returns the options Pebble is opened with: cache as the
// block cache, and smaller memtables when a row buffer (buffering) takes
// the data table's writes.
func pebbleOptions(cache *pebble.Cache, buffering bool, fs vfs.FS) *pebble.Options {
	po := &pebble.Options{Logger: fatalLogger{}, Cache: cache, FS: walFS{fs}}
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
	if buffering {
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
	// More compactions may run when Pebble finds itself behind (L0's
	// read amplification or the compaction debt grown), as when a settle's
	// compaction holds the one slot while flushes pile up in level 0: up
	// to half the cores, at least 2 (2 at 2 and 4 cores, as before; 4 at
	// 8), so that the background work that follows a write grows with the
	// writers' cores (VictoriaMetrics merges at CPU concurrency; Pebble's
	// default is one).
	upper := max(2, runtime.GOMAXPROCS(0)/2)
	po.CompactionConcurrencyRange = func() (int, int) { return 1, upper }
	po.EnsureDefaults()
	// The bottom level holds the settled data (settle.go): its blocks in
	// zstd (level 3) and of 32 KiB. A million node exporter-like samples
	// (BenchmarkSettledBytes), bytes a sample once in the bottom level:
	// Snappy 4 KiB blocks 11.97 (Pebble's default), Snappy 32 KiB 9.14,
	// zstd 4 KiB 7.73, 16 KiB 5.30, 32 KiB 4.69, 64 KiB 4.28. 32 KiB
	// keeps a point read (a UID's row, most of them cached above the
	// store) at one small block's decompression. The levels above keep
	// Snappy and 4 KiB: what passes through them is rewritten soon.
	bottom := &po.Levels[len(po.Levels)-1]
	bottom.Compression = func() *sstable.CompressionProfile { return sstable.ZstdCompression }
	bottom.BlockSize = settledBlockSize
	return po
}

// settledBlockSize is the block size of the bottom level (pebbleOptions).
const settledBlockSize = 32 << 10

// buffered reports whether table's puts go to the row buffer.
func (s *Store) buffered(table string) bool { return s.rb != nil && s.rb.buffered(table) }

// checkTable reports an error for a table name that is invalid (empty, or
// holding 0x00) or not among Options.Tables.
func (s *Store) checkTable(table string) error {
	if table == "" || bytes.IndexByte([]byte(table), 0) >= 0 {
		return fmt.Errorf("table name %q: %w", table, store.ErrInvalid)
	}
	if s.tables == nil {
		return nil
	}
	if s.tables[table] {
		return nil
	}
	ns, base := store.SplitNamespace(table)
	if ns == "" || !s.tables[base] || !(*s.namespaces.Load())[ns] {
		return fmt.Errorf("table %q: %w", table, store.ErrTableNotFound)
	}
	return nil
}

// Close makes every write durable, stops the background settle, flushes
// the row buffer into Pebble (its log left empty: rowBuffer.close) and
// Pebble's memtable into a table, so that neither log holds anything to
// replay at the next Open, and closes the database; then it removes the
// log files Pebble kept for reuse and gives back the space preallocated
// beyond the end of its live log (closePebble).
func (s *Store) Close() error {
	s.settler.stop()
	s.guard.close(true)
	if err := s.sync(); err != nil {
		return fmt.Errorf("close embedded store: %w", err)
	}
	if s.rb != nil {
		if err := s.rb.close(); err != nil {
			s.db.Close()
			return fmt.Errorf("close embedded store: %w", err)
		}
	}
	if err := s.closePebble(); err != nil {
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
		if err := s.rb.wal.WaitDurable(s.rb.wal.Position()); err != nil {
			s.noteLogErr(err)
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

// SSTableBytes returns the bytes of the store's live sstables: its data
// as stored on disk (prefix-compressed and compressed), without the logs
// and the memtable. After CompactAll it is the settled size of every live
// cell.
func (s *Store) SSTableBytes() uint64 {
	return s.db.Metrics().Table.Local.LiveSize
}

var _ store.TableSizer = (*Store)(nil)

// TableBytes returns Pebble's estimate of the bytes table takes in its
// sstables on disk (store.TableSizer): the compressed data blocks of its
// key range, and the index and filter blocks in proportion; not what its
// rows hold in the row buffer or the memtable.
func (s *Store) TableBytes(ctx context.Context, table string) (int64, error) {
	if err := s.checkTable(table); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("size of %s: %w", table, err)
	}
	lower, upper, _ := rowRange(table, nil, nil)
	n, err := s.db.EstimateDiskUsage(lower, upper)
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", table, err)
	}
	return int64(n), nil
}

// noteLogErr takes an error of the row buffer's log or of its flush: a
// full disk's turns the store read-only (diskGuard.noteErr); a log that
// failed for good (an fdatasync that failed: what its file holds since
// the last good one is unknown, as Pebble treats its own log's) ends the
// store through Options.OnFatal, as Pebble's fatal errors do: the next
// start replays the log. A full disk fails writes, not fdatasyncs, on
// the filesystems promhbase runs on (ext4, XFS, tmpfs), so it does not
// come here.
func (s *Store) noteLogErr(err error) {
	s.guard.noteErr(err)
	if s.rb == nil {
		return
	}
	if failed := s.rb.wal.Failed(); failed != nil {
		s.fatalOnce.Do(func() {
			fatalLogger{s.onFatal}.Fatalf("the row buffer's log failed: %v: the next start replays it", failed)
		})
	}
}

// fatalLogger drops Pebble's log lines; a fatal one goes to onFatal
// (Options.OnFatal), or panics when it is nil, as Pebble's default
// logger's would end the process.
type fatalLogger struct{ onFatal func(string) }

func (fatalLogger) Infof(string, ...any)  {}
func (fatalLogger) Errorf(string, ...any) {}
func (l fatalLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if l.onFatal != nil {
		l.onFatal(msg)
	}
	panic(msg)
}
