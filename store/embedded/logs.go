package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Pebble's write-ahead log on disk. Pebble replays at Open whatever its
// memtables held at Close (Close does not flush them: `promhbase compact`
// left some 120 MiB of log that only the next Open replayed), keeps up to
// MemTableStopWritesThreshold+1 retired log files for reuse, each the size
// of the log it was (the next Open removes them), and preallocates 110 %
// of a memtable for the live one. So Close flushes the memtable first,
// after which no log holds anything to replay, and once the database is
// closed removes the log files, when nothing was committed after the
// flush (closePebble). While the store runs, the settle flushes the
// memtable once writes stop (settle.go), so that an idle store's log
// does not keep what it held.

// closePebble flushes Pebble's memtable into a table, closes the
// database, and then removes its log files when the flush covered every
// commit: they hold nothing the next Open would replay (it starts a new
// log then). The caller has stopped every writer of the store.
func (s *Store) closePebble() error {
	before := s.committed.Load()
	flushErr := s.db.Flush()
	// After a flush Pebble has retired every log but the one it started:
	// it keeps one live file.
	tidy := flushErr == nil && s.db.Metrics().WAL.Files == 1
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	if flushErr != nil {
		return fmt.Errorf("flush memtable: %w", flushErr)
	}
	if tidy && s.committed.Load() == before {
		// Best effort: a log file left is replayed (empty) or removed by
		// the next Open.
		for _, name := range pebbleLogs(s.fs, s.dir) {
			_ = s.fs.Remove(s.fs.PathJoin(s.dir, name))
		}
	}
	return nil
}

// pebbleLogs returns the names of Pebble's log files in dir (NNNNNN.log).
func pebbleLogs(fs vfs.FS, dir string) []string {
	ents, err := fs.List(dir)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range ents {
		num, ok := strings.CutSuffix(e, ".log")
		if !ok {
			continue
		}
		if _, err := strconv.ParseUint(num, 10, 64); err != nil {
			continue
		}
		names = append(names, e)
	}
	return names
}

// logBytes returns the bytes on disk of the row buffer's log (its files'
// sizes; 0 without a buffer) and of Pebble's log (its live files and
// those kept for reuse, as Pebble counts them).
func (s *Store) logBytes() (rowbuf, pebbleWAL int64) {
	if s.rb != nil {
		rowbuf = s.rb.wal.DiskBytes()
	}
	m := s.db.Metrics()
	return rowbuf, int64(m.WAL.PhysicalSize + m.WAL.ObsoletePhysicalSize)
}

// truncateRetiredLogs cuts to zero bytes the log files Pebble retired
// and keeps for reuse, right after a settle flushed the memtable: they
// hold nothing Pebble will read again (a reused file is written over from
// its start, like a new one), but each kept the size of the log it was,
// up to a memtable's worth (MemTableStopWritesThreshold+1 of them: 6 MB
// after a day of 2000 series, half a byte a sample). It leaves the files
// alone unless Pebble counts one live log, and then spares the
// highest-numbered file, the live one: a log Pebble starts meanwhile has
// a higher number than every file listed, and the ones below stay
// retired. A file Pebble takes for reuse meanwhile is renamed first, so
// the truncate either finds no such file or cuts a file not yet reused.
// On a filesystem other than the operating system's (Options.FS), which
// cannot truncate, it does nothing.
func (s *Store) truncateRetiredLogs() {
	if s.fs != vfs.Default {
		return
	}
	names := pebbleLogs(s.fs, s.dir)
	if len(names) < 2 || s.db.Metrics().WAL.Files != 1 {
		return
	}
	nums := make([]uint64, 0, len(names))
	for _, n := range names {
		v, _ := strconv.ParseUint(strings.TrimSuffix(n, ".log"), 10, 64)
		nums = append(nums, v)
	}
	live := slices.Max(nums)
	for i, n := range names {
		if nums[i] == live {
			continue
		}
		path := filepath.Join(s.dir, n)
		if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
			_ = os.Truncate(path, 0) // best effort; ENOENT: taken for reuse
		}
	}
}
