package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/promhbase/promhbase/jobs/rollup"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/dense"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
)

// config holds the flags shared by every subcommand.
type config struct {
	backend      string
	embeddedPath string
	dataTable    string
	uidTable     string
	// exemplarTable is promhbase's own table of exemplars (family e),
	// which OpenTSDB never reads.
	exemplarTable string
	// metaTable (OpenTSDB's tsdb-meta) and indexTable (promhbase's own)
	// hold the series index.
	metaTable, indexTable string
	// haTable is promhbase's own table of HA pair elections (family h).
	haTable string
	// rulesTable is promhbase's own table of rule groups (family r).
	rulesTable string
	// rollupFile is --rollup.config-file; rollupCfg what it holds (or
	// the built-in default), read once.
	rollupFile          string
	rollupCfg           *rollup.Config
	layout              mapping.Layout
	uidCacheSize        int
	cacheBytes          int
	embeddedCacheBytes  int64
	embeddedBufferBytes int64
	embeddedWALSync     time.Duration
	minFreeDisk         units.Base2Bytes
	ballastBytes        units.Base2Bytes
	logLevel            string
	logFormat           string
	hbase               hbaseFlags
	// createTenants are create-tables' --tenant IDs.
	createTenants []string
}

func (c *config) registerCommon(app *kingpin.Application) {
	d := mapping.DefaultLayout()
	app.Flag("storage.backend", "Where samples are kept: embedded (one machine, Pebble) or hbase.").
		Default("embedded").EnumVar(&c.backend, "embedded", "hbase")
	app.Flag("storage.embedded.path", "Directory of the embedded store.").Default("./data").StringVar(&c.embeddedPath)
	app.Flag("storage.embedded.cache-bytes", "Block cache of the embedded store (Pebble's): index, filter and data blocks kept in memory.").Default(fmt.Sprint(embedded.DefaultCacheBytes)).Int64Var(&c.embeddedCacheBytes)
	app.Flag("storage.embedded.buffer-bytes", "Row buffer of the embedded store: the data table's recent cells are kept in memory, a row at a time, with their own write-ahead log, and written into Pebble sorted when the buffer holds this many bytes, or up to 4 times as many (at most half of --storage.embedded.cache-bytes) while most of its rows continue those of the buffer before it (a steady set of series: each flush then writes longer runs).").Default(fmt.Sprint(embedded.DefaultRowBufferBytes)).Int64Var(&c.embeddedBufferBytes)
	app.Flag("storage.embedded.wal-sync-interval", "How often the row buffer's write-ahead log is fdatasynced. A write is acknowledged once its samples are written to the log file: it survives promhbase being killed (kill -9) at any moment, and a power loss or kernel crash may lose the samples of the last interval (Prometheus's own WAL is fdatasynced every 128 MiB segment; VictoriaMetrics keeps about a second of samples in memory). 0 fdatasyncs the log before each write is acknowledged (a group commit of the concurrent writes): about 15 % fewer samples a second in steady writes on 2 cores. The UIDs, the series index and metadata are fdatasynced before each acknowledgment either way.").Default("100ms").DurationVar(&c.embeddedWALSync)
	app.Flag("storage.min-free-disk-space-bytes", "Free space on the embedded store's filesystem below which it turns read-only, as VictoriaMetrics's -storage.minFreeDiskSpaceBytes: writes (remote write, OTLP, imports) are answered 503 with Retry-After, so that senders keep their samples and retry; reads, rules, deletes and the store's own flushes and compactions go on. It turns writable by itself once the free space is a quarter above this again. Large enough for a row buffer flush (--storage.embedded.buffer-bytes, up to 4 times it) and Pebble's compactions to finish. 0 turns the watermark off (a write that finds the disk full still turns it read-only). Units: B, KB, MB, GB (powers of 1024). See docs/operations.md.").Default("512MB").BytesVar(&c.minFreeDisk)
	app.Flag("storage.embedded.ballast-bytes", "Space the embedded store holds in reserve in a ballast file (data/ballast): the first write that finds the disk full removes it and turns the store read-only, so that what is in flight finishes in the space it gives back (Pebble treats a failed log write as fatal); it is made again once space returns. 0: no ballast. Units: B, KB, MB, GB.").Default("64MB").BytesVar(&c.ballastBytes)
	app.Flag("hbase.table.data", "Data table (OpenTSDB's tsd.storage.hbase.data_table).").Default(mapping.DefaultDataTable).StringVar(&c.dataTable)
	app.Flag("hbase.table.uid", "UID table (OpenTSDB's tsd.storage.hbase.uid_table).").Default(mapping.DefaultUIDTable).StringVar(&c.uidTable)
	app.Flag("hbase.table.exemplar", "Exemplar table (promhbase's own; OpenTSDB never reads it). Rows have the data table's keys; created by create-tables.").Default(mapping.DefaultExemplarTable).StringVar(&c.exemplarTable)
	app.Flag("hbase.table.meta", "Meta table (OpenTSDB's tsd.storage.hbase.meta_table): one TSMeta row per series, so that OpenTSDB's /api/search/lookup finds promhbase's series; created by create-tables.").Default(mapping.DefaultMetaTable).StringVar(&c.metaTable)
	app.Flag("hbase.table.index", "Series index table (promhbase's own; OpenTSDB never reads it): label names and values by day; created by create-tables.").Default(mapping.DefaultIndexTable).StringVar(&c.indexTable)
	app.Flag("hbase.table.ha", "HA tracker table (promhbase's own; OpenTSDB never reads it): the elected replica of each HA Prometheus pair (--ha-tracker.enable); created by create-tables.").Default(mapping.DefaultHATable).StringVar(&c.haTable)
	app.Flag("hbase.table.rules", "Rules table (promhbase's own; OpenTSDB never reads it): the rule groups of the ruler configuration API (Mimir's /config/v1/rules) and their evaluation leases; created by create-tables.").Default(mapping.DefaultRulesTable).StringVar(&c.rulesTable)
	app.Flag("storage.salt.width", "Salt bytes in front of row keys (tsd.storage.salt.width); 0 turns salting off. Must match every writer of the table.").
		Default(fmt.Sprint(d.SaltWidth)).IntVar(&c.layout.SaltWidth)
	app.Flag("storage.salt.buckets", "Salt buckets (tsd.storage.salt.buckets).").Default(fmt.Sprint(d.SaltBuckets)).IntVar(&c.layout.SaltBuckets)
	app.Flag("storage.uid.width.metric", "Metric UID width in bytes (tsd.storage.uid.width.metric).").Default(fmt.Sprint(d.MetricWidth)).IntVar(&c.layout.MetricWidth)
	app.Flag("storage.uid.width.tagk", "Tag name UID width in bytes (tsd.storage.uid.width.tagk).").Default(fmt.Sprint(d.TagKWidth)).IntVar(&c.layout.TagKWidth)
	app.Flag("storage.uid.width.tagv", "Tag value UID width in bytes (tsd.storage.uid.width.tagv).").Default(fmt.Sprint(d.TagVWidth)).IntVar(&c.layout.TagVWidth)
	app.Flag("storage.uid.cache-size", "Entries kept per UID kind and direction, and per series cache generation.").Default("1000000").IntVar(&c.uidCacheSize)
	app.Flag("storage.cache.max-bytes", "Memory of the caches together: 50 % for the series cache (write path, about 150 bytes per active series; keep it above the active series' need or writes resolve series again), 15 % for the label cache (read path), 35 % for the six UID caches. Each is also bounded by --storage.uid.cache-size entries. 0: entries only.").Default("1073741824").IntVar(&c.cacheBytes)
	app.Flag("rollup.config-file", "Rollup configuration: a JSON file in the format of OpenTSDB's tsd.rollups.config (aggregationIds, intervals with their tables and row spans), so that a TSD given the same file reads promhbase's rollups. Empty: the built-in default (`promhbase rollup-config` prints it): 5m rollups in tsdb-rollup-5m (1d rows), 1h rollups in tsdb-rollup-1h (1n rows).").StringVar(&c.rollupFile)
	app.Flag("log.level", "Log level: debug, info, warn, error.").Default("info").EnumVar(&c.logLevel, "debug", "info", "warn", "error")
	app.Flag("log.format", "Log format: logfmt or json.").Default("logfmt").EnumVar(&c.logFormat, "logfmt", "json")
	c.hbase.register(app)
}

