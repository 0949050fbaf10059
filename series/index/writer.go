// Package index keeps promhbase's series index: one OpenTSDB TSMeta row per
// series in tsdb-meta, and label lookups by day in tsdb-index (the byte
// layout is mapping's; see mapping/index.go). The Writer is fed by the write
// path with the series and days it wrote; the Reader answers label names,
// label values and the metrics a name-less selector can match, without
// reading data rows.
//
// `promhbase reindex` builds the index of rows written without it
// (reindex.go); cardinality.go counts the series of a day or a range for
// /api/v1/status/tsdb, in one pass over the day's series rows.
package index

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/internal/keysort"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/store"
)

// Entry is a series that has data on a day.
type Entry struct {
	Series series.Series
	Day    uint32
}

// writeStore is what the Writer needs of a store.
type writeStore interface {
	Put(ctx context.Context, table string, puts []store.Put) error
	Get(ctx context.Context, table string, row []byte, family string) (store.Row, error)
}

// Options configure a Writer.
type Options struct {
	MetaTable, IndexTable string
	// Layout gives the UID widths of the series' tags.
	Layout mapping.Layout
	// CacheBytes bounds the memory of what the Writer remembers having
	// written (cells and TSMeta rows); 0 means DefaultCacheBytes.
	CacheBytes int
	// TSMetaConcurrency bounds the TSMeta reads of one call run at once; 0
	// means 16.
	TSMetaConcurrency int
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// SkipTSMeta leaves the TSMeta rows out (benchmarks of the label
	// cells alone): promhbase's PromQL reads use the label cells alone,
	// OpenTSDB's /api/search/lookup (a TSD's or promhbase's) the TSMeta
	// rows. Reindex writes them.
	SkipTSMeta bool
}

// DefaultCacheBytes is the default memory budget of a Writer's caches.
// A series already indexed for the day is known from its mark in the
// series cache, so the set is asked only about series new to the process
// (or to the day): the cells they share (a job, a metric, a namespace)
// are asked about all the time and stay, and the cells of a label value
// of one series' own are asked about once a day. Past 16 MiB (about
// 490 k keys) a larger budget only remembers more of the latter (a 1 M
// series first contact: 44 MB of heap at 64 MiB).
const DefaultCacheBytes = 16 << 20

// Writer writes index entries. It is safe for concurrent use.
type Writer struct {
	st      writeStore
	opts    Options
	seen    *seenSet
	forgets *forgets // days whose cells were deleted since (Forget)
	// pending is the coverage day MarkCoverage could not record (the
	// store refused writes at start: a new store on a full disk), which
	// Stage records before the first write; nil when recorded.
	pending atomic.Pointer[uint32]
	// scratch keeps writeCells' buffers (*cellScratch) between calls.
	scratch sync.Pool

	cells, tsmetas prometheus.Counter
}

// NewWriter returns a Writer; its metrics are registered on reg (may be nil).
func NewWriter(st writeStore, opts Options, reg prometheus.Registerer) *Writer {
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = DefaultCacheBytes
	}
	if opts.TSMetaConcurrency <= 0 {
		opts.TSMetaConcurrency = 16
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	w := &Writer{st: st, opts: opts, seen: newSeenSet(opts.CacheBytes), forgets: newForgets(),
		cells: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_index_cells_written_total", Help: "Cells written into the series index table (label lookups by day).",
		}),
		tsmetas: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_index_tsmeta_written_total", Help: "OpenTSDB TSMeta rows written into the meta table (one per new series).",
		}),
	}
	if reg != nil {
		reg.MustRegister(w.cells, w.tsmetas, w.seen.collector())
	}
	return w
}

// MarkCoverage records, unless an earlier day is recorded, that the index
// holds every write from day on: its label cells ("since") and its 'S'
// rows ("series-since", recorded apart: an index written before promhbase
// wrote 'S' rows covers days they do not). serve calls it at start.
func (w *Writer) MarkCoverage(ctx context.Context, day uint32) error {
	row, err := w.st.Get(ctx, w.opts.IndexTable, mapping.IndexCoverageKey, mapping.IndexFamily)
	if err != nil {
		return fmt.Errorf("read index coverage: %w", err)
	}
	var quals []string
	for _, q := range []string{mapping.IndexSinceQual, mapping.IndexSeriesSinceQual} {
		if since, ok := coverageOf(row, q); !ok || since > day {
			quals = append(quals, q)
		}
	}
	return w.setCoverage(ctx, day, quals...)
}

