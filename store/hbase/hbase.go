// Package hbase is the backend of store.Store on Apache HBase, through the
// gohbase client (github.com/tsuna/gohbase).
//
// A Store talks to one HBase cluster, found through ZooKeeper. Every
// operation runs under the caller's context and, per attempt, under
// Config.RPCTimeout; failures that may pass (a region moving, a server
// restarting, a timeout) are retried a bounded number of times with
// backoff when retrying is safe, and every error is wrapped with one of
// the sentinels of package store: store.ErrUnavailable, store.ErrTableNotFound
// or store.ErrInvalid.
//
// The admin helpers CreateTables, CreateTable and DropTables create and drop
// the OpenTSDB tables (tsdb, tsdb-uid) and test tables.
//
// Cell versions: a Store writes cells with the server's time unless the
// cell carries a timestamp, and reads only the newest version of a cell, as
// the tables are meant to keep one version (VERSIONS=1).
//
// Probe (probe.go) tells whether the cluster is reached within
// ConnectTimeout. Namespaces (namespace.go: CreateNamespace,
// ListNamespaceTables) hold tenants' tables. snapshot.go takes snapshots,
// one HBase snapshot a table, and restores them.
package hbase

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"

	"github.com/promhbase/promhbase/store"
)

// Defaults of Config.
const (
	DefaultZKQuorum             = "localhost:2181"
	DefaultZKRoot               = "/hbase"
	DefaultRPCTimeout           = 10 * time.Second
	DefaultAdminTimeout         = 2 * time.Minute
	DefaultFlushInterval        = time.Millisecond
	DefaultRetries              = 3
	DefaultScannerRenewInterval = 20 * time.Second
)

// Config configures a Store. The zero value of every field selects its
// default.
type Config struct {
	// ZKQuorum is the ZooKeeper quorum of the cluster as comma-separated
	// host:port pairs. Default DefaultZKQuorum.
	ZKQuorum string
	// ZKRoot is the znode under which HBase keeps its state
	// (zookeeper.znode.parent). Default DefaultZKRoot.
	ZKRoot string
	// RPCTimeout bounds one attempt of one operation (a Get, the Puts of
	// one Put call, an Increment, ...), including the region lookups it
	// needs. It also bounds each region lookup of a scan. Default
	// DefaultRPCTimeout.
	RPCTimeout time.Duration
	// AdminTimeout bounds one admin operation (create, disable or delete a
	// table, which wait for the master's procedure). Default
	// DefaultAdminTimeout.
	AdminTimeout time.Duration
	// FlushInterval is how long gohbase holds a batchable RPC (Get, Put,
	// Delete) to batch it with others for the same region server. Small
	// keeps latency low; Put already sends its rows as one batch. Default
	// DefaultFlushInterval; negative means no wait at all.
	FlushInterval time.Duration
	// RPCQueueSize is how many batchable RPCs gohbase queues per region
	// server before it sends them without waiting for FlushInterval.
	// Default gohbase's (100).
	RPCQueueSize int
	// Retries is how many times a failed attempt that may pass is tried
	// again. Default DefaultRetries; negative means never retry.
	Retries int
	// ScannerRenewInterval is how often a scan that the caller reads slowly
	// renews its scanner lease on the region server, which otherwise
	// expires after hbase.client.scanner.timeout.period (60 s by default).
	// Default DefaultScannerRenewInterval; negative disables renewal.
	ScannerRenewInterval time.Duration
	// ConnectTimeout bounds Probe: how long it tries to reach the
	// cluster before it gives up. Default DefaultConnectTimeout.
	ConnectTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.ZKQuorum == "" {
		c.ZKQuorum = DefaultZKQuorum
	}
	if c.ZKRoot == "" {
		c.ZKRoot = DefaultZKRoot
	}
	if c.RPCTimeout <= 0 {
		c.RPCTimeout = DefaultRPCTimeout
	}
	if c.AdminTimeout <= 0 {
		c.AdminTimeout = DefaultAdminTimeout
	}
	switch {
	case c.FlushInterval == 0:
		c.FlushInterval = DefaultFlushInterval
	case c.FlushInterval < 0:
		c.FlushInterval = 0
	}
	switch {
	case c.Retries == 0:
		c.Retries = DefaultRetries
	case c.Retries < 0:
		c.Retries = 0
	}
	switch {
	case c.ScannerRenewInterval == 0:
		c.ScannerRenewInterval = DefaultScannerRenewInterval
	case c.ScannerRenewInterval < 0:
		c.ScannerRenewInterval = 0
	}
	return c
}

