package hbase

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tsuna/gohbase/hrpc"

	"github.com/promhbase/promhbase/store"
)

// Defaults of TablesConfig.
const (
	DefaultDataTable   = "tsdb"
	DefaultUIDTable    = "tsdb-uid"
	DefaultCompression = "NONE"
	DefaultBloomFilter = "ROW"
	DefaultSaltBuckets = 20
)

// TablesConfig describes the OpenTSDB tables that CreateTables creates, as
// OpenTSDB's create_table.sh creates them:
//
//	tsdb      family t: VERSIONS=1, BLOOMFILTER=ROW, COMPRESSION, TTL
//	tsdb-uid  families id and name: VERSIONS=1, BLOOMFILTER=ROW, COMPRESSION
//
// and promhbase's exemplar table, which OpenTSDB never reads, when named:
//
//	tsdb-exemplar  family e: VERSIONS=1, BLOOMFILTER=ROW, COMPRESSION, TTL
//	               (split as the data table: its rows have the same keys)
//
// and the series index, when named: OpenTSDB's meta table, as its
// create_table.sh creates it, and promhbase's own label index:
//
//	tsdb-meta   family name: VERSIONS=1, BLOOMFILTER=ROW, COMPRESSION
//	tsdb-index  family i: VERSIONS=1, BLOOMFILTER=ROW, COMPRESSION
//
// The zero value of every field selects its default.
type TablesConfig struct {
	// Namespace is the HBase namespace of the tables: when set,
	// CreateTables creates it first (CreateNamespace) and each table as
	// Namespace:name. Empty (or "default") is HBase's default namespace.
	Namespace string
	// DataTable is the name of the data table. Default DefaultDataTable.
	DataTable string
	// UIDTable is the name of the UID table. Default DefaultUIDTable.
	UIDTable string
	// ExemplarTable is the name of promhbase's exemplar table; empty
	// creates none.
	ExemplarTable string
	// MetaTable (OpenTSDB's tsdb-meta) and IndexTable are the tables of
	// the series index; empty creates none.
	MetaTable, IndexTable string
	// HATable is promhbase's table of HA pair elections (family h,
	// package hatracker); empty creates none.
	HATable string
	// RulesTable is promhbase's table of rule groups and their leases
	// (family r, package ruler); empty creates none.
	RulesTable string
	// RollupTables are OpenTSDB rollup and pre-aggregation tables (family
	// t, pre-split by salt as the data table): those of the rollup
	// configuration (package rollup); empty creates none.
	RollupTables []string
	// Compression is the HBase compression of every family: NONE, GZ,
	// SNAPPY, LZ4, LZO, BZIP2 or ZSTD; the region servers must support it.
	// Default DefaultCompression.
	Compression string
	// DataTTL is how long the data table keeps cells; zero keeps them
	// forever. HBase counts it in whole seconds.
	DataTTL time.Duration
	// SaltWidth is OpenTSDB's tsd.storage.salt.width: the bytes of salt at
	// the start of each data row key, 0 (no salt, the default) to 8. When
	// it is not zero the data table is pre-split into one region per salt
	// bucket.
	SaltWidth int
	// SaltBuckets is OpenTSDB's tsd.storage.salt.buckets. Default
	// DefaultSaltBuckets; used only when SaltWidth is not zero.
	SaltBuckets int
}

func (c TablesConfig) withDefaults() TablesConfig {
	if c.DataTable == "" {
		c.DataTable = DefaultDataTable
	}
	if c.UIDTable == "" {
		c.UIDTable = DefaultUIDTable
	}
	if c.Compression == "" {
		c.Compression = DefaultCompression
	}
	c.Compression = strings.ToUpper(c.Compression)
	if c.SaltBuckets == 0 {
		c.SaltBuckets = DefaultSaltBuckets
	}
	return c
}

// TableSpec describes one table for CreateTable.
type TableSpec struct {
	// Name is the table's name: qualifier, in the default namespace, or
	// ns:qualifier, in namespace ns, which must exist (CreateNamespace).
	Name string
	// Families maps each column family to its HBase attributes (VERSIONS,
	// COMPRESSION, BLOOMFILTER, TTL, DATA_BLOCK_ENCODING, ...). Attributes
	// not given take gohbase's defaults, except VERSIONS, which defaults to
	// 1 here, and DATA_BLOCK_ENCODING, which defaults to NONE as in the
	// HBase shell.
	Families map[string]map[string]string
	// SplitKeys pre-split the table: region i starts at SplitKeys[i-1].
	// They must be sorted and distinct.
	SplitKeys [][]byte
}

