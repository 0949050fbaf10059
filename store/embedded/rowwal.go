package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// rowWAL is the write-ahead log of the row buffer: the puts and deletes it
// holds in memory, in the order they were applied, in numbered segment
// files (%016d.wal); once the buffer a segment covers is ingested into
// Pebble, the segment is kept as the next one's file (renamed, written
// over from its start) or removed. Writers append under the buffer's lock
// and then wait for the log to be durable through a group commit: one
// writer at a time writes and fdatasyncs everything appended so far for
// all waiting. Reusing a file spares freeing and allocating its blocks,
// whose journal work otherwise stalled the fdatasyncs of the writers for
// tens of milliseconds after each flush (20 k series of histograms × 100
// rounds: p99 after the first round 53-63 ms removing the files, 28-34
// ms keeping them).
//
// Space: a reused file is written over, not truncated, so it keeps the
// size of its longest use; left at that, the kept file and the current
// segment each kept the size of the largest segment ever written (twice
// the buffer's budget, and more while flushes failed) for as long as the
// store lived, and after it closed. So the file kept for reuse is cut to
// keepBytes (the buffer's budget: what a segment between two flushes
// takes) when it is kept, and trim (a clean close, a settle once writes
// stopped) cuts the current segment to what it holds and removes the
// kept file: the directory then holds the records not yet flushed only.
//
// Record: len u32 ‖ crc32c u32 ‖ payload (len bytes), little-endian; the
// crc covers the segment's number (u64) and the payload, so that records
// a reused file still holds from its last use end the replay as a torn
// record does. Payloads:
//
//	put:          0x01 ‖ table ‖ rows uvarint ‖ per row: row ‖ cells uvarint ‖
//	              per cell: family ‖ qualifier ‖ ts u64 ‖ value
//	delete:       0x02 ‖ table ‖ row ‖ columns uvarint ‖
//	              per column: family ‖ qualifier ‖ bound u64
//	delete rows:  0x03 ‖ table ‖ start ‖ stop   (every row in [start, stop);
//	              stop empty: to the table's end)
//
// where a byte string is uvarint length ‖ bytes. A torn record (a crash
// mid-write, or the old content of a reused file) ends a segment's
// replay: a segment before the last was synced whole before the next one
// began.
type rowWAL struct {
	dir    string
	noSync bool

	// keepBytes bounds the file kept for reuse (0: none is kept).
	keepBytes int64

	mu       sync.Mutex
	cond     *sync.Cond
	f        *os.File
	seg      uint64
	off      int64 // bytes written to f
	pending  []byte
	spare    []byte
	appended uint64 // bytes appended in all segments
	synced   uint64
	syncing  bool
	err      error
	// beforeSync, when set, runs before records are written out to be
	// synced, after they were taken: it makes Pebble's WAL durable first,
	// so that no record (a sample, a delete) outlives a crash that loses
	// what it depends on (the UIDs its row key names, a tombstone).
	beforeSync func() error
}

const (
	walOpPut        = 1
	walOpDelete     = 2
	walOpDeleteRows = 3
	walHeader       = 8
	// maxWALRecord bounds a record read back: no put the store accepts
	// comes near it, and a corrupt length must not allocate.
	maxWALRecord = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segName is the file name of segment seg.
func segName(seg uint64) string { return fmt.Sprintf("%016d.wal", seg) }

// freeName is the name of a segment file kept for reuse (not a segment:
// the replay ignores it).
const freeName = "free.wal.reuse"

// recordCRC is the checksum of a record of segment seg.
func recordCRC(seg uint64, payload []byte) uint32 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seg)
	return crc32.Update(crc32.Checksum(b[:], castagnoli), castagnoli, payload)
}

// walSegments returns the segment numbers in dir, ascending.
func walSegments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list row buffer log %s: %w", dir, err)
	}
	var segs []uint64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".wal")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(name, 10, 64)
		if err != nil {
			continue
		}
		segs = append(segs, n)
	}
	slices.Sort(segs)
	return segs, nil
}

// openWAL starts segment seg in dir; a retired segment is kept for reuse
// up to keepBytes.
func openWAL(dir string, seg uint64, noSync bool, keepBytes int64) (*rowWAL, error) {
	w := &rowWAL{dir: dir, noSync: noSync, keepBytes: keepBytes}
	w.cond = sync.NewCond(&w.mu)
	f, err := w.create(seg)
	if err != nil {
		return nil, err
	}
	w.f, w.seg = f, seg
	return w, nil
}