// Store is a store.Store on an HBase cluster. It is safe for concurrent
// use. Close releases its connections.
type Store struct {
	cfg     Config
	logger  *slog.Logger
	client  gohbase.Client
	metrics *metrics

	// casServers: which region servers run batched check-and-puts.
	casServers casServers
	// regionBounds: the regions put calls met, to split Puts by.
	regionBounds regionBounds

	adminMu sync.Mutex
	admin   gohbase.AdminClient // nil until first used
}

var (
	_ store.Store               = (*Store)(nil)
	_ store.BatchCheckAndPutter = (*Store)(nil)
	_ store.CellsGetter         = (*Store)(nil)
	_ store.CheckAndPutSyncer   = (*Store)(nil)
)

// New returns a Store for the cluster cfg names. It does not connect: the
// first operation does, so New succeeds while HBase is down (Probe waits
// until it can be reached, for at most cfg.ConnectTimeout).
//
// When reg is not nil, New registers on it the store's own metrics and
// gohbase's (gohbase_*), which gohbase itself registers only on
// prometheus.DefaultRegisterer. Register one Store per registry; Close
// unregisters. A nil logger discards the logs.
func New(cfg Config, reg prometheus.Registerer, logger *slog.Logger) (*Store, error) {
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if strings.TrimSpace(cfg.ZKQuorum) == "" {
		return nil, fmt.Errorf("hbase store: empty zookeeper quorum: %w", store.ErrInvalid)
	}
	if !strings.HasPrefix(cfg.ZKRoot, "/") {
		return nil, fmt.Errorf("hbase store: zookeeper root %q does not start with /: %w", cfg.ZKRoot, store.ErrInvalid)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("hbase store: %w", err)
	}
	gl := logger.With("component", "gohbase")
	opts := []gohbase.Option{
		gohbase.ZookeeperRoot(cfg.ZKRoot),
		gohbase.FlushInterval(cfg.FlushInterval),
		gohbase.RegionLookupTimeout(cfg.RPCTimeout),
		gohbase.Logger(gl),
	}
	if cfg.RPCQueueSize > 0 {
		opts = append(opts, gohbase.RpcQueueSize(cfg.RPCQueueSize))
	}
	return &Store{
		cfg:     cfg,
		logger:  logger,
		client:  gohbase.NewClient(cfg.ZKQuorum, opts...),
		metrics: m,
	}, nil
}

// Close closes the store's connections and unregisters its metrics.
// Operations after Close fail.
func (s *Store) Close() error {
	s.client.Close()
	// The admin client is not closed: gohbase's admin client panics in
	// Close (it never makes the channel Close closes). It is created only
	// when an admin helper first runs, and holds one connection to the
	// master.
	s.metrics.unregister()
	return nil
}

// adminClient returns the admin client, creating it on first use.
func (s *Store) adminClient() gohbase.AdminClient {
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	if s.admin == nil {
		s.admin = gohbase.NewAdminClient(s.cfg.ZKQuorum, gohbase.ZookeeperRoot(s.cfg.ZKRoot), gohbase.Logger(s.logger.With("component", "gohbase")))
	}
	return s.admin
}

// mutation is one hrpc Put: the cells of one row that share a timestamp.
type mutation struct {
	row    []byte
	ts     uint64 // 0: the server's time
	values map[string]map[string][]byte
}

func (m mutation) options() []func(hrpc.Call) error {
	if m.ts == 0 {
		return nil
	}
	return []func(hrpc.Call) error{hrpc.TimestampUint64(m.ts)}
}

// mutations turns puts into hrpc mutations: one per row, or one per
// distinct timestamp of the row's cells, as an hrpc Put carries one
// timestamp. Puts without cells are dropped. Rows and values are copies:
// gohbase encodes a call when it sends it, which for an attempt given up
// on can be after Put has returned and its caller reused the puts.
func mutations(puts []store.Put) ([]mutation, error) {
	out := make([]mutation, 0, len(puts))
	for _, p := range puts {
		if len(p.Row) == 0 {
			return nil, fmt.Errorf("put with an empty row key: %w", store.ErrInvalid)
		}
		start := len(out)
	cells:
		for _, c := range p.Cells {
			if len(c.Family) == 0 {
				return nil, fmt.Errorf("row %x: cell with an empty family: %w", p.Row, store.ErrInvalid)
			}
			if c.Timestamp > math.MaxInt64 {
				return nil, fmt.Errorf("row %x: cell timestamp %d beyond HBase's range: %w", p.Row, c.Timestamp, store.ErrInvalid)
			}
			for i := start; i < len(out); i++ {
				if out[i].ts == c.Timestamp {
					addValue(out[i].values, c)
					continue cells
				}
			}
			m := mutation{row: bytes.Clone(p.Row), ts: c.Timestamp, values: make(map[string]map[string][]byte, 1)}
			addValue(m.values, c)
			out = append(out, m)
		}
	}
	return out, nil
}

