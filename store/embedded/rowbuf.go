package embedded

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/memrows"
	"github.com/promhbase/promhbase/store/embedded/wlog"
)

// rowBuffer keeps the recent cells of the buffered tables (the data table,
// one cell per sample) in memory, a memrows.Rows per table, in front of Pebble,
// and its own write-ahead log (wlog.Log) for durability. When it holds
// budget bytes it is swapped for an empty one and written, sorted, into
// one sstable that is ingested into Pebble (into L0, with a sequence
// number above every write before it), after which its log segments are
// retired (wlog.Log.RemoveThrough: one kept for reuse, cut to the budget).
// Reads merge the active buffer, the one being flushed and Pebble, newest
// first.
//
// Invariants that keep the merge exact:
//   - Every put into a buffered table goes to the buffer, so the buffer
//     is newer than anything Pebble holds for the same cell.
//   - A delete in a buffered table waits for any flush (flushMu), writes
//     Pebble tombstones and rewrites the runs it reaches, then marks the
//     buffer's records dead (those of a buffer whose flush failed and
//     waits for its retry too) and logs that; no flush runs while it
//     does, so a dead record never needs to hide an older one elsewhere,
//     and a flush writes only live cells. DeleteRows does the same for a
//     range of rows: one range tombstone, then every record of the rows
//     dead and the rows wiped (killRows), one record in the log.
type rowBuffer struct {
	dir string
	db  *pebble.DB
	// lastPut is the log position where the last put's record ends (set
	// under mu, in the log's order): a delete syncs the log that far
	// first, not over the delete records after it.
	lastPut atomic.Uint64
	// fs is Pebble's filesystem, where flushes write their tables; the
	// log's is wal's.
	fs    vfs.FS
	wopts sstable.WriterOptions
	// bulkWopts write a bulk put's sstable as the bottom level's (its
	// compression and block size): a bulk load of history that lands
	// there, below the data already held, is then settled as written.
	bulkWopts sstable.WriterOptions
	budget    int64
	grown     int64 // the size the active buffer may grow to (grownLimit)
	seed      maphash.Seed
	tables    map[string]bool
	cache     *pebble.Cache // the block cache the buffers reserve from; nil for none
	// codecs pack the runs of the tables that have one (Options.RowCodecs).
	codecs map[string]RowCodec

	mu     sync.Mutex
	cond   *sync.Cond // flush finished
	active map[string]*memrows.Rows
	// activeRef is active, for readers that do not hold mu (probe).
	activeRef atomic.Pointer[map[string]*memrows.Rows]
	// gen is the accounting of active's buffers (their bytes, rows and
	// continued rows: rowbuf_limit.go); a new one comes with each fresh
	// active buffer. Replaced under mu.
	gen      *generation
	flushing map[string]*memrows.Rows
	flushSeg uint64 // last log segment covered by flushing
	wal      *wlog.Log
	flushErr error
	closed   bool

	flushMu sync.Mutex
	// bulks counts the bulk puts writing runs (putRuns) that close waits
	// for: added under mu while not closed. bulkPuts counts those that
	// wrote runs, the settler's sign of activity (Store.activity).
	bulks    sync.WaitGroup
	bulkPuts atomic.Int64
	kick     chan struct{} // never closed (see flusher)
	// stopFlush is closed by close: the flusher returns.
	stopFlush chan struct{}
	stopped   chan struct{}

	// The sorter (see sorter) orders the active buffers' new rows ahead
	// of the reads that need them: sortKick wakes it, stopSort ends it,
	// sorterDone is closed when it has returned. lastFresh is when a put
	// last added a row (Unix ns); sortArmed is set while the sorter will
	// look at the buffers again once new rows stop coming.
	sortKick   chan struct{}
	stopSort   chan struct{}
	sorterDone chan struct{}
	lastFresh  atomic.Int64
	sortArmed  atomic.Bool
	presorts   atomic.Int64

	flushes     atomic.Int64
	flushErrors atomic.Int64

	// seq is the sequence number of the last flush (or PutBulk) that
	// wrote runs (see runs.go), seqDurable the largest one runSeqKey holds
	// (nextSeq). Under flushMu.
	seq, seqDurable uint64
	// marked are the tables that hold runs: a flush writes runs for them
	// even when this session does not buffer them (their log replayed
	// under other flags), so that their cell keys stay older than their
	// runs.
	marked map[string]bool

	// recs are put's record buffers (*[]byte), probes its rows' hashes
	// and indices (*putProbes), reused.
	recs, probes sync.Pool
	// onErr, when set, is told of every failed flush (the disk guard
	// watches for a full disk).
	onErr func(error)
	// afterProbe and afterLog, when set (tests), run in put after its
	// rows' lookup under the read lock (probe), and between its record's
	// append to the log and its cells' insert.
	afterProbe, afterLog func()
}

