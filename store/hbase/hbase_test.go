package hbase

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tsuna/gohbase/hrpc"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/storetest"
)

// The tests in this file need a running HBase: tools/scripts/hbase.sh up starts
// one. PROMHBASE_HBASE_ZK names its ZooKeeper (default 127.0.0.1:2181).
// Without one they skip, except under CI=true, where they fail.

func zkQuorum() string {
	if zk := os.Getenv("PROMHBASE_HBASE_ZK"); zk != "" {
		return zk
	}
	return "127.0.0.1:2181"
}

func testLogger(tb testing.TB) *slog.Logger {
	tb.Helper()
	return slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// needHBase returns a Store on the test HBase, closed at the end of the
// test. When ZooKeeper does not answer it skips the test, or fails it under
// CI=true.
func needHBase(tb testing.TB) *Store {
	tb.Helper()
	zk := zkQuorum()
	first, _, _ := strings.Cut(zk, ",")
	if !strings.Contains(first, ":") {
		first += ":2181"
	}
	conn, err := net.DialTimeout("tcp", first, 2*time.Second)
	if err != nil {
		msg := fmt.Sprintf("no HBase: ZooKeeper %s does not answer (%v); start one with tools/scripts/hbase.sh up or set PROMHBASE_HBASE_ZK", zk, err)
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	conn.Close()
	s, err := New(Config{ZKQuorum: zk, RPCTimeout: 30 * time.Second}, nil, testLogger(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func testCtx(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// uniqueName returns a table name unique to this test run.
func uniqueName(tb testing.TB) string {
	tb.Helper()
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, tb.Name())
	if len(clean) > 60 {
		clean = clean[len(clean)-60:]
	}
	return fmt.Sprintf("promhbase_test_%s_%x", clean, time.Now().UnixNano())
}

// newTable creates a uniquely named table with the families and drops it
// at the end of the test.
func newTable(tb testing.TB, s *Store, families ...string) string {
	tb.Helper()
	name := uniqueName(tb)
	spec := TableSpec{Name: name, Families: map[string]map[string]string{}}
	for _, f := range families {
		spec.Families[f] = nil
	}
	mustCreate(tb, "table "+name, func(ctx context.Context) (bool, error) { return s.CreateTable(ctx, spec) },
		func(ctx context.Context) error { return s.DropTables(ctx, name) })
	return name
}

// mustCreate creates what (a table or namespace, named) with create, fails
// tb unless create made it anew, and drops it with drop at the end of the
// test, under a context of its own (the test's is cancelled by then).
func mustCreate(tb testing.TB, what string, create func(context.Context) (bool, error), drop func(context.Context) error) {
	tb.Helper()
	created, err := create(testCtx(tb))
	if err != nil {
		tb.Fatalf("create %s: %v", what, err)
	}
	if !created {
		tb.Fatalf("%s already existed", what)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := drop(ctx); err != nil {
			tb.Errorf("drop %s: %v", what, err)
		}
	})
}

func TestContract(t *testing.T) {
	t.Parallel()
	s := needHBase(t)
	storetest.Run(t, func(t *testing.T) (store.Store, string) {
		t.Helper()
		// Run calls this first in each case: the cases run in parallel,
		// each on a table of its own, so HBase's creates and drops overlap.
		t.Parallel()
		return s, newTable(t, s, storetest.Families...)
	}, storetest.Options{})
}

// quoteBytes writes every byte as \xHH.
func quoteBytes(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		fmt.Fprintf(&sb, `\x%02X`, c)
	}
	return sb.String()
}

// TestRowRegexBinaryKeys proves that RowRegex reaches HBase's
// RegexStringComparator with the JAVA engine and ISO-8859-1: every byte of
// the key, including line terminators (0x0A, 0x85), a backslash followed by
// E (0x5C 0x45, which ends \Q...\E quoting) and 0xFF, is matched exactly by
// its \xHH escape, and nothing else is.
func TestRowRegexBinaryKeys(t *testing.T) {
	s := needHBase(t)
	ctx := testCtx(t)
	table := newTable(t, s, "f")
	keys := map[string][]byte{
		"lf":     {0x00, 0x0A, 0x01},
		"nel":    {0x00, 0x85, 0x01},
		"bs-e":   {0x00, 0x5C, 0x45, 0x01},
		"bs-e-e": {0x00, 0x5C, 0x45, 0x45, 0x01},
		"ff":     {0x00, 0xFF, 0x01},
		"cr":     {0x00, 0x0D, 0x01},       // decoy: another line terminator
		"bs":     {0x00, 0x5C, 0x01},       // decoy: the backslash alone
		"e":      {0x00, 0x45, 0x01},       // decoy: the E alone
		"ff-ff":  {0x00, 0xFF, 0xFF, 0x01}, // decoy: longer
		"mixed":  {0x0A, 0x85, 0x5C, 0x45, 0x45, 0xFF},
	}
	var puts []store.Put
	byKey := map[string]string{}
	for name, k := range keys {
		puts = append(puts, store.Put{Row: k, Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: []byte(name)}}})
		byKey[string(k)] = name
	}
	if err := s.Put(ctx, table, puts); err != nil {
		t.Fatal(err)
	}
	scanNames := func(t *testing.T, pattern string) []string {
		t.Helper()
		sc := s.Scan(ctx, store.ScanRequest{Table: table, RowRegex: pattern})
		defer sc.Close()
		var got []string
		for sc.Next() {
			got = append(got, byKey[string(sc.Row().Key)])
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("scan with regex %q: %v", pattern, err)
		}
		sort.Strings(got)
		return got
	}
	for name, k := range keys {
		t.Run("exact/"+name, func(t *testing.T) {
			pattern := `(?s)^` + quoteBytes(k) + `\z`
			if got := scanNames(t, pattern); strings.Join(got, ",") != name {
				t.Errorf("regex %q matched %v, want only %s", pattern, got, name)
			}
		})
	}
	for _, tc := range []struct {
		name    string
		pattern string
		want    []string
	}{
		{"any middle byte with DOTALL", `(?s)^\x00.\x01\z`, []string{"bs", "cr", "e", "ff", "lf", "nel"}},
		// Without (?s) Java's '.' stops at line terminators, 0x85 included:
		// proof that the JAVA engine, not Go's or JONI's rules, decides.
		{"any middle byte without DOTALL", `^\x00.\x01\z`, []string{"bs", "e", "ff"}},
		{"backslash E anywhere", `(?s)` + quoteBytes([]byte{0x5C, 0x45}), []string{"bs-e", "bs-e-e", "mixed"}},
		{"backslash E E", `(?s)^.*` + quoteBytes([]byte{0x5C, 0x45, 0x45}), []string{"bs-e-e", "mixed"}},
		{"alternation of byte strings", `(?s)^\x00(?:` + quoteBytes([]byte{0x0A}) + `|` + quoteBytes([]byte{0x85}) + `|` + quoteBytes([]byte{0xFF, 0xFF}) + `)\x01\z`, []string{"ff-ff", "lf", "nel"}},
		{"0xFF once", `(?s)^\x00\xFF{1}\x01\z`, []string{"ff"}},
		{"search, not full match", `\xFF`, []string{"ff", "ff-ff", "mixed"}},
		{"no match", `(?s)^\x02`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scanNames(t, tc.pattern)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("regex %q matched %v, want %v", tc.pattern, got, tc.want)
			}
			// Where Go's regexp agrees with Java (with (?s), or with no
			// '.'), it predicts the same rows on the Latin-1 decoded keys.
			if strings.HasPrefix(tc.pattern, "(?s)") || !strings.Contains(tc.pattern, ".") {
				re := regexp.MustCompile(tc.pattern)
				var local []string
				for name, k := range keys {
					if re.MatchString(mapping.Latin1String(k)) {
						local = append(local, name)
					}
				}
				sort.Strings(local)
				if strings.Join(local, ",") != strings.Join(got, ",") {
					t.Errorf("regex %q: Go's regexp on Latin-1 keys matches %v, HBase %v", tc.pattern, local, got)
				}
			}
		})
	}
}