func addValue(values map[string]map[string][]byte, c store.Cell) {
	fam := values[string(c.Family)]
	if fam == nil {
		fam = make(map[string][]byte, 1)
		values[string(c.Family)] = fam
	}
	v := bytes.Clone(c.Value)
	if v == nil {
		v = []byte{}
	}
	fam[string(c.Qualifier)] = v
}

// Put writes the puts into table and returns once every row is
// acknowledged. Each row is one mutation, atomic on its own. The rows go
// as put calls (putmulti.go): one Multi RPC per region, the regions' calls
// in parallel. Rows those leave without a clean answer go as one gohbase
// batch (SendBatch), one hrpc Put per row and distinct cell timestamp;
// rows that fail there with an error that may pass are sent again, up to
// Config.Retries times. Writing a row twice is harmless.
func (s *Store) Put(ctx context.Context, table string, puts []store.Put) error {
	if err := checkTable(table); err != nil {
		return fmt.Errorf("put into %s: %w", table, err)
	}
	if rpc, ok := s.client.(gohbase.RPCClient); ok {
		enc, idx, err := encodePuts(puts)
		if err != nil {
			return fmt.Errorf("put into %s: %w", table, err)
		}
		rest := s.putMulti(ctx, rpc, table, &enc)
		if len(rest) == 0 {
			return nil
		}
		left := make([]store.Put, len(rest))
		for j, i := range rest {
			left[j] = puts[idx[i]]
		}
		puts = left
	}
	muts, err := mutations(puts)
	if err != nil {
		return fmt.Errorf("put into %s: %w", table, err)
	}
	if len(muts) == 0 {
		return nil
	}
	failed, err := s.sendMutations(ctx, "put", table, muts, hrpc.NewPut)
	if err != nil {
		return fmt.Errorf("put %d rows into %s: %d failed: %w", len(muts), table, failed, err)
	}
	return nil
}

// newMutate builds one hrpc mutation: hrpc.NewPut or hrpc.NewDel.
type newMutate func(ctx context.Context, table, key []byte, values map[string]map[string][]byte, options ...func(hrpc.Call) error) (*hrpc.Mutate, error)

// sendMutations sends muts as gohbase batches and sends again those that
// failed with an error that may pass, up to Config.Retries times: the
// mutations must be idempotent. It returns how many failed in the end and
// the most telling error.
func (s *Store) sendMutations(ctx context.Context, op, table string, muts []mutation, build newMutate) (n int, err error) {
	defer func() { s.failed(op, err) }()
	pending := muts
	for attempt := 0; ; attempt++ {
		failed, err := s.sendOnce(ctx, table, pending, build)
		if err == nil {
			return 0, nil
		}
		if !s.shouldRetry(ctx, err, attempt, true) {
			return len(failed), err
		}
		s.retried(op, table, attempt, err)
		if sleep(ctx, backoff(attempt)) != nil {
			return len(failed), err
		}
		pending = failed
	}
}

// sendOnce sends the mutations as one batch and returns those that failed
// with the most telling error among them: one that will not pass if any,
// else the first.
func (s *Store) sendOnce(ctx context.Context, table string, muts []mutation, build newMutate) ([]mutation, error) {
	actx, cancel := context.WithTimeout(ctx, s.cfg.RPCTimeout)
	defer cancel()
	calls := make([]hrpc.Call, len(muts))
	tbl := []byte(table)
	for i, m := range muts {
		call, err := build(actx, tbl, m.row, m.values, m.options()...)
		if err != nil {
			return muts, fmt.Errorf("row %x: %w: %w", m.row, store.ErrInvalid, err)
		}
		calls[i] = call
	}
	res, ok := s.client.SendBatch(actx, calls)
	if ok {
		return nil, nil
	}
	timedOut := actx.Err() != nil && ctx.Err() == nil
	var (
		failed []mutation
		first  error
	)
	for i, r := range res {
		if r.Error == nil {
			continue
		}
		failed = append(failed, muts[i])
		first = s.moreTelling(first, r.Error, muts[i].row, timedOut)
	}
	if first == nil { // SendBatch said not OK but reported no error
		first = fmt.Errorf("batch not acknowledged: %w", store.ErrUnavailable)
		failed = muts
	}
	return failed, first
}

