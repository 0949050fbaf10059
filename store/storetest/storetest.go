// Package storetest is the contract suite that every store.Store backend
// must pass. A backend's test calls Run with a function that returns a fresh,
// empty table (families "a" and "b") in that backend.
package storetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promhbase/promhbase/store"
)

// Families are the column families the table given to Run must have.
var Families = []string{"a", "b"}

// NewTable returns a store and the name of a new, empty table in it with the
// families "a" and "b". The backend cleans up with t.Cleanup.
type NewTable func(t *testing.T) (store.Store, string)

// Options tune the suite for a backend.
type Options struct {
	// LargeScanRows is the number of rows of the large-scan test; zero
	// means 100,000.
	LargeScanRows int
}

// Run runs the contract suite.
func Run(t *testing.T, newTable NewTable, opts Options) {
	if opts.LargeScanRows == 0 {
		opts.LargeScanRows = 100_000
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store, table string)
	}{
		{"PutGet", testPutGet},
		{"Overwrite", testOverwrite},
		{"Ordering", testOrdering},
		{"ScanRange", testScanRange},
		{"ScanFamily", testScanFamily},
		{"RegexBinaryKeys", testRegexBinaryKeys},
		{"ScanKeysOnly", testScanKeysOnly},
		{"CheckAndPut", testCheckAndPut},
		{"CheckAndPutConcurrent", testCheckAndPutConcurrent},
		{"CheckAndPutBatch", testCheckAndPutBatch},
		{"IncrementConcurrent", testIncrementConcurrent},
		{"Delete", testDelete},
		{"DeleteBounded", testDeleteBounded},
		{"DeleteBoundedKeepsNewer", testDeleteBoundedKeepsNewer},
		{"OlderVersionHidden", testOlderVersionHidden},
		{"ScanEarlyClose", testScanEarlyClose},
		{"LargeScan", func(t *testing.T, s store.Store, table string) { testLargeScan(t, s, table, opts.LargeScanRows) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, table := newTable(t)
			tc.fn(t, s, table)
		})
	}
}

func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func cell(f, q, v string) store.Cell {
	return store.Cell{Family: []byte(f), Qualifier: []byte(q), Value: []byte(v)}
}

func put(t *testing.T, s store.Store, table string, puts ...store.Put) {
	t.Helper()
	if err := s.Put(ctx(t), table, puts); err != nil {
		t.Fatalf("put: %v", err)
	}
}

// cellString renders cells as "f:q=v" sorted, for comparisons.
func cellString(cells []store.Cell) string {
	parts := make([]string, 0, len(cells))
	for _, c := range cells {
		parts = append(parts, fmt.Sprintf("%s:%x=%x", c.Family, c.Qualifier, c.Value))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func scanAll(t *testing.T, s store.Store, req store.ScanRequest) []store.Row {
	t.Helper()
	sc := s.Scan(ctx(t), req)
	defer sc.Close()
	var rows []store.Row
	for sc.Next() {
		r := sc.Row()
		cp := store.Row{Key: bytes.Clone(r.Key)}
		for _, c := range r.Cells {
			cp.Cells = append(cp.Cells, store.Cell{
				Family: bytes.Clone(c.Family), Qualifier: bytes.Clone(c.Qualifier),
				Value: bytes.Clone(c.Value), Timestamp: c.Timestamp,
			})
		}
		rows = append(rows, cp)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan %+v: %v", req, err)
	}
	return rows
}

func rowKeys(rows []store.Row) []string {
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = fmt.Sprintf("%x", r.Key)
	}
	return keys
}

func hexKeys(keys [][]byte) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%x", k)
	}
	return out
}

