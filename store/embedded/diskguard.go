package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/promhbase/promhbase/store"
)

// The disk guard: a full disk is a state the store goes through, not a
// crash. Below Options.MinFreeBytes of free space on the store's
// filesystem, or once a write met ENOSPC, the store is read-only: puts,
// increments and check-and-puts fail with ErrReadOnly (a store.ErrUnavailable:
// senders retry), while reads, deletes (which free space), the row
// buffer's flushes and Pebble's compactions go on. It turns writable by
// itself once the free space is back above the watermark plus a margin
// (hysteresis, so that it does not flap at the edge).
//
// A ballast file (Options.BallastBytes, "ballast" in the store's
// directory) holds space in reserve: the first write that meets ENOSPC
// (Pebble's, through vfs.OnDiskFull, which then retries it once; the row
// buffer's log's or a flush's) removes it and turns the store read-only,
// so that what is in flight (a group commit, a flush, Pebble's log) can
// finish in the space it gave back, and Pebble's log never fails, which
// Pebble treats as fatal. The ballast is made again once the space is
// back.
//
// The free space is read once a second by a goroutine (statfs), never on
// a write's path: a write reads one atomic flag.

// ErrReadOnly is the error of a write refused while the store is
// read-only; it wraps store.ErrUnavailable.
var ErrReadOnly = fmt.Errorf("embedded store read-only: %w", store.ErrUnavailable)

// BallastName is the ballast file's name in the store's directory.
const BallastName = "ballast"

// diskGuardInterval is how often the guard reads the free space.
const diskGuardInterval = time.Second

// errFreeUnknown is freeBytes's error on a system where it cannot read
// the free space.
var errFreeUnknown = errors.New("the free disk space cannot be read on this system")

// diskGuard watches the free space of a store's filesystem.
type diskGuard struct {
	dir          string
	min, ballast int64
	// off is why the guard is off (its system cannot read the free
	// space), "" when on: then there is no watermark, no ballast, and an
	// ENOSPC fails its write alone rather than turning the store
	// read-only with nothing to turn it writable again.
	off string
	// freeBytes reads the free space of dir's filesystem (statfs; tests
	// replace it).
	freeBytes func(dir string) (int64, error)

	readOnly atomic.Bool
	// reason says why the store is read-only (a *string; nil when
	// writable).
	reason atomic.Pointer[string]
	free   atomic.Int64
	// full is set from an ENOSPC until the ballast is back: the store
	// stays read-only meanwhile.
	full       atomic.Bool
	fullEvents atomic.Int64
	mu         sync.Mutex // ballast file changes

	stop, done chan struct{}
	// every, when positive, replaces diskGuardInterval (tests).
	every time.Duration
}

// newDiskGuard returns the guard of dir, not yet started, having read
// the free space once (by free: freeBytes but in tests) and made the
// ballast when there is room for it; off where free cannot read it.
func newDiskGuard(dir string, minFree, ballast int64, free func(dir string) (int64, error)) *diskGuard {
	g := &diskGuard{dir: dir, min: max(minFree, 0), ballast: max(ballast, 0), freeBytes: free,
		stop: make(chan struct{}), done: make(chan struct{})}
	if _, err := g.freeBytes(dir); errors.Is(err, errFreeUnknown) {
		g.off = err.Error() + ": the disk guard is off (no --storage.min-free-disk-space-bytes, no ballast)"
		g.min, g.ballast = 0, 0
		return g
	}
	g.check()
	return g
}

// start runs the guard's goroutine until close; none when the guard is
// off.
func (g *diskGuard) start() {
	if g.off != "" {
		close(g.done)
		return
	}
	go func() {
		defer close(g.done)
		every := diskGuardInterval
		if g.every > 0 {
			every = g.every
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-g.stop:
				return
			case <-t.C:
				g.check()
			}
		}
	}()
}

// close stops the guard's goroutine (when started).
func (g *diskGuard) close(started bool) {
	close(g.stop)
	if started {
		<-g.done
	}
}

// margin is how far above the watermark the free space must be for the
// store to turn writable again.
func (g *diskGuard) margin() int64 { return max(g.min/4, 1<<20) }

// check reads the free space and sets the state: read-only below the
// watermark or while an ENOSPC's ballast is not back, writable from the
// watermark plus margin; it makes the ballast when missing and there is
// room for it beyond that.
func (g *diskGuard) check() {
	free, err := g.freeBytes(g.dir)
	if err != nil {
		return // unknown: the state stays
	}
	g.free.Store(free)
	if g.ballast > 0 && free >= g.min+g.margin()+g.ballast && g.makeBallast() == nil {
		g.full.Store(false)
		if free, err = g.freeBytes(g.dir); err == nil {
			g.free.Store(free)
		}
	} else if g.ballast == 0 && g.full.Load() && free >= g.min+g.margin() {
		g.full.Store(false)
	}
	switch {
	case g.full.Load():
		g.setReadOnly(fmt.Sprintf("the disk was full (no space left on device): %d bytes free now, writes resume above %d", free, g.min+g.margin()+g.ballast))
	case g.min > 0 && free < g.min:
		g.setReadOnly(fmt.Sprintf("%d bytes free on the store's disk, below --storage.min-free-disk-space-bytes=%d: writes resume above %d", free, g.min, g.min+g.margin()))
	case !g.readOnly.Load() || g.min == 0 || free >= g.min+g.margin():
		g.readOnly.Store(false)
		g.reason.Store(nil)
	}
}

// setReadOnly turns the store read-only, saying why.
func (g *diskGuard) setReadOnly(why string) {
	g.reason.Store(&why)
	g.readOnly.Store(true)
}

// diskFull is called when a write met ENOSPC: the store turns read-only
// at once and the ballast goes, so that what is in flight can finish.
func (g *diskGuard) diskFull() {
	g.fullEvents.Add(1)
	if g.off != "" {
		return
	}
	g.full.Store(true)
	g.setReadOnly("the disk is full (no space left on device)")
	g.mu.Lock()
	defer g.mu.Unlock()
	_ = os.Remove(filepath.Join(g.dir, BallastName))
}

// noteErr calls diskFull when err is a full disk's.
func (g *diskGuard) noteErr(err error) {
	if err != nil && errors.Is(err, syscall.ENOSPC) {
		g.diskFull()
	}
}

// makeBallast makes the ballast file when it is missing or short.
func (g *diskGuard) makeBallast() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	path := filepath.Join(g.dir, BallastName)
	if fi, err := os.Stat(path); err == nil && fi.Size() >= g.ballast {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create the ballast: %w", err)
	}
	err = allocate(f, g.ballast)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("allocate the ballast of %d bytes: %w", g.ballast, err)
	}
	return nil
}

// writable returns ErrReadOnly, with the reason, while the store is
// read-only.
func (g *diskGuard) writable() error {
	if !g.readOnly.Load() {
		return nil
	}
	if r := g.reason.Load(); r != nil {
		return fmt.Errorf("%w: %s", ErrReadOnly, *r)
	}
	return ErrReadOnly
}

// ReadOnly reports whether the store refuses writes, and why
// (store.ReadOnlyReporter).
func (s *Store) ReadOnly() (bool, string) {
	if !s.guard.readOnly.Load() {
		return false, ""
	}
	if r := s.guard.reason.Load(); r != nil {
		return true, *r
	}
	return true, "read-only"
}

var _ store.ReadOnlyReporter = (*Store)(nil)

// DiskGuardOff says why the disk guard is off, "" when it is on: on a
// system where the free space cannot be read it does not start (no
// watermark, no ballast), which serve logs at its start.
func (s *Store) DiskGuardOff() string { return s.guard.off }
