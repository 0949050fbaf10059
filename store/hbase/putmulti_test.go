package hbase

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tsuna/gohbase/pb"
	"github.com/tsuna/gohbase/region"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/fixture"
)

func goldenPuts() []store.Put {
	c := func(fam, q, v string, ts uint64) store.Cell {
		return store.Cell{Family: []byte(fam), Qualifier: []byte(q), Value: []byte(v), Timestamp: ts}
	}
	return []store.Put{
		{Row: []byte("r1"), Cells: []store.Cell{c("t", "a", "1", 0), c("t", "b", "2", 1000), c("x", "c", "3", 0)}},
		{Row: []byte("empty")},
		{Row: []byte("r2"), Cells: []store.Cell{c("t", "d", "\x00\xff\n\r", 0)}},
	}
}

// TestPutCallGolden: a put call's request, byte for byte
// (testdata/putmulti.hex), and the same request as gohbase's generated
// MultiRequest reads it.
func TestPutCallGolden(t *testing.T) {
	enc, idx, err := encodePuts(goldenPuts())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(idx, []int{0, 2}) {
		t.Fatalf("encoded puts %v, want [0 2] (the put without cells left out)", idx)
	}
	call := &putCall{multiCall: newMultiCall(context.Background(), []byte("t")), enc: &enc, want: []int{0, 1}}
	call.SetRegion(region.NewInfo(1, nil, []byte("t"), []byte("t,,1.abc."), nil, nil))
	got := call.ToProto().(*emptypb.Empty).ProtoReflect().GetUnknown()
	if want := fixture.Hex(t, "putmulti.hex", nil); !bytes.Equal(got, want) {
		t.Errorf("request\n got %x\nwant %x", got, want)
	}
	var req pb.MultiRequest
	if err := proto.Unmarshal(got, &req); err != nil {
		t.Fatal(err)
	}
	put := pb.MutationProto_PUT
	qv := func(q, v string, ts *uint64) *pb.MutationProto_ColumnValue_QualifierValue {
		return &pb.MutationProto_ColumnValue_QualifierValue{Qualifier: []byte(q), Value: []byte(v), Timestamp: ts}
	}
	want := &pb.MultiRequest{RegionAction: []*pb.RegionAction{{
		Region: &pb.RegionSpecifier{Type: pb.RegionSpecifier_REGION_NAME.Enum(), Value: []byte("t,,1.abc.")},
		Action: []*pb.Action{
			{Index: proto.Uint32(0), Mutation: &pb.MutationProto{Row: []byte("r1"), MutateType: &put, ColumnValue: []*pb.MutationProto_ColumnValue{
				{Family: []byte("t"), QualifierValue: []*pb.MutationProto_ColumnValue_QualifierValue{qv("a", "1", nil), qv("b", "2", proto.Uint64(1000))}},
				{Family: []byte("x"), QualifierValue: []*pb.MutationProto_ColumnValue_QualifierValue{qv("c", "3", nil)}},
			}}},
			{Index: proto.Uint32(1), Mutation: &pb.MutationProto{Row: []byte("r2"), MutateType: &put, ColumnValue: []*pb.MutationProto_ColumnValue{
				{Family: []byte("t"), QualifierValue: []*pb.MutationProto_ColumnValue_QualifierValue{qv("d", "\x00\xff\n\r", nil)}},
			}}},
		},
	}}}
	if !proto.Equal(&req, want) {
		t.Errorf("as gohbase's MultiRequest:\n got %v\nwant %v", &req, want)
	}
}

// TestPutCallRegion: a call carries only the rows its region holds, at
// most putCallRows of them.
func TestPutCallRegion(t *testing.T) {
	var puts []store.Put
	for i := range putCallRows + 10 {
		puts = append(puts, store.Put{Row: []byte(fmt.Sprintf("m%05d", i)), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte("q")}}})
	}
	puts = append(puts, store.Put{Row: []byte("a"), Cells: puts[0].Cells}, store.Put{Row: []byte("z"), Cells: puts[0].Cells})
	enc, _, err := encodePuts(puts)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int, len(puts))
	for i := range want {
		want[i] = len(puts) - 1 - i // z, a, then the m rows from the last
	}
	call := &putCall{multiCall: newMultiCall(context.Background(), []byte("t")), enc: &enc, want: want}
	call.SetRegion(region.NewInfo(1, nil, []byte("t"), []byte("t,m,1.x."), []byte("m"), []byte("n")))
	call.ToProto()
	if len(call.sent) != putCallRows {
		t.Fatalf("sent %d rows, want %d", len(call.sent), putCallRows)
	}
	for _, i := range call.sent {
		if r := enc.rows[i]; r[0] != 'm' {
			t.Fatalf("sent row %s outside [m, n)", r)
		}
	}
}

