package hbase

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tsuna/gohbase/pb"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/storetest"
)

// testNamespacePrefix starts the names of the namespaces the tests create.
const testNamespacePrefix = "promhbase_test_ns_"

// newNamespace creates a uniquely named namespace and, at the end of the
// test, drops the tables named in *tables (full names) and then the
// namespace. Tables a test creates in it otherwise must be dropped by
// then, or the namespace stays.
func newNamespace(tb testing.TB, s *Store, tables *[]string) string {
	tb.Helper()
	ns := fmt.Sprintf("%s%x", testNamespacePrefix, time.Now().UnixNano())
	mustCreate(tb, "namespace "+ns, func(ctx context.Context) (bool, error) { return s.CreateNamespace(ctx, ns) },
		func(ctx context.Context) error {
			var errTables error
			if tables != nil {
				if err := s.DropTables(ctx, *tables...); err != nil {
					errTables = fmt.Errorf("its tables: %w", err)
				}
			}
			return errors.Join(errTables, s.DropNamespace(ctx, ns))
		})
	return ns
}

// TestNamespaceContract runs the store contract on tables of a namespace
// other than the default one: every data operation reaches "ns:table".
func TestNamespaceContract(t *testing.T) {
	t.Parallel()
	s := needHBase(t)
	ns := newNamespace(t, s, nil)
	storetest.Run(t, func(t *testing.T) (store.Store, string) {
		t.Helper()
		t.Parallel() // as in TestContract: each case on a table of its own
		name := ns + ":" + uniqueName(t)
		if _, err := s.CreateTable(testCtx(t), TableSpec{Name: name, Families: familySpecs(storetest.Families...)}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := s.DropTables(context.Background(), name); err != nil {
				t.Errorf("drop table %s: %v", name, err)
			}
		})
		return s, name
	}, storetest.Options{})
}

func familySpecs(families ...string) map[string]map[string]string {
	m := make(map[string]map[string]string, len(families))
	for _, f := range families {
		m[f] = nil
	}
	return m
}

