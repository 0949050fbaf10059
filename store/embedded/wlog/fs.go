package wlog

import (
	"fmt"
	"os"
)

// File is what the log does with a segment's file.
type File interface {
	WriteAt(b []byte, off int64) (int, error)
	Truncate(size int64) error
	// Datasync makes the file's data durable (fdatasync).
	Datasync() error
	Stat() (os.FileInfo, error)
	Close() error
}

// FS is the filesystem the log runs on: the operating system's (OS), or
// a test's that fails chosen operations or drops what was not synced.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	Truncate(name string, size int64) error
	Stat(name string) (os.FileInfo, error)
	ReadDir(name string) ([]os.DirEntry, error)
	ReadFile(name string) ([]byte, error)
	// SyncDir makes dir's entries durable.
	SyncDir(dir string) error
	MkdirAll(dir string, perm os.FileMode) error
}

// OS is the operating system's filesystem.
var OS FS = osFS{}

type osFS struct{}

type osFile struct{ *os.File }

func (f osFile) Datasync() error { return fdatasync(f.File) }

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Rename(oldpath, newpath string) error        { return os.Rename(oldpath, newpath) }
func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) Truncate(name string, size int64) error      { return os.Truncate(name, size) }
func (osFS) Stat(name string) (os.FileInfo, error)       { return os.Stat(name) }
func (osFS) ReadDir(name string) ([]os.DirEntry, error)  { return os.ReadDir(name) }
func (osFS) ReadFile(name string) ([]byte, error)        { return os.ReadFile(name) }
func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

func (osFS) SyncDir(dir string) error {
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