// TestEncodePutsShadowed: of cells with the same family, qualifier and
// timestamp in one put only the last goes out, in few cells and in many.
func TestEncodePutsShadowed(t *testing.T) {
	c := func(fam, q, v string, ts uint64) store.Cell {
		return store.Cell{Family: []byte(fam), Qualifier: []byte(q), Value: []byte(v), Timestamp: ts}
	}
	many := []store.Cell{}
	for i := range 10 {
		many = append(many, c("t", fmt.Sprint(i%3), fmt.Sprint(i), 0))
	}
	for _, tc := range []struct {
		name  string
		cells []store.Cell
		want  string
	}{
		{"one", []store.Cell{c("t", "a", "1", 0)}, "t:a=1@0"},
		{"none shadowed", []store.Cell{c("t", "a", "1", 0), c("t", "b", "2", 0)}, "t:a=1@0 t:b=2@0"},
		{"few", []store.Cell{c("t", "a", "1", 0), c("t", "b", "2", 0), c("t", "a", "3", 0), c("x", "a", "4", 0), c("t", "a", "5", 7), c("t", "a", "6", 7)}, "t:b=2@0 t:a=3@0 x:a=4@0 t:a=6@7"},
		{"a family's cells all shadowed", []store.Cell{c("t", "a", "1", 0), c("x", "b", "2", 0), c("t", "a", "3", 0)}, "x:b=2@0 t:a=3@0"},
		{"many", many, "t:1=7@0 t:2=8@0 t:0=9@0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc, _, err := encodePuts([]store.Put{{Row: []byte("r"), Cells: tc.cells}})
			if err != nil {
				t.Fatal(err)
			}
			var m pb.MutationProto
			if err := proto.Unmarshal(enc.mutation(0), &m); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, cv := range m.ColumnValue {
				if len(cv.QualifierValue) == 0 {
					t.Errorf("empty column value of family %s", cv.Family)
				}
				for _, qv := range cv.QualifierValue {
					got = append(got, fmt.Sprintf("%s:%s=%s@%d", cv.Family, qv.Qualifier, qv.Value, qv.GetTimestamp()))
				}
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("cells %s, want %s", strings.Join(got, " "), tc.want)
			}
		})
	}
}

// TestEncodePutsInvalid: what HBase cannot take fails before anything is
// sent.
func TestEncodePutsInvalid(t *testing.T) {
	cell := []store.Cell{{Family: []byte("t"), Qualifier: []byte("q")}}
	for _, tc := range []struct {
		name string
		put  store.Put
	}{
		{"empty row", store.Put{Cells: cell}},
		{"empty family", store.Put{Row: []byte("r"), Cells: []store.Cell{{Qualifier: []byte("q")}}}},
		{"timestamp beyond int64", store.Put{Row: []byte("r"), Cells: []store.Cell{{Family: []byte("t"), Timestamp: 1 << 63}}}},
		{"row beyond 32767 bytes", store.Put{Row: make([]byte, 32768), Cells: cell}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := encodePuts([]store.Put{tc.put}); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("err = %v, want store.ErrInvalid", err)
			}
		})
	}
}

// TestMultiAnswers reads which actions a MultiResponse answered cleanly.
func TestMultiAnswers(t *testing.T) {
	roe := func(idx uint32, exc bool) *pb.ResultOrException {
		r := &pb.ResultOrException{Index: proto.Uint32(idx), Result: &pb.Result{}}
		if exc {
			r.Result = nil
			r.Exception = &pb.NameBytesPair{Name: proto.String("org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException"), Value: []byte("stack")}
		}
		return r
	}
	marshal := func(m *pb.MultiResponse) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		resp []byte
		n    int
		want string
	}{
		{"all", marshal(&pb.MultiResponse{RegionActionResult: []*pb.RegionActionResult{{ResultOrException: []*pb.ResultOrException{roe(0, false), roe(1, false), roe(2, false)}}}}), 3, "111"},
		{"out of order, one failed", marshal(&pb.MultiResponse{RegionActionResult: []*pb.RegionActionResult{{ResultOrException: []*pb.ResultOrException{roe(2, false), roe(0, true), roe(1, false)}}}}), 3, "011"},
		{"one missing", marshal(&pb.MultiResponse{RegionActionResult: []*pb.RegionActionResult{{ResultOrException: []*pb.ResultOrException{roe(0, false), roe(2, false)}}}}), 3, "101"},
		{"region exception", marshal(&pb.MultiResponse{RegionActionResult: []*pb.RegionActionResult{{Exception: &pb.NameBytesPair{Name: proto.String("org.apache.hadoop.hbase.NotServingRegionException")}, ResultOrException: []*pb.ResultOrException{roe(0, false)}}}}), 2, "00"},
		{"index beyond", marshal(&pb.MultiResponse{RegionActionResult: []*pb.RegionActionResult{{ResultOrException: []*pb.ResultOrException{roe(0, false), roe(5, false)}}}}), 2, "00"},
		{"two region results", marshal(&pb.MultiResponse{RegionActionResult: []*pb.RegionActionResult{{ResultOrException: []*pb.ResultOrException{roe(0, false)}}, {}}}), 1, "0"},
		{"no index", marshal(&pb.MultiResponse{RegionActionResult: []*pb.RegionActionResult{{ResultOrException: []*pb.ResultOrException{{Result: &pb.Result{}}}}}}), 1, "0"},
		{"empty", nil, 2, "00"},
		{"cut", marshal(&pb.MultiResponse{RegionActionResult: []*pb.RegionActionResult{{ResultOrException: []*pb.ResultOrException{roe(0, false), roe(1, false)}}}})[:7], 2, "00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok := make([]bool, tc.n)
			multiAnswers(tc.resp, ok)
			var got strings.Builder
			for _, v := range ok {
				if v {
					got.WriteByte('1')
				} else {
					got.WriteByte('0')
				}
			}
			if got.String() != tc.want {
				t.Errorf("answered %s, want %s", got.String(), tc.want)
			}
		})
	}
}

