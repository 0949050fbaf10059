// Command promhbase stores Prometheus samples in HBase in OpenTSDB's table
// schema: Prometheus's remote_write and remote_read point at it.
//
//	promhbase serve          the remote write / read server
//	promhbase scan           print the decoded rows of a metric and time range
//	promhbase uid            look up and assign UIDs
//	promhbase create-tables  create the tsdb, tsdb-uid and tsdb-meta tables (and promhbase's own) in HBase
//	promhbase compact        compact the rows of a time range into OpenTSDB's compacted column
//	promhbase reindex        build the series index for the rows of a time range
package main

import (
	"fmt"
	"os"

	"github.com/alecthomas/kingpin/v2"
)

func main() {
	app := kingpin.New("promhbase", "Prometheus remote storage on HBase, in OpenTSDB's table schema.")
	app.HelpFlag.Short('h')
	app.Version(version)
	cfg := &config{}
	cfg.registerCommon(app)
	serve := registerServe(app, cfg)
	scan := registerScan(app, cfg)
	uid := registerUID(app, cfg)
	create := registerCreateTables(app, cfg)
	comp := registerCompact(app)
	reidx := registerReindex(app)

	cmd, err := app.Parse(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "promhbase: %v\n", err)
		os.Exit(2)
	}
	switch cmd {
	case serve.FullCommand():
		err = runServe(app, cfg)
	case scan.cmd.FullCommand():
		err = scan.run(cfg)
	case create.FullCommand():
		err = runCreateTables(cfg)
	case comp.cmd.FullCommand():
		err = comp.run(cfg)
	case reidx.cmd.FullCommand():
		err = reidx.run(cfg)
	default:
		err = uid.run(cmd, cfg)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "promhbase %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

const version = "0.1.0"