func TestErrorClasses(t *testing.T) {
	s := needHBase(t)
	ctx := testCtx(t)
	table := newTable(t, s, "f")
	missing := table + "_missing"
	if err := s.Put(ctx, table, []store.Put{{Row: []byte("word"), Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("w"), Value: []byte("abc")}}}}); err != nil {
		t.Fatal(err)
	}
	scanErr := func(req store.ScanRequest) error {
		sc := s.Scan(ctx, req)
		defer sc.Close()
		for sc.Next() {
		}
		return sc.Err()
	}
	row := []byte{0x01, 0xAB}
	for _, tc := range []struct {
		name string
		do   func() error
		want error
	}{
		{"put into missing table", func() error {
			return s.Put(ctx, missing, []store.Put{{Row: row, Cells: []store.Cell{{Family: []byte("f"), Value: []byte("v")}}}})
		}, store.ErrTableNotFound},
		{"get from missing table", func() error { _, err := s.Get(ctx, missing, row, ""); return err }, store.ErrTableNotFound},
		{"increment in missing table", func() error { _, err := s.Increment(ctx, missing, row, "f", "c", 1); return err }, store.ErrTableNotFound},
		{"check-and-put in missing table", func() error {
			_, err := s.CheckAndPut(ctx, missing, store.Put{Row: row, Cells: []store.Cell{{Family: []byte("f"), Value: []byte("v")}}}, "f", "", nil)
			return err
		}, store.ErrTableNotFound},
		{"batch of check-and-puts in missing table", func() error {
			ops := []store.CondPut{{Put: store.Put{Row: row, Cells: []store.Cell{{Family: []byte("f"), Value: []byte("v")}}}, Family: "f"}}
			return s.CheckAndPutBatch(ctx, missing, ops, make([]bool, 1))
		}, store.ErrTableNotFound},
		{"delete in missing table", func() error { return s.Delete(ctx, missing, row, nil) }, store.ErrTableNotFound},
		{"scan of missing table", func() error { return scanErr(store.ScanRequest{Table: missing}) }, store.ErrTableNotFound},
		{"put into missing family", func() error {
			return s.Put(ctx, table, []store.Put{{Row: row, Cells: []store.Cell{{Family: []byte("nope"), Value: []byte("v")}}}})
		}, store.ErrInvalid},
		{"batch of check-and-puts in missing family", func() error {
			ops := []store.CondPut{{Put: store.Put{Row: row, Cells: []store.Cell{{Family: []byte("nope"), Value: []byte("v")}}}, Family: "f"}}
			return s.CheckAndPutBatch(ctx, table, ops, make([]bool, 1))
		}, store.ErrInvalid},
		{"get of missing family", func() error { _, err := s.Get(ctx, table, row, "nope"); return err }, store.ErrInvalid},
		{"regex that does not compile", func() error { return scanErr(store.ScanRequest{Table: table, RowRegex: `(?s)^(\x01`}) }, store.ErrInvalid},
		{"regex that is not UTF-8", func() error { return scanErr(store.ScanRequest{Table: table, RowRegex: "^\x85"}) }, store.ErrInvalid},
		{"increment of a 3-byte cell", func() error { _, err := s.Increment(ctx, table, []byte("word"), "f", "w", 1); return err }, store.ErrInvalid},
		{"put with an empty row", func() error {
			return s.Put(ctx, table, []store.Put{{Cells: []store.Cell{{Family: []byte("f"), Value: []byte("v")}}}})
		}, store.ErrInvalid},
		{"check-and-put with two timestamps", func() error {
			_, err := s.CheckAndPut(ctx, table, store.Put{Row: row, Cells: []store.Cell{
				{Family: []byte("f"), Qualifier: []byte("a"), Timestamp: 1},
				{Family: []byte("f"), Qualifier: []byte("b"), Timestamp: 2},
			}}, "f", "a", nil)
			return err
		}, store.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || len(msg) > 600 {
				t.Errorf("error text is not one short line: %q", msg)
			}
			t.Logf("%v", err)
		})
	}
}