// create opens the file of segment seg, reusing the kept file when there
// is one, and syncs the directory that names it.
func (w *rowWAL) create(seg uint64) (*os.File, error) {
	name := filepath.Join(w.dir, segName(seg))
	// Truncated if there: only a rotation that failed after creating it
	// leaves a file under a number not yet used.
	flags := os.O_CREATE | os.O_TRUNC | os.O_WRONLY
	if free := filepath.Join(w.dir, freeName); fileExists(free) {
		if err := os.Rename(free, name); err != nil {
			return nil, fmt.Errorf("reuse row buffer log file: %w", err)
		}
		flags = os.O_WRONLY // written over from the start, not truncated
	}
	f, err := os.OpenFile(name, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create row buffer log segment: %w", err)
	}
	if !w.noSync {
		if err := syncDir(w.dir); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// syncDir makes dir's entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// begin starts a record in the pending buffer and returns its start; end
// finishes it. The caller holds the buffer's lock (which orders records),
// and w.mu is taken here only to reach pending.
func (w *rowWAL) begin() int {
	w.mu.Lock()
	start := len(w.pending)
	w.pending = append(w.pending, make([]byte, walHeader)...)
	return start
}

// end fills in the header of the record begun at start, releases w.mu and
// returns the position that makes it durable.
func (w *rowWAL) end(start int) uint64 {
	payload := w.pending[start+walHeader:]
	binary.LittleEndian.PutUint32(w.pending[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(w.pending[start+4:], recordCRC(w.seg, payload))
	w.appended += uint64(len(w.pending) - start)
	return w.endLocked()
}

// endLocked writes the pending records out when the log does not sync and
// they have grown large, releases w.mu and returns the position that
// covers every record appended.
func (w *rowWAL) endLocked() uint64 {
	pos := w.appended
	// Without syncs nobody waits for the log: it is written out as it
	// grows, not held until the next rotation.
	if w.noSync && len(w.pending) >= 1<<20 && !w.syncing && w.err == nil {
		if _, err := w.f.Write(w.pending); err != nil {
			w.err = fmt.Errorf("write row buffer log: %w", err)
		}
		w.off += int64(len(w.pending))
		w.pending = w.pending[:0]
		w.synced = w.appended
	}
	w.mu.Unlock()
	return pos
}

// appendRecord appends a record of payload to the pending buffer and
// returns the position that makes it durable. The caller holds the
// buffer's lock (which orders records); w.mu is held only for the copy.
func (w *rowWAL) appendRecord(payload []byte) uint64 {
	w.mu.Lock()
	start := len(w.pending)
	w.pending = binary.LittleEndian.AppendUint32(w.pending, uint32(len(payload)))
	w.pending = binary.LittleEndian.AppendUint32(w.pending, recordCRC(w.seg, payload))
	w.pending = append(w.pending, payload...)
	w.appended += uint64(len(w.pending) - start)
	return w.endLocked()
}

// position returns the position that covers every record appended so far.
func (w *rowWAL) position() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appended
}

// waitDurable returns once every record up to pos is written and synced.
func (w *rowWAL) waitDurable(pos uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.synced < pos {
		if w.err != nil {
			return w.err
		}
		if w.syncing {
			w.cond.Wait()
			continue
		}
		w.syncing = true
		buf, f, target := w.pending, w.f, w.appended
		w.pending = w.spare[:0]
		w.mu.Unlock()
		err := w.runBeforeSync()
		if err == nil {
			err = w.write(f, buf)
		}
		w.mu.Lock()
		w.spare = buf[:0]
		w.syncing = false
		if err != nil {
			w.err = err
		} else {
			w.off += int64(len(buf))
			w.synced = max(w.synced, target)
		}
		w.cond.Broadcast()
	}
	return w.err
}

// write writes buf to f and syncs it (unless noSync).
func (w *rowWAL) write(f *os.File, buf []byte) error {
	if len(buf) > 0 {
		if _, err := f.Write(buf); err != nil {
			return fmt.Errorf("write row buffer log: %w", err)
		}
	}
	if w.noSync {
		return nil
	}
	if err := fdatasync(f); err != nil {
		return fmt.Errorf("sync row buffer log: %w", err)
	}
	return nil
}

// runBeforeSync runs beforeSync, when the log syncs and one is set.
func (w *rowWAL) runBeforeSync() error {
	if w.noSync || w.beforeSync == nil {
		return nil
	}
	if err := w.beforeSync(); err != nil {
		return fmt.Errorf("sync before the row buffer log: %w", err)
	}
	return nil
}

// fileExists reports whether path names a file that can be stat'd.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// lockIdle takes mu once no sync runs (one that is running ends first)
// and returns the log's error, if it failed; the caller unlocks mu.
func (w *rowWAL) lockIdle() error {
	w.mu.Lock()
	for w.syncing {
		w.cond.Wait()
	}
	return w.err
}

// rotate makes everything appended durable in the current segment and
// starts the next; it returns the number of the finished one. The caller
// holds the buffer's lock, so that no record is appended meanwhile.
func (w *rowWAL) rotate() (uint64, error) {
	err := w.lockIdle()
	defer w.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if err := w.runBeforeSync(); err != nil {
		return 0, err
	}
	if err := w.write(w.f, w.pending); err != nil {
		w.err = err
		return 0, err
	}
	w.off += int64(len(w.pending))
	w.pending = w.pending[:0]
	w.synced = w.appended
	f, err := w.create(w.seg + 1)
	if err != nil {
		return 0, err
	}
	old := w.seg
	if err := w.f.Close(); err != nil {
		f.Close()
		return 0, fmt.Errorf("close row buffer log segment: %w", err)
	}
	w.f, w.seg, w.off = f, w.seg+1, 0
	w.cond.Broadcast()
	return old, nil
}

// removeThrough retires the segments numbered at most seg: the last of
// them is kept for reuse, cut to keepBytes, when no file is kept yet, the
// others are removed.
func (w *rowWAL) removeThrough(seg uint64) error {
	segs, err := walSegments(w.dir)
	if err != nil {
		return err
	}
	free := filepath.Join(w.dir, freeName)
	keep := w.keepBytes > 0 && !fileExists(free)
	for n := len(segs) - 1; n >= 0; n-- {
		s := segs[n]
		if s > seg {
			continue
		}
		path := filepath.Join(w.dir, segName(s))
		if keep {
			keep = false
			if fi, err := os.Stat(path); err == nil && fi.Size() > w.keepBytes {
				if err := os.Truncate(path, w.keepBytes); err != nil {
					return fmt.Errorf("cut row buffer log segment %d to %d bytes: %w", s, w.keepBytes, err)
				}
			}
			if err := os.Rename(path, free); err != nil {
				return fmt.Errorf("keep row buffer log segment: %w", err)
			}
			continue
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("remove row buffer log segment: %w", err)
		}
	}
	return nil
}

// trim gives back the space the log holds beyond its records: the current
// segment is cut to what was written to it (a reused file holds the old
// records of its last use beyond), and the file kept for reuse is
// removed. The next segment then starts a new file.
func (w *rowWAL) trim() error {
	err := w.lockIdle()
	defer w.mu.Unlock()
	if err != nil {
		return err
	}
	if fi, err := w.f.Stat(); err == nil && fi.Size() > w.off {
		if err := w.f.Truncate(w.off); err != nil {
			return fmt.Errorf("cut row buffer log segment %d to %d bytes: %w", w.seg, w.off, err)
		}
	}
	if err := os.Remove(filepath.Join(w.dir, freeName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the row buffer log file kept for reuse: %w", err)
	}
	return nil
}

// diskBytes returns the bytes of the log's files on disk (sizes, as
// listed): its segments and the file kept for reuse.
func (w *rowWAL) diskBytes() int64 {
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".wal") && e.Name() != freeName {
			continue
		}
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// close writes and syncs what is pending and closes the segment.
func (w *rowWAL) close() error {
	err := w.lockIdle()
	defer w.mu.Unlock()
	if err == nil {
		err = w.runBeforeSync()
	}
	if err == nil {
		err = w.write(w.f, w.pending)
	}
	if err == nil {
		w.off += int64(len(w.pending))
		w.pending = w.pending[:0]
	}
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close row buffer log: %w", cerr)
	}
	if err == nil {
		w.err = errors.New("row buffer log closed")
	}
	return err
}

// appendBytes appends b as a byte string: uvarint length ‖ bytes.
func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// walReader decodes one payload.
type walReader struct {
	b   []byte
	err error
}

// uvarint reads a uvarint; 0 once r failed.
func (r *walReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("corrupt row buffer log record: bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes reads a byte string (a slice of the payload); nil once r failed.
func (r *walReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("corrupt row buffer log record: %d bytes wanted, %d left", n, len(r.b))
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// u64 reads a little-endian u64; 0 once r failed.
func (r *walReader) u64() uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.err = errors.New("corrupt row buffer log record: short u64")
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// count reads an element count, bounded by the bytes left; 0 once r
// failed.
func (r *walReader) count() int {
	n := r.uvarint()
	// Every element takes at least a byte: a count beyond the bytes left
	// is corrupt, and must not size an allocation.
	if r.err == nil && n > uint64(len(r.b)) {
		r.err = fmt.Errorf("corrupt row buffer log record: %d elements in %d bytes", n, len(r.b))
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

// readSegment calls fn with each record's payload of segment seg's file.
// It reports torn when the records end before the file does.
func readSegment(path string, seg uint64, fn func(payload []byte) error) (torn bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("read row buffer log segment: %w", err)
	}
	torn, err = replaySegment(data, seg, fn)
	if err != nil {
		return false, fmt.Errorf("replay %s: %w", path, err)
	}
	return torn, nil
}

// replaySegment is readSegment on the segment's bytes.
func replaySegment(data []byte, seg uint64, fn func(payload []byte) error) (torn bool, err error) {
	for len(data) > 0 {
		if len(data) < walHeader {
			return true, nil
		}
		n := binary.LittleEndian.Uint32(data)
		if n > maxWALRecord || uint64(n) > uint64(len(data)-walHeader) {
			return true, nil
		}
		payload := data[walHeader : walHeader+int(n)]
		if recordCRC(seg, payload) != binary.LittleEndian.Uint32(data[4:]) {
			return true, nil
		}
		if err := fn(payload); err != nil {
			return false, err
		}
		data = data[walHeader+int(n):]
	}
	return false, nil
}
