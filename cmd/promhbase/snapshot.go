package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/promhbase/promhbase/server/tenant"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
	"github.com/promhbase/promhbase/store/hbase"
)

// snapshotCmd is `promhbase snapshot create|list|delete|restore`
// (docs/backup.md).
type snapshotCmd struct {
	cmd                        *kingpin.CmdClause
	create, list, del, restore *kingpin.CmdClause
	tenant, name, into         string
	createTimeout              time.Duration
}

func registerSnapshot(app *kingpin.Application) *snapshotCmd {
	c := &snapshotCmd{}
	c.cmd = app.Command("snapshot", "Snapshots of the store, for backups (docs/backup.md). A running serve takes them with POST /api/v1/admin/tsdb/snapshot (--web.enable-admin-api).")
	c.create = c.cmd.Command("create", "Take a snapshot and print its name. HBase: an HBase snapshot of every table promhbase uses, of the default namespace and of every tenant (or of --tenant's), named NAME.NAMESPACE.TABLE; "+
		"embedded: a copy of the whole store in <data dir>/snapshots/NAME (hard links; serve must be stopped: a running one takes it through the admin API).")
	c.create.Flag("tenant", "Snapshot only this tenant's tables (HBase).").StringVar(&c.tenant)
	c.create.Flag("name", "The snapshot's name (letters, digits, '-' and '_'); default: the time and a random number, as Prometheus names its snapshots.").StringVar(&c.name)
	c.list = c.cmd.Command("list", "List the snapshots: name, creation time (UTC), and its tables (HBase) or directory (embedded), one per line, oldest first.")
	c.del = c.cmd.Command("delete", "Delete a snapshot (every table's copy of it).")
	c.del.Arg("name", "The snapshot.").Required().StringVar(&c.name)
	c.restore = c.cmd.Command("restore", "Restore a snapshot. HBase: every table of it is put back as the snapshot holds it (disabled, restored, enabled; a dropped table created again): "+
		"stop every promhbase and TSD using the tables first, and what was written after the snapshot is gone. Embedded: the snapshot is copied into --into, a new directory, to run serve on (--storage.embedded.path).")
	c.restore.Arg("name", "The snapshot.").Required().StringVar(&c.name)
	c.restore.Flag("into", "Embedded store: the new data directory to restore into (must not exist or be empty).").StringVar(&c.into)
	c.cmd.Flag("snapshot.timeout", "Time limit of the command.").Default("30m").DurationVar(&c.createTimeout)
	return c
}

func (c *snapshotCmd) run(cmd string, cfg *config) error {
	j, err := cfg.openAdminJob(c.createTimeout)
	if err != nil {
		return err
	}
	defer j.close()
	sn, ok := store.As[store.Snapshotter](j.st)
	if !ok {
		return errors.New("this store keeps no snapshots")
	}
	switch cmd {
	case c.create.FullCommand():
		name := c.name
		if name == "" {
			name = store.NewSnapshotName(time.Now(), rand.Uint64())
		}
		tables, err := c.tables(j, cfg)
		if err != nil {
			return err
		}
		start := time.Now()
		if err := sn.CreateSnapshot(j.ctx, name, tables); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "snapshot taken in %s\n", time.Since(start).Round(time.Millisecond))
		fmt.Println(name)
	case c.list.FullCommand():
		list, err := sn.ListSnapshots(j.ctx)
		if err != nil {
			return err
		}
		for _, s := range list {
			where := s.Location
			if len(s.Tables) > 0 {
				where = strings.Join(s.Tables, ",")
			}
			fmt.Printf("%s\t%s\t%s\n", s.Name, s.Created.UTC().Format(time.RFC3339), where)
		}
	case c.del.FullCommand():
		return sn.DeleteSnapshot(j.ctx, c.name)
	case c.restore.FullCommand():
		return c.runRestore(j, sn)
	}
	return nil
}

// runRestore restores snapshot c.name (see the command's help).
func (c *snapshotCmd) runRestore(j *job, sn store.Snapshotter) error {
	switch st := j.st.(type) {
	case *hbase.Store:
		if c.into != "" {
			return errors.New("--into is for the embedded store: on HBase a snapshot is restored into its tables")
		}
		start := time.Now()
		if err := st.RestoreSnapshot(j.ctx, c.name); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "snapshot %s restored in %s\n", c.name, time.Since(start).Round(time.Millisecond))
	case *embedded.Store:
		if c.into == "" {
			return errors.New("name the new data directory to restore into with --into")
		}
		list, err := sn.ListSnapshots(j.ctx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(list, func(s store.SnapshotInfo) bool { return s.Name == c.name })
		if i < 0 {
			return fmt.Errorf("snapshot %q: none (promhbase snapshot list shows them)", c.name)
		}
		if err := embedded.CopySnapshot(list[i].Location, c.into); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "snapshot %s restored into %s: run serve with --storage.embedded.path=%s\n", c.name, c.into, c.into)
	default:
		return errors.New("this store cannot restore snapshots")
	}
	return nil
}

// tables returns the tables a snapshot copies: every table promhbase
// uses, in the default namespace and in every tenant's (HBase), or in
// --tenant's only.
func (c *snapshotCmd) tables(j *job, cfg *config) ([]string, error) {
	rollupAll, _, err := cfg.rollupTables()
	if err != nil {
		return nil, err
	}
	isUID := func(t string) bool {
		_, q, ok := strings.Cut(t, ":")
		return t == cfg.uidTable || ok && q == cfg.uidTable
	}
	names := append([]string{cfg.dataTable, cfg.exemplarTable, cfg.metaTable, cfg.indexTable, cfg.haTable, cfg.rulesTable, cfg.uidTable}, rollupAll...)
	in := func(ns string) []string {
		var out []string
		for _, n := range names {
			if n != "" && !slices.Contains(out, ns+n) {
				out = append(out, ns+n)
			}
		}
		return out
	}
	if c.tenant != "" {
		if err := tenant.ValidateID(c.tenant); err != nil {
			return nil, err
		}
		return in(tenant.Namespace(c.tenant) + ":"), nil
	}
	tables := in("")
	if st, ok := j.st.(*hbase.Store); ok {
		m, err := st.ListNamespaceTables(j.ctx, tenant.NamespacePrefix)
		if err != nil {
			return nil, err
		}
		nss := make([]string, 0, len(m))
		for ns := range m {
			if _, err := tenant.IDFromNamespace(ns); err == nil {
				nss = append(nss, ns)
			}
		}
		slices.Sort(nss)
		for _, ns := range nss {
			tables = append(tables, in(ns+":")...)
		}
	}
	// The UID tables last (store.Snapshotter).
	slices.SortStableFunc(tables, func(a, b string) int {
		return boolInt(isUID(a)) - boolInt(isUID(b))
	})
	return tables, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