// TestUnavailable needs no HBase: nothing listens where the store looks.
func TestUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s, err := New(Config{ZKQuorum: addr, RPCTimeout: 300 * time.Millisecond, Retries: 1}, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := testCtx(t)
	start := time.Now()
	_, err = s.Get(ctx, "tsdb", []byte("r"), "")
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("get with no HBase: err = %v, want store.ErrUnavailable", err)
	}
	err = s.Put(ctx, "tsdb", []store.Put{{Row: []byte("r"), Cells: []store.Cell{{Family: []byte("t"), Value: []byte("v")}}}})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("put with no HBase: err = %v, want store.ErrUnavailable", err)
	}
	sc := s.Scan(ctx, store.ScanRequest{Table: "tsdb"})
	for sc.Next() {
	}
	if err := sc.Err(); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("scan with no HBase: err = %v, want store.ErrUnavailable", err)
	} else {
		t.Logf("scan error: %v", err)
	}
	sc.Close()
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("three operations against no HBase took %s; the timeouts do not bound them", d)
	}
}

func TestPutCellTimestamps(t *testing.T) {
	s := needHBase(t)
	ctx := testCtx(t)
	table := newTable(t, s, "f", "g")
	before := uint64(time.Now().UnixMilli())
	err := s.Put(ctx, table, []store.Put{{Row: []byte("r"), Cells: []store.Cell{
		{Family: []byte("f"), Qualifier: []byte("old"), Value: []byte("1"), Timestamp: 1_000},
		{Family: []byte("g"), Qualifier: []byte("old"), Value: []byte("2"), Timestamp: 1_000},
		{Family: []byte("f"), Qualifier: []byte("older"), Value: []byte("3"), Timestamp: 500},
		{Family: []byte("f"), Qualifier: []byte("now"), Value: nil},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, table, []byte("r"), "")
	if err != nil {
		t.Fatal(err)
	}
	var desc []string
	for _, c := range got.Cells {
		ts := fmt.Sprint(c.Timestamp)
		if string(c.Qualifier) == "now" && c.Timestamp >= before {
			ts = "server-time"
		}
		desc = append(desc, fmt.Sprintf("%s:%s=%q@%s", c.Family, c.Qualifier, c.Value, ts))
	}
	want := `f:now=""@server-time f:old="1"@1000 f:older="3"@500 g:old="2"@1000`
	if strings.Join(desc, " ") != want {
		t.Errorf("cells = %s\nwant    %s", strings.Join(desc, " "), want)
	}
}

// TestGetCells: one batch of gets answers each row in its place, rows
// repeated, absent, or holding only other columns included; the value is
// the newest version.
func TestGetCells(t *testing.T) {
	s := needHBase(t)
	ctx := testCtx(t)
	table := newTable(t, s, "f", "g")
	cell := func(fam, qual, v string, ts uint64) store.Cell {
		return store.Cell{Family: []byte(fam), Qualifier: []byte(qual), Value: []byte(v), Timestamp: ts}
	}
	puts := []store.Put{
		{Row: []byte("a"), Cells: []store.Cell{cell("f", "q", "old", 1_000)}},
		{Row: []byte("a"), Cells: []store.Cell{cell("f", "q", "va", 2_000), cell("f", "other", "x", 2_000)}},
		{Row: []byte{0, 0xFF, 'b'}, Cells: []store.Cell{cell("f", "q", "vb", 0)}},
		{Row: []byte("c"), Cells: []store.Cell{cell("f", "other", "x", 0), cell("g", "q", "y", 0)}},
	}
	if err := s.Put(ctx, table, puts); err != nil {
		t.Fatal(err)
	}
	rows := [][]byte{{0, 0xFF, 'b'}, []byte("missing"), []byte("a"), []byte("c"), []byte("a")}
	values, found := make([][]byte, len(rows)), make([]bool, len(rows))
	if err := s.GetCells(ctx, table, rows, "f", "q", values, found); err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(rows))
	for i := range rows {
		got[i] = fmt.Sprintf("%v:%s", found[i], values[i])
	}
	if want := "true:vb false: true:va false: true:va"; strings.Join(got, " ") != want {
		t.Errorf("GetCells = %s, want %s", strings.Join(got, " "), want)
	}
	if err := s.GetCells(ctx, table, rows, "f", "q", values[:1], found); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("GetCells with short values: %v, want ErrInvalid", err)
	}
	if err := s.GetCells(ctx, uniqueName(t), rows[:1], "f", "q", values[:1], found[:1]); err == nil {
		t.Error("GetCells on a missing table: no error")
	}
}

func TestCreateTables(t *testing.T) {
	s := needHBase(t)
	ctx := testCtx(t)
	base := uniqueName(t)
	tc := TablesConfig{DataTable: base + "_tsdb", UIDTable: base + "_tsdb-uid", SaltWidth: 1, SaltBuckets: 4}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := s.DropTables(ctx, tc.DataTable, tc.UIDTable); err != nil {
			t.Errorf("drop: %v", err)
		}
	})
	rep, err := s.CreateTables(ctx, tc)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rep.Created) != fmt.Sprint([]string{tc.DataTable, tc.UIDTable}) || len(rep.Existed) != 0 {
		t.Errorf("first CreateTables = %+v, want both created", rep)
	}
	rep, err = s.CreateTables(ctx, tc)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rep.Existed) != fmt.Sprint([]string{tc.DataTable, tc.UIDTable}) || len(rep.Created) != 0 {
		t.Errorf("second CreateTables = %+v, want both existing", rep)
	}

	t.Run("data table is split by salt bucket", func(t *testing.T) {
		starts := regionStarts(t, s, tc.DataTable)
		if want := []string{"", "01", "02", "03"}; fmt.Sprint(starts) != fmt.Sprint(want) {
			t.Errorf("region start keys = %v, want %v", starts, want)
		}
		if starts := regionStarts(t, s, tc.UIDTable); len(starts) != 1 {
			t.Errorf("uid table regions start at %v, want one region", starts)
		}
	})
	t.Run("families", func(t *testing.T) {
		for _, c := range []struct {
			table, family string
			ok            bool
		}{
			{tc.DataTable, "t", true}, {tc.DataTable, "id", false},
			{tc.UIDTable, "id", true}, {tc.UIDTable, "name", true}, {tc.UIDTable, "t", false},
		} {
			err := s.Put(ctx, c.table, []store.Put{{Row: []byte{0x02, 0x00}, Cells: []store.Cell{{Family: []byte(c.family), Qualifier: []byte("q"), Value: []byte("v")}}}})
			if (err == nil) != c.ok || (err != nil && !errors.Is(err, store.ErrInvalid)) {
				t.Errorf("put into %s family %s: err = %v, want ok=%v", c.table, c.family, err, c.ok)
			}
		}
	})
	t.Run("one version per cell", func(t *testing.T) {
		for _, table := range []string{tc.DataTable, tc.UIDTable} {
			family := "t"
			if table == tc.UIDTable {
				family = "id"
			}
			for ts := uint64(1000); ts <= 3000; ts += 1000 {
				err := s.Put(ctx, table, []store.Put{{Row: []byte("versions"), Cells: []store.Cell{{Family: []byte(family), Qualifier: []byte("q"), Value: []byte(fmt.Sprint(ts)), Timestamp: ts}}}})
				if err != nil {
					t.Fatal(err)
				}
			}
			if n := countVersions(t, s, table, []byte("versions")); n != 1 {
				t.Errorf("table %s keeps %d versions of a cell, want 1", table, n)
			}
		}
	})
	t.Run("drop is idempotent", func(t *testing.T) {
		if err := s.DropTables(ctx, tc.DataTable, tc.UIDTable); err != nil {
			t.Fatal(err)
		}
		if err := s.DropTables(ctx, tc.DataTable, tc.UIDTable); err != nil {
			t.Fatalf("second drop: %v", err)
		}
		if _, err := s.Get(ctx, tc.DataTable, []byte("r"), ""); !errors.Is(err, store.ErrTableNotFound) {
			t.Errorf("get from dropped table: err = %v, want store.ErrTableNotFound", err)
		}
	})
}

