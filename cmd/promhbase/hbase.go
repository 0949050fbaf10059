package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/hbase"
)

// hbaseFlags are the --hbase.* flags.
type hbaseFlags struct {
	quorum         string
	root           string
	rpcTimeout     time.Duration
	connectTimeout time.Duration
	compression    string
	dataTTL        time.Duration
}

func (h *hbaseFlags) register(app *kingpin.Application) {
	app.Flag("hbase.zookeeper.quorum", "ZooKeeper quorum of the HBase cluster, host:port[,host:port...].").Default("localhost:2181").StringVar(&h.quorum)
	app.Flag("hbase.zookeeper.root", "HBase's znode parent (zookeeper.znode.parent).").Default("/hbase").StringVar(&h.root)
	app.Flag("hbase.rpc-timeout", "Time limit of one attempt of one HBase operation.").Default("30s").DurationVar(&h.rpcTimeout)
	app.Flag("hbase.connect-timeout", "How long a command waits for HBase to be reached before its first operation: a session of the ZooKeeper quorum, the region server of hbase:meta it names, and the master for the commands that create or list tables. Past it the command gives up with an error naming the quorum and what failed; it logs that it waits every few seconds meanwhile. serve does not give up: it tries again in the background, answering /-/ready with 503 and the reason until HBase answers.").Default("30s").DurationVar(&h.connectTimeout)
}

func (h *hbaseFlags) config() hbase.Config {
	return hbase.Config{ZKQuorum: h.quorum, ZKRoot: h.root, RPCTimeout: h.rpcTimeout, ConnectTimeout: h.connectTimeout}
}

func (h *hbaseFlags) open(reg prometheus.Registerer, logger *slog.Logger) (store.Store, error) {
	return hbase.New(h.config(), reg, logger)
}

// reach waits until HBase can be reached (hbase.Probe with opts:
// opts.Master for the master too, opts.Logger told that it waits), and
// gives up after --hbase.connect-timeout or when ctx ends with an error
// naming the quorum and what failed.
func (h *hbaseFlags) reach(ctx context.Context, opts hbase.ProbeOptions) error {
	if err := h.checkConnectTimeout(); err != nil {
		return err
	}
	return hbase.Probe(ctx, h.config(), opts)
}

// checkConnectTimeout fails unless --hbase.connect-timeout is positive.
func (h *hbaseFlags) checkConnectTimeout() error {
	if h.connectTimeout <= 0 {
		return fmt.Errorf("--hbase.connect-timeout=%s: must be positive", h.connectTimeout)
	}
	return nil
}

// defaultCompression is create-tables' default: the best codec that every
// HBase 2.x has without extra modules or native libraries. HBase's GZ
// codec (ReusableStreamGzipCodec) falls back to the JDK's deflate when
// Hadoop's native library is missing, so it always works; ZSTD, SNAPPY, LZ4
// and LZO need a module on the region servers' classpath (their Hadoop
// defaults need native libraries), and a table created with one the
// region servers lack cannot be created at all (HBase's sanity check).
const defaultCompression = "GZ"

// builtinCompression reports whether every HBase 2.x compresses with c
// out of the box.
func builtinCompression(c string) bool {
	c = strings.ToUpper(c)
	return c == "NONE" || c == "GZ"
}

