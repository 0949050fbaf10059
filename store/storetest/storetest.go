// Package storetest is the contract suite that every store.Store backend
// must pass. A backend's test calls Run with a function that returns a fresh,
// empty table (families "a" and "b") in that backend.
package storetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
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
	for _, tc := range contracts(opts) {
		t.Run(tc.name, func(t *testing.T) {
			s, table := newTable(t)
			tc.fn(t, s, table)
		})
	}
}

// contract is one test of the suite, run on a fresh table.
type contract struct {
	name string
	fn   func(t *testing.T, s store.Store, table string)
}

// contracts lists the suite's tests in the order Run runs them.
func contracts(opts Options) []contract {
	if opts.LargeScanRows == 0 {
		opts.LargeScanRows = 100_000
	}
	return []contract{
		{"PutGet", testPutGet},
		{"Overwrite", testOverwrite},
		{"Ordering", testOrdering},
		{"Batch", testBatch},
		{"ScanRange", testScanRange},
		{"ScanFamily", testScanFamily},
		{"RegexBinaryKeys", testRegexBinaryKeys},
		{"ScanKeysOnly", testScanKeysOnly},
		{"RowSeek", testRowSeek},
		{"CheckAndPut", testCheckAndPut},
		{"CheckAndPutConcurrent", testCheckAndPutConcurrent},
		{"CheckAndPutBatch", testCheckAndPutBatch},
		{"IncrementConcurrent", testIncrementConcurrent},
		{"Delete", testDelete},
		{"DeleteBounded", testDeleteBounded},
		{"DeleteBoundedKeepsNewer", testDeleteBoundedKeepsNewer},
		{"DeleteRows", testDeleteRows},
		{"OlderVersionHidden", testOlderVersionHidden},
		{"ScanEarlyClose", testScanEarlyClose},
		{"LargeScan", func(t *testing.T, s store.Store, table string) { testLargeScan(t, s, table, opts.LargeScanRows) }},
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

// putKeys writes one cell, a:q=v, in each row of keys, in keys' order.
func putKeys(t *testing.T, s store.Store, table string, keys [][]byte) {
	t.Helper()
	puts := make([]store.Put, 0, len(keys))
	for _, k := range keys {
		puts = append(puts, store.Put{Row: k, Cells: []store.Cell{cell("a", "q", "v")}})
	}
	put(t, s, table, puts...)
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

// CountRows returns how many rows req scans in s, failing t when the scan
// fails.
func CountRows(t testing.TB, s store.Store, req store.ScanRequest) int {
	t.Helper()
	sc := s.Scan(t.Context(), req)
	defer sc.Close()
	n := 0
	for sc.Next() {
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan %+v: %v", req, err)
	}
	return n
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
	reversed := slices.Clone(keys)
	slices.Reverse(reversed)
	putKeys(t, s, table, reversed) // written in reverse
	got := rowKeys(scanAll(t, s, store.ScanRequest{Table: table}))
	if want := hexKeys(keys); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("scan order\n got %v\nwant %v", got, want)
	}
}

func testScanRange(t *testing.T, s store.Store, table string) {
	keys := orderingKeys()
	putKeys(t, s, table, keys)
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
	putKeys(t, s, table, keys)
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

// testRowSeek: a scan with RowMatch, RowRegex and RowSeek returns the
// rows RowMatch keeps, whatever rows the store skips by RowSeek's keys,
// within the scan's range.
func testRowSeek(t *testing.T, s store.Store, table string) {
	var keys [][]byte
	for a := range byte(10) {
		for b := range byte(10) {
			keys = append(keys, []byte{a, b})
		}
	}
	putKeys(t, s, table, keys)
	match := func(k []byte) bool { return len(k) == 2 && (k[1] == 3 || k[1] == 7) }
	seek := func(dst, k []byte) []byte {
		switch {
		case len(k) != 2:
			return nil
		case k[1] < 3:
			return append(dst, k[0], 3)
		case k[1] < 7:
			return append(dst, k[0], 7)
		case k[0] < 0xFF:
			return append(dst, k[0]+1)
		}
		return nil
	}
	for _, tc := range []struct {
		name        string
		start, stop []byte
	}{{"all", nil, nil}, {"from inside a skip", []byte{2, 4}, []byte{6, 3}}} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			for _, k := range keys {
				in := (tc.start == nil || bytes.Compare(k, tc.start) >= 0) && (tc.stop == nil || bytes.Compare(k, tc.stop) < 0)
				if in && match(k) {
					want = append(want, fmt.Sprintf("%x", k))
				}
			}
			got := rowKeys(scanAll(t, s, store.ScanRequest{Table: table, Start: tc.start, Stop: tc.stop,
				RowRegex: `(?s)^.(?:\x03|\x07)\z`, RowMatch: match, RowSeek: seek}))
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("got %v\nwant %v", got, want)
			}
		})
	}
}

func testScanEarlyClose(t *testing.T, s store.Store, table string) {
	var keys [][]byte
	for i := range 50 {
		keys = append(keys, fmt.Appendf(nil, "row%03d", i))
	}
	putKeys(t, s, table, keys)
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
