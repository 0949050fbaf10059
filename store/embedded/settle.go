package embedded

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/promhbase/promhbase/store"
)

// Settling: the space of deleted and replaced cells, and of the row
// buffer's and Pebble's logs, given back within minutes, and the data
// moved down to the bottom level, whose blocks are compressed with zstd
// (pebbleOptions).
//
// Pebble drops a deleted or replaced version only when a compaction
// merges it with what hides it, which for data already in the bottom
// level may take a long time, and it compacts what it must for its shape,
// not what changed. So the store remembers the key ranges that changed
// since the last settle, in memory:
//
//   - deleted: the rows of every Delete, the ranges of DeleteRows;
//   - written: the key span of every sstable a flush wrote (the row
//     buffer's, ingested, and Pebble's memtable's), from Pebble's events.
//
// A settle compacts those ranges down to the bottom level (db.Compact),
// after merging the ranges that lie close together (so that a table file
// holding many of them is rewritten once, not once each) and cutting a
// large one at the bottom level's files (so that each compaction is
// short and Pebble's own compactions of level 0, which writes wait for,
// are picked in between: Pebble picks its score-based compactions before
// manual ones).
//
// The background settler looks four times every Options.SettleInterval:
//
//   - when something was deleted since the last settle and no delete
//     came for a whole interval (or the first has waited settleMaxWait
//     intervals), it settles the deleted ranges: the OpenTSDB compaction
//     of an ended hour deletes the hour's sample cells across the whole
//     data table for some minutes, and their space comes back once, a
//     minute after it ends, rather than at every wake-up meanwhile, each
//     rewriting the same files;
//   - when nothing was written for a whole interval (the writes stopped),
//     it flushes the row buffer and Pebble's memtable, so that neither log
//     holds anything to replay and the row buffer's log gives its files
//     back (wlog.Log.Trim), and settles every range written or deleted
//     since; it does that once until writes come again.
//
// The ranges flushes wrote are not settled while writes go on: every
// flush of the data table writes a run into nearly every series' current
// row, across the whole table, so settling them would rewrite the whole
// table each time; Pebble's compactions move them down meanwhile, as they
// would anyway.
//
// Ranges changed before the store was opened (by a process stopped or
// killed before it settled) are found in the files themselves, once, as
// the background settle starts or at the first settle (findUnsettled):
// every table above the bottom level. A table that holds deletions is
// noted as deleted (settled once deletes pause, as the OpenTSDB
// compaction's deletes would have been), any other as written (settled
// once writes stop). A table already in the bottom level is left as it
// is, as a settle leaves it: Pebble's manual compactions end there and
// never rewrite it (a row buffer's table ingested straight into the
// bottom level of a new store keeps its level-0 compression).
//
// Reclaim (store.Reclaimer) settles at once: it flushes both logs and
// compacts the deleted ranges, for retention, the admin API and tools
// that want the space of what they deleted back before they go on. The
// ranges flushes wrote it leaves to the quiet settle (rewriting them while
// writes go on is what the background settle avoids); CompactAll compacts
// everything.

// DefaultSettleInterval is the default Options.SettleInterval.
const DefaultSettleInterval = time.Minute

const (
	// settleGapBytes: two ranges to settle are compacted as one when the
	// data between them is less than this (Pebble's estimate): less than
	// a table file of the bottom level, which two compactions would both
	// rewrite.
	settleGapBytes = 32 << 20
	// settleChunkBytes bounds the data of one compaction of a settle: a
	// larger range is cut at the bottom level's files.
	settleChunkBytes = 256 << 20
	// maxPendingSpans bounds the ranges remembered; beyond it neighbours
	// are merged (the gaps between them settled too).
	maxPendingSpans = 4096
	// settleMaxWait bounds, in intervals, how long deleted ranges wait for
	// the deletes to pause.
	settleMaxWait = 10
)

// span is a range of Pebble keys, [lo, hi).
type span struct{ lo, hi []byte }

