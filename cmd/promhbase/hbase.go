package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/hbase"
)

// hbaseFlags are the --hbase.* flags.
type hbaseFlags struct {
	quorum      string
	root        string
	rpcTimeout  time.Duration
	compression string
	dataTTL     time.Duration
}

func (h *hbaseFlags) register(app *kingpin.Application) {
	app.Flag("hbase.zookeeper.quorum", "ZooKeeper quorum of the HBase cluster, host:port[,host:port...].").Default("localhost:2181").StringVar(&h.quorum)
	app.Flag("hbase.zookeeper.root", "HBase's znode parent (zookeeper.znode.parent).").Default("/hbase").StringVar(&h.root)
	app.Flag("hbase.rpc-timeout", "Time limit of one attempt of one HBase operation.").Default("30s").DurationVar(&h.rpcTimeout)
}

func (h *hbaseFlags) config() hbase.Config {
	return hbase.Config{ZKQuorum: h.quorum, ZKRoot: h.root, RPCTimeout: h.rpcTimeout}
}

func (h *hbaseFlags) open(reg prometheus.Registerer, logger *slog.Logger) (store.Store, error) {
	return hbase.New(h.config(), reg, logger)
}

func registerCreateTables(app *kingpin.Application, cfg *config) *kingpin.CmdClause {
	cmd := app.Command("create-tables", "Create the data, UID and meta tables in HBase as OpenTSDB's create_table.sh does, and promhbase's exemplar and series index tables (idempotent: existing tables are reported and left alone).")
	cmd.Flag("hbase.compression", "Compression of every family: NONE, SNAPPY, LZO, GZ, LZ4, ZSTD, BZIP2 (the region servers must support it).").Default("NONE").StringVar(&cfg.hbase.compression)
	cmd.Flag("hbase.data-ttl", "TTL of the data table's cells; 0 keeps them forever.").Default("0s").DurationVar(&cfg.hbase.dataTTL)
	return cmd
}

func runCreateTables(cfg *config) error {
	if err := cfg.layout.Validate(); err != nil {
		return err
	}
	logger := cfg.logger()
	st, err := hbase.New(cfg.hbase.config(), prometheus.NewRegistry(), logger)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := st.CreateTables(ctx, hbase.TablesConfig{
		DataTable: cfg.dataTable, UIDTable: cfg.uidTable, ExemplarTable: cfg.exemplarTable,
		MetaTable: cfg.metaTable, IndexTable: cfg.indexTable, Compression: cfg.hbase.compression, DataTTL: cfg.hbase.dataTTL,
		SaltWidth: cfg.layout.SaltWidth, SaltBuckets: cfg.layout.SaltBuckets,
	})
	if len(rep.Created) > 0 {
		fmt.Printf("created: %s\n", strings.Join(rep.Created, ", "))
	}
	if len(rep.Existed) > 0 {
		fmt.Printf("already there, left alone: %s\n", strings.Join(rep.Existed, ", "))
	}
	return err
}