// moreTelling classifies err, the failure of a batch's call on row, and
// returns it or first, whichever tells more: an error that will not pass
// over one that may (first nil: err).
func (s *Store) moreTelling(first, err error, row []byte, timedOut bool) error {
	err = classify(err, timedOut)
	if timedOut {
		err = fmt.Errorf("no answer within %s: %w", s.cfg.RPCTimeout, err)
	}
	err = fmt.Errorf("row %x: %w", row, err)
	if first == nil || (errors.Is(first, store.ErrUnavailable) && !errors.Is(err, store.ErrUnavailable)) {
		return err
	}
	return first
}

// Get returns the newest version of the cells of row, restricted to family
// when it is not empty. A missing row is a Row with the key and no cells.
func (s *Store) Get(ctx context.Context, table string, row []byte, family string) (store.Row, error) {
	if err := checkRow(table, row); err != nil {
		return store.Row{}, fmt.Errorf("get row %x from %s: %w", row, table, err)
	}
	var opts []func(hrpc.Call) error
	if family != "" {
		opts = append(opts, hrpc.Families(map[string][]string{family: nil}))
	}
	out := store.Row{Key: bytes.Clone(row)}
	err := s.do(ctx, "get", table, true, func(actx context.Context) error {
		get, err := hrpc.NewGet(actx, []byte(table), row, opts...)
		if err != nil {
			return fmt.Errorf("%w: %w", store.ErrInvalid, err)
		}
		res, err := s.client.Get(get)
		if err != nil {
			return err
		}
		out.Cells = appendCells(out.Cells[:0], res.Cells)
		return nil
	})
	if err != nil {
		return store.Row{}, fmt.Errorf("get row %x from %s: %w", row, table, err)
	}
	return out, nil
}

// GetCells reads one cell (family:qualifier) of each of rows in one
// gohbase batch (SendBatch: one MultiRequest per region server, not an
// RPC per row, which a first contact's lookups of thousands of new names
// would otherwise send): values[i] and found[i] answer rows[i] (both of
// len(rows)). Gets that failed with an error that may pass are sent
// again, up to Config.Retries times; an error fails the whole call.
func (s *Store) GetCells(ctx context.Context, table string, rows [][]byte, family, qualifier string, values [][]byte, found []bool) (err error) {
	defer func() { s.failed("get", err) }()
	if err := checkTable(table); err != nil {
		return fmt.Errorf("get cells of %d rows in %s: %w", len(rows), table, err)
	}
	if len(values) != len(rows) || len(found) != len(rows) {
		return fmt.Errorf("get cells: %d values and %d found for %d rows: %w", len(values), len(found), len(rows), store.ErrInvalid)
	}
	for i, row := range rows {
		if err := checkRow(table, row); err != nil {
			return fmt.Errorf("get cells of %d rows in %s: %w", len(rows), table, err)
		}
		values[i], found[i] = nil, false
	}
	fams := map[string][]string{family: {qualifier}}
	pending := make([]int, len(rows))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 0; len(pending) > 0; attempt++ {
		failed, err := s.getOnce(ctx, table, rows, pending, fams, family, qualifier, values, found)
		if err == nil {
			return nil
		}
		if !s.shouldRetry(ctx, err, attempt, true) {
			return fmt.Errorf("get cells of %d rows in %s: %d failed: %w", len(rows), table, len(failed), err)
		}
		s.retried("get", table, attempt, err)
		if sleep(ctx, backoff(attempt)) != nil {
			return fmt.Errorf("get cells of %d rows in %s: %d failed: %w", len(rows), table, len(failed), err)
		}
		pending = failed
	}
	return nil
}

