// Package wlog is the write-ahead log of the embedded store's row buffer:
// records in numbered segment files (%016d.wal), appended under a mutex
// held for a copy, made durable by a group commit (one writer at a time
// writes and fdatasyncs everything appended so far for all who wait),
// rotated when the buffer a segment covers is flushed, and retired once
// that flush is in Pebble. It knows nothing of what a record holds: the
// row buffer's payloads (puts, deletes) are encoded and replayed by
// store/embedded.
//
// A retired segment is kept as the next one's file (renamed, written over
// from its start) rather than removed. Reusing a file spares freeing and
// allocating its blocks, whose journal work otherwise stalled the
// fdatasyncs of the writers for tens of milliseconds after each flush
// (20 k series of histograms × 100 rounds: p99 after the first round
// 53-63 ms removing the files, 28-34 ms keeping them).
//
// Space: a reused file is written over, not truncated, so it keeps the
// size of its longest use; left at that, the kept file and the current
// segment each kept the size of the largest segment ever written (twice
// the buffer's budget, and more while flushes failed) for as long as the
// store lived, and after it closed. So the file kept for reuse is cut to
// KeepBytes (the buffer's budget: what a segment between two flushes
// takes) when it is kept, and Trim (a clean close, a settle once writes
// stopped) cuts the current segment to what it holds and removes the
// kept file: the directory then holds the records not yet flushed only.
//
// Record layout, little-endian:
//
//	len     u32   payload bytes
//	crc     u32   crc32c of the segment's number (u64) ‖ payload
//	payload len bytes
//
// The crc covers the segment's number so that the records a reused file
// still holds from its last use end the replay as a torn record does. A
// torn record (a crash mid-write, or the old content of a reused file)
// ends a segment's replay: a segment before the last was synced whole
// before the next one began, and a record is acknowledged only once
// written (a process killed at any moment leaves every record written
// before it whole) or, without SyncInterval, synced, so nothing
// acknowledged follows a torn record. With SyncInterval a power loss may
// also tear a record written in the last interval: the records after it
// in that interval are then lost with it, as the interval allows.
package wlog

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
	"sync/atomic"
	"time"
)

const (
	// HeaderSize is a record's header: len u32 ‖ crc u32.
	HeaderSize = 8
	// MaxRecord bounds a record read back: no put the store accepts comes
	// near it, and a corrupt length must not allocate.
	MaxRecord = 1 << 30
	// FreeName is the name of a segment file kept for reuse (not a
	// segment: the replay ignores it).
	FreeName = "free.wal.reuse"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SegmentName is the file name of segment seg.
func SegmentName(seg uint64) string { return fmt.Sprintf("%016d.wal", seg) }

// CRC is the checksum of a record of segment seg.
func CRC(seg uint64, payload []byte) uint32 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seg)
	return crc32.Update(crc32.Checksum(b[:], castagnoli), castagnoli, payload)
}

// AppendRecord appends the record of payload in segment seg to dst.
func AppendRecord(dst []byte, seg uint64, payload []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, CRC(seg, payload))
	return append(dst, payload...)
}

// Segments returns the segment numbers in dir, ascending.
func Segments(dir string) ([]uint64, error) { return SegmentsFS(OS, dir) }