func (c *config) logger() *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(strings.ToUpper(c.logLevel)))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// backendString names the backend and where it is, for humans.
func (c *config) backendString() string {
	if c.backend == "hbase" {
		return "hbase (ZooKeeper " + c.hbase.quorum + ")"
	}
	return "embedded (" + c.embeddedPath + ")"
}

// rollups returns the rollup configuration: --rollup.config-file's, or
// the built-in default.
func (c *config) rollups() (*rollup.Config, error) {
	if c.rollupCfg != nil {
		return c.rollupCfg, nil
	}
	if c.rollupFile == "" {
		c.rollupCfg = rollup.Default()
		return c.rollupCfg, nil
	}
	f, err := os.Open(c.rollupFile)
	if err != nil {
		return nil, fmt.Errorf("rollup configuration: %w", err)
	}
	defer f.Close()
	rc, err := rollup.Read(f)
	if err != nil {
		return nil, fmt.Errorf("rollup configuration %s: %w", c.rollupFile, err)
	}
	if rc.DefaultInterval().Table != c.dataTable {
		return nil, fmt.Errorf("rollup configuration %s: its default interval's table is %q, the data table is %q (--hbase.table.data)", c.rollupFile, rc.DefaultInterval().Table, c.dataTable)
	}
	c.rollupCfg = rc
	return rc, nil
}

