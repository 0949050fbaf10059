package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/wlog"
)

// Snapshots: a snapshot is a Pebble checkpoint of the whole store in
// <dir>/snapshots/<name>: its sstables hard links to the store's (which
// Pebble never changes, only deletes), its manifest, options and
// write-ahead log copied. It is itself a store directory, opened as it is
// (Open) after being moved or copied out (CopySnapshot). The row
// buffer's contents are flushed into Pebble first, so that the snapshot
// needs no row buffer log: every write acknowledged before CreateSnapshot
// was called is in it.

// snapshotsDir is the directory of the snapshots, below the store's.
const snapshotsDir = "snapshots"

var _ store.Snapshotter = (*Store)(nil)

// CreateSnapshot makes snapshot name of the whole store (every table and
// namespace: tables is not looked at) in <dir>/snapshots/name, while
// writes go on (store.Snapshotter).
func (s *Store) CreateSnapshot(ctx context.Context, name string, _ []string) error {
	if err := store.CheckSnapshotName(name); err != nil {
		return err
	}
	dir := filepath.Join(s.dir, snapshotsDir, name)
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("create snapshot %q: it exists: %w", name, store.ErrInvalid)
	}
	if err := os.MkdirAll(filepath.Join(s.dir, snapshotsDir), 0o755); err != nil {
		return fmt.Errorf("create snapshot %q: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("create snapshot %q: %w", name, err)
	}
	if s.rb != nil {
		if err := s.rb.flush(); err != nil {
			return fmt.Errorf("create snapshot %q: flush the row buffer: %w", name, err)
		}
	}
	if err := s.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("create snapshot %q: %w: %w", name, store.ErrUnavailable, err)
	}
	return nil
}

// ListSnapshots returns the snapshots in <dir>/snapshots, oldest first
// (store.Snapshotter). Created is the time in a name made as Prometheus
// names its snapshots (20060102T150405Z-...), else the directory's
// modification time.
func (s *Store) ListSnapshots(context.Context) ([]store.SnapshotInfo, error) {
	root := filepath.Join(s.dir, snapshotsDir)
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	var out []store.SnapshotInfo
	for _, e := range entries {
		if !e.IsDir() || store.CheckSnapshotName(e.Name()) != nil {
			continue
		}
		info := store.SnapshotInfo{Name: e.Name(), Location: filepath.Join(root, e.Name())}
		if t, err := time.Parse("20060102T150405Z", strings.SplitN(e.Name(), "-", 2)[0]); err == nil {
			info.Created = t
		} else if fi, err := e.Info(); err == nil {
			info.Created = fi.ModTime()
		}
		out = append(out, info)
	}
	slices.SortStableFunc(out, func(a, b store.SnapshotInfo) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// DeleteSnapshot removes snapshot name's directory (store.Snapshotter).
// The store's own files are not touched: a snapshot's sstables are links.
func (s *Store) DeleteSnapshot(_ context.Context, name string) error {
	if err := store.CheckSnapshotName(name); err != nil {
		return err
	}
	dir := filepath.Join(s.dir, snapshotsDir, name)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("delete snapshot %q: %w: %w", name, store.ErrInvalid, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("delete snapshot %q: %w", name, err)
	}
	return nil
}

// CopySnapshot makes dst, which must not exist or be empty, a store
// directory holding snapshot src (a directory CreateSnapshot made): the
// restore of a snapshot. Its sstables are hard-linked where src and dst
// share a filesystem (Pebble never changes an sstable, so the two stores
// stay independent), copied otherwise; every other file is copied.
func CopySnapshot(src, dst string) error {
	if m, err := filepath.Glob(filepath.Join(src, "MANIFEST-*")); err != nil || len(m) == 0 {
		return fmt.Errorf("restore snapshot %s: no MANIFEST: not a snapshot of the embedded store: %w", src, store.ErrInvalid)
	}
	if entries, err := os.ReadDir(dst); err == nil && len(entries) > 0 {
		return fmt.Errorf("restore snapshot %s into %s: the directory is not empty: %w", src, dst, store.ErrInvalid)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("restore snapshot %s: %w", src, err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("restore snapshot %s: %w", src, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if strings.HasSuffix(e.Name(), ".sst") && os.Link(from, to) == nil {
			continue
		}
		if err := copyFile(from, to); err != nil {
			return fmt.Errorf("restore snapshot %s: %w", src, err)
		}
	}
	return wlog.SyncDir(dst)
}

// copyFile copies from to to and makes it durable.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", from, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", from, err)
	}
	return out.Close()
}