// MarkCoverageLater has Stage mark the coverage of day (MarkCoverage)
// before it stages the first entries: for a store that refuses writes at
// start. Every write from then on is indexed, so a coverage recorded with
// the first write that can be stored is as true as one recorded at start.
func (w *Writer) MarkCoverageLater(day uint32) { w.pending.Store(&day) }

// markPending records the pending coverage day, if any; an error (the
// store still refusing writes) fails the write that asked.
func (w *Writer) markPending(ctx context.Context) error {
	day := w.pending.Load()
	if day == nil {
		return nil
	}
	if err := w.MarkCoverage(ctx, *day); err != nil {
		return err
	}
	w.pending.CompareAndSwap(day, nil)
	return nil
}

// setCoverage writes day as the coverage day of each of quals.
func (w *Writer) setCoverage(ctx context.Context, day uint32, quals ...string) error {
	if len(quals) == 0 {
		return nil
	}
	v := []byte{byte(day >> 24), byte(day >> 16), byte(day >> 8), byte(day)}
	cells := make([]store.Cell, len(quals))
	for i, q := range quals {
		cells[i] = store.Cell{Family: []byte(mapping.IndexFamily), Qualifier: []byte(q), Value: v}
	}
	err := w.st.Put(ctx, w.opts.IndexTable, []store.Put{{Row: mapping.IndexCoverageKey, Cells: cells}})
	if err != nil {
		return fmt.Errorf("write index coverage: %w", err)
	}
	return nil
}

// coverageOf returns the coverage day of qual (mapping.IndexSinceQual or
// IndexSeriesSinceQual) in the 'C' row; ok is false when none is recorded.
func coverageOf(row store.Row, qual string) (uint32, bool) {
	for _, c := range row.Cells {
		if string(c.Qualifier) == qual && len(c.Value) == 4 {
			return uint32(c.Value[0])<<24 | uint32(c.Value[1])<<16 | uint32(c.Value[2])<<8 | uint32(c.Value[3]), true
		}
	}
	return 0, false
}

// Write indexes entries: the TSMeta row of each series this process never
// indexed (an existing row is left alone: read, then written if absent;
// none with Options.SkipTSMeta), and the label cells of each series and
// day not yet written. It returns only once the store acknowledged all of
// it (store.Write); on error nothing is remembered as written, so a retry
// writes it again. Entries whose series is already indexed for their day
// cost nothing.
func (w *Writer) Write(ctx context.Context, entries []Entry) error {
	var b store.Batch
	st, err := w.Stage(ctx, entries, &b)
	if err != nil {
		return err
	}
	err = store.Write(ctx, w.st, &b)
	st.Done(err == nil)
	if err != nil {
		return fmt.Errorf("index %d series: %w", len(entries), err)
	}
	return nil
}

// Staged is what one Stage call added to a batch, and what its Done
// remembers once the batch is written.
type Staged struct {
	w        *Writer
	fresh    []Entry      // the entries whose series get their day's mark
	metaKeys []seenKey    // the TSMeta rows' keys
	metaPuts int          // TSMeta rows put
	sc       *cellScratch // the label cells' buffers and keys; nil: none
}

// Stage adds to b the puts that index entries (see Write) and returns
// what to remember once b is written: the write path adds its data to the
// same batch and commits it with one store.Write, so that the index and
// the data become durable together. It reads (whether TSMeta rows exist)
// but writes nothing. The caller calls Done on the result, with whether
// b was written; b's puts reference the Writer's buffers until then.
func (w *Writer) Stage(ctx context.Context, entries []Entry, b *store.Batch) (Staged, error) {
	st := Staged{w: w}
	if err := w.markPending(ctx); err != nil {
		return st, err
	}
	n := 0
	for _, e := range entries {
		if w.todo(e) {
			n++
		}
	}
	if n == 0 {
		return st, nil
	}
	st.fresh = entries // all of them, as in a first contact: no copy
	if n < len(entries) {
		st.fresh = make([]Entry, 0, n)
		for _, e := range entries {
			if w.todo(e) {
				st.fresh = append(st.fresh, e)
			}
		}
	}
	if !w.opts.SkipTSMeta {
		puts, keys, err := w.stageTSMeta(ctx, st.fresh)
		if err != nil {
			return Staged{}, err
		}
		b.Put(w.opts.MetaTable, puts)
		st.metaKeys, st.metaPuts = keys, len(puts)
	}
	st.sc = w.stageCells(st.fresh, b)
	return st, nil
}