// rowBufferDir is the buffer's directory inside the store's.
const rowBufferDir = "rowbuf"

// DefaultRowBufferBytes is the default row buffer: see Options. Larger
// flushes less often, and each flush is merged into the current hour of
// every series in the base level: 20 k series × 400 rounds of 2.0 wrote
// 0.85 M samples/s with 16 MiB, 0.95–1.05 M with 32 MiB, 1.27–1.46 M with
// 64 MiB. But at 1 M series every flush holds every row (the row's key
// and bookkeeping, about 110 bytes, besides its cells), and the peak RSS
// went from 564 MB with 32 MiB to 646 MB with 64 MiB.
const DefaultRowBufferBytes = 32 << 20

// openRowBuffer opens the buffer of tables in dir, replays its log and
// ingests what the log held; marked are the tables that hold runs
// (runTables), codecs the tables' row codecs, wopts the log's options
// (KeepBytes is set to budget).
func openRowBuffer(dir string, db *pebble.DB, po *pebble.Options, tables, marked []string, codecs map[string]RowCodec, budget int64, wopts wlog.Options) (*rowBuffer, error) {
	dir = filepath.Join(dir, rowBufferDir)
	if wopts.FS == nil {
		wopts.FS = wlog.OS
	}
	if err := po.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create row buffer directory: %w", err)
	}
	if err := wopts.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create row buffer log directory: %w", err)
	}
	rb := &rowBuffer{
		dir: dir, db: db, fs: po.FS, wopts: po.MakeWriterOptions(0, db.TableFormat()), budget: budget,
		bulkWopts: po.MakeWriterOptions(len(po.Levels)-1, db.TableFormat()),
		seed:      maphash.MakeSeed(), tables: map[string]bool{}, codecs: codecs,
		kick: make(chan struct{}, 1), stopFlush: make(chan struct{}), stopped: make(chan struct{}),
		sortKick: make(chan struct{}, 1), stopSort: make(chan struct{}), sorterDone: make(chan struct{}),
	}
	rb.cond = sync.NewCond(&rb.mu)
	rb.recs.New = func() any { return new([]byte) }
	rb.probes.New = func() any { return new(putProbes) }
	rb.cache = po.Cache // referenced below once the buffer is open
	var cacheBytes int64
	if rb.cache != nil {
		cacheBytes = rb.cache.MaxSize()
	}
	rb.grown = grownLimit(budget, cacheBytes)
	for _, t := range tables {
		rb.tables[t] = true
	}
	rb.setActive(rb.fresh())
	var err error
	if rb.seq, err = lastRunSeq(db); err != nil {
		return nil, fmt.Errorf("read the row buffer's flush sequence: %w", err)
	}
	rb.seqDurable = rb.seq
	rb.marked = map[string]bool{}
	for _, t := range marked {
		rb.marked[t] = true
	}
	if err := removeSSTables(rb.fs, dir); err != nil {
		return nil, err
	}
	segs, err := wlog.SegmentsFS(wopts.FS, dir)
	if err != nil {
		return nil, err
	}
	for _, seg := range segs {
		if _, err := wlog.ReadSegmentFS(wopts.FS, filepath.Join(dir, wlog.SegmentName(seg)), seg, rb.replay); err != nil {
			return nil, err
		}
	}
	next := uint64(1)
	if len(segs) > 0 {
		next = segs[len(segs)-1] + 1
	}
	// A file kept for reuse holds at most what the log takes between two
	// flushes: about the buffer's budget.
	wopts.KeepBytes = budget
	rb.wal, err = wlog.Open(dir, next, wopts)
	if err != nil {
		return nil, err
	}
	// What the log held goes to Pebble now, and its segments away. When
	// that fails (a disk still full), it stays in the buffer, its
	// segments kept, for the first flush that succeeds: the store opens
	// all the same (read-only until space returns).
	if len(segs) > 0 {
		if err := rb.ingest(rb.active); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				rb.wal.Close()
				return nil, err
			}
			go rb.flusher()
			go rb.sorter()
			if rb.cache != nil {
				rb.cache.Ref()
			}
			return rb, nil
		}
		for _, m := range rb.active {
			m.Release()
		}
		rb.setActive(rb.fresh())
		if err := rb.wal.RemoveThrough(segs[len(segs)-1]); err != nil {
			rb.wal.Close()
			return nil, err
		}
	}
	if rb.cache != nil {
		rb.cache.Ref()
	}
	go rb.flusher()
	go rb.sorter()
	return rb, nil
}

