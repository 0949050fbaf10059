package hbase

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"

	"github.com/promhbase/promhbase/store"
)

// Snapshots: a promhbase snapshot NAME is one HBase snapshot a table,
// named NAME.NAMESPACE.QUALIFIER (NAMESPACE "default" for the tables of
// HBase's default namespace), so that the snapshots of one call belong
// together and `list_snapshots 'NAME\..*'` in HBase's shell shows them.
// Each is a FLUSH snapshot (HBase's default): what the region servers
// acknowledged before it began is in it.
//
// HBase snapshots one table at a time, so a snapshot of several tables is
// not one instant: the tables are taken in the order given, each after
// the one before it ended, and callers name the UID tables last, so that
// every UID a data row of the snapshot names is in the snapshot's UID
// table (a UID is assigned before any row names it).

var _ store.Snapshotter = (*Store)(nil)

// CreateSnapshot snapshots tables as NAME.NAMESPACE.QUALIFIER each, one
// after the other in the order given (store.Snapshotter); tables that do
// not exist are skipped. On an error the snapshots already made are
// deleted.
func (s *Store) CreateSnapshot(ctx context.Context, name string, tables []string) error {
	if err := store.CheckSnapshotName(name); err != nil {
		return err
	}
	existing, err := s.ListSnapshots(ctx)
	if err != nil {
		return fmt.Errorf("create snapshot %q: %w", name, err)
	}
	if slices.ContainsFunc(existing, func(i store.SnapshotInfo) bool { return i.Name == name }) {
		return fmt.Errorf("create snapshot %q: it exists: %w", name, store.ErrInvalid)
	}
	for _, t := range tables {
		if err := checkTableName(t); err != nil {
			return fmt.Errorf("create snapshot %q: %w", name, err)
		}
	}
	for _, t := range tables {
		if err := s.snapshotTable(ctx, name, t); err != nil {
			// Best effort: a half-made snapshot is not kept.
			_ = s.DeleteSnapshot(context.WithoutCancel(ctx), name)
			return fmt.Errorf("create snapshot %q: %w", name, err)
		}
	}
	return nil
}

// snapshotTable snapshots table as name.NAMESPACE.QUALIFIER; a table that
// does not exist is skipped.
func (s *Store) snapshotTable(ctx context.Context, name, table string) error {
	actx, cancel := context.WithTimeout(ctx, s.cfg.AdminTimeout)
	defer cancel()
	sn, err := hrpc.NewSnapshot(actx, tableSnapshotName(name, table), table)
	if err != nil {
		return fmt.Errorf("snapshot table %s: %w", table, err)
	}
	if err := s.adminClient().CreateSnapshot(sn); err != nil {
		if remoteClass(err, "TableNotFoundException") || strings.Contains(err.Error(), "TableNotFoundException") {
			return nil
		}
		return fmt.Errorf("snapshot table %s: %w", table, classify(err, actx.Err() != nil && ctx.Err() == nil))
	}
	return nil
}

// tableSnapshotName is the HBase snapshot of table in promhbase snapshot
// name: name.NAMESPACE.QUALIFIER.
func tableSnapshotName(name, table string) string {
	ns, q, ok := strings.Cut(table, ":")
	if !ok {
		ns, q = "default", table
	}
	return name + "." + ns + "." + q
}

// ListSnapshots returns the promhbase snapshots among HBase's (those whose
// name has a '.'), oldest first, each with the tables it copied
// (store.Snapshotter).
func (s *Store) ListSnapshots(ctx context.Context) ([]store.SnapshotInfo, error) {
	descs, err := s.listSnapshots(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*store.SnapshotInfo{}
	var out []*store.SnapshotInfo
	for _, d := range descs {
		name, _, ok := strings.Cut(d.GetName(), ".")
		if !ok || store.CheckSnapshotName(name) != nil {
			continue
		}
		info := byName[name]
		if info == nil {
			info = &store.SnapshotInfo{Name: name, Created: time.UnixMilli(d.GetCreationTime())}
			byName[name] = info
			out = append(out, info)
		}
		info.Tables = append(info.Tables, d.GetTable())
		if c := time.UnixMilli(d.GetCreationTime()); c.Before(info.Created) {
			info.Created = c
		}
	}
	res := make([]store.SnapshotInfo, len(out))
	for i, info := range out {
		slices.Sort(info.Tables)
		res[i] = *info
	}
	slices.SortStableFunc(res, func(a, b store.SnapshotInfo) int { return a.Created.Compare(b.Created) })
	return res, nil
}

func (s *Store) listSnapshots(ctx context.Context) ([]*pb.SnapshotDescription, error) {
	actx, cancel := context.WithTimeout(ctx, s.cfg.AdminTimeout)
	defer cancel()
	descs, err := s.adminClient().ListSnapshots(hrpc.NewListSnapshots(actx))
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", classify(err, actx.Err() != nil && ctx.Err() == nil))
	}
	return descs, nil
}