func testPutGet(t *testing.T, s store.Store, table string) {
	row := []byte{0x00, 0x01, 0xFF, 0x0A}
	put(t, s, table, store.Put{Row: row, Cells: []store.Cell{
		cell("a", "\x00\x01", "v1"), cell("a", "q2", "v2"), cell("b", "x", ""),
	}})
	got, err := s.Get(ctx(t), table, row, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a:0001=7631 a:7132=7632 b:78="; cellString(got.Cells) != want {
		t.Errorf("get all families = %s, want %s", cellString(got.Cells), want)
	}
	for _, c := range got.Cells {
		if c.Timestamp == 0 {
			t.Errorf("cell %s:%x has no timestamp", c.Family, c.Qualifier)
		}
	}
	got, err = s.Get(ctx(t), table, row, "b")
	if err != nil {
		t.Fatal(err)
	}
	if want := "b:78="; cellString(got.Cells) != want {
		t.Errorf("get family b = %s, want %s", cellString(got.Cells), want)
	}
	got, err = s.Get(ctx(t), table, []byte{0x00, 0x01, 0xFF}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Cells) != 0 {
		t.Errorf("get of a missing row (a prefix of a real one) = %s, want no cells", cellString(got.Cells))
	}
}

func testOverwrite(t *testing.T, s store.Store, table string) {
	row := []byte("r")
	put(t, s, table, store.Put{Row: row, Cells: []store.Cell{cell("a", "q", "old")}})
	put(t, s, table, store.Put{Row: row, Cells: []store.Cell{cell("a", "q", "new")}})
	got, err := s.Get(ctx(t), table, row, "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a:71=6e6577"; cellString(got.Cells) != want {
		t.Errorf("after overwrite = %s, want %s", cellString(got.Cells), want)
	}
}

// orderingKeys are row keys in unsigned byte order, including prefixes,
// 0x00 and 0xFF bytes.
func orderingKeys() [][]byte {
	return [][]byte{
		{0x00}, {0x00, 0x00}, {0x00, 0x00, 0x01}, {0x00, 0x01}, {0x00, 0xFF},
		{0x01}, {0x7F}, {0x7F, 0x00}, {0x80}, {0x80, 0x00, 0x00},
		{0xFE, 0xFF}, {0xFF}, {0xFF, 0x00}, {0xFF, 0xFF}, {0xFF, 0xFF, 0xFF},
	}
}

func testOrdering(t *testing.T, s store.Store, table string) {
	keys := orderingKeys()
	var puts []store.Put
	for i := len(keys) - 1; i >= 0; i-- { // write in reverse
		puts = append(puts, store.Put{Row: keys[i], Cells: []store.Cell{cell("a", "q", "v")}})
	}
	put(t, s, table, puts...)
	got := rowKeys(scanAll(t, s, store.ScanRequest{Table: table}))
	if want := hexKeys(keys); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("scan order\n got %v\nwant %v", got, want)
	}
}

func testScanRange(t *testing.T, s store.Store, table string) {
	keys := orderingKeys()
	var puts []store.Put
	for _, k := range keys {
		puts = append(puts, store.Put{Row: k, Cells: []store.Cell{cell("a", "q", "v")}})
	}
	put(t, s, table, puts...)
	for _, tc := range []struct {
		name        string
		start, stop []byte
		want        [][]byte
	}{
		{"all", nil, nil, keys},
		{"from 0x7F", []byte{0x7F}, nil, keys[6:]},
		{"to 0x7F excluded", nil, []byte{0x7F}, keys[:6]},
		{"start included stop excluded", []byte{0x00, 0x00}, []byte{0x00, 0xFF}, keys[1:4]},
		{"start between keys", []byte{0x00, 0x00, 0x00}, []byte{0x01}, keys[2:5]},
		{"stop is a prefix extension", []byte{0xFF}, []byte{0xFF, 0xFF}, keys[11:13]},
		{"empty", []byte{0x02}, []byte{0x03}, nil},
		{"start after stop", []byte{0x80}, []byte{0x01}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rowKeys(scanAll(t, s, store.ScanRequest{Table: table, Start: tc.start, Stop: tc.stop}))
			if want := hexKeys(tc.want); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("scan [%x, %x)\n got %v\nwant %v", tc.start, tc.stop, got, want)
			}
		})
	}
}

