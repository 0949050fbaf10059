package store

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// bare is a Store without any optional interface; its methods do nothing.
type bare struct{}

func (bare) Put(context.Context, string, []Put) error { return nil }
func (bare) Get(context.Context, string, []byte, string) (Row, error) {
	return Row{}, nil
}
func (bare) Scan(context.Context, ScanRequest) Scanner { return nil }
func (bare) Increment(context.Context, string, []byte, string, string, int64) (int64, error) {
	return 0, nil
}
func (bare) CheckAndPut(context.Context, string, Put, string, string, []byte) (bool, error) {
	return false, nil
}
func (bare) Delete(context.Context, string, []byte, []Column) error { return nil }
func (bare) Close() error                                           { return nil }

// full is a Store with every optional interface, recording each call of
// one of their methods with the table it was given ("" for none).
type full struct {
	bare
	mu    sync.Mutex
	calls map[string]string
}

func (f *full) called(method, table string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]string{}
	}
	f.calls[method] = table
}

func (f *full) Sync(context.Context) error { f.called("Sync", ""); return nil }
func (f *full) PutDeferred(_ context.Context, table string, _ []Put) error {
	f.called("PutDeferred", table)
	return nil
}
func (f *full) DeleteDeferred(_ context.Context, table string, _ []byte, _ []Column) error {
	f.called("DeleteDeferred", table)
	return nil
}
func (f *full) PutBulk(_ context.Context, table string, _ []Put) error {
	f.called("PutBulk", table)
	return nil
}
func (f *full) SplitRange(_ context.Context, table string, _, _ []byte, _ int) ([][]byte, error) {
	f.called("SplitRange", table)
	return nil, nil
}
func (f *full) CheckAndPutBatch(_ context.Context, table string, _ []CondPut, _ []bool) error {
	f.called("CheckAndPutBatch", table)
	return nil
}
func (f *full) CheckAndPutSyncsEach() bool { f.called("CheckAndPutSyncsEach", ""); return true }
func (f *full) GetCell(_ context.Context, table string, _ []byte, _, _ string) ([]byte, bool, error) {
	f.called("GetCell", table)
	return nil, false, nil
}
func (f *full) GetCells(_ context.Context, table string, _ [][]byte, _, _ string, _ [][]byte, _ []bool) error {
	f.called("GetCells", table)
	return nil
}
func (f *full) DeleteRows(_ context.Context, table string, _, _ []byte) error {
	f.called("DeleteRows", table)
	return nil
}
func (f *full) Reclaim(context.Context) error { f.called("Reclaim", ""); return nil }
func (f *full) Settle(context.Context) error  { f.called("Settle", ""); return nil }
func (f *full) CreateSnapshot(_ context.Context, _ string, tables []string) error {
	f.called("CreateSnapshot", strings.Join(tables, ","))
	return nil
}
func (f *full) ListSnapshots(context.Context) ([]SnapshotInfo, error) {
	f.called("ListSnapshots", "")
	return nil, nil
}
func (f *full) DeleteSnapshot(context.Context, string) error {
	f.called("DeleteSnapshot", "")
	return nil
}
func (f *full) TableBytes(_ context.Context, table string) (int64, error) {
	f.called("TableBytes", table)
	return 0, nil
}

func (f *full) ReadOnly() (bool, string) {
	f.called("ReadOnly", "")
	return false, ""
}

// only is a Wrapper over a full store that forwards one optional
// interface, the store underneath as it is.
type only struct {
	bare
	f   *full
	typ reflect.Type
}

func (o only) As(target any) bool {
	return reflect.TypeOf(target).Elem() == o.typ && Forward(o.f, target)
}

// find is Lookup without the ok.
func find(st Store, typ reflect.Type) any {
	impl, _ := Lookup(st, typ)
	return impl
}

// notTable names the methods whose first string after the context is not
// a table (a snapshot's name).
var notTable = map[string]bool{"CreateSnapshot": true, "DeleteSnapshot": true}