// regionStarts returns the start keys (hex) of the table's regions, read
// from hbase:meta, whose row keys are "<table>,<start key>,<region id>...".
// (hbase:meta orders its rows by table, start key and region id, not by
// bytes, so a byte range like [table",", table",\xff") does not select
// them; the scan starts at the table's own row and stops after its
// regions.)
func regionStarts(t *testing.T, s *Store, table string) []string {
	t.Helper()
	sc := s.Scan(testCtx(t), store.ScanRequest{Table: "hbase:meta", Family: "info", Start: []byte(table)})
	defer sc.Close()
	var starts []string
	for sc.Next() {
		if string(sc.Row().Key) == table {
			continue // the table's state row
		}
		if !strings.HasPrefix(string(sc.Row().Key), table+",") {
			break
		}
		key := sc.Row().Key[len(table)+1:]
		i := strings.LastIndexByte(string(key), ',')
		if i < 0 {
			t.Fatalf("odd meta row %q", sc.Row().Key)
		}
		starts = append(starts, fmt.Sprintf("%x", key[:i]))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return starts
}

// countVersions counts the versions HBase keeps of the row's cells.
func countVersions(t *testing.T, s *Store, table string, row []byte) int {
	t.Helper()
	get, err := hrpc.NewGet(testCtx(t), []byte(table), row, hrpc.MaxVersions(10))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.client.Get(get)
	if err != nil {
		t.Fatal(err)
	}
	return len(res.Cells)
}

func TestMetricsOnInjectedRegistry(t *testing.T) {
	needHBase(t) // for the address check only
	reg := prometheus.NewRegistry()
	s, err := New(Config{ZKQuorum: zkQuorum()}, reg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	families := func() []string {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, mf := range mfs {
			names = append(names, mf.GetName())
		}
		return names
	}
	t.Cleanup(func() { // runs after the table's cleanup, which needs s
		s.Close()
		if got := families(); len(got) != 0 {
			t.Errorf("after Close the registry still shows %v", got)
		}
	})
	table := newTable(t, s, "f")
	if err := s.Put(testCtx(t), table, []store.Put{{Row: []byte("r"), Cells: []store.Cell{{Family: []byte("f"), Value: []byte("v")}}}}); err != nil {
		t.Fatal(err)
	}
	got := families()
	if !strings.Contains(strings.Join(got, " "), "gohbase_operation_duration_seconds") {
		t.Errorf("injected registry shows %v, want gohbase's metrics among them", got)
	}
	// A second store on the same registry shares the store's metrics.
	s2, err := New(Config{ZKQuorum: zkQuorum()}, reg, testLogger(t))
	if err != nil {
		t.Fatalf("second store on the same registry: %v", err)
	}
	s2.Close()
	if got2 := families(); strings.Join(got2, " ") != strings.Join(got, " ") {
		t.Errorf("after a second store came and went the registry shows %v, want %v", got2, got)
	}
}

func BenchmarkPut(b *testing.B) {
	s := needHBase(b)
	table := newTable(b, s, "t")
	ctx := context.Background()
	for _, bc := range []struct{ rows, cells int }{{1, 1}, {100, 10}, {1000, 10}} {
		b.Run(fmt.Sprintf("rows=%d/cells=%d", bc.rows, bc.cells), func(b *testing.B) {
			b.ReportAllocs()
			puts := make([]store.Put, bc.rows)
			value := make([]byte, 8)
			n := 0
			for b.Loop() {
				for i := range puts {
					row := make([]byte, 11)
					binary.BigEndian.PutUint32(row, uint32(n))
					binary.BigEndian.PutUint32(row[4:], uint32(i))
					cells := make([]store.Cell, bc.cells)
					for j := range cells {
						q := []byte{0xF0, 0, byte(j >> 8), byte(j)}
						cells[j] = store.Cell{Family: []byte("t"), Qualifier: q, Value: value}
					}
					puts[i] = store.Put{Row: row, Cells: cells}
				}
				if err := s.Put(ctx, table, puts); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(bc.rows*bc.cells*b.N)/b.Elapsed().Seconds(), "cells/s")
		})
	}
}

// TestScanKeysOnly: on HBase a KeysOnly scan brings one cell a row, its
// value left out (FirstKeyOnlyFilter and KeyOnlyFilter), with and without
// a row regex.
func TestScanKeysOnly(t *testing.T) {
	s := needHBase(t)
	ctx := testCtx(t)
	name := newTable(t, s, "t")
	var puts []store.Put
	for i := range 5 {
		p := store.Put{Row: []byte{'r', byte('0' + i)}}
		for q := range 20 {
			p.Cells = append(p.Cells, store.Cell{Family: []byte("t"), Qualifier: []byte{byte(q)}, Value: []byte("value")})
		}
		puts = append(puts, p)
	}
	if err := s.Put(ctx, name, puts); err != nil {
		t.Fatal(err)
	}
	for _, regex := range []string{"", `(?s)^r[13]\z`} {
		sc := s.Scan(ctx, store.ScanRequest{Table: name, Family: "t", RowRegex: regex, KeysOnly: true})
		var got []string
		for sc.Next() {
			r := sc.Row()
			got = append(got, string(r.Key))
			if len(r.Cells) != 1 || len(r.Cells[0].Value) != 0 {
				t.Errorf("regex %q: row %s came with %d cells, the first %q", regex, r.Key, len(r.Cells), r.Cells[0].Value)
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		want := "r0 r1 r2 r3 r4"
		if regex != "" {
			want = "r1 r3"
		}
		if strings.Join(got, " ") != want {
			t.Errorf("regex %q: rows %v, want %s", regex, got, want)
		}
	}
}