// compressionHint explains err when it looks like HBase's table sanity
// check refusing a compression codec the region servers cannot load,
// naming the codec and what to install; other errors are returned as
// they are.
func compressionHint(err error, compression string) error {
	if err == nil || builtinCompression(compression) {
		return err
	}
	text := err.Error()
	if !strings.Contains(text, "sanity check") && !strings.Contains(text, "failed test") &&
		!strings.Contains(text, "ClassNotFoundException") && !strings.Contains(text, "UnsatisfiedLinkError") {
		return err
	}
	c := strings.ToUpper(compression)
	hint := fmt.Sprintf("the region servers cannot compress with %s. ", c)
	switch c {
	case "ZSTD", "SNAPPY", "LZ4", "LZO":
		hint += fmt.Sprintf("Put HBase's hbase-compression-aircompressor module (org.apache.hbase:hbase-compression-aircompressor, with io.airlift:aircompressor; pure Java) "+
			"on every region server's classpath and set hbase.io.compress.%s.codec=org.apache.hadoop.hbase.io.compress.aircompressor.%s in hbase-site.xml, then restart them "+
			"(tools/scripts/hbase.sh does this for the test HBase; for ZSTD, hbase-compression-zstd works too). ",
			strings.ToLower(c), map[string]string{"ZSTD": "ZstdCodec", "SNAPPY": "SnappyCodec", "LZ4": "Lz4Codec", "LZO": "LzoCodec"}[c])
	case "BZIP2":
		hint += "BZIP2 needs Hadoop's native library on the region servers. "
	}
	hint += "GZ works on every HBase (--hbase.compression=GZ)"
	return fmt.Errorf("%s: %w", hint, err)
}

func registerCreateTables(app *kingpin.Application, cfg *config) *kingpin.CmdClause {
	cmd := app.Command("create-tables", "Create the data, UID and meta tables in HBase as OpenTSDB's create_table.sh does, and promhbase's exemplar, series index and HA tracker tables (idempotent: existing tables are reported and left alone).")
	cmd.Flag("hbase.compression", "Compression of every family: NONE, GZ, SNAPPY, LZ4, ZSTD, LZO, BZIP2. GZ, the default, works on every HBase 2.x with no native library (HBase's own codec over the JDK's deflate); ZSTD (usually smaller and faster than GZ), SNAPPY, LZ4 and LZO need a codec on every region server, e.g. HBase's pure-Java hbase-compression-aircompressor module (see docs/disk.md).").Default(defaultCompression).StringVar(&cfg.hbase.compression)
	cmd.Flag("hbase.data-ttl", "TTL of the data table's cells; 0 keeps them forever.").Default("0s").DurationVar(&cfg.hbase.dataTTL)
	cmd.Flag("tenant", "Create the tables of this tenant (--auth.multitenancy-enabled) instead of the default namespace's: its HBase namespace t_<ID> and every table in it (the embedded store: its namespace). Repeat it for several tenants.").StringsVar(&cfg.createTenants)
	return cmd
}

func runCreateTables(cfg *config) error {
	if err := cfg.layout.Validate(); err != nil {
		return err
	}
	if len(cfg.createTenants) > 0 {
		return cfg.createTenantTables(cfg.createTenants)
	}
	rollupTables, _, err := cfg.rollupTables()
	if err != nil {
		return err
	}
	logger := cfg.logger()
	st, err := hbase.New(cfg.hbase.config(), prometheus.NewRegistry(), logger)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cfg.hbase.reach(ctx, hbase.ProbeOptions{Master: true, Logger: logger}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	rep, err := st.CreateTables(ctx, hbase.TablesConfig{
		DataTable: cfg.dataTable, UIDTable: cfg.uidTable, ExemplarTable: cfg.exemplarTable,
		MetaTable: cfg.metaTable, IndexTable: cfg.indexTable, HATable: cfg.haTable, RulesTable: cfg.rulesTable, RollupTables: rollupTables,
		Compression: cfg.hbase.compression, DataTTL: cfg.hbase.dataTTL,
		SaltWidth: cfg.layout.SaltWidth, SaltBuckets: cfg.layout.SaltBuckets,
	})
	if len(rep.Created) > 0 {
		fmt.Printf("created: %s\n", strings.Join(rep.Created, ", "))
	}
	if len(rep.Existed) > 0 {
		fmt.Printf("already there, left alone: %s\n", strings.Join(rep.Existed, ", "))
	}
	return compressionHint(err, cfg.hbase.compression)
}
