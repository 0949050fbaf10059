package hbase

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"
	"github.com/tsuna/gohbase/region"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/promhbase/promhbase/store"
)

// TestCheckAndPutBatchRegions runs batches of check-and-puts over a table
// split into four regions against a model: absent and present cells,
// expected values that match and that do not, rows repeated within a
// batch (which run in their order), and more ops than one Multi RPC
// carries. The test HBase (2.6) must be probed as honouring conditions,
// and the probe must leave no cell behind.
func TestCheckAndPutBatchRegions(t *testing.T) {
	s := needHBase(t)
	ctx := testCtx(t)
	name := uniqueName(t)
	spec := TableSpec{Name: name, Families: map[string]map[string]string{"f": nil}, SplitKeys: [][]byte{[]byte("r1"), []byte("r2"), []byte("r3")}}
	if _, err := s.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.DropTables(context.Background(), name); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	model := map[string]string{} // row -> value of f:q
	rng := rand.New(rand.NewPCG(1, 2))
	for round, tc := range []struct {
		n        int
		distinct bool // no row twice: the RPCs run in parallel
	}{{1, false}, {7, false}, {3*casBatchSize + 5, false}, {400, false}, {5*casBatchSize + 3, true}, {300, true}} {
		n := tc.n
		t.Run(fmt.Sprintf("round%d_%d_distinct=%v", round, n, tc.distinct), func(t *testing.T) {
			ops := make([]store.CondPut, n)
			perm := rng.Perm(4 * 1000)
			for i := range ops {
				row := fmt.Sprintf("r%d-%03d", rng.IntN(4), rng.IntN(60))
				if tc.distinct {
					row = fmt.Sprintf("r%d-%03d", perm[i]%4, perm[i]/4%60)
					if i >= 240 { // beyond the rows the other rounds use
						row = fmt.Sprintf("r%d-x%04d", perm[i]%4, perm[i])
					}
				}
				val := fmt.Sprintf("v%d.%d", round, i)
				var expected []byte
				if rng.IntN(3) == 0 {
					if cur, ok := model[row]; ok && rng.IntN(2) == 0 {
						expected = []byte(cur)
					} else {
						expected = []byte("no-such-value")
					}
				}
				ops[i] = store.CondPut{Put: store.Put{Row: []byte(row), Cells: []store.Cell{{Family: []byte("f"), Qualifier: []byte("q"), Value: []byte(val)}}}, Family: "f", Qualifier: "q", Expected: expected}
			}
			want := make([]bool, n)
			for i, op := range ops {
				cur, ok := model[string(op.Put.Row)]
				if (len(op.Expected) == 0 && !ok) || (len(op.Expected) > 0 && ok && cur == string(op.Expected)) {
					want[i] = true
					model[string(op.Put.Row)] = string(op.Put.Cells[0].Value)
				}
			}
			written := make([]bool, n)
			batched := testutil.ToFloat64(s.metrics.casOps.WithLabelValues("batched"))
			if err := s.CheckAndPutBatch(ctx, name, ops, written); err != nil {
				t.Fatal(err)
			}
			// Every op answered in a batch: none failed over to an RPC of
			// its own, so the conditions did the work.
			if got := testutil.ToFloat64(s.metrics.casOps.WithLabelValues("batched")) - batched; got != float64(n) {
				t.Errorf("%v ops answered in batches, want %d", got, n)
			}
			for i := range ops {
				if written[i] != want[i] {
					t.Errorf("op %d (row %s, expected %q): written %v, want %v", i, ops[i].Put.Row, ops[i].Expected, written[i], want[i])
				}
			}
		})
	}
	batched := 0
	s.casServers.mu.Lock()
	for rc, v := range s.casServers.m {
		if v != casBatched {
			t.Errorf("region server %s probed as %d, want batched", rc.Addr(), v)
		}
		batched++
	}
	s.casServers.mu.Unlock()
	if batched == 0 {
		t.Error("no region server was probed")
	}
	sc := s.Scan(ctx, store.ScanRequest{Table: name})
	rows := 0
	for sc.Next() {
		r := sc.Row()
		rows++
		if len(r.Cells) != 1 || string(r.Cells[0].Qualifier) != "q" || model[string(r.Key)] != string(r.Cells[0].Value) {
			t.Errorf("row %s holds %v, want f:q=%s", r.Key, r.Cells, model[string(r.Key)])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if rows != len(model) {
		t.Errorf("%d rows, want %d", rows, len(model))
	}
}

// TestProcessed reads RegionActionResult field 3 among other unknown
// fields, and says when it is missing or cut.
func TestProcessed(t *testing.T) {
	field := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	bytesField := protowire.AppendBytes(protowire.AppendTag(nil, 9, protowire.BytesType), []byte("xyz"))
	for _, tc := range []struct {
		name     string
		unknown  []byte
		v, found bool
	}{
		{"absent", nil, false, false},
		{"true", field(3, 1), true, true},
		{"false", field(3, 0), false, true},
		{"after other fields", append(append([]byte{}, bytesField...), field(3, 1)...), true, true},
		{"other field only", field(7, 1), false, false},
		{"cut varint", field(3, 300)[:2], false, false},
		{"cut bytes", bytesField[:3], false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &pb.RegionActionResult{}
			r.ProtoReflect().SetUnknown(tc.unknown)
			v, ok := processed(r)
			if v != tc.v || ok != tc.found {
				t.Errorf("processed = %v, %v; want %v, %v", v, ok, tc.v, tc.found)
			}
		})
	}
}

// FuzzProcessed: any unknown bytes are read without a panic, and after
// well-formed fields a processed field appended last is the one read.
func FuzzProcessed(f *testing.F) {
	f.Add([]byte{}, true)
	f.Add(protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 0), true)
	f.Add([]byte{0x1a, 0x05, 'a'}, false)
	f.Fuzz(func(t *testing.T, b []byte, v bool) {
		r := &pb.RegionActionResult{}
		r.ProtoReflect().SetUnknown(b)
		processed(r)
		wellFormed := true
		for rest := b; len(rest) > 0; {
			num, typ, n := protowire.ConsumeTag(rest)
			if n < 0 {
				wellFormed = false
				break
			}
			m := protowire.ConsumeFieldValue(num, typ, rest[n:])
			if m < 0 {
				wellFormed = false
				break
			}
			rest = rest[n+m:]
		}
		if !wellFormed {
			return
		}
		x := uint64(0)
		if v {
			x = 1
		}
		r.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(append([]byte{}, b...), 3, protowire.VarintType), x))
		if got, ok := processed(r); !ok || got != v {
			t.Errorf("processed after %x = %v, %v; want %v, true", b, got, ok, v)
		}
	})
}

