package main

import (
	"fmt"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/store"
)

// hbaseFlags are the --hbase.* flags.
type hbaseFlags struct {
	quorum string
	root   string
}

func (h *hbaseFlags) register(app *kingpin.Application) {
	app.Flag("hbase.zookeeper.quorum", "ZooKeeper quorum of the HBase cluster, host:port[,host:port...].").Default("localhost:2181").StringVar(&h.quorum)
	app.Flag("hbase.zookeeper.root", "HBase's znode parent (zookeeper.znode.parent).").Default("/hbase").StringVar(&h.root)
}

func (h *hbaseFlags) open(reg prometheus.Registerer, logger *slog.Logger) (store.Store, error) {
	return nil, fmt.Errorf("hbase backend: not wired yet")
}

func registerCreateTables(app *kingpin.Application, cfg *config) *kingpin.CmdClause {
	return app.Command("create-tables", "Create the data and UID tables in HBase (idempotent).")
}

func runCreateTables(cfg *config) error {
	return fmt.Errorf("create-tables: not wired yet")
}