func testScanFamily(t *testing.T, s store.Store, table string) {
	put(t, s, table,
		store.Put{Row: []byte("r1"), Cells: []store.Cell{cell("a", "q", "1"), cell("b", "q", "2")}},
		store.Put{Row: []byte("r2"), Cells: []store.Cell{cell("b", "q", "3")}},
		store.Put{Row: []byte("r3"), Cells: []store.Cell{cell("a", "q", "4")}},
	)
	rows := scanAll(t, s, store.ScanRequest{Table: table, Family: "a"})
	var got []string
	for _, r := range rows {
		got = append(got, string(r.Key)+"="+cellString(r.Cells))
	}
	if want := "r1=a:71=31,r3=a:71=34"; strings.Join(got, ",") != want {
		t.Errorf("scan family a = %v, want %s", got, want)
	}
}

// testScanKeysOnly: a KeysOnly scan returns every row that has a cell
// (of the family asked for, matching the regex), each with at least one
// of its cells, whose value may be left out.
func testScanKeysOnly(t *testing.T, s store.Store, table string) {
	put(t, s, table,
		store.Put{Row: []byte("r1"), Cells: []store.Cell{cell("a", "q", "1"), cell("a", "r", "2"), cell("b", "q", "3")}},
		store.Put{Row: []byte("r2"), Cells: []store.Cell{cell("b", "q", "4")}},
		store.Put{Row: []byte("r3"), Cells: []store.Cell{cell("a", "q", "5")}},
		store.Put{Row: []byte("r4"), Cells: []store.Cell{cell("a", "q", "6"), cell("a", "z", "7")}},
	)
	for _, tc := range []struct {
		name, family, regex, want string
	}{
		{"every family", "", "", "r1,r2,r3,r4"},
		{"family a", "a", "", "r1,r3,r4"},
		{"family a, regex", "a", `(?s)^r[14]\z`, "r1,r4"},
		{"family b, regex", "b", `(?s)^r[14]\z`, "r1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := scanAll(t, s, store.ScanRequest{Table: table, Family: tc.family, RowRegex: tc.regex, KeysOnly: true})
			var keys []string
			for _, r := range rows {
				keys = append(keys, string(r.Key))
				if len(r.Cells) == 0 {
					t.Errorf("row %s without a cell", r.Key)
				}
				for _, c := range r.Cells {
					if tc.family != "" && string(c.Family) != tc.family {
						t.Errorf("row %s: cell of family %s", r.Key, c.Family)
					}
				}
			}
			if got := strings.Join(keys, ","); got != tc.want {
				t.Errorf("rows %s, want %s", got, tc.want)
			}
		})
	}
}

// quote writes every byte as \xHH, the quoting shared by java.util.regex and
// Go's regexp for ISO-8859-1 decoded keys.
func quote(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		fmt.Fprintf(&sb, `\x%02X`, c)
	}
	return sb.String()
}