// DeleteSnapshot deletes the HBase snapshot of every table of promhbase
// snapshot name (store.Snapshotter).
func (s *Store) DeleteSnapshot(ctx context.Context, name string) error {
	descs, err := s.snapshotTables(ctx, name)
	if err != nil {
		return err
	}
	for _, d := range descs {
		actx, cancel := context.WithTimeout(ctx, s.cfg.AdminTimeout)
		sn, err := hrpc.NewSnapshot(actx, d.GetName(), d.GetTable())
		if err == nil {
			err = s.adminClient().DeleteSnapshot(sn)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("delete snapshot %s: %w", d.GetName(), classify(err, actx.Err() != nil && ctx.Err() == nil))
		}
	}
	return nil
}

// snapshotTables returns the HBase snapshots of promhbase snapshot name;
// an error when there are none.
func (s *Store) snapshotTables(ctx context.Context, name string) ([]*pb.SnapshotDescription, error) {
	if err := store.CheckSnapshotName(name); err != nil {
		return nil, err
	}
	descs, err := s.listSnapshots(ctx)
	if err != nil {
		return nil, err
	}
	var out []*pb.SnapshotDescription
	for _, d := range descs {
		if strings.HasPrefix(d.GetName(), name+".") {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("snapshot %q: none: %w", name, store.ErrInvalid)
	}
	return out, nil
}

// RestoreSnapshot puts every table of promhbase snapshot name back as the
// snapshot holds it: an existing table is disabled, restored and enabled
// again (what was written after the snapshot is gone), a dropped one is
// created from the snapshot. Nothing may write to or read from the
// tables meanwhile: stop every promhbase and TSD using them first.
func (s *Store) RestoreSnapshot(ctx context.Context, name string) error {
	descs, err := s.snapshotTables(ctx, name)
	if err != nil {
		return err
	}
	for _, d := range descs {
		if err := s.restoreTable(ctx, d); err != nil {
			return fmt.Errorf("restore snapshot %q: table %s: %w", name, d.GetTable(), err)
		}
	}
	return nil
}

func (s *Store) restoreTable(ctx context.Context, d *pb.SnapshotDescription) error {
	actx, cancel := context.WithTimeout(ctx, s.cfg.AdminTimeout)
	defer cancel()
	table := d.GetTable()
	classified := func(what string, err error) error {
		return fmt.Errorf("%s: %w", what, classify(err, actx.Err() != nil && ctx.Err() == nil))
	}
	exists := true
	if err := s.adminClient().DisableTable(hrpc.NewDisableTable(actx, []byte(table))); err != nil {
		switch {
		case remoteClass(err, "TableNotFoundException"):
			exists = false
		case remoteClass(err, "TableNotEnabledException"):
		default:
			return classified("disable", err)
		}
	}
	resp, err := s.sendMaster(actx, "RestoreSnapshot",
		&pb.RestoreSnapshotRequest{Snapshot: &pb.SnapshotDescription{Name: d.Name, Table: d.Table}}, &pb.RestoreSnapshotResponse{})
	if err != nil {
		return classified("restore", err)
	}
	if id, ok := procID(resp); ok {
		if err := s.waitProcedure(actx, id); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
	}
	if exists {
		if err := s.adminClient().EnableTable(hrpc.NewEnableTable(actx, []byte(table))); err != nil && !remoteClass(err, "TableNotDisabledException") {
			return classified("enable", err)
		}
	}
	return nil
}
