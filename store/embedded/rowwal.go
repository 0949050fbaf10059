package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// rowWAL is the write-ahead log of the row buffer: the puts and deletes it
// holds in memory, in the order they were applied, in numbered segment
// files (%016d.wal); a segment is removed once the buffer it covers is
// ingested into Pebble. Writers append under the buffer's lock and then
// wait for the log to be durable through a group commit: one writer at a
// time writes and fsyncs everything appended so far for all waiting.
//
// Record: len u32 ‖ crc32c u32 (of the payload) ‖ payload (len bytes),
// little-endian. Payloads:
//
//	put:    0x01 ‖ table ‖ rows uvarint ‖ per row: row ‖ cells uvarint ‖
//	        per cell: family ‖ qualifier ‖ ts u64 ‖ value
//	delete: 0x02 ‖ table ‖ row ‖ columns uvarint ‖
//	        per column: family ‖ qualifier ‖ bound u64
//
// where a byte string is uvarint length ‖ bytes. A torn record at the end
// of the last segment (a crash mid-write) ends the replay; anywhere else
// it is an error.
type rowWAL struct {
	dir    string
	noSync bool

	mu       sync.Mutex
	cond     *sync.Cond
	f        *os.File
	seg      uint64
	pending  []byte
	spare    []byte
	appended uint64 // bytes appended in all segments
	synced   uint64
	syncing  bool
	err      error
}

const (
	walOpPut    = 1
	walOpDelete = 2
	walHeader   = 8
	// maxWALRecord bounds a record read back: no put the store accepts
	// comes near it, and a corrupt length must not allocate.
	maxWALRecord = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func segName(seg uint64) string { return fmt.Sprintf("%016d.wal", seg) }

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

// openWAL starts segment seg in dir.
func openWAL(dir string, seg uint64, noSync bool) (*rowWAL, error) {
	w := &rowWAL{dir: dir, noSync: noSync}
	w.cond = sync.NewCond(&w.mu)
	f, err := w.create(seg)
	if err != nil {
		return nil, err
	}
	w.f, w.seg = f, seg
	return w, nil
}

func (w *rowWAL) create(seg uint64) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(w.dir, segName(seg)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
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
	binary.LittleEndian.PutUint32(w.pending[start+4:], crc32.Checksum(payload, castagnoli))
	w.appended += uint64(len(w.pending) - start)
	pos := w.appended
	w.mu.Unlock()
	return pos
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
		err := w.write(f, buf)
		w.mu.Lock()
		w.spare = buf[:0]
		w.syncing = false
		if err != nil {
			w.err = err
		} else {
			w.synced = max(w.synced, target)
		}
		w.cond.Broadcast()
	}
	return w.err
}

func (w *rowWAL) write(f *os.File, buf []byte) error {
	if len(buf) > 0 {
		if _, err := f.Write(buf); err != nil {
			return fmt.Errorf("write row buffer log: %w", err)
		}
	}
	if w.noSync {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync row buffer log: %w", err)
	}
	return nil
}

// rotate makes everything appended durable in the current segment and
// starts the next; it returns the number of the finished one. The caller
// holds the buffer's lock, so that no record is appended meanwhile.
func (w *rowWAL) rotate() (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.syncing {
		w.cond.Wait()
	}
	if w.err != nil {
		return 0, w.err
	}
	if err := w.write(w.f, w.pending); err != nil {
		w.err = err
		return 0, err
	}
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
	w.f, w.seg = f, w.seg+1
	w.cond.Broadcast()
	return old, nil
}

// removeThrough removes the segments numbered at most seg.
func (w *rowWAL) removeThrough(seg uint64) error {
	segs, err := walSegments(w.dir)
	if err != nil {
		return err
	}
	for _, s := range segs {
		if s > seg {
			break
		}
		if err := os.Remove(filepath.Join(w.dir, segName(s))); err != nil {
			return fmt.Errorf("remove row buffer log segment: %w", err)
		}
	}
	return nil
}

// close writes and syncs what is pending and closes the segment.
func (w *rowWAL) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.syncing {
		w.cond.Wait()
	}
	err := w.err
	if err == nil {
		err = w.write(w.f, w.pending)
	}
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close row buffer log: %w", cerr)
	}
	if err == nil {
		w.err = errors.New("row buffer log closed")
	}
	return err
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// walReader decodes one payload.
type walReader struct {
	b   []byte
	err error
}

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

// readSegment calls fn with each record's payload of the segment file. It
// reports torn when the file ends in an incomplete or corrupt record.
func readSegment(path string, fn func(payload []byte) error) (torn bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("read row buffer log segment: %w", err)
	}
	torn, err = replaySegment(data, fn)
	if err != nil {
		return false, fmt.Errorf("replay %s: %w", path, err)
	}
	return torn, nil
}

// replaySegment is readSegment on the segment's bytes.
func replaySegment(data []byte, fn func(payload []byte) error) (torn bool, err error) {
	for len(data) > 0 {
		if len(data) < walHeader {
			return true, nil
		}
		n := binary.LittleEndian.Uint32(data)
		if n > maxWALRecord || uint64(n) > uint64(len(data)-walHeader) {
			return true, nil
		}
		payload := data[walHeader : walHeader+int(n)]
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(data[4:]) {
			return true, nil
		}
		if err := fn(payload); err != nil {
			return false, err
		}
		data = data[walHeader+int(n):]
	}
	return false, nil
}

// sortedTables returns the keys of m in order.
func sortedTables[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