func testRegexBinaryKeys(t *testing.T, s store.Store, table string) {
	keys := [][]byte{
		{0x01, 0x0A, 0x02, 0xAA},       // newline: '.' must match it under (?s)
		{0x01, 0x5C, 0x45, 0xAA},       // \E
		{0x01, 0x5C, 0x45, 0x45, 0xAA}, // \EE: breaks OpenTSDB's own quoting
		{0x01, 0x85, 0x0D, 0xAA},       // NEL and CR: Java line terminators
		{0x01, 0xFF, 0x00, 0xAA},
		{0x01, 0x5C, 0x5C, 0xAA},
		{0x02, 0x5C, 0x45, 0xAA},
	}
	var puts []store.Put
	for _, k := range keys {
		puts = append(puts, store.Put{Row: k, Cells: []store.Cell{cell("a", "q", "v")}})
	}
	put(t, s, table, puts...)
	for _, tc := range []struct {
		name  string
		regex string
		want  [][]byte
	}{
		{"each key matches itself only", "", nil}, // filled below
		{"dot matches newline and NEL", `(?s)^\x01..\xAA\z`, [][]byte{keys[0], keys[1], keys[3], keys[4], keys[5]}},
		{"backslash E inside", `(?s)^.` + quote([]byte{0x5C, 0x45}) + `.*\z`, [][]byte{keys[1], keys[2], keys[6]}},
		{"backslash E E", `(?s)^.{1}` + quote([]byte{0x5C, 0x45, 0x45}) + `\xAA\z`, [][]byte{keys[2]}},
		{"alternation of values", `(?s)^\x01(?:` + quote([]byte{0x0A, 0x02}) + `|` + quote([]byte{0xFF, 0x00}) + `)\xAA\z`, [][]byte{keys[0], keys[4]}},
		{"no match", `(?s)^\x03`, nil},
	} {
		if tc.regex == "" {
			for _, k := range keys {
				got := rowKeys(scanAll(t, s, store.ScanRequest{Table: table, RowRegex: `(?s)^` + quote(k) + `\z`}))
				if len(got) != 1 || got[0] != fmt.Sprintf("%x", k) {
					t.Errorf("regex of key %x matched %v", k, got)
				}
			}
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			got := rowKeys(scanAll(t, s, store.ScanRequest{Table: table, RowRegex: tc.regex}))
			sort.Strings(got)
			want := hexKeys(tc.want)
			sort.Strings(want)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("regex %q\n got %v\nwant %v", tc.regex, got, want)
			}
		})
	}
}

func testCheckAndPut(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	row := []byte("cas")
	p := func(v string) store.Put {
		return store.Put{Row: row, Cells: []store.Cell{cell("a", "q", v), cell("b", "other", v)}}
	}
	steps := []struct {
		name     string
		put      store.Put
		expected []byte
		want     bool
	}{
		{"absent expected, absent", p("1"), nil, true},
		{"absent expected, present", p("2"), nil, false},
		{"empty expected, present", p("2"), []byte{}, false},
		{"wrong value", p("3"), []byte("2"), false},
		{"right value", p("4"), []byte("1"), true},
	}
	for _, st := range steps {
		ok, err := s.CheckAndPut(c, table, st.put, "a", "q", st.expected)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if ok != st.want {
			t.Errorf("%s: CheckAndPut = %v, want %v", st.name, ok, st.want)
		}
	}
	got, err := s.Get(c, table, row, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a:71=34 b:6f74686572=34"; cellString(got.Cells) != want {
		t.Errorf("after CAS sequence = %s, want %s", cellString(got.Cells), want)
	}
}