// SegmentsFS is Segments on fs.
func SegmentsFS(fs FS, dir string) ([]uint64, error) {
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list log %s: %w", dir, err)
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

// Options configure a Log.
type Options struct {
	// NoSync writes records out without fdatasync (tests, benchmarks).
	NoSync bool
	// KeepBytes bounds the file kept for reuse (0: none is kept).
	KeepBytes int64
	// SyncInterval, when positive, makes WaitDurable return once the
	// records are written to the segment's file (in the kernel's page
	// cache: they survive the process being killed, not a power loss or
	// a kernel crash), and fdatasyncs the file this often in the
	// background (syncLoop). Zero fdatasyncs before WaitDurable returns.
	// Rotate and Close always fdatasync.
	SyncInterval time.Duration
	// FS is the filesystem; nil means OS.
	FS FS
}

// Log is an open log, appending to its newest segment. Its methods are
// safe for concurrent use; the order of records is the order of the
// Append calls, so a caller that needs records in the order of its own
// state changes serializes them itself.
type Log struct {
	dir  string
	opts Options
	fs   FS

	mu       sync.Mutex
	cond     *sync.Cond
	f        File
	seg      uint64
	off      int64 // bytes written to f
	pending  []byte
	spare    []byte
	appended uint64 // bytes appended in all segments
	synced   uint64 // bytes made durable (written, with SyncInterval)
	syncing  bool   // a group commit runs
	// dirty is set when records were written to f since its last
	// fdatasync (SyncInterval), fsyncing while syncLoop's runs.
	dirty, fsyncing bool
	fsyncs          atomic.Int64 // fdatasyncs done
	// err fails the log for good: a failed fdatasync (what the file
	// holds is then unknown), a failed cut of a torn write, Close.
	err error
	// A failed write (ENOSPC, EIO) does not fail the log: the file is cut
	// back to off, the records go back in front of pending, and every
	// waiter of that group commit gets writeErr (failures counts them,
	// so that a waiter sees a failure that came while it waited); the
	// next group commit writes them again.
	writeErr error
	failures uint64
	// fsynced is the position the last fdatasync covered (SyncInterval).
	fsynced uint64
	// fsyncErr is a failed fdatasync of syncLoop's: it ends syncLoop's
	// work. Another failure of the log (a write, beforeSync) does not:
	// the records acknowledged before it are still fdatasynced.
	fsyncErr      error
	stop, stopped chan struct{} // syncLoop's (SyncInterval)
	stopOnce      sync.Once
	// beforeSync, when set, runs before records are written out to be
	// synced, after they were taken (SetBeforeSync).
	beforeSync func() error
}

// Open starts segment seg in dir (reusing the kept file, if any).
func Open(dir string, seg uint64, opts Options) (*Log, error) {
	if opts.FS == nil {
		opts.FS = OS
	}
	w := &Log{dir: dir, opts: opts, fs: opts.FS}
	w.cond = sync.NewCond(&w.mu)
	f, err := w.create(seg)
	if err != nil {
		return nil, err
	}
	w.f, w.seg = f, seg
	if opts.SyncInterval > 0 && !opts.NoSync {
		w.stop, w.stopped = make(chan struct{}), make(chan struct{})
		go w.syncLoop()
	}
	return w, nil
}

// syncLoop fdatasyncs what group commits wrote since the last fdatasync,
// every SyncInterval, until Close.
func (w *Log) syncLoop() {
	defer close(w.stopped)
	t := time.NewTicker(w.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.syncWritten()
		}
	}
}

// syncWritten fdatasyncs the current segment when records were written to
// it since its last fdatasync. Group commits go on meanwhile (a write and
// an fdatasync of one file may run at once); Rotate and Close wait for it.
// A failed fdatasync fails the log, as a failed group commit does.
func (w *Log) syncWritten() {
	w.mu.Lock()
	if !w.dirty || w.fsyncing || w.fsyncErr != nil {
		if !w.dirty && !w.fsyncing {
			w.fsynced = max(w.fsynced, w.synced) // nothing written since the last
		}
		w.mu.Unlock()
		return
	}
	w.dirty, w.fsyncing = false, true
	f, seg, target := w.f, w.seg, w.synced
	w.mu.Unlock()
	err := f.Datasync()
	w.fsyncs.Add(1)
	w.mu.Lock()
	w.fsyncing = false
	if err == nil {
		w.fsynced = max(w.fsynced, target)
	}
	if err != nil {
		w.fsyncErr = fmt.Errorf("sync log segment %d: %w", seg, err)
		if w.err == nil {
			w.err = w.fsyncErr
		}
	}
	w.cond.Broadcast()
	w.mu.Unlock()
}

// Fsyncs returns how many fdatasyncs the background sync has done
// (SyncInterval).
func (w *Log) Fsyncs() int64 { return w.fsyncs.Load() }

// SetBeforeSync sets fn to run before records are written out to be
// synced: the embedded store makes Pebble's WAL durable there, so that no
// record (a sample, a delete) outlives a crash that loses what it depends
// on (the UIDs its row key names, a tombstone). Called before any Append.
func (w *Log) SetBeforeSync(fn func() error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.beforeSync = fn
}