// getOnce sends the Gets of rows[pending] as one batch, fills in the
// answers of those that succeeded, and returns the rest with the most
// telling error among them (one that will not pass if any, else the
// first).
func (s *Store) getOnce(ctx context.Context, table string, rows [][]byte, pending []int, fams map[string][]string, family, qualifier string, values [][]byte, found []bool) ([]int, error) {
	actx, cancel := context.WithTimeout(ctx, s.cfg.RPCTimeout)
	defer cancel()
	calls := make([]hrpc.Call, len(pending))
	tbl := []byte(table)
	for j, i := range pending {
		get, err := hrpc.NewGet(actx, tbl, rows[i], hrpc.Families(fams))
		if err != nil {
			return pending, fmt.Errorf("row %x: %w: %w", rows[i], store.ErrInvalid, err)
		}
		calls[j] = get
	}
	res, _ := s.client.SendBatch(actx, calls)
	timedOut := actx.Err() != nil && ctx.Err() == nil
	var (
		failed []int
		first  error
	)
	for j, r := range res {
		i := pending[j]
		err := r.Error
		var resp *pb.GetResponse
		if err == nil {
			var ok bool
			if resp, ok = r.Msg.(*pb.GetResponse); !ok {
				err = fmt.Errorf("answer of type %T to a get: %w", r.Msg, store.ErrUnavailable)
			}
		}
		if err != nil {
			failed = append(failed, i)
			first = s.moreTelling(first, err, rows[i], timedOut)
			continue
		}
		for _, c := range hrpc.ToLocalResult(resp.Result).Cells {
			if string(c.Family) == family && string(c.Qualifier) == qualifier {
				values[i], found[i] = c.Value, true
				break
			}
		}
	}
	if first == nil && len(res) != len(calls) {
		return pending, fmt.Errorf("%d answers to %d gets: %w", len(res), len(calls), store.ErrUnavailable)
	}
	return failed, first
}

// appendCells converts gohbase cells. The byte slices are shared, not
// copied: gohbase allocates them per response.
func appendCells(dst []store.Cell, cells []*hrpc.Cell) []store.Cell {
	for _, c := range cells {
		pc := (*pb.Cell)(c)
		dst = append(dst, store.Cell{
			Family:    pc.Family,
			Qualifier: pc.Qualifier,
			Value:     pc.Value,
			Timestamp: pc.GetTimestamp(),
		})
	}
	return dst
}