func TestNamespaces(t *testing.T) {
	s := needHBase(t)
	ctx := testCtx(t)

	var tables1, tables2 []string
	ns1 := newNamespace(t, s, &tables1)
	ns2 := newNamespace(t, s, &tables2)

	if created, err := s.CreateNamespace(ctx, ns1); err != nil || created {
		t.Fatalf("second CreateNamespace(%s) = %v, %v; want false, nil", ns1, created, err)
	}

	// The same tables in both namespaces, salted: the data table has two
	// regions, which Put splits its rows by.
	tc := TablesConfig{Namespace: ns1, SaltWidth: 1, SaltBuckets: 2}
	tables1 = []string{ns1 + ":tsdb", ns1 + ":tsdb-uid"}
	rep, err := s.CreateTables(ctx, tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CreateTables(%s) = %+v", ns1, rep)
	if !slices.Equal(rep.Created, tables1) || len(rep.Existed) != 0 {
		t.Errorf("first CreateTables = %+v, want %q created", rep, tables1)
	}
	if rep, err = s.CreateTables(ctx, tc); err != nil {
		t.Fatal(err)
	} else if !slices.Equal(rep.Existed, tables1) || len(rep.Created) != 0 {
		t.Errorf("second CreateTables = %+v, want %q existing", rep, tables1)
	}
	tc.Namespace = ns2
	tables2 = []string{ns2 + ":tsdb", ns2 + ":tsdb-uid"}
	if rep, err = s.CreateTables(ctx, tc); err != nil {
		t.Fatal(err)
	} else if !slices.Equal(rep.Created, tables2) {
		t.Errorf("CreateTables(%s) = %+v, want %q created", ns2, rep, tables2)
	}
	// A table of the default namespace with the qualifier of one of ns1.
	plain := uniqueName(t)
	for _, name := range []string{plain, ns1 + ":" + plain} {
		if created, err := s.CreateTable(ctx, TableSpec{Name: name, Families: familySpecs("f")}); err != nil || !created {
			t.Fatalf("CreateTable(%s) = %v, %v", name, created, err)
		}
	}
	tables1 = append(tables1, ns1+":"+plain)
	t.Cleanup(func() {
		if err := s.DropTables(context.Background(), plain); err != nil {
			t.Errorf("drop table %s: %v", plain, err)
		}
	})

	data1, uid1 := ns1+":tsdb", ns1+":tsdb-uid"
	t.Run("data operations", func(t *testing.T) {
		rows := [][]byte{{0x00, 'a'}, {0x01, 'b'}} // one per region
		var puts []store.Put
		for i, r := range rows {
			puts = append(puts, store.Put{Row: r, Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte("q"), Value: []byte{byte(i)}}}})
		}
		if err := s.Put(ctx, data1, puts); err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			row, err := s.Get(ctx, data1, r, "t")
			if err != nil || len(row.Cells) != 1 || !bytes.Equal(row.Cells[0].Value, []byte{byte(i)}) {
				t.Errorf("Get(%s, %x) = %+v, %v", data1, r, row, err)
			}
		}
		sc := s.Scan(ctx, store.ScanRequest{Table: data1, Family: "t"})
		var keys [][]byte
		for sc.Next() {
			keys = append(keys, bytes.Clone(sc.Row().Key))
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		sc.Close()
		if fmt.Sprint(keys) != fmt.Sprint(rows) {
			t.Errorf("Scan(%s) rows %x, want %x", data1, keys, rows)
		}

		cas := store.Put{Row: []byte("m\x00\x00\x01"), Cells: []store.Cell{{Family: []byte("id"), Qualifier: []byte("metrics"), Value: []byte("up")}}}
		for i, want := range []bool{true, false} {
			ok, err := s.CheckAndPut(ctx, uid1, cas, "id", "metrics", nil)
			if err != nil || ok != want {
				t.Errorf("CheckAndPut #%d on %s = %v, %v; want %v", i+1, uid1, ok, err, want)
			}
		}
		written := make([]bool, 1)
		if err := s.CheckAndPutBatch(ctx, uid1, []store.CondPut{{Put: store.Put{Row: []byte("n"), Cells: []store.Cell{{Family: []byte("name"), Qualifier: []byte("metrics"), Value: []byte{0, 0, 1}}}}, Family: "name", Qualifier: "metrics"}}, written); err != nil || !written[0] {
			t.Errorf("CheckAndPutBatch on %s: written %v, err %v", uid1, written, err)
		}
		for i, want := range []int64{1, 4} {
			n, err := s.Increment(ctx, uid1, []byte{0}, "id", "metrics", int64(2*i+1))
			if err != nil || n != want {
				t.Errorf("Increment #%d on %s = %d, %v; want %d", i+1, uid1, n, err, want)
			}
		}
		if err := s.Delete(ctx, data1, rows[0], nil); err != nil {
			t.Fatal(err)
		}
		if row, err := s.Get(ctx, data1, rows[0], ""); err != nil || len(row.Cells) != 0 {
			t.Errorf("Get after Delete = %+v, %v; want no cells", row, err)
		}
	})

	t.Run("namespaces are apart", func(t *testing.T) {
		if err := s.Put(ctx, ns1+":"+plain, []store.Put{{Row: []byte("r"), Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: []byte("ns1")}}}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, plain, []store.Put{{Row: []byte("r"), Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: []byte("default")}}}}); err != nil {
			t.Fatal(err)
		}
		for table, want := range map[string]string{ns1 + ":" + plain: "ns1", plain: "default"} {
			row, err := s.Get(ctx, table, []byte("r"), "f")
			if err != nil || len(row.Cells) != 1 || string(row.Cells[0].Value) != want {
				t.Errorf("Get(%s) = %+v, %v; want the value %q", table, row, err, want)
			}
		}
		for _, table := range []string{ns2 + ":tsdb", ns2 + ":tsdb-uid"} {
			if n := storetest.CountRows(t, s, store.ScanRequest{Table: table}); n != 0 {
				t.Errorf("%s holds %d rows written into %s only", table, n, ns1)
			}
		}
	})

	t.Run("list", func(t *testing.T) {
		got, err := s.ListNamespaceTables(ctx, testNamespacePrefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("ListNamespaceTables(%q) = %v", testNamespacePrefix, got)
		want := map[string][]string{
			ns1: {plain, "tsdb", "tsdb-uid"},
			ns2: {"tsdb", "tsdb-uid"},
		}
		for ns, tables := range want {
			if !slices.Equal(got[ns], tables) {
				t.Errorf("ListNamespaceTables: %s has %q, want %q", ns, got[ns], tables)
			}
		}
		for ns := range got {
			if !strings.HasPrefix(ns, testNamespacePrefix) {
				t.Errorf("ListNamespaceTables(%q) lists namespace %s", testNamespacePrefix, ns)
			}
		}
		if got, err = s.ListNamespaceTables(ctx, ns1); err != nil || len(got) != 1 || len(got[ns1]) != 3 {
			t.Errorf("ListNamespaceTables(%s) = %v, %v", ns1, got, err)
		}
		all, err := s.ListNamespaceTables(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(all["default"], plain) || !slices.Contains(all["hbase"], "meta") || !slices.Equal(all[ns2], want[ns2]) {
			t.Errorf("ListNamespaceTables(\"\"): default %q, hbase %q, %s %q", all["default"], all["hbase"], ns2, all[ns2])
		}
		if _, err := s.ListNamespaceTables(ctx, "a-b"); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ListNamespaceTables(\"a-b\"): err = %v, want store.ErrInvalid", err)
		}
	})

	t.Run("drop", func(t *testing.T) {
		if err := s.DropTables(ctx, tables2...); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, ns2+":tsdb", []byte("r"), ""); !errors.Is(err, store.ErrTableNotFound) {
			t.Errorf("get from a dropped table: err = %v, want store.ErrTableNotFound", err)
		}
		if err := s.DropNamespace(ctx, ns2); err != nil {
			t.Fatal(err)
		}
		if err := s.DropNamespace(ctx, ns2); err != nil {
			t.Errorf("second DropNamespace: %v", err)
		}
		got, err := s.ListNamespaceTables(ctx, ns2)
		if err != nil || len(got) != 0 {
			t.Errorf("ListNamespaceTables(%s) after the drop = %v, %v", ns2, got, err)
		}
		// A namespace that does not exist: no tables in it.
		_, err = s.CreateTable(ctx, TableSpec{Name: ns2 + ":tsdb", Families: familySpecs("t")})
		t.Logf("CreateTable in a missing namespace: %v", err)
		if !errors.Is(err, store.ErrTableNotFound) {
			t.Errorf("CreateTable in a missing namespace: err = %v, want store.ErrTableNotFound", err)
		}
		// A namespace that still holds tables is not dropped.
		err = s.DropNamespace(ctx, ns1)
		t.Logf("DropNamespace of a namespace with tables: %v", err)
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("DropNamespace(%s) with tables: err = %v, want store.ErrInvalid", ns1, err)
		}
	})

	t.Run("invalid names", func(t *testing.T) {
		for _, ns := range []string{"", "a-b", "a:b", "a.b"} {
			if _, err := s.CreateNamespace(ctx, ns); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("CreateNamespace(%q): err = %v, want store.ErrInvalid", ns, err)
			}
		}
		if _, err := s.CreateTable(ctx, TableSpec{Name: "default:" + plain, Families: familySpecs("f")}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateTable(default:...): err = %v, want store.ErrInvalid", err)
		}
		if _, err := s.CreateTables(ctx, TablesConfig{Namespace: "a-b"}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateTables(Namespace a-b): err = %v, want store.ErrInvalid", err)
		}
	})
}