// testCheckAndPutBatch runs a batch through store.CheckAndPutAll (the
// backend's own batch, or concurrent CheckAndPuts) while other batches
// race for the same cells: each cell has exactly one winner, whose value
// it holds.
func testCheckAndPutBatch(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	// Sequential semantics first: an op sees the ones before it only in a
	// backend's own batch, so only disjoint cells are checked here.
	if err := s.Put(c, table, []store.Put{{Row: []byte("b-present"), Cells: []store.Cell{cell("a", "q", "old")}}}); err != nil {
		t.Fatal(err)
	}
	ops := []store.CondPut{
		{Put: store.Put{Row: []byte("b-absent"), Cells: []store.Cell{cell("a", "q", "new")}}, Family: "a", Qualifier: "q"},
		{Put: store.Put{Row: []byte("b-present"), Cells: []store.Cell{cell("a", "q", "new")}}, Family: "a", Qualifier: "q"},
		{Put: store.Put{Row: []byte("b-present"), Cells: []store.Cell{cell("a", "r", "x")}}, Family: "a", Qualifier: "q", Expected: []byte("wrong")},
	}
	written, opErrs := make([]bool, len(ops)), make([]error, len(ops))
	store.CheckAndPutAll(c, s, table, ops, written, opErrs, 4)
	if err := errors.Join(opErrs...); err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, false}; !slices.Equal(written, want) {
		t.Errorf("written = %v, want %v", written, want)
	}
	for row, want := range map[string]string{"b-absent": "a:71=6e6577", "b-present": "a:71=6f6c64"} {
		got, err := s.Get(c, table, []byte(row), "")
		if err != nil {
			t.Fatal(err)
		}
		if cellString(got.Cells) != want {
			t.Errorf("row %s = %s, want %s", row, cellString(got.Cells), want)
		}
	}

	const workers, names = 4, 50
	wins := make([][]bool, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ops := make([]store.CondPut, names)
			for n := range names {
				ops[n] = store.CondPut{Put: store.Put{Row: []byte(fmt.Sprintf("race-%d", n)), Cells: []store.Cell{cell("a", "id", fmt.Sprint(w))}}, Family: "a", Qualifier: "id"}
			}
			wins[w] = make([]bool, names)
			opErrs := make([]error, names)
			store.CheckAndPutAll(c, s, table, ops, wins[w], opErrs, 8)
			if err := errors.Join(opErrs...); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for n := range names {
		var winners []int
		for w := range workers {
			if wins[w][n] {
				winners = append(winners, w)
			}
		}
		if len(winners) != 1 {
			t.Errorf("race-%d: winners %v, want exactly one", n, winners)
			continue
		}
		got, err := s.Get(c, table, []byte(fmt.Sprintf("race-%d", n)), "")
		if err != nil {
			t.Fatal(err)
		}
		if want := "a:6964=" + hex.EncodeToString([]byte(fmt.Sprint(winners[0]))); cellString(got.Cells) != want {
			t.Errorf("race-%d = %s, want %s", n, cellString(got.Cells), want)
		}
	}
}

func testCheckAndPutConcurrent(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	const workers, names = 8, 20
	var (
		mu   sync.Mutex
		wins = map[string][]int{}
		wg   sync.WaitGroup
		errs = make(chan error, workers)
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range names {
				row := []byte(fmt.Sprintf("name-%d", n))
				ok, err := s.CheckAndPut(c, table, store.Put{Row: row, Cells: []store.Cell{cell("a", "id", fmt.Sprint(w))}}, "a", "id", nil)
				if err != nil {
					errs <- err
					return
				}
				if ok {
					mu.Lock()
					wins[string(row)] = append(wins[string(row)], w)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for n := range names {
		row := fmt.Sprintf("name-%d", n)
		if len(wins[row]) != 1 {
			t.Errorf("row %s: winners %v, want exactly one", row, wins[row])
			continue
		}
		got, err := s.Get(c, table, []byte(row), "a")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("a:6964=%x", fmt.Sprint(wins[row][0])); cellString(got.Cells) != want {
			t.Errorf("row %s = %s, want the winner's %s", row, cellString(got.Cells), want)
		}
	}
}

func testIncrementConcurrent(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	row := []byte{0x00}
	const workers, each = 8, 25
	seen := make(chan int64, workers*each)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				v, err := s.Increment(c, table, row, "a", "metrics", 1)
				if err != nil {
					errs <- err
					return
				}
				seen <- v
			}
		}()
	}
	wg.Wait()
	close(errs)
	close(seen)
	for err := range errs {
		t.Fatal(err)
	}
	got := map[int64]bool{}
	for v := range seen {
		if got[v] {
			t.Errorf("increment returned %d twice", v)
		}
		got[v] = true
	}
	for i := int64(1); i <= workers*each; i++ {
		if !got[i] {
			t.Errorf("no increment returned %d", i)
		}
	}
	r, err := s.Get(c, table, row, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cells) != 1 || len(r.Cells[0].Value) != 8 || binary.BigEndian.Uint64(r.Cells[0].Value) != workers*each {
		t.Errorf("counter cell = %s, want 8-byte big-endian %d", cellString(r.Cells), workers*each)
	}
	if v, err := s.Increment(c, table, row, "a", "metrics", -5); err != nil || v != workers*each-5 {
		t.Errorf("increment by -5 = %d, %v; want %d", v, err, workers*each-5)
	}
	if v, err := s.Increment(c, table, []byte("fresh"), "a", "tagk", 0); err != nil || v != 0 {
		t.Errorf("increment of a missing cell by 0 = %d, %v; want 0", v, err)
	}
}