// Increment adds delta to the 8-byte big-endian counter in the cell and
// returns the new value. It is not retried once an attempt may have reached
// the server, as that attempt may have been applied; gohbase itself retries
// what the server declined to run.
func (s *Store) Increment(ctx context.Context, table string, row []byte, family, qualifier string, delta int64) (int64, error) {
	if err := checkCell(table, row, family); err != nil {
		return 0, fmt.Errorf("increment %s:%s of row %x in %s: %w", family, qualifier, row, table, err)
	}
	var v int64
	err := s.do(ctx, "increment", table, false, func(actx context.Context) error {
		// Sent as an RPC of its own, never in a Multi with the other
		// calls queued for the region server: an increment's result cell
		// parsed from a Multi response has crashed the process inside
		// gohbase (a slice out of range in hrpc.cellFromCellBlock, called
		// from region.multi.DeserializeCellBlocks, in the first round of a
		// 100 k-series load on fresh tables; gohbase issue #144 reports
		// the same). Increments are rare (one per batch of new UIDs), so
		// this costs nothing measurable.
		inc, err := hrpc.NewIncSingle(actx, []byte(table), row, family, qualifier, delta, hrpc.SkipBatch())
		if err != nil {
			return fmt.Errorf("%w: %w", store.ErrInvalid, err)
		}
		v, err = s.client.Increment(inc)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("increment %s:%s of row %x in %s by %d: %w", family, qualifier, row, table, delta, err)
	}
	return v, nil
}

// CheckAndPut writes put only if the cell family:qualifier of put.Row holds
// expected (nil or empty: the cell is absent), atomically, and reports
// whether it wrote. All cells of put must share one timestamp. An attempt
// that timed out is retried: if it had been applied, the retry reports
// false and the cell holds put's value.
func (s *Store) CheckAndPut(ctx context.Context, table string, put store.Put, family, qualifier string, expected []byte) (bool, error) {
	if err := checkCell(table, put.Row, family); err != nil {
		return false, fmt.Errorf("check-and-put %s:%s of row %x in %s: %w", family, qualifier, put.Row, table, err)
	}
	muts, err := mutations([]store.Put{put})
	if err == nil && len(muts) != 1 {
		err = fmt.Errorf("%d distinct cell timestamps (want 1, and at least one cell): %w", len(muts), store.ErrInvalid)
	}
	if err != nil {
		return false, fmt.Errorf("check-and-put %s:%s of row %x in %s: %w", family, qualifier, put.Row, table, err)
	}
	m := muts[0]
	var written bool
	err = s.do(ctx, "check_and_put", table, true, func(actx context.Context) error {
		p, err := hrpc.NewPut(actx, []byte(table), m.row, m.values, m.options()...)
		if err != nil {
			return fmt.Errorf("%w: %w", store.ErrInvalid, err)
		}
		written, err = s.client.CheckAndPut(p, family, qualifier, expected)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("check-and-put %s:%s of row %x in %s: %w", family, qualifier, put.Row, table, err)
	}
	return written, nil
}

// Delete removes the listed columns of row, or the whole row when columns
// is empty. Deleting what does not exist is no error. An hrpc Delete
// carries one timestamp, so the columns are grouped by their Timestamp
// bound: one hrpc Delete per distinct bound ("delete columns up to ts";
// zero: every version), sent as one gohbase batch. The groups are atomic
// only each on its own; failed ones are sent again as Put does.
func (s *Store) Delete(ctx context.Context, table string, row []byte, columns []store.Column) error {
	if err := checkRow(table, row); err != nil {
		return fmt.Errorf("delete row %x in %s: %w", row, table, err)
	}
	muts, err := deletions(row, columns)
	if err != nil {
		return fmt.Errorf("delete in row %x of %s: %w", row, table, err)
	}
	if len(muts) == 1 {
		// One group: a plain Delete, which gohbase may batch with others.
		m := muts[0]
		err = s.do(ctx, "delete", table, true, func(actx context.Context) error {
			del, err := hrpc.NewDel(actx, []byte(table), row, m.values, m.options()...)
			if err != nil {
				return fmt.Errorf("%w: %w", store.ErrInvalid, err)
			}
			_, err = s.client.Delete(del)
			return err
		})
	} else {
		var failed int
		if failed, err = s.sendMutations(ctx, "delete", table, muts, hrpc.NewDel); err != nil {
			err = fmt.Errorf("%d of %d timestamp groups failed: %w", failed, len(muts), err)
		}
	}
	if err != nil {
		if len(columns) == 0 {
			return fmt.Errorf("delete row %x in %s: %w", row, table, err)
		}
		return fmt.Errorf("delete %d columns of row %x in %s: %w", len(columns), row, table, err)
	}
	return nil
}

// deletions turns the columns of a delete into hrpc mutations: one per
// distinct Timestamp bound, in the order the bounds first appear; none
// (a nil values map) deletes the whole row.
func deletions(row []byte, columns []store.Column) ([]mutation, error) {
	if len(columns) == 0 {
		return []mutation{{row: row}}, nil
	}
	var out []mutation
cols:
	for _, c := range columns {
		if len(c.Family) == 0 {
			return nil, fmt.Errorf("column with an empty family: %w", store.ErrInvalid)
		}
		if c.Timestamp > math.MaxInt64 {
			return nil, fmt.Errorf("column %s:%x: timestamp %d beyond HBase's range: %w", c.Family, c.Qualifier, c.Timestamp, store.ErrInvalid)
		}
		for i := range out {
			if out[i].ts == c.Timestamp {
				addDeleted(out[i].values, c)
				continue cols
			}
		}
		m := mutation{row: row, ts: c.Timestamp, values: make(map[string]map[string][]byte, 1)}
		addDeleted(m.values, c)
		out = append(out, m)
	}
	return out, nil
}

func addDeleted(values map[string]map[string][]byte, c store.Column) {
	fam := values[string(c.Family)]
	if fam == nil {
		fam = make(map[string][]byte, 1)
		values[string(c.Family)] = fam
	}
	fam[string(c.Qualifier)] = nil
}

func checkTable(table string) error {
	if table == "" {
		return fmt.Errorf("empty table name: %w", store.ErrInvalid)
	}
	return nil
}

func checkRow(table string, row []byte) error {
	if err := checkTable(table); err != nil {
		return err
	}
	if len(row) == 0 {
		return fmt.Errorf("empty row key: %w", store.ErrInvalid)
	}
	return nil
}

func checkCell(table string, row []byte, family string) error {
	if err := checkRow(table, row); err != nil {
		return err
	}
	if family == "" {
		return fmt.Errorf("empty family: %w", store.ErrInvalid)
	}
	return nil
}