// removeSSTables removes the sstables a flush or a bulk put left in dir
// when the process stopped before it ingested (and removed) them.
func removeSSTables(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("list row buffer sstables: %w", err)
	}
	for _, name := range names {
		if !strings.HasSuffix(name, ".sst") {
			continue
		}
		if err := fs.Remove(fs.PathJoin(dir, name)); err != nil {
			return fmt.Errorf("remove row buffer sstable %s: %w", name, err)
		}
	}
	return nil
}

// removeRowBufferDir removes the buffer's directory dir: its log's
// segments (on logFS) and whatever else is in it (on fs).
func removeRowBufferDir(fs vfs.FS, logFS wlog.FS, dir string) error {
	segs, err := wlog.SegmentsFS(logFS, dir)
	if err != nil {
		return err
	}
	for _, seg := range segs {
		if err := logFS.Remove(filepath.Join(dir, wlog.SegmentName(seg))); err != nil {
			return fmt.Errorf("remove row buffer log segment %d: %w", seg, err)
		}
	}
	if err := fs.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove row buffer directory: %w", err)
	}
	return nil
}

// fresh returns an empty active buffer: a memrows.Rows per buffered table.
func (rb *rowBuffer) fresh() map[string]*memrows.Rows {
	m := make(map[string]*memrows.Rows, len(rb.tables))
	rb.gen = new(generation)
	var reserve func(int) func()
	if rb.cache != nil {
		reserve = rb.cache.Reserve
	}
	for t := range rb.tables {
		m[t] = memrows.New(t, rb.seed, reserve, &rb.gen.bytes)
	}
	return m
}

// replay applies one logged payload to the active buffer.
func (rb *rowBuffer) replay(payload []byte) error {
	r := walReader{b: payload}
	if len(payload) == 0 {
		return errors.New("empty row buffer log record")
	}
	op := payload[0]
	r.b = r.b[1:]
	table := string(r.bytes())
	if r.err != nil {
		return r.err
	}
	m := rb.active[table]
	if m == nil {
		// A table no longer buffered (the log of a run with other flags):
		// replayed all the same, and ingested with the rest.
		if table == "" || bytes.IndexByte([]byte(table), 0) >= 0 {
			return fmt.Errorf("row buffer log record names table %q", table)
		}
		m = memrows.New(table, rb.seed, nil, &rb.gen.bytes)
		rb.addActive(table, m)
	}
	switch op {
	case walOpPut:
		for range r.count() {
			row := r.bytes()
			if r.err != nil {
				break
			}
			if len(row) == 0 {
				return errors.New("row buffer log record puts an empty row key")
			}
			i := m.RowFor(row)
			for range r.count() {
				fam, qual, ts, val := r.bytes(), r.bytes(), r.u64(), r.bytes()
				if r.err != nil {
					break
				}
				if err := checkColumn(fam, qual); err != nil {
					return fmt.Errorf("row buffer log record: %w", err)
				}
				if len(val) > math.MaxUint32 {
					return fmt.Errorf("row buffer log record: value of %d bytes", len(val))
				}
				m.AddCell(i, fam, qual, val, ts)
			}
		}
	case walOpDelete:
		row := r.bytes()
		var cols []memrows.Column
		for range r.count() {
			c := memrows.Column{Family: r.bytes(), Qualifier: r.bytes(), Bound: r.u64()}
			if r.err == nil {
				if err := checkColumn(c.Family, c.Qualifier); err != nil {
					return fmt.Errorf("row buffer log record: %w", err)
				}
			}
			cols = append(cols, c)
		}
		if r.err == nil {
			m.Kill(row, cols)
		}
	case walOpDeleteRows:
		start, stop := r.bytes(), r.bytes()
		if r.err == nil {
			m.KillRange(start, stop)
		}
	default:
		return fmt.Errorf("row buffer log record of unknown kind %d", op)
	}
	return r.err
}