// Done remembers what Stage staged when written is true (the batch was
// written: its series are marked indexed for their days, its keys seen)
// and forgets it otherwise, so that a retry stages it again. After a
// failed write the cells' buffers are not reused: a remote store's calls
// may still read them.
func (st Staged) Done(written bool) {
	w := st.w
	if w == nil || !written {
		return
	}
	w.seen.addAll(st.metaKeys)
	w.tsmetas.Add(float64(st.metaPuts))
	if sc := st.sc; sc != nil {
		w.seen.addAll(sc.keys)
		w.cells.Add(float64(len(sc.pending)))
		w.putScratch(sc)
	}
	for _, e := range st.fresh {
		e.Series.SetIndexedFor(e.Day)
	}
}

// todo reports whether e may need index writes: its series is not marked
// indexed for its day, or the day was forgotten (Forget), which the
// series' mark does not tell: the seen set, whose keys of the day carry
// its epoch, decides then.
func (w *Writer) todo(e Entry) bool {
	return !e.Series.IndexedFor(e.Day) || w.forgets.epoch(e.Day) != 0
}

// stageTSMeta returns the puts of the TSMeta rows of the series new to
// this process that do not exist yet, and the keys to remember once they
// are written.
func (w *Writer) stageTSMeta(ctx context.Context, entries []Entry) ([]store.Put, []seenKey, error) {
	var todo [][]byte // TSUIDs
	var keys []seenKey
	var fresh []bool // no row can exist: a UID of it is new
	dup := map[seenKey]bool{}
	seen := w.seen.reader()
	var kbuf []byte
	var arena []byte // the TSUIDs of todo, one after another
	for _, e := range entries {
		if !e.Series.NewToIndex() {
			continue
		}
		kbuf = append(append(append(kbuf[:0], 'T'), e.Series.Metric...), e.Series.Tags...)
		k := w.seen.key(kbuf)
		if dup[k] {
			continue
		}
		dup[k] = true
		// A fresh series' row is written now and cannot have been
		// before; it is not remembered (its Series' mark is), which keeps
		// a first contact with a million series out of the set.
		fr := e.Series.Fresh()
		if !fr {
			if seen.has(k) {
				continue
			}
			keys = append(keys, k)
		}
		// A TSUID keeps its bytes should the arena grow (append copies).
		start := len(arena)
		arena = append(arena, kbuf[1:]...)
		todo = append(todo, arena[start:len(arena):len(arena)])
		fresh = append(fresh, fr)
	}
	seen.release()
	if len(todo) == 0 {
		return nil, nil, nil
	}
	// Which rows exist: reads, concurrently. Then one Put of the absent
	// ones (one durable write for the request, not one per series). As
	// OpenTSDB's realtime TS meta (a GET, then a PUT), this is not atomic:
	// a TSMeta row created or edited between the two could be replaced by
	// a fresh one, which differs from it at most in its created time.
	exists := make([]bool, len(todo))
	errs := make([]error, len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(w.opts.TSMetaConcurrency, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(todo) {
					return
				}
				if fresh[i] {
					continue
				}
				row, err := w.st.Get(ctx, w.opts.MetaTable, todo[i], mapping.TSMetaFamily)
				if err != nil {
					errs[i] = fmt.Errorf("read TSMeta of %x: %w", todo[i], err)
					continue
				}
				for _, c := range row.Cells {
					exists[i] = exists[i] || string(c.Qualifier) == mapping.TSMetaQual
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	created := w.opts.Now().Unix()
	var puts []store.Put
	// The rows' JSON in one buffer, sized after the first: the series of
	// a request have TSUIDs of about the same length. A value keeps its
	// bytes should the buffer grow (append copies, it does not move them).
	var vals []byte
	// One cell array and one family and qualifier for every put: a put
	// is read, never changed.
	cells := make([]store.Cell, len(todo))
	family, qualifier := []byte(mapping.TSMetaFamily), []byte(mapping.TSMetaQual)
	for i, tsuid := range todo {
		if exists[i] {
			continue
		}
		if vals == nil {
			one := mapping.AppendTSMetaJSON(nil, tsuid, created)
			vals = make([]byte, 0, (len(one)+16)*(len(todo)-i))
		}
		start := len(vals)
		vals = mapping.AppendTSMetaJSON(vals, tsuid, created)
		cells[i] = store.Cell{Family: family, Qualifier: qualifier, Value: vals[start:len(vals):len(vals)]}
		puts = append(puts, store.Put{Row: tsuid, Cells: cells[i : i+1 : i+1]})
	}
	return puts, keys, nil
}

// cellTuple names an index cell of writeCells by its UIDs (of at most 4
// bytes each, as integers): kind (a day's metrics, a day's tag names, or
// indexKindValue: a tag value's metrics) in the top byte of the first
// word, then the day and the metric UID (the day below 2^24: year 47 900);
// the second word holds the tag name and value UIDs. The kinds leave the
// UIDs they do not use zero.
type cellTuple [2]uint64

func newCellTuple(kind byte, day, metric, tagk, tagv uint32) cellTuple {
	return cellTuple{uint64(kind)<<56 | uint64(day&0xFFFFFF)<<32 | uint64(metric), uint64(tagk)<<32 | uint64(tagv)}
}

// all reports whether every entry satisfies f.
func all(entries []Entry, f func(Entry) bool) bool {
	for _, e := range entries {
		if !f(e) {
			return false
		}
	}
	return true
}

// indexKindValue marks a tag value's cell in a cellTuple; it differs from
// the index's row kinds.
const indexKindValue = 0xFF

// uidInt is a UID of at most 4 bytes as a big-endian integer.
func uidInt(uid []byte) uint32 {
	var v uint32
	for _, c := range uid {
		v = v<<8 | uint32(c)
	}
	return v
}

// stageCells adds to b the label cells of the entries not yet written and
// returns the scratch that holds them (nil: none), for Staged.Done. Its
// phases: start the call's cell set, add each entry's cells, then group
// them into puts.
func (w *Writer) stageCells(entries []Entry, b *store.Batch) *cellScratch {
	sc := w.getScratch()
	var cs cellSet
	w.startCells(&cs, sc, entries)
	for _, e := range entries {
		cs.addEntry(e)
	}
	cs.seen.release()
	sc.pending, sc.rowBuf, sc.keys = cs.pending, cs.rowBuf, cs.keys
	sc.kbuf, sc.buf = cs.kbuf, cs.buf
	if len(sc.pending) == 0 {
		w.putScratch(sc)
		return nil
	}
	b.Put(w.opts.IndexTable, sc.group(sc.pending, sc.rowBuf))
	return sc
}

// cellSet is the index cells of one writeCells call: the cells to write,
// their rows copied into one buffer (sorted by row once collected and put
// as one store.Put a row), and the keys to remember once written.
type cellSet struct {
	w       *Writer
	pending []pendingCell
	rowBuf  []byte
	keys    []seenKey // of row ‖ 0x00 ‖ qualifier, remembered once written
	// done: the keys of this call already settled (written or to be), so
	// that the labels the entries share cost one lookup in a small map,
	// not one in the shared set each.
	done map[seenKey]struct{}
	seen seenReader
	kbuf []byte // a cell's key, built
	buf  []byte // a cell's row, built
	// With UIDs of at most 4 bytes the cells an entry asks for are first
	// told apart by their UIDs as integers (packed): the entries of a
	// call share most of them (every tag name, most values), and only the
	// first of each goes on to build its key and look it up.
	packed bool
	tuples map[cellTuple]struct{}
	// recent holds the last tuple seen in each of its slots: the tuples a
	// call's entries share come again and again, and are told apart here
	// by a multiply and a compare instead of a map lookup each time (a
	// tuple's first word is never 0: its kind is in the top byte).
	recent [256]cellTuple
	// The day of the last entry and its epoch (Forget).
	epochDay uint32
	epoch    uint64
}

// startCells readies cs for entries, on the buffers of sc.
func (w *Writer) startCells(cs *cellSet, sc *cellScratch, entries []Entry) {
	cs.w = w
	cs.pending, cs.rowBuf = sc.pending[:0], sc.rowBuf[:0]
	lay := w.opts.Layout
	if lay.MetricWidth <= 4 && lay.TagKWidth <= 4 && lay.TagVWidth <= 4 {
		// Room for three cells an entry without growing, as in a first
		// contact where a label value of each series' own is new: its 'S'
		// and 'V' cells, and one in every few series for the values they
		// share.
		cs.pending = slices.Grow(cs.pending, 3*len(entries))
		cs.rowBuf = slices.Grow(cs.rowBuf, len(entries)*(2*(5+lay.TagKWidth+lay.TagVWidth)+6+lay.MetricWidth))
	}
	cs.keys = sc.keys[:0]
	cs.kbuf, cs.buf = sc.kbuf[:0], sc.buf[:0]
	if sc.done == nil {
		sc.done = make(map[seenKey]struct{}, 2*len(entries)) // about the keys of a first contact, so no growth
	}
	cs.done = sc.done
	cs.seen = w.seen.reader()
	cs.packed = lay.MetricWidth <= 4 && lay.TagKWidth <= 4 && lay.TagVWidth <= 4 &&
		all(entries, func(e Entry) bool { return e.Day < 1<<24 })
	if cs.packed {
		if sc.tuples == nil {
			sc.tuples = make(map[cellTuple]struct{}, 2*len(entries))
		}
		cs.tuples = sc.tuples
	}
	cs.epochDay, cs.epoch = 0, w.forgets.epoch(0)
}

// add adds the cell qual of row unless written already. A fresh cell (one
// that names a UID assigned when its series was resolved) cannot have
// been: it is neither looked up in the shared set nor remembered there,
// as writeTSMeta does with fresh series; a later series that shares it
// asks for it, writes it once more and remembers it.
//
// epoch is that of the cell's day (Forget), 0 for the row without a day
// or a day never forgotten.
func (cs *cellSet) add(row, qual []byte, fresh bool, epoch uint64) {
	cs.kbuf = append(append(append(cs.kbuf[:0], row...), 0), qual...)
	if epoch != 0 {
		cs.kbuf = binary.BigEndian.AppendUint64(cs.kbuf, epoch)
	}
	k := cs.w.seen.key(cs.kbuf)
	if _, ok := cs.done[k]; ok {
		return
	}
	cs.done[k] = struct{}{}
	if !fresh && cs.seen.has(k) {
		return
	}
	cs.addRow(row, qual)
	if !fresh {
		cs.keys = append(cs.keys, k)
	}
}

// addRow adds the cell qual of row, asking no set.
func (cs *cellSet) addRow(row, qual []byte) {
	at := len(cs.rowBuf)
	cs.rowBuf = append(cs.rowBuf, row...)
	cs.pending = append(cs.pending, pendingCell{prefix: rowPrefix(row), start: uint32(at), end: uint32(len(cs.rowBuf)), qual: qual})
}

// firstOf reports whether t is the first of its tuple in the call
// (always, when the UIDs are not packed).
func (cs *cellSet) firstOf(t cellTuple) bool {
	if !cs.packed {
		return true
	}
	slot := (t[0]*0x9E3779B97F4A7C15 ^ t[1]*0xC2B2AE3D27D4EB4F) >> 56
	if cs.recent[slot] == t {
		return false
	}
	cs.recent[slot] = t
	if _, ok := cs.tuples[t]; ok {
		return false
	}
	cs.tuples[t] = struct{}{}
	return true
}

// addEntry adds the cells of e: its series' 'S' cell, its day's metric
// (and the metric ever), and each tag's name on the day and value.
func (cs *cellSet) addEntry(e Entry) {
	lay := cs.w.opts.Layout
	pair := lay.TagKWidth + lay.TagVWidth
	s := e.Series
	m := uidInt(s.Metric)
	if e.Day != cs.epochDay {
		cs.epochDay, cs.epoch = e.Day, cs.w.forgets.epoch(e.Day)
	}
	epoch := cs.epoch
	// The series' 'S' cell, once per series and day, as its mark (todo)
	// tells: neither the call's keys nor the shared set are asked, but on
	// a forgotten day, where the mark does not tell. Two entries of one
	// series and day in a call give one cell (cellScratch.group).
	cs.buf = mapping.AppendIndexSeriesKey(cs.buf[:0], e.Day, s.Metric, s.Tags)
	if epoch != 0 {
		cs.add(cs.buf, s.Tags, false, epoch)
	} else {
		cs.addRow(cs.buf, s.Tags)
	}
	if cs.firstOf(newCellTuple(mapping.IndexKindMetrics, e.Day, m, 0, 0)) {
		fresh := s.FreshCell(-1)
		cs.buf = mapping.AppendIndexDayKey(cs.buf[:0], mapping.IndexKindMetrics, e.Day)
		cs.add(cs.buf, s.Metric, fresh, epoch)
		cs.add(mapping.IndexEverKey, s.Metric, fresh, 0)
	}
	for i := 0; pair > 0 && i+pair <= len(s.Tags); i += pair {
		tagk, tagv := s.Tags[i:i+lay.TagKWidth], s.Tags[i+lay.TagKWidth:i+pair]
		k := uidInt(tagk)
		if cs.firstOf(newCellTuple(mapping.IndexKindTagKs, e.Day, 0, k, 0)) {
			// Not fresh: the pair's fresh UID may be its value's.
			cs.buf = mapping.AppendIndexDayKey(cs.buf[:0], mapping.IndexKindTagKs, e.Day)
			cs.add(cs.buf, tagk, false, epoch)
		}
		if cs.firstOf(newCellTuple(indexKindValue, e.Day, m, k, uidInt(tagv))) {
			cs.buf = mapping.AppendIndexValueKey(cs.buf[:0], e.Day, tagk, tagv)
			cs.add(cs.buf, s.Metric, s.FreshCell(i/pair), epoch)
		}
	}
}

// pendingCell is an index cell writeCells will write: its row is
// rowBuf[start:end] of the call, prefix the row's first 8 bytes as a
// big-endian integer (zero-padded), which orders two rows as their bytes
// do unless they are equal.
type pendingCell struct {
	prefix     uint64
	start, end uint32
	qual       []byte
}

// rowPrefix returns the first 8 bytes of row as a big-endian integer,
// zero-padded.
func rowPrefix(row []byte) uint64 {
	var p [8]byte
	copy(p[:], row)
	return binary.BigEndian.Uint64(p[:])
}

// group sorts cells by row and returns one Put a row, in ascending row
// order (which the embedded store applies without sorting again), the
// cells' values empty; the Puts' rows and cells share rowBuf and one
// slice of sc, which keeps them until it is reused. Of cells of one row
// and qualifier (an 'S' cell of a series twice in a call) one is kept.
func (sc *cellScratch) group(cells []pendingCell, rowBuf []byte) []store.Put {
	row := func(i uint32) []byte { c := &cells[i]; return rowBuf[c.start:c.end:c.end] }
	// A radix sort of the rows (keysort): the index rows of a request
	// share their first bytes (kind, day, metric), where a comparison
	// sort compares most pairs byte by byte.
	idx := slices.Grow(sc.idx[:0], len(cells))[:len(cells)]
	sc.idx = idx
	for i := range idx {
		idx[i] = uint32(i)
	}
	keysort.ByKey(idx, row)
	same := func(k int) bool {
		a, b := &cells[idx[k]], &cells[idx[k-1]]
		return a.prefix == b.prefix && bytes.Equal(row(idx[k]), row(idx[k-1]))
	}
	rows := 1
	for k := 1; k < len(idx); k++ {
		if !same(k) {
			rows++
		}
	}
	fam := []byte(mapping.IndexFamily)
	out := slices.Grow(sc.out[:0], len(cells))[:len(cells)]
	puts := slices.Grow(sc.puts[:0], rows)
	sc.out = out
	n := 0 // cells in out
	for k := 0; k < len(idx); {
		// The cells of a row, by qualifier, one of each.
		end := k + 1
		for end < len(idx) && same(end) {
			end++
		}
		group := idx[k:end]
		if len(group) > 1 {
			slices.SortFunc(group, func(a, b uint32) int { return bytes.Compare(cells[a].qual, cells[b].qual) })
		}
		first := n
		for j, i := range group {
			if j > 0 && bytes.Equal(cells[i].qual, cells[group[j-1]].qual) {
				continue
			}
			out[n] = store.Cell{Family: fam, Qualifier: cells[i].qual}
			n++
		}
		puts = append(puts, store.Put{Row: row(group[0]), Cells: out[first:n:n]})
		k = end
	}
	sc.puts = puts
	return puts
}
