// Package wlogfault is a filesystem for the tests of the row buffer's log
// (wlog) and of what runs on it: the operating system's, with chosen
// operations failing and a power loss that drops what was not
// fdatasynced.
package wlogfault

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/promhbase/promhbase/store/embedded/wlog"
)

// FS is wlog.OS with faults: Fault is asked before every operation that
// changes the disk (a create or open, a write, an fdatasync, a truncate,
// a rename, a remove, a directory sync) and the operation fails with the
// error it returns (a write after writing half its bytes, as a disk that
// fills mid-write does). FS keeps the content each file had at its last
// fdatasync, so that Crash puts every segment back to that: a power loss.
type FS struct {
	// Fault returns the error operation op on path fails with, nil for
	// none; nil Fault fails nothing.
	Fault func(op, path string) error

	// gate is held shared by each operation and exclusively by Crash:
	// after Crash no operation reaches the disk.
	gate    sync.RWMutex
	mu      sync.Mutex
	durable map[string][]byte
	crashed bool
}

// New returns an FS that asks fault.
func New(fault func(op, path string) error) *FS {
	return &FS{Fault: fault, durable: map[string][]byte{}}
}

// FailNth returns a Fault that fails the k-th operation (counted from 1)
// with err, and a function that tells how many operations were asked
// about so far.
func FailNth(k int, err error) (fault func(op, path string) error, count func() int) {
	var mu sync.Mutex
	n := 0
	fault = func(string, string) error {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n == k {
			return err
		}
		return nil
	}
	count = func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
	return fault, count
}

// begin starts an operation: it returns the function that ends it and
// the error the operation fails with (the fault's, or EIO after Crash).
func (fs *FS) begin(op, path string) (end func(), err error) {
	fs.gate.RLock()
	if fs.crashed {
		return fs.gate.RUnlock, &os.PathError{Op: op, Path: path, Err: syscall.EIO}
	}
	if fs.Fault != nil {
		if err := fs.Fault(op, path); err != nil {
			return fs.gate.RUnlock, &os.PathError{Op: op, Path: path, Err: err}
		}
	}
	return fs.gate.RUnlock, nil
}

type file struct {
	wlog.File
	fs   *FS
	name string
}

// OpenFile implements wlog.FS.
func (fs *FS) OpenFile(name string, flag int, perm os.FileMode) (wlog.File, error) {
	end, err := fs.begin("open", name)
	defer end()
	if err != nil {
		return nil, err
	}
	f, err := wlog.OS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &file{File: f, fs: fs, name: name}, nil
}

func (f *file) WriteAt(b []byte, off int64) (int, error) {
	end, err := f.fs.begin("write", f.name)
	defer end()
	if err != nil {
		if f.fs.crashed {
			return 0, err
		}
		n, _ := f.File.WriteAt(b[:len(b)/2], off)
		return n, err
	}
	return f.File.WriteAt(b, off)
}

func (f *file) Truncate(size int64) error {
	end, err := f.fs.begin("truncate", f.name)
	defer end()
	if err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *file) Datasync() error {
	end, err := f.fs.begin("fdatasync", f.name)
	defer end()
	if err != nil {
		return err
	}
	if err := f.File.Datasync(); err != nil {
		return err
	}
	b, err := os.ReadFile(f.name)
	if err != nil {
		return err
	}
	f.fs.mu.Lock()
	f.fs.durable[f.name] = b
	f.fs.mu.Unlock()
	return nil
}

// Rename implements wlog.FS.
func (fs *FS) Rename(oldpath, newpath string) error {
	end, err := fs.begin("rename", oldpath)
	defer end()
	if err != nil {
		return err
	}
	if err := wlog.OS.Rename(oldpath, newpath); err != nil {
		return err
	}
	fs.mu.Lock()
	fs.durable[newpath] = fs.durable[oldpath]
	delete(fs.durable, oldpath)
	fs.mu.Unlock()
	return nil
}

// Remove implements wlog.FS.
func (fs *FS) Remove(name string) error {
	end, err := fs.begin("remove", name)
	defer end()
	if err != nil {
		return err
	}
	fs.mu.Lock()
	delete(fs.durable, name)
	fs.mu.Unlock()
	return wlog.OS.Remove(name)
}

// Truncate implements wlog.FS.
func (fs *FS) Truncate(name string, size int64) error {
	end, err := fs.begin("truncate", name)
	defer end()
	if err != nil {
		return err
	}
	return wlog.OS.Truncate(name, size)
}

// SyncDir implements wlog.FS.
func (fs *FS) SyncDir(dir string) error {
	end, err := fs.begin("syncdir", dir)
	defer end()
	if err != nil {
		return err
	}
	return wlog.OS.SyncDir(dir)
}

// Stat implements wlog.FS.
func (fs *FS) Stat(name string) (os.FileInfo, error) { return wlog.OS.Stat(name) }

// ReadDir implements wlog.FS.
func (fs *FS) ReadDir(name string) ([]os.DirEntry, error) { return wlog.OS.ReadDir(name) }

// ReadFile implements wlog.FS.
func (fs *FS) ReadFile(name string) ([]byte, error) { return wlog.OS.ReadFile(name) }

// MkdirAll implements wlog.FS.
func (fs *FS) MkdirAll(dir string, perm os.FileMode) error { return wlog.OS.MkdirAll(dir, perm) }

// Crash puts every segment file of the log in dir back to its content at
// its last fdatasync (empty if never synced), as a power loss leaves it;
// every later operation fails with EIO without touching the disk.
func (fs *FS) Crash(dir string) error {
	fs.gate.Lock()
	defer fs.gate.Unlock()
	fs.crashed = true
	segs, err := wlog.Segments(dir)
	if err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, seg := range segs {
		p := filepath.Join(dir, wlog.SegmentName(seg))
		if err := os.WriteFile(p, fs.durable[p], 0o644); err != nil {
			return fmt.Errorf("crash: put %s back: %w", p, err)
		}
	}
	return nil
}