// buffered reports whether table's puts go to the buffer.
func (rb *rowBuffer) buffered(table string) bool {
	return rb.tables[table] || rb.tables[baseTable(table)]
}

// writesRuns reports whether a flush writes table's rows as runs: a
// buffered table, or one that holds runs already.
func (rb *rowBuffer) writesRuns(table string) bool {
	return rb.buffered(table) || rb.marked[table]
}

// checkColumn checks what a cell record can hold: a family of 1 to 255
// bytes without 0x00 (the Pebble key's separator), a qualifier of at most
// 65535 bytes.
func checkColumn(family, qualifier []byte) error {
	if len(family) == 0 || len(family) > 255 || bytes.IndexByte(family, 0) >= 0 {
		return fmt.Errorf("family %q: %w", family, store.ErrInvalid)
	}
	if len(qualifier) > 0xFFFF {
		return fmt.Errorf("qualifier of %d bytes: %w", len(qualifier), store.ErrInvalid)
	}
	return nil
}

// size returns the bytes of the active buffer (of every table: tenants'
// too, without visiting each). The caller holds mu.
func (rb *rowBuffer) size() int64 { return rb.gen.bytes.Load() }

// limit returns the size at which the active buffer is flushed (see
// generation.limit). The caller holds mu.
func (rb *rowBuffer) limit() int64 { return rb.gen.limit(rb.budget, rb.grown) }

// signal wakes the flusher, unless it has a wake-up pending.
func (rb *rowBuffer) signal() {
	select {
	case rb.kick <- struct{}{}:
	default:
	}
}

// kill applies a delete's columns to the active buffer and logs it. The
// caller holds flushMu and the row's lock.
func (rb *rowBuffer) kill(table string, row []byte, cols []memrows.Column) uint64 {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	m := rb.activeFor(table)
	pos := rb.wal.AppendFunc(func(dst []byte) []byte { return appendDeleteRecord(dst, table, row, cols) })
	m.Lock()
	m.Kill(row, cols)
	m.Unlock()
	// A buffer whose flush failed waits for its retry (flushing stays
	// set): its records of the row die too, or the retry would write them
	// back over the delete. Replay needs nothing more: that buffer's log
	// segments come before this record.
	if f := rb.flushing[table]; f != nil {
		f.Lock()
		if f.Find(f.Hash(row), row) >= 0 {
			f.Kill(row, cols)
		}
		f.Unlock()
	}
	return pos
}

// killRows removes the rows of table in [start, stop) (stop empty: to the
// table's end) from the active buffer, and from a buffer whose flush
// failed and waits for its retry, and logs that: their records dead, the
// rows wiped. It returns the log position that makes it durable. The
// caller holds flushMu and every row stripe, and has committed the range
// tombstone that removes the rows from Pebble: a replay of the log kills
// the rows logged before the record and keeps those logged after it.
func (rb *rowBuffer) killRows(table string, start, stop []byte) uint64 {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	pos := rb.wal.AppendFunc(func(dst []byte) []byte { return appendDeleteRowsRecord(dst, table, start, stop) })
	for _, bufs := range []map[string]*memrows.Rows{rb.active, rb.flushing} {
		if m := bufs[table]; m != nil {
			m.Lock()
			m.KillRange(start, stop)
			m.Unlock()
		}
	}
	return pos
}