// settler remembers the ranges to settle and runs the background settle.
type settler struct {
	s        *Store
	interval time.Duration // <= 0: no background settle

	mu      sync.Mutex
	deleted []span
	written []span
	// deletes counts the deletes noted; since is when deleted last
	// became non-empty.
	deletes uint64
	since   time.Time

	// runMu makes settles one at a time; flushedAt (under it) is the
	// count of Pebble commits the last memtable flush of a settle covered.
	runMu     sync.Mutex
	flushedAt uint64

	// The background goroutine: ctx is cancelled by stop, done closed when
	// it returned. last is the activity at the last tick, quiet set once a
	// quiet settle succeeded since the writes stopped.
	ctx         context.Context
	cancel      context.CancelFunc
	done        chan struct{}
	last        activity
	lastDeletes uint64
	quiet       bool
	// lastActive is when a tick last saw the activity change, and
	// lastDeleteAt when it last saw the delete count change: the ticks
	// come four times an interval, so that the writes having stopped for
	// an interval is seen within a quarter of one.
	lastActive, lastDeleteAt time.Time

	settles, errors atomic.Int64

	// found is done once the tables left unsettled by an earlier process
	// were noted (findUnsettled); foundSpans counts them.
	found      sync.Once
	foundSpans atomic.Int64
}

// activity is what counts the writes: Pebble commits, the row buffer's
// log position and the bulk puts that wrote runs past it. Equal values at
// two ticks mean no write in between.
type activity struct{ commits, logged, bulks uint64 }

// newSettler returns the settler of s, not yet started.
func newSettler(s *Store, interval time.Duration) *settler {
	st := &settler{s: s, interval: interval, done: make(chan struct{})}
	st.ctx, st.cancel = context.WithCancel(context.Background())
	return st
}

// listener returns the Pebble events that note the ranges flushes wrote.
// They run under Pebble's locks and only append to written.
func (st *settler) listener() *pebble.EventListener {
	return &pebble.EventListener{
		FlushEnd: func(info pebble.FlushInfo) {
			if info.Err != nil {
				return
			}
			for _, t := range info.Output {
				st.noteWritten(t.Smallest.UserKey, t.Largest.UserKey)
			}
		},
		TableIngested: func(info pebble.TableIngestInfo) {
			if info.Err != nil {
				return
			}
			for _, t := range info.Tables {
				st.noteWritten(t.Smallest.UserKey, t.Largest.UserKey)
			}
		},
	}
}

// noteWritten remembers the keys [smallest, largest] of a table a flush
// wrote.
func (st *settler) noteWritten(smallest, largest []byte) {
	hi := append(append(make([]byte, 0, len(largest)+1), largest...), 0) // the first key after largest
	st.mu.Lock()
	st.written = addSpan(st.written, span{lo: bytes.Clone(smallest), hi: hi})
	st.mu.Unlock()
}

// noteDeleted remembers the keys [lo, hi) that a delete touched; the
// caller gives up lo and hi.
func (st *settler) noteDeleted(lo, hi []byte) {
	st.mu.Lock()
	if len(st.deleted) == 0 {
		st.since = time.Now()
	}
	st.deleted = addSpan(st.deleted, span{lo: lo, hi: hi})
	st.deletes++
	st.mu.Unlock()
}

// findUnsettled notes, once, the key ranges of the tables that are not
// settled (see the comment at the top): what an earlier process wrote or
// deleted and did not settle before it stopped. An error (a table's
// properties unreadable) is counted and leaves those tables to Pebble's
// compactions, as before this existed.
func (st *settler) findUnsettled() {
	st.found.Do(func() {
		n, err := st.s.noteUnsettled()
		st.foundSpans.Store(int64(n))
		if err != nil {
			st.errors.Add(1)
		}
	})
}

// noteUnsettled notes the ranges of the tables not in the settled form
// and returns how many it noted.
func (s *Store) noteUnsettled() (int, error) {
	levels, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		return 0, fmt.Errorf("settle: list tables: %w", err)
	}
	n := 0
	bottom := len(levels) - 1
	for _, tables := range levels[:max(bottom, 0)] {
		for _, t := range tables {
			if t.Properties == nil || t.Properties.NumDeletions > 0 {
				hi := append(bytes.Clone(t.Largest.UserKey), 0) // the first key after Largest
				s.settler.noteDeleted(bytes.Clone(t.Smallest.UserKey), hi)
			} else {
				s.settler.noteWritten(t.Smallest.UserKey, t.Largest.UserKey)
			}
			n++
		}
	}
	return n, nil
}