// FuzzMultiAnswers: any response is read without a panic, and never
// answers more actions than a response gohbase's protobuf reads as one
// RegionActionResult without exceptions holds.
func FuzzMultiAnswers(f *testing.F) {
	b, _ := proto.Marshal(&pb.MultiResponse{RegionActionResult: []*pb.RegionActionResult{{ResultOrException: []*pb.ResultOrException{{Index: proto.Uint32(0)}, {Index: proto.Uint32(1), Exception: &pb.NameBytesPair{Name: proto.String("x")}}}}}})
	f.Add(b, 2)
	f.Add([]byte{0x0a, 0x02, 0x12, 0x00}, 1)
	f.Fuzz(func(t *testing.T, resp []byte, n int) {
		if n < 0 || n > 64 {
			return
		}
		ok := make([]bool, n)
		multiAnswers(resp, ok)
		var m pb.MultiResponse
		if proto.Unmarshal(resp, &m) != nil {
			return
		}
		clean := map[uint32]bool{}
		if len(m.RegionActionResult) == 1 && m.RegionActionResult[0].Exception == nil {
			for _, r := range m.RegionActionResult[0].ResultOrException {
				if r.Index != nil && r.Exception == nil {
					clean[*r.Index] = true
				}
			}
		}
		for j, v := range ok {
			if v && !clean[uint32(j)] {
				t.Errorf("action %d answered, but the response says %v", j, &m)
			}
		}
	})
}

// TestRegionBounds: rows find the region holding them; a region learned
// replaces those it overlaps.
func TestRegionBounds(t *testing.T) {
	var rb regionBounds
	rb.learn("t", []byte("g"), []byte("m"))
	rb.learn("t", nil, []byte("c"))
	rb.learn("t", []byte("m"), nil)
	rb.learn("other", nil, nil)
	check := func(want map[string]int) {
		t.Helper()
		bs := rb.get("t")
		for row, w := range want {
			if got := find(bs, []byte(row)); got != w {
				t.Errorf("find(%q) in %v = %d, want %d", row, bs, got, w)
			}
		}
	}
	// [ -c) [g-m) [m- )
	check(map[string]int{"": 0, "a": 0, "c": -1, "d": -1, "g": 1, "h": 1, "m": 2, "zz": 2})
	// g-m splits into g-i and i-m; learning g-i drops g-m.
	rb.learn("t", []byte("g"), []byte("i"))
	check(map[string]int{"a": 0, "g": 1, "h": 1, "i": -1, "l": -1, "m": 2})
	// One region over everything replaces them all.
	rb.learn("t", nil, nil)
	if bs := rb.get("t"); len(bs) != 1 {
		t.Errorf("after the whole table: %v", bs)
	}
	check(map[string]int{"": 0, "zz": 0})
}