// fakeRegionClient stands for one connection to a region server.
type fakeRegionClient struct{ addr string }

func (f *fakeRegionClient) Dial(context.Context) error              { return nil }
func (f *fakeRegionClient) Close()                                  {}
func (f *fakeRegionClient) Addr() string                            { return f.addr }
func (f *fakeRegionClient) QueueRPC(hrpc.Call)                      {}
func (f *fakeRegionClient) QueueBatch(context.Context, []hrpc.Call) {}
func (f *fakeRegionClient) String() string                          { return f.addr }

// fakeRegionServer answers Multi RPCs of check-and-puts and single
// check-and-puts on one region holding everything, with family "id"
// only. honours: it runs a RegionAction's condition (HBase 2.4+); else it
// runs the mutation unconditionally, as older servers do. answers: it sets
// RegionActionResult.processed.
type fakeRegionServer struct {
	fakeClient
	honours, answers bool
	conn             *fakeRegionClient
	cells            map[string]string // row/family/qualifier -> value
	multis, singles  int
	batchedOps       int
}

func (f *fakeRegionServer) SendRPC(call hrpc.Call) (proto.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.multis++
	reg := region.NewInfo(1, nil, call.Table(), []byte("t,,1.x."), nil, nil)
	reg.SetClient(f.conn)
	call.SetRegion(reg)
	req := call.ToProto().(*pb.MultiRequest)
	resp := &pb.MultiResponse{}
	for _, ra := range req.RegionAction {
		var cond pb.Condition
		for b := ra.ProtoReflect().GetUnknown(); len(b) > 0; {
			num, typ, n := protowire.ConsumeTag(b)
			b = b[n:]
			v, m := protowire.ConsumeBytes(b)
			b = b[m:]
			if num == 4 && typ == protowire.BytesType {
				if err := proto.Unmarshal(v, &cond); err != nil {
					return nil, err
				}
			}
		}
		mp := ra.Action[0].Mutation
		res := &pb.RegionActionResult{}
		holds := true
		if f.honours {
			var cmp pb.BinaryComparator
			if err := proto.Unmarshal(cond.Comparator.SerializedComparator, &cmp); err != nil {
				return nil, err
			}
			cur, ok := f.cells[fmt.Sprintf("%s/%s/%s", cond.Row, cond.Family, cond.Qualifier)]
			want := cmp.Comparable.Value
			holds = (len(want) == 0 && !ok) || (len(want) > 0 && ok && cur == string(want))
		}
		if holds {
			if string(mp.ColumnValue[0].Family) != "id" {
				res.Exception = &pb.NameBytesPair{Name: proto.String("org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException")}
			} else {
				for _, qv := range mp.ColumnValue[0].QualifierValue {
					f.cells[fmt.Sprintf("%s/id/%s", mp.Row, qv.Qualifier)] = string(qv.Value)
				}
				f.batchedOps++
			}
		}
		if f.answers && res.Exception == nil {
			res.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), map[bool]uint64{false: 0, true: 1}[holds]))
		}
		resp.RegionActionResult = append(resp.RegionActionResult, res)
	}
	return resp, nil
}