// layers returns the buffers a read of table consults, newest first.
func (rb *rowBuffer) layers(table string) []*memrows.Rows {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.layersLocked(table)
}

// layersLocked is layers for a caller that holds mu.
func (rb *rowBuffer) layersLocked(table string) []*memrows.Rows {
	ls := make([]*memrows.Rows, 0, 2)
	if m := rb.active[table]; m != nil {
		ls = append(ls, m)
	}
	if m := rb.flushing[table]; m != nil {
		ls = append(ls, m)
	}
	return ls
}

// activeFor returns the active buffer of table, made for a table of a
// namespace (Store.CreateNamespace) at its first write since the last
// flush: fresh makes those of Options.BufferTables only. The caller holds
// mu.
func (rb *rowBuffer) activeFor(table string) *memrows.Rows {
	m := rb.active[table]
	if m == nil {
		var reserve func(int) func()
		if rb.cache != nil {
			reserve = rb.cache.Reserve
		}
		m = memrows.New(table, rb.seed, reserve, &rb.gen.bytes)
		rb.addActive(table, m)
	}
	return m
}

// setActive makes bufs the active buffers. A map once set is never
// changed (addActive copies it), so that probe reads the one activeRef
// holds without mu. The caller holds mu, or owns rb alone.
func (rb *rowBuffer) setActive(bufs map[string]*memrows.Rows) {
	rb.active = bufs
	rb.activeRef.Store(&bufs)
}

// addActive makes m table's active buffer, in a copy of the map. The
// caller holds mu, or owns rb alone.
func (rb *rowBuffer) addActive(table string, m *memrows.Rows) {
	bufs := maps.Clone(rb.active)
	if bufs == nil {
		bufs = map[string]*memrows.Rows{}
	}
	bufs[table] = m
	rb.setActive(bufs)
}

// lookup returns the newest record of a cell in the buffers: found false
// when neither holds one (Pebble decides), dead when it was deleted.
func (rb *rowBuffer) lookup(table string, row, family, qualifier []byte) (memrows.Cell, bool) {
	for _, m := range rb.layers(table) {
		if c, ok := m.Lookup(row, family, qualifier); ok {
			return c, true
		}
	}
	return memrows.Cell{}, false
}

// close flushes the buffer into Pebble, stops the flusher and the
// sorter, and leaves the log holding only what was put after the flush
// (trim): normally nothing.
func (rb *rowBuffer) close() error {
	close(rb.stopSort)
	<-rb.sorterDone
	err := rb.flush()
	rb.mu.Lock()
	rb.closed = true
	rb.cond.Broadcast()
	rb.mu.Unlock()
	rb.bulks.Wait()
	close(rb.stopFlush)
	<-rb.stopped
	if err == nil {
		err = rb.wal.Trim()
	}
	if cerr := rb.wal.Close(); err == nil {
		err = cerr
	}
	rb.releaseAll()
	return err
}

// releaseAll returns every reservation and the cache reference.
func (rb *rowBuffer) releaseAll() {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	for _, bufs := range []map[string]*memrows.Rows{rb.active, rb.flushing} {
		for _, m := range bufs {
			m.Release()
		}
	}
	if rb.cache != nil {
		rb.cache.Unref()
		rb.cache = nil
	}
}

// stats are the buffer's figures for metrics.
type rowBufferStats struct {
	bytes, rows, cells int64
	flushes, errors    int64
	presorts           int64
}

// stats returns the buffer's figures, the one being flushed included.
func (rb *rowBuffer) stats() rowBufferStats {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	var s rowBufferStats
	for _, bufs := range []map[string]*memrows.Rows{rb.active, rb.flushing} {
		for _, m := range bufs {
			m.RLock()
			s.bytes += m.Bytes()
			s.rows += int64(m.Len())
			s.cells += int64(m.Cells())
			m.RUnlock()
		}
	}
	s.flushes, s.errors, s.presorts = rb.flushes.Load(), rb.flushErrors.Load(), rb.presorts.Load()
	return s
}