// addSpan appends sp to spans, merging them when there are too many:
// overlapping ones first, then neighbours pairwise.
func addSpan(spans []span, sp span) []span {
	spans = append(spans, sp)
	if len(spans) <= 2*maxPendingSpans {
		return spans
	}
	spans = mergeSpans(spans)
	for len(spans) > maxPendingSpans {
		out := spans[:0]
		for i := 0; i < len(spans); i += 2 {
			if i+1 < len(spans) {
				out = append(out, span{lo: spans[i].lo, hi: maxKey(spans[i].hi, spans[i+1].hi)})
			} else {
				out = append(out, spans[i])
			}
		}
		spans = out
	}
	return spans
}

// mergeSpans sorts spans and merges those that overlap or touch.
func mergeSpans(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return bytes.Compare(a.lo, b.lo) })
	out := spans[:0]
	for _, sp := range spans {
		if n := len(out); n > 0 && bytes.Compare(sp.lo, out[n-1].hi) <= 0 {
			out[n-1].hi = maxKey(out[n-1].hi, sp.hi)
			continue
		}
		out = append(out, sp)
	}
	return out
}

func maxKey(a, b []byte) []byte {
	if bytes.Compare(a, b) >= 0 {
		return a
	}
	return b
}

// start runs the background settle, when the interval is positive.
func (st *settler) start() {
	if st.interval <= 0 {
		close(st.done)
		return
	}
	go st.run()
}

// stop ends the background settle (a compaction under way is cancelled)
// and waits for it.
func (st *settler) stop() {
	st.cancel()
	<-st.done
}

func (st *settler) run() {
	defer close(st.done)
	st.findUnsettled()
	t := time.NewTicker(max(st.interval/4, time.Millisecond))
	defer t.Stop()
	st.last = st.s.activity()
	st.lastActive, st.lastDeleteAt = time.Now(), time.Now()
	for {
		select {
		case <-st.ctx.Done():
			return
		case <-t.C:
			st.tick()
		}
	}
}

// tick is one wake-up of the background settle (see the comment at the
// top). Its errors are counted (metrics) and retried at the next tick.
func (st *settler) tick() {
	at := time.Now()
	if now := st.s.activity(); now != st.last {
		st.last, st.lastActive, st.quiet = now, at, false
	}
	idle := at.Sub(st.lastActive) >= st.interval
	st.mu.Lock()
	deleted, written := len(st.deleted) > 0, len(st.written) > 0
	if st.deletes != st.lastDeletes {
		st.lastDeletes, st.lastDeleteAt = st.deletes, at
	}
	deletesPaused := at.Sub(st.lastDeleteAt) >= st.interval
	overdue := deleted && time.Since(st.since) >= settleMaxWait*st.interval
	st.mu.Unlock()
	var err error
	switch {
	case idle && (!st.quiet || deleted || written):
		if err = st.s.settle(st.ctx, true, true); err == nil {
			st.quiet = true
		}
	case deleted && (deletesPaused || overdue):
		err = st.s.settle(st.ctx, false, false)
	case idle:
		// Settled and still idle: Pebble retires the log a settle's flush
		// left behind in the background, maybe after that settle looked.
		st.s.truncateRetiredLogs()
		return
	default:
		return
	}
	if err != nil && st.ctx.Err() == nil {
		st.errors.Add(1)
	}
}

// activity returns the store's write counts.
func (s *Store) activity() activity {
	a := activity{commits: s.committed.Load()}
	if s.rb != nil {
		a.logged = s.rb.wal.Position()
		a.bulks = uint64(s.rb.bulkPuts.Load())
	}
	return a
}

var _ store.Reclaimer = (*Store)(nil)

// Reclaim settles now (store.Reclaimer): it flushes the row buffer and
// Pebble's memtable, trims the row buffer's log, and compacts every range
// deleted since the last settle down to the bottom level, so that the
// space of deleted cells goes back to the filesystem (Pebble removes the
// files a compaction replaced as soon as no reader holds them) before it
// returns. Writes go on meanwhile.
func (s *Store) Reclaim(ctx context.Context) error {
	if err := s.settle(ctx, true, false); err != nil {
		return fmt.Errorf("reclaim: %w", err)
	}
	return nil
}

var _ store.Settler = (*Store)(nil)

// Settle settles now everything noted (store.Settler): it flushes the row
// buffer and Pebble's memtable and compacts every range written or
// deleted since the last settle, and every table an earlier process left
// above the bottom level, down to the bottom level, before it returns.
func (s *Store) Settle(ctx context.Context) error {
	if err := s.settle(ctx, true, true); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	return nil
}