func (f *fakeRegionServer) CheckAndPut(p *hrpc.Mutate, family, qualifier string, expected []byte) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.singles++
	key := fmt.Sprintf("%s/%s/%s", p.Key(), family, qualifier)
	cur, ok := f.cells[key]
	if (len(expected) == 0 && ok) || (len(expected) > 0 && (!ok || cur != string(expected))) {
		return false, nil
	}
	for fam, qs := range p.Values() {
		for q, v := range qs {
			f.cells[fmt.Sprintf("%s/%s/%s", p.Key(), fam, q)] = string(v)
		}
	}
	return true, nil
}

// TestCheckAndPutBatchServers: a server that honours conditions gets the
// check-and-puts in batches after one probe; an older server, which runs
// a RegionAction's mutation whatever its condition, gets only the probe,
// which writes nothing there, and then each check-and-put on its own; a
// server that stops answering whether an action ran gets no more batches.
// The outcomes are the same everywhere.
func TestCheckAndPutBatchServers(t *testing.T) {
	ops := func() []store.CondPut {
		var out []store.CondPut
		for i := range 150 {
			out = append(out, store.CondPut{Put: store.Put{Row: []byte(fmt.Sprintf("name%03d", i%100)), Cells: []store.Cell{{Family: []byte("id"), Qualifier: []byte("tagv"), Value: []byte(fmt.Sprint(i))}}}, Family: "id", Qualifier: "tagv"})
		}
		out = append(out, store.CondPut{Put: store.Put{Row: []byte("taken"), Cells: []store.Cell{{Family: []byte("id"), Qualifier: []byte("tagv"), Value: []byte("new")}}}, Family: "id", Qualifier: "tagv", Expected: []byte("other")})
		return out
	}
	for _, tc := range []struct {
		name             string
		honours, answers bool
		wantMultis       int // Multi RPCs: the probe, then batches
		wantSingles      int
	}{
		// 151 ops with repeated rows: chunks of 64, 64 and 23, one RPC at
		// a time. An older server gets, after the probe, one Multi RPC a
		// chunk that carries nothing, then the chunk's check-and-puts.
		{"HBase 2.4+", true, true, 1 + 3, 0},
		{"older HBase", false, false, 1 + 3, 151},
		{"answers stop", true, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeRegionServer{honours: tc.honours, answers: tc.answers, conn: &fakeRegionClient{addr: "rs1:16020"}, cells: map[string]string{"taken/id/tagv": "old"}}
			if tc.name == "answers stop" {
				// It answered the probe as a 2.4+ server does, then
				// nothing more.
				f.answers = true
				f.honours = true
			}
			s := fakeStore(t, &f.fakeClient, Config{})
			s.client = f
			o := ops()
			written := make([]bool, len(o))
			if tc.name == "answers stop" {
				// Probe alone first.
				if err := s.CheckAndPutBatch(context.Background(), "tsdb-uid", o[:1], written[:1]); err != nil {
					t.Fatal(err)
				}
				f.answers, f.honours = false, false
				f.cells = map[string]string{"taken/id/tagv": "old"}
				f.multis, f.singles, f.batchedOps = 0, 0, 0
				written = make([]bool, len(o))
				s.casServers.set(f.conn, casBatched)
			}
			if err := s.CheckAndPutBatch(context.Background(), "tsdb-uid", o, written); err != nil {
				t.Fatal(err)
			}
			for i, op := range o {
				want := i < 100 // the first op of each name wins; "taken" holds another value
				if written[i] != want && tc.name != "answers stop" {
					t.Errorf("op %d (%s): written %v, want %v", i, op.Put.Row, written[i], want)
				}
			}
			for k := range f.cells {
				if strings.Contains(k, probeFamily) || strings.Contains(k, probeQualifier) {
					t.Errorf("the probe wrote %s", k)
				}
			}
			if tc.name == "answers stop" {
				// The first batch ran unconditionally (the server lies);
				// after it, no mutation runs in a batch.
				if f.batchedOps > casBatchSize || s.casServers.get(f.conn) != casSingle || f.singles != len(o) {
					t.Errorf("%d mutations in batches, %d single, support %d; want at most one batch's, then every op on its own", f.batchedOps, f.singles, s.casServers.get(f.conn))
				}
				return
			}
			if f.multis != tc.wantMultis || f.singles != tc.wantSingles {
				t.Errorf("%d Multi RPCs and %d single check-and-puts, want %d and %d", f.multis, f.singles, tc.wantMultis, tc.wantSingles)
			}
			if !tc.honours && f.batchedOps != 0 {
				t.Errorf("%d mutations ran unconditionally on the older server", f.batchedOps)
			}
		})
	}
}