// rollupTables returns the rollup and pre-aggregation tables of the
// rollup configuration, and those of them promhbase writes.
func (c *config) rollupTables() (all, written []string, err error) {
	rc, err := c.rollups()
	if err != nil {
		return nil, nil, err
	}
	for _, iv := range rc.RollupIntervals() {
		all = append(all, iv.Table, iv.PreAggregationTable)
	}
	for _, iv := range rollup.Buildable(rc) {
		written = append(written, iv.Table)
	}
	return all, written, nil
}

// rowCodecs are the embedded store's row codecs: the data table's dense
// form, the rollup tables' packed columns. Once a store holds runs a
// codec packed it needs the codec to read them.
func rowCodecs(data string, rollups []string) map[string]embedded.RowCodec {
	m := map[string]embedded.RowCodec{data: &dense.Pool{}}
	for _, t := range rollups {
		m[t] = &rollup.Codec{}
	}
	return m
}

// openStore opens the configured backend.
func (c *config) openStore(reg prometheus.Registerer, logger *slog.Logger) (store.Store, error) {
	if err := c.layout.Validate(); err != nil {
		return nil, fmt.Errorf("storage layout: %w", err)
	}
	switch c.backend {
	case "embedded":
		if err := os.MkdirAll(c.embeddedPath, 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", c.embeddedPath, err)
		}
		rollupAll, rollupWritten, err := c.rollupTables()
		if err != nil {
			return nil, err
		}
		st, err := embedded.Open(c.embeddedPath, embedded.Options{
			CacheBytes: c.embeddedCacheBytes, Tables: append([]string{c.dataTable, c.uidTable, c.exemplarTable, c.metaTable, c.indexTable, c.haTable, c.rulesTable}, rollupAll...),
			BufferTables: append([]string{c.dataTable}, rollupWritten...), BufferBytes: c.embeddedBufferBytes,
			LogSyncInterval: c.embeddedWALSync,
			MinFreeBytes:    int64(c.minFreeDisk), BallastBytes: int64(c.ballastBytes),
			// Pebble cannot go on after a failed write of its log: the
			// process ends (CockroachDB's exit code for a full disk),
			// before anything more is acknowledged.
			OnFatal: func(msg string) {
				logger.Error("embedded store: fatal error, exiting", "err", msg)
				os.Exit(10)
			},
			// Settled rows of the data table in the dense form; once a
			// store holds such rows it needs the codec to read them.
			RowCodecs: rowCodecs(c.dataTable, rollupWritten),
		})
		if err != nil {
			return nil, err
		}
		if off := st.DiskGuardOff(); off != "" {
			logger.Warn("embedded store: "+off, "path", c.embeddedPath)
		}
		if reg != nil {
			if err := reg.Register(st.Collector()); err != nil {
				st.Close()
				return nil, fmt.Errorf("register the embedded store's metrics: %w", err)
			}
		}
		return st, nil
	case "hbase":
		return c.hbase.open(reg, logger)
	}
	return nil, fmt.Errorf("unknown storage backend %q", c.backend)
}

// newMapper returns the series mapper over the UID table of st (a
// tenant's view of the store, or the store), its cache metrics
// registered on reg.
func (c *config) newMapper(st store.Store, reg prometheus.Registerer, logger *slog.Logger) (*series.Mapper, error) {
	uids, err := uid.NewUIDs(st, c.layout, uid.UIDOptions{Table: c.uidTable, CacheSize: c.uidCacheSize, CacheBytes: c.cacheBytes * 35 / 100, Registerer: reg, Logger: logger,
		// Pebble locks the embedded store to this process, which has
		// these UIDs only.
		SoleWriter: c.backend == "embedded"})
	if err != nil {
		return nil, err
	}
	m := series.NewMapper(uids, c.layout, c.uidCacheSize)
	m.SetCacheBytes(c.cacheBytes*50/100, c.cacheBytes*15/100)
	if err := reg.Register(m.Collector()); err != nil {
		return nil, fmt.Errorf("register cache metrics: %w", err)
	}
	return m, nil
}

// cmdTimeout bounds the commands that look things up (scan, uid).
const cmdTimeout = 10 * time.Minute