// tableArg returns the index of method m's table argument: the first
// string after the context, or a []string of tables; -1 when it has none.
func tableArg(m reflect.Method) int {
	for j := 1; j < m.Type.NumIn(); j++ {
		switch in := m.Type.In(j); {
		case in.Kind() == reflect.String && j == 1 && !notTable[m.Name]:
			return j
		case in.Kind() == reflect.Slice && in.Elem().Kind() == reflect.String:
			return j
		}
	}
	return -1
}

// callAll calls every method of impl's interface typ with zero arguments
// but the table (tableArg).
func callAll(impl any, typ reflect.Type, table string) {
	v := reflect.ValueOf(impl)
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		args := make([]reflect.Value, m.Type.NumIn())
		for j := range args {
			args[j] = reflect.Zero(m.Type.In(j))
		}
		if j := tableArg(m); j > 0 && m.Type.In(j).Kind() == reflect.String {
			args[j] = reflect.ValueOf(table)
		} else if j > 0 {
			args[j] = reflect.ValueOf([]string{table})
		}
		v.MethodByName(m.Name).Call(args)
	}
}

// TestForwarding: every wrapper of a Store has each optional interface
// (Optional) exactly when the store it wraps has it, and its calls reach
// that store, on the wrapper's table.
func TestForwarding(t *testing.T) {
	wrappers := []struct {
		name  string
		wrap  func(Store) Store
		table string // what the wrapper makes of table "t"
	}{
		{"Namespaced", func(st Store) Store { return Namespaced(st, "ns") }, "ns:t"},
	}
	for _, w := range wrappers {
		t.Run(w.name+"/full", func(t *testing.T) {
			f := &full{}
			st := w.wrap(f)
			for _, typ := range Optional() {
				if !reflect.TypeFor[*full]().Implements(typ) {
					t.Fatalf("the test's full store lacks %v: add it", typ)
				}
				impl := find(st, typ)
				if impl == nil {
					t.Errorf("%s drops %v", w.name, typ)
					continue
				}
				callAll(impl, typ, "t")
				for i := range typ.NumMethod() {
					m := typ.Method(i)
					want := w.table
					if tableArg(m) < 0 {
						want = ""
					}
					if got, ok := f.calls[m.Name]; !ok || got != want {
						t.Errorf("%s's %s reached the store as %q (called: %v), want %q", w.name, m.Name, got, ok, want)
					}
				}
			}
		})
		t.Run(w.name+"/bare", func(t *testing.T) {
			st := w.wrap(bare{})
			for _, typ := range Optional() {
				if find(st, typ) != nil {
					t.Errorf("%s of a store without %v has it", w.name, typ)
				}
			}
		})
		for _, one := range Optional() {
			t.Run(w.name+"/only-"+one.Name(), func(t *testing.T) {
				st := w.wrap(only{f: &full{}, typ: one})
				for _, typ := range Optional() {
					if got := find(st, typ) != nil; got != (typ == one) {
						t.Errorf("%s of a store with only %v: has %v: %v", w.name, one, typ, got)
					}
				}
			})
		}
	}
}

// TestNoAssertions: outside tests, nothing in the module asks a store for
// an optional interface with a type assertion or a type switch, which
// misses what a Wrapper forwards; As finds those too.
func TestNoAssertions(t *testing.T) {
	var names []string
	for _, typ := range Optional() {
		names = append(names, typ.Name())
	}
	optional := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.SelectorExpr:
			x, ok := e.X.(*ast.Ident)
			return ok && x.Name == "store" && slices.Contains(names, e.Sel.Name)
		case *ast.Ident:
			return slices.Contains(names, e.Name)
		}
		return false
	}
	fset := token.NewFileSet()
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "third_party" || n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeAssertExpr:
				if n.Type != nil && optional(n.Type) {
					t.Errorf("%s: a type assertion to an optional store interface: use store.As", fset.Position(n.Pos()))
				}
			case *ast.TypeSwitchStmt:
				for _, c := range n.Body.List {
					if slices.ContainsFunc(c.(*ast.CaseClause).List, optional) {
						t.Errorf("%s: a type switch on an optional store interface: use store.As", fset.Position(c.Pos()))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