// TestCreateNamespaceProcedure: HBase answers CreateNamespace and
// DeleteNamespace with the id of the master's procedure, which
// CreateNamespace and DropNamespace wait for.
func TestCreateNamespaceProcedure(t *testing.T) {
	s := needHBase(t)
	ctx := testCtx(t)
	ns := fmt.Sprintf("%s%x", testNamespacePrefix, time.Now().UnixNano())
	t.Cleanup(func() {
		if err := s.DropNamespace(context.Background(), ns); err != nil {
			t.Errorf("drop namespace %s: %v", ns, err)
		}
	})
	resp, err := s.sendMaster(ctx, "CreateNamespace",
		&pb.CreateNamespaceRequest{NamespaceDescriptor: &pb.NamespaceDescriptor{Name: []byte(ns)}},
		&pb.CreateNamespaceResponse{})
	if err != nil {
		t.Fatal(err)
	}
	id, ok := procID(resp)
	if !ok {
		t.Fatalf("CreateNamespace answered %x: no procedure id", resp.ProtoReflect().GetUnknown())
	}
	if err := s.waitProcedure(ctx, id); err != nil {
		t.Fatal(err)
	}
	t.Logf("namespace %s created by procedure %d", ns, id)
	resp, err = s.sendMaster(ctx, "DeleteNamespace",
		&pb.DeleteNamespaceRequest{NamespaceName: &ns}, &pb.DeleteNamespaceResponse{})
	if err != nil {
		t.Fatal(err)
	}
	if id, ok = procID(resp); !ok {
		t.Fatalf("DeleteNamespace answered %x: no procedure id", resp.ProtoReflect().GetUnknown())
	}
	if err := s.waitProcedure(ctx, id); err != nil {
		t.Fatal(err)
	}
	t.Logf("namespace %s deleted by procedure %d", ns, id)
}

func TestProcID(t *testing.T) {
	with := func(unknown []byte) *pb.CreateNamespaceResponse {
		m := &pb.CreateNamespaceResponse{}
		m.ProtoReflect().SetUnknown(unknown)
		return m
	}
	id := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 4242)
	other := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), []byte("x"))
	for name, c := range map[string]struct {
		unknown []byte
		id      uint64
		ok      bool
	}{
		"none":        {nil, 0, false},
		"proc_id":     {id, 4242, true},
		"after other": {append(bytes.Clone(other), id...), 4242, true},
		"truncated":   {id[:len(id)-1], 0, false},
		"other only":  {other, 0, false},
	} {
		got, ok := procID(with(c.unknown))
		if got != c.id || ok != c.ok {
			t.Errorf("%s: procID = %d, %v; want %d, %v", name, got, ok, c.id, c.ok)
		}
	}
}

func TestQualifiedName(t *testing.T) {
	for _, c := range [][3]string{{"", "tsdb", "tsdb"}, {"default", "tsdb", "tsdb"}, {"t_a", "tsdb", "t_a:tsdb"}} {
		if got := qualifiedName(c[0], c[1]); got != c[2] {
			t.Errorf("qualifiedName(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
	for name, ok := range map[string]bool{"t_a": true, "A_1": true, "": false, "a-b": false, "a.b": false, "a:b": false, "tä": false} {
		if err := checkNamespaceName(name); (err == nil) != ok {
			t.Errorf("checkNamespaceName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}