// TablesReport says which tables CreateTables created and which already
// existed (those were left as they were), by their full names
// (namespace:qualifier when TablesConfig.Namespace is set).
type TablesReport struct {
	Created []string
	Existed []string
}

// CreateTables creates the OpenTSDB data and UID tables that tc describes,
// and first tc.Namespace when it is set and does not exist. Tables that
// exist already are reported and left alone, so it can run any number of
// times.
func (s *Store) CreateTables(ctx context.Context, tc TablesConfig) (TablesReport, error) {
	tc = tc.withDefaults()
	specs, err := tablesSpecs(tc)
	if err != nil {
		return TablesReport{}, fmt.Errorf("create tables: %w", err)
	}
	if tc.Namespace != "" {
		if _, err := s.CreateNamespace(ctx, tc.Namespace); err != nil {
			return TablesReport{}, fmt.Errorf("create tables: %w", err)
		}
	}
	created := make([]bool, len(specs))
	errs := eachConcurrently(len(specs), func(i int) (err error) {
		spec := specs[i]
		spec.Name = qualifiedName(tc.Namespace, spec.Name)
		created[i], err = s.CreateTable(ctx, spec)
		return err
	})
	var rep TablesReport
	for i, spec := range specs {
		switch name := qualifiedName(tc.Namespace, spec.Name); {
		case errs[i] != nil:
		case created[i]:
			rep.Created = append(rep.Created, name)
		default:
			rep.Existed = append(rep.Existed, name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return rep, fmt.Errorf("create tables: %w", err)
	}
	return rep, nil
}

// adminConcurrency bounds the table creations (or drops) CreateTables
// (DropTables) has in flight: the master runs the procedures of distinct
// tables side by side, and each waits mostly on its regions' assignment.
const adminConcurrency = 12

// eachConcurrently calls do(i) for each i in [0, n), at most
// adminConcurrency at once, and returns their errors by i.
func eachConcurrently(n int, do func(i int) error) []error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, adminConcurrency) {
		wg.Go(func() {
			for i := range next {
				errs[i] = do(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errs
}

// tablesSpecs returns the specs of the data and the UID table.
func tablesSpecs(tc TablesConfig) ([]TableSpec, error) {
	if !validCompression(tc.Compression) {
		return nil, fmt.Errorf("compression %q is not one of NONE, GZ, SNAPPY, LZ4, LZO, BZIP2, ZSTD: %w", tc.Compression, store.ErrInvalid)
	}
	names := map[string]bool{}
	for _, n := range append([]string{tc.DataTable, tc.UIDTable, tc.ExemplarTable, tc.MetaTable, tc.IndexTable, tc.HATable, tc.RulesTable}, tc.RollupTables...) {
		if n != "" && names[n] {
			return nil, fmt.Errorf("tables %q, %q, %q, %q, %q, %q, %q and the rollup tables %q must have distinct names: %w",
				tc.DataTable, tc.UIDTable, tc.ExemplarTable, tc.MetaTable, tc.IndexTable, tc.HATable, tc.RulesTable, tc.RollupTables, store.ErrInvalid)
		}
		names[n] = true
	}
	if tc.DataTTL < 0 || (tc.DataTTL > 0 && tc.DataTTL < time.Second) {
		return nil, fmt.Errorf("data TTL %s is negative or below HBase's one second: %w", tc.DataTTL, store.ErrInvalid)
	}
	splits, err := SaltSplitKeys(tc.SaltWidth, tc.SaltBuckets)
	if err != nil {
		return nil, err
	}
	family := func() map[string]string {
		return map[string]string{
			"VERSIONS":    "1",
			"BLOOMFILTER": DefaultBloomFilter,
			"COMPRESSION": tc.Compression,
		}
	}
	data := family()
	if tc.DataTTL > 0 {
		data["TTL"] = strconv.FormatInt(int64(tc.DataTTL/time.Second), 10)
	}
	specs := []TableSpec{
		{Name: tc.DataTable, Families: map[string]map[string]string{"t": data}, SplitKeys: splits},
		{Name: tc.UIDTable, Families: map[string]map[string]string{"id": family(), "name": family()}},
	}
	if tc.ExemplarTable != "" {
		ex := family()
		if tc.DataTTL > 0 {
			ex["TTL"] = data["TTL"]
		}
		specs = append(specs, TableSpec{Name: tc.ExemplarTable, Families: map[string]map[string]string{"e": ex}, SplitKeys: splits})
	}
	if tc.MetaTable != "" {
		specs = append(specs, TableSpec{Name: tc.MetaTable, Families: map[string]map[string]string{"name": family()}})
	}
	if tc.IndexTable != "" {
		specs = append(specs, TableSpec{Name: tc.IndexTable, Families: map[string]map[string]string{"i": family()}})
	}
	if tc.HATable != "" {
		specs = append(specs, TableSpec{Name: tc.HATable, Families: map[string]map[string]string{"h": family()}})
	}
	if tc.RulesTable != "" {
		specs = append(specs, TableSpec{Name: tc.RulesTable, Families: map[string]map[string]string{"r": family()}})
	}
	for _, n := range tc.RollupTables {
		if n != "" {
			specs = append(specs, TableSpec{Name: n, Families: map[string]map[string]string{"t": family()}, SplitKeys: splits})
		}
	}
	return specs, nil
}

func validCompression(c string) bool {
	switch c {
	case "NONE", "GZ", "SNAPPY", "LZ4", "LZO", "BZIP2", "ZSTD":
		return true
	}
	return false
}

// SaltSplitKeys returns the keys that split a salted data table into one
// region per salt bucket: the salt prefix of buckets 1 to buckets-1, each
// bucket number written big-endian in width bytes, as OpenTSDB writes the
// salt. Width 0 means no salt and no split keys.
func SaltSplitKeys(width, buckets int) ([][]byte, error) {
	if width == 0 {
		return nil, nil
	}
	if width < 0 || width > 8 {
		return nil, fmt.Errorf("salt width %d is not within 0..8: %w", width, store.ErrInvalid)
	}
	if buckets < 1 {
		return nil, fmt.Errorf("salt buckets %d is below 1: %w", buckets, store.ErrInvalid)
	}
	if width < 8 && uint64(buckets-1) >= uint64(1)<<(8*width) {
		return nil, fmt.Errorf("salt buckets %d do not fit in %d salt bytes: %w", buckets, width, store.ErrInvalid)
	}
	keys := make([][]byte, 0, buckets-1)
	for b := 1; b < buckets; b++ {
		k := make([]byte, width)
		v := uint64(b)
		for i := width - 1; i >= 0; i-- {
			k[i] = byte(v)
			v >>= 8
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// CreateTable creates the table that spec describes and reports whether it
// did; an existing table of that name is left alone and reported as false.
// It waits for the master to finish creating the table.
func (s *Store) CreateTable(ctx context.Context, spec TableSpec) (bool, error) {
	if err := checkTableName(spec.Name); err != nil {
		return false, fmt.Errorf("create table: %w", err)
	}
	if len(spec.Families) == 0 {
		return false, fmt.Errorf("create table %s: no column families: %w", spec.Name, store.ErrInvalid)
	}
	for i := 1; i < len(spec.SplitKeys); i++ {
		if string(spec.SplitKeys[i-1]) >= string(spec.SplitKeys[i]) {
			return false, fmt.Errorf("create table %s: split keys %x and %x are not sorted and distinct: %w", spec.Name, spec.SplitKeys[i-1], spec.SplitKeys[i], store.ErrInvalid)
		}
	}
	exists, err := s.tableExists(ctx, spec.Name)
	if err != nil {
		return false, fmt.Errorf("create table %s: %w", spec.Name, err)
	}
	if exists {
		return false, nil
	}
	families := make(map[string]map[string]string, len(spec.Families))
	for f, attrs := range spec.Families {
		if f == "" {
			return false, fmt.Errorf("create table %s: empty family name: %w", spec.Name, store.ErrInvalid)
		}
		a := map[string]string{"VERSIONS": "1", "DATA_BLOCK_ENCODING": "NONE"}
		for k, v := range attrs {
			a[k] = v
		}
		families[f] = a
	}
	actx, cancel := context.WithTimeout(ctx, s.cfg.AdminTimeout)
	defer cancel()
	var opts []func(*hrpc.CreateTable)
	if len(spec.SplitKeys) > 0 {
		opts = append(opts, hrpc.SplitKeys(spec.SplitKeys))
	}
	err = s.adminClient().CreateTable(hrpc.NewCreateTable(actx, []byte(spec.Name), families, opts...))
	if err != nil {
		if re := parseRemote(err); re != nil && strings.HasSuffix(re.class, ".TableExistsException") {
			return false, nil // created meanwhile by someone else
		}
		return false, fmt.Errorf("create table %s: %w", spec.Name, classify(err, actx.Err() != nil && ctx.Err() == nil))
	}
	s.logger.Info("created hbase table", "table", spec.Name, "families", len(families), "regions", len(spec.SplitKeys)+1)
	return true, nil
}

// tableExists asks the master whether the table exists.
func (s *Store) tableExists(ctx context.Context, name string) (bool, error) {
	actx, cancel := context.WithTimeout(ctx, s.cfg.AdminTimeout)
	defer cancel()
	list, err := hrpc.NewListTableNames(actx, hrpc.ListRegex(quoteJavaRegex(name)))
	if err != nil {
		return false, fmt.Errorf("list tables: %w: %w", store.ErrInvalid, err)
	}
	names, err := s.adminClient().ListTableNames(list)
	if err != nil {
		return false, fmt.Errorf("list tables: %w", classify(err, actx.Err() != nil && ctx.Err() == nil))
	}
	ns, qualifier := splitTableName(name)
	for _, n := range names {
		got := string(n.GetNamespace())
		if got == "" {
			got = "default"
		}
		if string(n.GetQualifier()) == qualifier && got == ns {
			return true, nil
		}
	}
	return false, nil
}

// DropTables disables and deletes the tables; tables that do not exist are
// skipped. Meant for tests and for tearing down.
func (s *Store) DropTables(ctx context.Context, names ...string) error {
	return errors.Join(eachConcurrently(len(names), func(i int) error {
		if err := s.dropTable(ctx, names[i]); err != nil {
			return fmt.Errorf("drop table %s: %w", names[i], err)
		}
		return nil
	})...)
}

func (s *Store) dropTable(ctx context.Context, name string) error {
	if err := checkTableName(name); err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, s.cfg.AdminTimeout)
	defer cancel()
	ignore := func(err error, class string) error {
		if err == nil {
			return nil
		}
		if remoteClass(err, class) || remoteClass(err, "TableNotFoundException") || remoteClass(err, "NamespaceNotFoundException") {
			return nil
		}
		return classify(err, actx.Err() != nil && ctx.Err() == nil)
	}
	if err := ignore(s.adminClient().DisableTable(hrpc.NewDisableTable(actx, []byte(name))), "TableNotEnabledException"); err != nil {
		return fmt.Errorf("disable: %w", err)
	}
	if err := ignore(s.adminClient().DeleteTable(hrpc.NewDeleteTable(actx, []byte(name))), "TableNotFoundException"); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}

// checkTableName accepts HBase's table names: [namespace:]qualifier, the
// namespace as checkNamespaceName accepts it but not "default" (whose
// tables are named without it, see qualifiedName), the qualifier of
// letters, digits, '_', '-' and '.', not starting with '.' or '-'.
func checkTableName(name string) error {
	qualifier := name
	if ns, q, ok := strings.Cut(name, ":"); ok {
		if err := checkNamespaceName(ns); err != nil {
			return fmt.Errorf("table name %q: %w", name, err)
		}
		if ns == "default" {
			return fmt.Errorf("table name %q: name the tables of the default namespace without it: %w", name, store.ErrInvalid)
		}
		qualifier = q
	}
	if qualifier == "" {
		return fmt.Errorf("empty table name %q: %w", name, store.ErrInvalid)
	}
	for i, r := range qualifier {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' ||
			(i > 0 && (r == '-' || r == '.'))
		if !ok {
			return fmt.Errorf("table name %q: only letters, digits, '_', '-' and '.' (not first) are allowed in a qualifier: %w", name, store.ErrInvalid)
		}
	}
	return nil
}

// splitTableName splits a table name that checkTableName accepted into its
// namespace ("default" when it names none) and qualifier.
func splitTableName(name string) (ns, qualifier string) {
	if ns, qualifier, ok := strings.Cut(name, ":"); ok {
		return ns, qualifier
	}
	return "default", name
}

// quoteJavaRegex quotes a table name (see checkTableName) for
// java.util.regex: only '.' and '-' need care, '-' is literal outside
// brackets, and so is ':'.
func quoteJavaRegex(name string) string {
	return strings.ReplaceAll(name, ".", `\.`)
}