func testDelete(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	put(t, s, table,
		store.Put{Row: []byte("d1"), Cells: []store.Cell{cell("a", "q1", "1"), cell("a", "q2", "2"), cell("b", "q1", "3")}},
		store.Put{Row: []byte("d2"), Cells: []store.Cell{cell("a", "q1", "4")}},
		store.Put{Row: []byte("d2\x00"), Cells: []store.Cell{cell("a", "q1", "5")}},
	)
	if err := s.Delete(c, table, []byte("d1"), []store.Column{{Family: []byte("a"), Qualifier: []byte("q1")}, {Family: []byte("b"), Qualifier: []byte("q1")}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(c, table, []byte("d1"), "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a:7132=32"; cellString(got.Cells) != want {
		t.Errorf("after column delete = %s, want %s", cellString(got.Cells), want)
	}
	if err := s.Delete(c, table, []byte("d2"), nil); err != nil {
		t.Fatal(err)
	}
	got2 := rowKeys(scanAll(t, s, store.ScanRequest{Table: table}))
	if want := hexKeys([][]byte{[]byte("d1"), []byte("d2\x00")}); strings.Join(got2, ",") != strings.Join(want, ",") {
		t.Errorf("after row delete rows = %v, want %v", got2, want)
	}
	if err := s.Delete(c, table, []byte("never-written"), nil); err != nil {
		t.Errorf("delete of a missing row: %v", err)
	}
}

// cellVersions renders cells as "f:q=v@ts" sorted.
func cellVersions(cells []store.Cell) string {
	parts := make([]string, 0, len(cells))
	for _, c := range cells {
		parts = append(parts, fmt.Sprintf("%s:%s=%s@%d", c.Family, c.Qualifier, c.Value, c.Timestamp))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func versionOf(t *testing.T, r store.Row, family, qualifier string) uint64 {
	t.Helper()
	for _, c := range r.Cells {
		if string(c.Family) == family && string(c.Qualifier) == qualifier {
			return c.Timestamp
		}
	}
	t.Fatalf("row %x has no cell %s:%s", r.Key, family, qualifier)
	return 0
}

// testDeleteBounded: a column with a Timestamp loses only the versions at
// or before it; bounds differ per column within one Delete, and mix with
// unbounded columns.
func testDeleteBounded(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	row := []byte("bounded")
	vc := func(f, q, v string, ts uint64) store.Cell {
		return store.Cell{Family: []byte(f), Qualifier: []byte(q), Value: []byte(v), Timestamp: ts}
	}
	put(t, s, table, store.Put{Row: row, Cells: []store.Cell{
		vc("a", "at", "1", 1_000), vc("a", "before", "2", 2_000), vc("a", "after", "3", 3_000),
		vc("b", "all", "4", 4_000), vc("b", "kept", "5", 5_000),
	}})
	col := func(f, q string, ts uint64) store.Column {
		return store.Column{Family: []byte(f), Qualifier: []byte(q), Timestamp: ts}
	}
	err := s.Delete(c, table, row, []store.Column{
		col("a", "at", 1_000),     // bound equal to the version: deleted
		col("a", "before", 2_500), // version before the bound: deleted
		col("a", "after", 2_999),  // version after the bound: kept
		col("b", "all", 0),        // unbounded: deleted
		col("a", "missing", 7_000),
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(c, table, row, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a:after=3@3000 b:kept=5@5000"; cellVersions(got.Cells) != want {
		t.Errorf("after bounded delete = %s, want %s", cellVersions(got.Cells), want)
	}
	// Many bounded columns at once (a backend may read the row once).
	var many []store.Cell
	var manyCols []store.Column
	for i := range 12 {
		q := fmt.Sprintf("q%02d", i)
		many = append(many, vc("a", q, "v", uint64(1_000+i)))
		bound := uint64(1_000 + i) // at the version: deleted
		if i%3 == 0 {
			bound-- // below it: kept
		}
		manyCols = append(manyCols, col("a", q, bound))
	}
	put(t, s, table, store.Put{Row: []byte("bounded-many"), Cells: many})
	if err := s.Delete(c, table, []byte("bounded-many"), manyCols); err != nil {
		t.Fatal(err)
	}
	if got, err = s.Get(c, table, []byte("bounded-many"), ""); err != nil {
		t.Fatal(err)
	}
	if want := "a:q00=v@1000 a:q03=v@1003 a:q06=v@1006 a:q09=v@1009"; cellVersions(got.Cells) != want {
		t.Errorf("after 12 bounded deletes = %s, want %s", cellVersions(got.Cells), want)
	}
	// Server-time versions: bounded by the version read, as a compactor does.
	row2 := []byte("bounded-now")
	put(t, s, table, store.Put{Row: row2, Cells: []store.Cell{cell("a", "q1", "1"), cell("a", "q2", "2")}})
	r, err := s.Get(c, table, row2, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(c, table, row2, []store.Column{col("a", "q1", versionOf(t, r, "a", "q1")), col("a", "q2", versionOf(t, r, "a", "q2"))}); err != nil {
		t.Fatal(err)
	}
	if r, err = s.Get(c, table, row2, ""); err != nil || len(r.Cells) != 0 {
		t.Errorf("after deleting each column up to the version read: %s, %v; want no cells", cellVersions(r.Cells), err)
	}
}

// testDeleteBoundedKeepsNewer: a column rewritten after the version a
// delete is bounded by keeps the newer version, whether the rewrite took
// the store's time or an explicit later timestamp.
func testDeleteBoundedKeepsNewer(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	for _, tc := range []struct {
		name    string
		rewrite store.Cell
	}{
		{"store time", cell("a", "q", "new")},
		{"explicit later timestamp", store.Cell{Family: []byte("a"), Qualifier: []byte("q"), Value: []byte("new"), Timestamp: 1 << 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := []byte("newer-" + tc.name)
			put(t, s, table, store.Put{Row: row, Cells: []store.Cell{cell("a", "q", "old")}})
			r, err := s.Get(c, table, row, "a")
			if err != nil {
				t.Fatal(err)
			}
			read := versionOf(t, r, "a", "q")
			// A later write lands between the read and the delete; store
			// time moves on at millisecond resolution.
			for uint64(time.Now().UnixMilli()) <= read {
				time.Sleep(time.Millisecond)
			}
			put(t, s, table, store.Put{Row: row, Cells: []store.Cell{tc.rewrite}})
			if err := s.Delete(c, table, row, []store.Column{{Family: []byte("a"), Qualifier: []byte("q"), Timestamp: read}}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(c, table, row, "a")
			if err != nil {
				t.Fatal(err)
			}
			if cellString(got.Cells) != "a:71=6e6577" {
				t.Fatalf("after a delete bounded below the newer version = %s, want the new value", cellVersions(got.Cells))
			}
			if v := versionOf(t, got, "a", "q"); v <= read {
				t.Errorf("surviving version %d, want > %d", v, read)
			}
		})
	}
}

// testOlderVersionHidden: a cell written with an explicit timestamp older
// than the stored version does not replace it.
func testOlderVersionHidden(t *testing.T, s store.Store, table string) {
	c := ctx(t)
	row := []byte("versions")
	vc := func(v string, ts uint64) store.Put {
		return store.Put{Row: row, Cells: []store.Cell{{Family: []byte("a"), Qualifier: []byte("q"), Value: []byte(v), Timestamp: ts}}}
	}
	put(t, s, table, vc("v2000", 2_000))
	put(t, s, table, vc("v1000", 1_000))
	got, err := s.Get(c, table, row, "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a:q=v2000@2000"; cellVersions(got.Cells) != want {
		t.Errorf("after an older write = %s, want %s", cellVersions(got.Cells), want)
	}
	put(t, s, table, vc("v3000", 3_000))
	if got, err = s.Get(c, table, row, "a"); err != nil {
		t.Fatal(err)
	}
	if want := "a:q=v3000@3000"; cellVersions(got.Cells) != want {
		t.Errorf("after a newer write = %s, want %s", cellVersions(got.Cells), want)
	}
}

func testScanEarlyClose(t *testing.T, s store.Store, table string) {
	var puts []store.Put
	for i := range 50 {
		puts = append(puts, store.Put{Row: []byte(fmt.Sprintf("row%03d", i)), Cells: []store.Cell{cell("a", "q", "v")}})
	}
	put(t, s, table, puts...)
	sc := s.Scan(ctx(t), store.ScanRequest{Table: table})
	for i := 0; i < 3 && sc.Next(); i++ {
	}
	if err := sc.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if sc.Next() {
		t.Error("Next after Close returned true")
	}
	// The store stays usable.
	if n := len(scanAll(t, s, store.ScanRequest{Table: table})); n != 50 {
		t.Errorf("scan after early close saw %d rows, want 50", n)
	}
	// A missing table is an error, classified.
	sc = s.Scan(ctx(t), store.ScanRequest{Table: table + "-missing"})
	for sc.Next() {
	}
	if err := sc.Err(); !errors.Is(err, store.ErrTableNotFound) {
		t.Errorf("scan of a missing table: err = %v, want store.ErrTableNotFound", err)
	}
	sc.Close()
}

func testLargeScan(t *testing.T, s store.Store, table string, n int) {
	c := ctx(t)
	const batch = 2000
	key := func(i int) []byte {
		k := make([]byte, 8)
		binary.BigEndian.PutUint32(k, uint32(i)*2654435761) // scattered order
		binary.BigEndian.PutUint32(k[4:], uint32(i))
		return k
	}
	for i := 0; i < n; i += batch {
		puts := make([]store.Put, 0, batch)
		for j := i; j < i+batch && j < n; j++ {
			v := make([]byte, 8)
			binary.BigEndian.PutUint64(v, uint64(j))
			puts = append(puts, store.Put{Row: key(j), Cells: []store.Cell{{Family: []byte("a"), Qualifier: []byte{0xF0, 0, 0, 0}, Value: v}}})
		}
		if err := s.Put(c, table, puts); err != nil {
			t.Fatalf("put rows %d..: %v", i, err)
		}
	}
	sc := s.Scan(c, store.ScanRequest{Table: table})
	defer sc.Close()
	var prev []byte
	seen := make([]bool, n)
	count := 0
	for sc.Next() {
		r := sc.Row()
		if prev != nil && bytes.Compare(prev, r.Key) >= 0 {
			t.Fatalf("row %x after %x: not ascending", r.Key, prev)
		}
		prev = append(prev[:0], r.Key...)
		if len(r.Cells) != 1 {
			t.Fatalf("row %x has %d cells", r.Key, len(r.Cells))
		}
		j := binary.BigEndian.Uint64(r.Cells[0].Value)
		if j >= uint64(n) || !bytes.Equal(key(int(j)), r.Key) || seen[j] {
			t.Fatalf("row %x holds unexpected value %d", r.Key, j)
		}
		seen[j] = true
		count++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Errorf("scanned %d rows, want %d", count, n)
	}
}