// create opens the file of segment seg, reusing the kept file when there
// is one, and syncs the directory that names it.
func (w *Log) create(seg uint64) (File, error) {
	name := filepath.Join(w.dir, SegmentName(seg))
	// Truncated if there: only a rotation that failed after creating it
	// leaves a file under a number not yet used.
	flags := os.O_CREATE | os.O_TRUNC | os.O_WRONLY
	if free := filepath.Join(w.dir, FreeName); w.exists(free) {
		if err := w.fs.Rename(free, name); err != nil {
			return nil, fmt.Errorf("reuse log file for segment %d: %w", seg, err)
		}
		flags = os.O_WRONLY // written over from the start, not truncated
	}
	f, err := w.fs.OpenFile(name, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create log segment %d: %w", seg, err)
	}
	if !w.opts.NoSync {
		if err := w.fs.SyncDir(w.dir); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// SyncDir makes dir's entries durable.
func SyncDir(dir string) error { return OS.SyncDir(dir) }

// Append appends a record of payload and returns the position that makes
// it durable (WaitDurable). The log's mutex is held for the copy only.
func (w *Log) Append(payload []byte) uint64 {
	w.mu.Lock()
	w.pending = AppendRecord(w.pending, w.seg, payload)
	w.appended += uint64(HeaderSize + len(payload))
	return w.endLocked()
}

// AppendFunc appends a record whose payload fn appends to the slice it is
// given (and returns), with no copy in between, and returns the position
// that makes it durable. fn runs under the log's mutex: it must not call
// the log.
func (w *Log) AppendFunc(fn func(dst []byte) []byte) uint64 {
	w.mu.Lock()
	start := len(w.pending)
	w.pending = fn(append(w.pending, make([]byte, HeaderSize)...))
	payload := w.pending[start+HeaderSize:]
	binary.LittleEndian.PutUint32(w.pending[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(w.pending[start+4:], CRC(w.seg, payload))
	w.appended += uint64(len(w.pending) - start)
	return w.endLocked()
}

// endLocked writes the pending records out when the log does not sync and
// they have grown large, releases w.mu and returns the position that
// covers every record appended.
func (w *Log) endLocked() uint64 {
	pos := w.appended
	// Without syncs nobody waits for the log: it is written out as it
	// grows, not held until the next rotation.
	if w.opts.NoSync && len(w.pending) >= 1<<20 && !w.syncing && w.err == nil {
		if _, err := w.f.WriteAt(w.pending, w.off); err != nil {
			w.err = fmt.Errorf("write log segment %d: %w", w.seg, err)
		}
		w.off += int64(len(w.pending))
		w.pending = w.pending[:0]
		w.synced = w.appended
	}
	w.mu.Unlock()
	return pos
}

// Position returns the position that covers every record appended so far.
func (w *Log) Position() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appended
}

// WaitDurable returns once every record up to pos is written and synced:
// the first caller to find none syncing writes out everything appended
// and syncs it for all, the others wait for it (a group commit). A write
// that fails (a full disk) fails the waiters of that group commit only:
// its records are written again by the next one, so the log stays
// usable once space returns.
func (w *Log) WaitDurable(pos uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	failures := w.failures
	for w.synced < pos {
		if w.err != nil {
			return w.err
		}
		if w.failures != failures {
			return w.writeErr
		}
		if w.syncing {
			w.cond.Wait()
			continue
		}
		w.groupCommit()
	}
	return w.err
}

// groupCommit writes out (and, without SyncInterval, syncs) everything
// appended so far. The caller holds mu and found no commit running; mu is
// released meanwhile. A panic below (Pebble's fatal logger in beforeSync)
// leaves the log as a failed write does.
func (w *Log) groupCommit() {
	w.syncing = true
	buf, f, off, target := w.pending, w.f, w.off, w.appended
	w.pending = w.spare[:0]
	w.mu.Unlock()
	done := false
	var err error
	defer func() {
		if !done {
			// A panic, which goes on up: the log is failed for good.
			err = fmt.Errorf("%w: aborted by a panic", errSync)
		}
		w.mu.Lock()
		w.syncing = false
		if err != nil {
			w.failedWrite(f, off, buf, err)
		} else {
			w.spare = buf[:0]
			w.off += int64(len(buf))
			w.synced = max(w.synced, target)
			w.dirty = w.dirty || len(buf) > 0 && w.opts.SyncInterval > 0
		}
		w.cond.Broadcast()
	}()
	err = w.runBeforeSync()
	if err == nil {
		err = w.writeOut(f, off, buf, w.opts.SyncInterval <= 0)
	}
	done = true
}

// failedWrite handles a write of buf at off that failed with err: the
// file is cut back to off (a torn record must not sit before the records
// written next), buf goes back in front of pending, and the waiters of
// this commit get err. An fdatasync that failed, or a cut that did, fails
// the log for good. The caller holds mu.
func (w *Log) failedWrite(f File, off int64, buf []byte, err error) {
	w.failures++
	w.writeErr = err
	if errors.Is(err, errSync) {
		w.err = err
		return
	}
	if terr := f.Truncate(off); terr != nil {
		w.err = errors.Join(err, fmt.Errorf("cut log segment %d back to %d bytes: %w", w.seg, off, terr))
		return
	}
	w.pending = append(buf, w.pending...)
}

// SyncAll makes every record appended before the call durable on disk,
// fdatasynced even with SyncInterval: the embedded store calls it before a
// delete, so that the cells a rewrite put (a compacted cell, a cut column)
// are on disk before the cells they replace are deleted. Records appended
// meanwhile are not waited for: they may not be written out by anyone
// (their appenders wait later, or behind the caller's lock).
func (w *Log) SyncAll() error { return w.SyncTo(w.Position()) }

// SyncTo is SyncAll of the records that end at or before pos (a Position
// or Append's answer): nothing is synced when they already are, whatever
// was appended after them.
func (w *Log) SyncTo(pos uint64) error {
	if err := w.WaitDurable(pos); err != nil {
		return err
	}
	if w.opts.NoSync || w.opts.SyncInterval <= 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.fsynced < pos {
		switch {
		case w.fsyncErr != nil:
			return w.fsyncErr
		case w.fsyncing:
			w.cond.Wait()
		default:
			w.mu.Unlock()
			w.syncWritten()
			w.mu.Lock()
		}
	}
	return nil
}

// errSync marks a failed fdatasync.
var errSync = errors.New("sync log")

// writeOut writes buf to f at off and, when sync is set, syncs it
// (unless NoSync).
func (w *Log) writeOut(f File, off int64, buf []byte, sync bool) error {
	if len(buf) > 0 {
		if _, err := f.WriteAt(buf, off); err != nil {
			return fmt.Errorf("write log: %w", err)
		}
	}
	if w.opts.NoSync || !sync {
		return nil
	}
	if err := f.Datasync(); err != nil {
		return fmt.Errorf("%w: %w", errSync, err)
	}
	return nil
}

// runBeforeSync runs beforeSync, when the log syncs and one is set.
func (w *Log) runBeforeSync() error {
	if w.opts.NoSync || w.beforeSync == nil {
		return nil
	}
	if err := w.beforeSync(); err != nil {
		return fmt.Errorf("sync before the log: %w", err)
	}
	return nil
}

// exists reports whether path names a file that can be stat'd.
func (w *Log) exists(path string) bool {
	_, err := w.fs.Stat(path)
	return err == nil
}

// lockIdle takes mu once no sync runs (one that is running ends first:
// a group commit's, syncLoop's) and returns the log's error, if it
// failed; the caller unlocks mu.
func (w *Log) lockIdle() error {
	w.mu.Lock()
	for w.syncing || w.fsyncing {
		w.cond.Wait()
	}
	return w.err
}

// Rotate makes everything appended durable in the current segment and
// starts the next; it returns the number of the finished one. The caller
// keeps records from being appended meanwhile if it needs the segment to
// end at a point of its own.
func (w *Log) Rotate() (uint64, error) {
	err := w.lockIdle()
	defer w.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if err := w.runBeforeSync(); err != nil {
		return 0, err
	}
	buf := w.pending
	w.pending = w.spare[:0]
	if err := w.writeOut(w.f, w.off, buf, true); err != nil {
		w.failedWrite(w.f, w.off, buf, err)
		w.cond.Broadcast()
		return 0, err
	}
	w.off += int64(len(buf))
	w.spare = buf[:0]
	w.fsynced = w.appended
	w.synced, w.dirty = w.appended, false
	f, err := w.create(w.seg + 1)
	if err != nil {
		return 0, err
	}
	old := w.seg
	if err := w.f.Close(); err != nil {
		f.Close()
		return 0, fmt.Errorf("close log segment %d: %w", old, err)
	}
	w.f, w.seg, w.off = f, w.seg+1, 0
	w.cond.Broadcast()
	return old, nil
}

// RemoveThrough retires the segments numbered at most seg: the last of
// them is kept for reuse, cut to KeepBytes, when no file is kept yet, the
// others are removed.
func (w *Log) RemoveThrough(seg uint64) error {
	segs, err := SegmentsFS(w.fs, w.dir)
	if err != nil {
		return err
	}
	free := filepath.Join(w.dir, FreeName)
	keep := w.opts.KeepBytes > 0 && !w.exists(free)
	for n := len(segs) - 1; n >= 0; n-- {
		s := segs[n]
		if s > seg {
			continue
		}
		path := filepath.Join(w.dir, SegmentName(s))
		if keep {
			keep = false
			if fi, err := w.fs.Stat(path); err == nil && fi.Size() > w.opts.KeepBytes {
				if err := w.fs.Truncate(path, w.opts.KeepBytes); err != nil {
					return fmt.Errorf("cut log segment %d to %d bytes: %w", s, w.opts.KeepBytes, err)
				}
			}
			if err := w.fs.Rename(path, free); err != nil {
				return fmt.Errorf("keep log segment %d for reuse: %w", s, err)
			}
			continue
		}
		if err := w.fs.Remove(path); err != nil {
			return fmt.Errorf("remove log segment %d: %w", s, err)
		}
	}
	return nil
}

// Trim gives back the space the log holds beyond its records: the current
// segment is cut to what was written to it (a reused file holds the old
// records of its last use beyond), and the file kept for reuse is
// removed. The next segment then starts a new file.
func (w *Log) Trim() error {
	err := w.lockIdle()
	defer w.mu.Unlock()
	if err != nil {
		return err
	}
	if fi, err := w.f.Stat(); err == nil && fi.Size() > w.off {
		if err := w.f.Truncate(w.off); err != nil {
			return fmt.Errorf("cut log segment %d to %d bytes: %w", w.seg, w.off, err)
		}
	}
	if err := w.fs.Remove(filepath.Join(w.dir, FreeName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the log file kept for reuse: %w", err)
	}
	return nil
}

// DiskBytes returns the bytes of the log's files on disk (sizes, as
// listed): its segments and the file kept for reuse.
func (w *Log) DiskBytes() int64 {
	ents, err := w.fs.ReadDir(w.dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".wal") && e.Name() != FreeName {
			continue
		}
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// Close writes and syncs what is pending and closes the segment; the log
// fails every call afterwards.
func (w *Log) Close() error {
	if w.stop != nil {
		w.stopOnce.Do(func() {
			close(w.stop)
			<-w.stopped
		})
	}
	err := w.lockIdle()
	defer w.mu.Unlock()
	if err == nil {
		err = w.runBeforeSync()
	}
	if err == nil {
		err = w.writeOut(w.f, w.off, w.pending, true)
	}
	if err == nil {
		w.off += int64(len(w.pending))
		w.pending = w.pending[:0]
		w.dirty = false
	}
	if w.dirty && w.fsyncErr == nil {
		// The log failed after records were acknowledged, written and
		// not yet fdatasynced (SyncInterval): they are made durable.
		if ferr := w.f.Datasync(); ferr != nil {
			err = errors.Join(err, fmt.Errorf("sync log segment %d: %w", w.seg, ferr))
		}
		w.dirty = false
	}
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close log segment %d: %w", w.seg, cerr)
	}
	if err == nil {
		w.err = errClosed
	}
	return err
}

// errClosed fails every call once the log is closed.
var errClosed = errors.New("log closed")

// Failed returns the error that failed the log for good (a failed
// fdatasync, a torn write it could not cut back): nil while it takes
// records, and after Close. Its records since the last good fdatasync
// may or may not be on disk: the log's owner stops, and the next start
// replays what the files hold.
func (w *Log) Failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(w.err, errClosed) {
		return nil
	}
	return w.err
}
