package hbase

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tsuna/gohbase/pb"
	"google.golang.org/protobuf/encoding/protowire"

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
	for addr, v := range s.casServers.m {
		if v != casBatched {
			t.Errorf("region server %s probed as %d, want batched", addr, v)
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
