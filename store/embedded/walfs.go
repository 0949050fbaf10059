package embedded

import (
	"github.com/cockroachdb/pebble/v2/vfs"
)

// walFS is the filesystem Pebble runs on: the default one, except that
// its write-ahead log files are not preallocated. Pebble preallocates
// 110 % of a memtable (32 MiB here) for each new log file, which `du`
// counts although the log rarely holds more than a few megabytes: with
// the data table in the row buffer, Pebble's log takes only UIDs, the
// series index, exemplars and deletes. The price is a file size update
// with the log's syncs, on the few writes that go through it.
type walFS struct{ vfs.FS }

// noPrealloc is a file whose Preallocate does nothing.
type noPrealloc struct{ vfs.File }

func (noPrealloc) Preallocate(int64, int64) error { return nil }

func (fs walFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || !isWAL(name) {
		return f, err
	}
	return noPrealloc{f}, nil
}

// ReuseForWrite of a log file renames the retired file and empties it:
// Pebble writes a reused log over from its start and leaves the rest of
// the old log behind its end, so that the live log would take the size of
// the largest log it ever reused (a settled store's live log held a
// quarter of a megabyte of stale records after a few hours of writes).
// An emptied file reads as a new one (Pebble's reader of recycled logs
// stops at the end of the file as at a record of an older log).
func (fs walFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if !isWAL(newname) {
		return fs.FS.ReuseForWrite(oldname, newname, category)
	}
	if err := fs.FS.Rename(oldname, newname); err != nil {
		return nil, err
	}
	f, err := fs.FS.Create(newname, category) // truncates
	if err != nil {
		return nil, err
	}
	return noPrealloc{f}, nil
}

// isWAL reports whether name is a Pebble log file (NNNNNN.log).
func isWAL(name string) bool { return len(name) > 4 && name[len(name)-4:] == ".log" }