// TestPutManyRegions: Puts over a table split into six regions, more rows
// than one put call carries, rows repeated and rows without cells, come
// back from a scan exactly, on the first Put (no region known yet) and
// after.
func TestPutManyRegions(t *testing.T) {
	s := needHBase(t)
	ctx := testCtx(t)
	name := uniqueName(t)
	spec := TableSpec{Name: name, Families: map[string]map[string]string{"f": nil, "g": nil}, SplitKeys: [][]byte{{0x20}, {0x40}, {0x60}, {0x80}, {0xc0}}}
	if _, err := s.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.DropTables(context.Background(), name); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	rng := rand.New(rand.NewPCG(3, 4))
	want := map[string]string{}
	for round, n := range []int{putCallRows + 500, 300, 1} {
		puts := make([]store.Put, n)
		for i := range puts {
			row := []byte{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(4))}
			val := fmt.Sprintf("%d.%d", round, i)
			fam := "f"
			if i%3 == 0 {
				fam = "g"
			}
			puts[i] = store.Put{Row: row, Cells: []store.Cell{{Family: []byte(fam), Qualifier: []byte{byte(i % 2)}, Value: []byte(val), Timestamp: uint64(1000 + round)}}}
			want[fmt.Sprintf("%x/%s/%x", row, fam, []byte{byte(i % 2)})] = val
		}
		puts = append(puts, store.Put{Row: []byte{0x50}})
		if err := s.Put(ctx, name, puts); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]string{}
	sc := s.Scan(ctx, store.ScanRequest{Table: name})
	for sc.Next() {
		r := sc.Row()
		for _, c := range r.Cells {
			got[fmt.Sprintf("%x/%s/%x", r.Key, c.Family, c.Qualifier)] = string(c.Value)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("%d cells, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("cell %s = %q, want %q", k, got[k], v)
		}
	}
	if bs := s.regionBounds.get(name); len(bs) != 6 {
		t.Errorf("regions learned: %d, want 6", len(bs))
	}
	// A family the table lacks: the rows fall back to gohbase's path,
	// which says the put is invalid.
	err := s.Put(ctx, name, []store.Put{{Row: []byte("x"), Cells: []store.Cell{{Family: []byte("nope"), Qualifier: []byte("q")}}}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("put into a missing family: %v, want store.ErrInvalid", err)
	}
}

// BenchmarkEncodePuts: a request's 2000 data rows of ten tags, one cell
// each, encoded and cut into one put call.
func BenchmarkEncodePuts(b *testing.B) {
	puts := make([]store.Put, 2000)
	for i := range puts {
		row := make([]byte, 3+4+10*6)
		row[0], row[1], row[2] = 0, 0, byte(i%100)
		for j := 7; j < len(row); j++ {
			row[j] = byte(i * j)
		}
		puts[i] = store.Put{Row: row, Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte{0xf0, 0, 0x01, 0x0b}, Value: []byte{byte(i)}, Timestamp: 0}}}
	}
	reg := region.NewInfo(1, nil, []byte("tsdb"), []byte("tsdb,,1.abc."), nil, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		enc, _, err := encodePuts(puts)
		if err != nil {
			b.Fatal(err)
		}
		want := make([]int, len(enc.rows))
		for i := range want {
			want[i] = i
		}
		call := &putCall{multiCall: newMultiCall(context.Background(), []byte("tsdb")), enc: &enc, want: want}
		call.SetRegion(reg)
		if u := call.ToProto().(*emptypb.Empty).ProtoReflect().GetUnknown(); len(u) == 0 {
			b.Fatal("empty request")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(puts)), "ns/row")
}

// TestPutsOwnTheirBytes: what Put sends, by either path, does not change
// when the caller rewrites its puts' bytes after encoding (as a caller
// does once Put has returned, while a call given up on may not yet have
// been encoded for the wire).
func TestPutsOwnTheirBytes(t *testing.T) {
	puts := func() []store.Put {
		return []store.Put{
			{Row: []byte("row-1"), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte("q1"), Value: []byte("v1")}}},
			{Row: []byte("row-2"), Cells: []store.Cell{{Family: []byte("t"), Qualifier: []byte("q2"), Value: []byte("v2"), Timestamp: 5}}},
		}
	}
	overwrite := func(ps []store.Put) {
		for _, p := range ps {
			for i := range p.Row {
				p.Row[i] = 'X'
			}
			for _, c := range p.Cells {
				for i := range c.Value {
					c.Value[i] = 'Y'
				}
			}
		}
	}
	t.Run("put calls", func(t *testing.T) {
		ps := puts()
		enc, _, err := encodePuts(ps)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(enc.buf)
		overwrite(ps)
		for i, row := range []string{"row-1", "row-2"} {
			if string(enc.rows[i]) != row {
				t.Errorf("row %d reads %q after the caller's rewrite, want %q", i, enc.rows[i], row)
			}
		}
		if !bytes.Equal(enc.buf, want) {
			t.Errorf("encoded mutations changed with the caller's rewrite")
		}
	})
	t.Run("gohbase's path", func(t *testing.T) {
		ps := puts()
		muts, err := mutations(ps)
		if err != nil {
			t.Fatal(err)
		}
		overwrite(ps)
		var got []string
		for _, m := range muts {
			got = append(got, fmt.Sprintf("%s@%d:%s", m.row, m.ts, m.values["t"]))
		}
		if want := "row-1@0:map[q1:v1] row-2@5:map[q2:v2]"; strings.Join(got, " ") != want {
			t.Errorf("mutations after the caller's rewrite: %s, want %s", strings.Join(got, " "), want)
		}
	})
}
