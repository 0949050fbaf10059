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

func (fs walFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil || !isWAL(newname) {
		return f, err
	}
	return noPrealloc{f}, nil
}

// isWAL reports whether name is a Pebble log file (NNNNNN.log).
func isWAL(name string) bool { return len(name) > 4 && name[len(name)-4:] == ".log" }
