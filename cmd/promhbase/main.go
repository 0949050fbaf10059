// Command promhbase stores Prometheus samples in HBase in OpenTSDB's table
// schema: Prometheus's remote_write and remote_read point at it.
//
//	promhbase serve          the remote write / read server
//	promhbase scan           print the decoded rows of a metric and time range
//	promhbase uid            look up and assign UIDs
//	promhbase create-tables  create the tsdb, tsdb-uid and tsdb-meta tables (and promhbase's own) in HBase
//	promhbase compact        compact the rows of a time range into OpenTSDB's compacted column
//	promhbase reindex        build the series index for the rows of a time range
//	promhbase delete         delete the samples of selected series in a time range
//	promhbase rollup         build the rollups of a time range
//	promhbase rollup-config  print the rollup configuration (OpenTSDB's tsd.rollups.config JSON)
//	promhbase tenants        list the tenants and their HBase namespaces
//	promhbase rules backfill evaluate the stored recording rules over a past range
//	promhbase import         import Prometheus's TSDB blocks into a running promhbase
//	promhbase snapshot       create, list, delete and restore snapshots of the store
//
// Besides the flags (kingpin) and the commands: ruler.go starts the ruler
// in serve (its tenants, one per namespace with the rules table);
// servestart.go starts serve on an HBase not reached yet (503 with the
// reason, tried again in the background); tenants.go makes a tenant's
// tables on each backend; job.settle settles the embedded store after the
// commands that rewrite.
//
// docs/flags.md is generated from the flags defined here (see flagdoc.go).
package main

import (
	"fmt"
	"os"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
)

// commands are the commands of the application newApp builds, and the
// configuration their flags fill in.
type commands struct {
	cfg     *config
	serve   *kingpin.CmdClause
	scan    *scanCmd
	uid     *uidCmd
	create  *kingpin.CmdClause
	compact *compactCmd
	reindex *reindexCmd
	delete  *deleteCmd
	rollup  *rollupCmd
	rollupC *kingpin.CmdClause
	tenants *tenantsCmd
	imp     *importCmd
	snap    *snapshotCmd
	rules   *rulesCmd
}

// newApp builds the command line: every command and flag. main parses
// with it; the flag reference (docs/flags.md) is rendered from it.
func newApp() (*kingpin.Application, *commands) {
	app := kingpin.New("promhbase", "Prometheus remote storage on HBase, in OpenTSDB's table schema.")
	app.HelpFlag.Short('h')
	stampVersion()
	app.Version(version.Print("promhbase"))
	c := &commands{cfg: &config{}}
	c.cfg.registerCommon(app)
	c.serve = registerServe(app, c.cfg)
	c.scan = registerScan(app, c.cfg)
	c.uid = registerUID(app, c.cfg)
	c.create = registerCreateTables(app, c.cfg)
	c.compact = registerCompact(app)
	c.reindex = registerReindex(app)
	c.delete = registerDelete(app)
	c.rollup = registerRollup(app)
	c.rollupC = registerRollupConfig(app)
	c.tenants = registerTenants(app)
	c.imp = registerImport(app)
	c.snap = registerSnapshot(app)
	c.rules = registerRules(app)
	return app, c
}

func main() {
	app, c := newApp()
	cfg := c.cfg
	cmd, err := app.Parse(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "promhbase: %v\n", err)
		os.Exit(2)
	}
	switch cmd {
	case c.serve.FullCommand():
		err = runServe(app, cfg)
	case c.scan.cmd.FullCommand():
		err = c.scan.run(cfg)
	case c.create.FullCommand():
		err = runCreateTables(cfg)
	case c.compact.cmd.FullCommand():
		err = c.compact.run(cfg)
	case c.reindex.cmd.FullCommand():
		err = c.reindex.run(cfg)
	case c.delete.cmd.FullCommand():
		err = c.delete.run(cfg)
	case c.rollup.cmd.FullCommand():
		err = c.rollup.run(cfg)
	case c.rollupC.FullCommand():
		err = runRollupConfig(cfg)
	case c.tenants.cmd.FullCommand():
		err = c.tenants.run(cfg)
	case c.imp.cmd.FullCommand():
		err = c.imp.run()
	case c.snap.create.FullCommand(), c.snap.list.FullCommand(), c.snap.del.FullCommand(), c.snap.restore.FullCommand():
		err = c.snap.run(cmd, cfg)
	case c.rules.backfill.FullCommand():
		err = c.rules.run(cfg)
	default:
		err = c.uid.run(cmd, cfg)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "promhbase %s: %v\n", cmd, err)
		os.Exit(1)
	}
}