// settle compacts the ranges deleted since the last settle; flush first
// flushes both logs' contents into tables (and trims the row buffer's
// log), written compacts the ranges flushes wrote since the last settle
// too. On error the ranges not settled stay noted.
func (s *Store) settle(ctx context.Context, flush, written bool) error {
	st := s.settler
	st.findUnsettled()
	st.runMu.Lock()
	defer st.runMu.Unlock()
	st.settles.Add(1)
	if flush {
		if s.rb != nil {
			if err := s.rb.flushTrim(); err != nil {
				return fmt.Errorf("settle: flush row buffer: %w", err)
			}
		}
		if c := s.committed.Load(); c != st.flushedAt {
			// The memtable's writes into a table (FlushEnd notes its
			// span), so that Pebble's log holds nothing to replay.
			if err := s.db.Flush(); err != nil {
				return fmt.Errorf("settle: flush memtable: %w", err)
			}
			st.flushedAt = c
		}
		s.truncateRetiredLogs()
	}
	st.mu.Lock()
	spans := st.deleted
	st.deleted = nil
	if written {
		spans = append(spans, st.written...)
		st.written = nil
	}
	st.mu.Unlock()
	if len(spans) == 0 {
		return nil
	}
	chunks, err := s.settlePlan(spans)
	for err == nil && len(chunks) > 0 {
		c := chunks[0]
		// Compact takes an inclusive end: c.hi itself is one key more.
		if err = s.db.Compact(ctx, c.lo, c.hi, false); err != nil {
			err = fmt.Errorf("settle: compact [%x, %x): %w", c.lo, c.hi, err)
			break
		}
		chunks = chunks[1:]
	}
	if err != nil {
		// Noted again, as deleted: the next tick settles them.
		st.mu.Lock()
		if len(st.deleted) == 0 {
			st.since = time.Now()
		}
		for _, c := range chunks {
			st.deleted = addSpan(st.deleted, c)
		}
		st.mu.Unlock()
		return err
	}
	return nil
}

// settlePlan turns the noted ranges into the ranges to compact, in key
// order: overlapping ones merged, ranges with little data between them
// merged, large ones cut at the bottom level's files. On error it returns
// the merged ranges with the error.
func (s *Store) settlePlan(spans []span) ([]span, error) {
	spans = mergeSpans(spans)
	out := spans[:1]
	for _, sp := range spans[1:] {
		prev := &out[len(out)-1]
		gap, err := s.db.EstimateDiskUsage(prev.hi, sp.lo)
		if err != nil {
			return spans, fmt.Errorf("settle: estimate [%x, %x): %w", prev.hi, sp.lo, err)
		}
		if gap < settleGapBytes {
			prev.hi = maxKey(prev.hi, sp.hi)
			continue
		}
		out = append(out, sp)
	}
	var chunks []span
	for _, sp := range out {
		var err error
		if chunks, err = s.cutSpan(chunks, sp); err != nil {
			return out, err
		}
	}
	return chunks, nil
}

// cutSpan appends sp to chunks, cut into ranges of at most about
// settleChunkBytes of the bottom-most level that holds files of it, at
// its files' ends.
func (s *Store) cutSpan(chunks []span, sp span) ([]span, error) {
	size, err := s.db.EstimateDiskUsage(sp.lo, sp.hi)
	if err != nil {
		return chunks, fmt.Errorf("settle: estimate [%x, %x): %w", sp.lo, sp.hi, err)
	}
	if size <= settleChunkBytes {
		return append(chunks, sp), nil
	}
	levels, err := s.db.SSTables(pebble.WithKeyRangeFilter(sp.lo, sp.hi))
	if err != nil {
		return chunks, fmt.Errorf("settle: tables of [%x, %x): %w", sp.lo, sp.hi, err)
	}
	bottom := len(levels) - 1
	for bottom > 0 && len(levels[bottom]) == 0 {
		bottom--
	}
	if bottom == 0 {
		return append(chunks, sp), nil // level 0's files overlap: no cut
	}
	lo := sp.lo
	var acc uint64
	for _, t := range levels[bottom] {
		acc += t.Size
		if acc < settleChunkBytes {
			continue
		}
		end := append(bytes.Clone(t.Largest.UserKey), 0)
		if bytes.Compare(end, lo) <= 0 || bytes.Compare(end, sp.hi) >= 0 {
			continue
		}
		chunks = append(chunks, span{lo: lo, hi: end})
		lo, acc = end, 0
	}
	return append(chunks, span{lo: lo, hi: sp.hi}), nil
}
