package hbase

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"
	"github.com/tsuna/gohbase/pb"
	"github.com/tsuna/gohbase/region"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/promhbase/promhbase/store"
)

// Batched check-and-puts.
//
// Since HBase 2.4 a MultiRequest's RegionAction may carry a condition of
// its own (RegionAction field 4, a Condition, as in a MutateRequest): the
// region server runs the action's mutation only if the condition holds,
// and answers whether it ran in RegionActionResult field 3 ("processed").
// One Multi RPC then carries many check-and-puts, each on its own row and
// each atomic on its own, run one after another in the order sent.
// gohbase's generated protobuf predates both fields; they are written and
// read here as unknown fields of gohbase's messages.
//
// An older region server ignores field 4 and would run the mutation
// unconditionally, so no batch goes to a server before a probe showed that
// it honours conditions: a RegionAction whose condition cannot hold (a cell
// compared to a value it cannot have) and whose Put names a family the
// table lacks. A server that honours the condition does not run the Put and
// answers processed=false; an older one runs it and fails on the family.
// Neither writes anything. The answer is remembered per connection to a
// region server (a server restarted, perhaps as another version, is a new
// connection and is probed again); a server that failed the probe gets
// each check-and-put as an RPC of its own, as before. A batch's answer
// without the processed field (which only a server ignoring conditions
// would send) marks its connection as failing the probe.

const (
	// casBatchSize bounds the check-and-puts of one Multi RPC: the region
	// server runs them one after another in one handler (a WAL sync each),
	// so a batch is split to let several handlers share the syncs.
	casBatchSize = 64
	// casBatchConcurrency bounds the Multi RPCs of one batch in flight.
	casBatchConcurrency = 8

	regionActionCondition = 4 // RegionAction.condition (HBase 2.4+)
	resultProcessed       = 3 // RegionActionResult.processed (HBase 2.4+)

	// probeFamily is a family no promhbase or OpenTSDB table has, so that
	// a probe's Put fails on a server that ignores its condition.
	probeFamily = "promhbase-absent-probe-family"
	// probeQualifier and probeExpected make the probe's condition: the
	// cell would have to hold this value, which no OpenTSDB or promhbase
	// cell does.
	probeQualifier = "promhbase-probe"
	probeExpected  = "\x00promhbase-probe: batched conditions\x00"
)

// casSupport is what a region server answered to the probe.
type casSupport uint8

const (
	casUnknown casSupport = iota
	casBatched
	casSingle
)

// casServers remembers, per connection to a region server (gohbase's
// region client), whether it runs batched check-and-puts.
type casServers struct {
	mu sync.Mutex
	m  map[hrpc.RegionClient]casSupport
}

// maxCASServers bounds the connections remembered; past it they are
// forgotten and probed again.
const maxCASServers = 1024

func (c *casServers) get(rc hrpc.RegionClient) casSupport {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[rc]
}

func (c *casServers) set(rc hrpc.RegionClient, v casSupport) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCASServers {
		c.m = make(map[hrpc.RegionClient]casSupport)
	}
	c.m[rc] = v
}

// casOp is one check-and-put as a RegionAction's parts.
type casOp struct {
	row       []byte
	mutation  *pb.MutationProto
	condition []byte // a marshalled pb.Condition
}

// newCASOp builds the parts of op through gohbase's own CheckAndPut, so
// that the mutation and the condition are encoded exactly as a single
// check-and-put's. placeholder is any region: gohbase's encoding names
// one, the RegionAction names the real one instead.
func newCASOp(ctx context.Context, table []byte, op store.CondPut, placeholder hrpc.RegionInfo) (casOp, error) {
	muts, err := mutations([]store.Put{op.Put})
	if err == nil && len(muts) != 1 {
		err = fmt.Errorf("%d distinct cell timestamps (want 1, and at least one cell): %w", len(muts), store.ErrInvalid)
	}
	if err != nil {
		return casOp{}, err
	}
	m := muts[0]
	p, err := hrpc.NewPut(ctx, table, m.row, m.values, m.options()...)
	if err != nil {
		return casOp{}, fmt.Errorf("%w: %w", store.ErrInvalid, err)
	}
	cp, err := hrpc.NewCheckAndPutWithCompareType(p, op.Family, op.Qualifier, op.Expected, pb.CompareType_EQUAL)
	if err != nil {
		return casOp{}, fmt.Errorf("%w: %w", store.ErrInvalid, err)
	}
	cp.SetRegion(placeholder)
	req, ok := cp.ToProto().(*pb.MutateRequest)
	if !ok || req.Mutation == nil || req.Condition == nil {
		return casOp{}, fmt.Errorf("check-and-put of row %x: gohbase built no mutation and condition", op.Put.Row)
	}
	cond, err := proto.Marshal(req.Condition)
	if err != nil {
		return casOp{}, fmt.Errorf("check-and-put of row %x: marshal condition: %w", op.Put.Row, err)
	}
	return casOp{row: op.Put.Row, mutation: req.Mutation, condition: cond}, nil
}

// probeOp is the probe's RegionAction parts for a region holding row.
func probeOp(row []byte, family string) casOp {
	cond, _ := proto.Marshal(&pb.Condition{
		Row:         row,
		Family:      []byte(family),
		Qualifier:   []byte(probeQualifier),
		CompareType: pb.CompareType_EQUAL.Enum(),
		Comparator: &pb.Comparator{
			Name:                 proto.String("org.apache.hadoop.hbase.filter.BinaryComparator"),
			SerializedComparator: mustMarshal(&pb.BinaryComparator{Comparable: &pb.ByteArrayComparable{Value: []byte(probeExpected)}}),
		},
	})
	mt := pb.MutationProto_PUT
	return casOp{
		row: row,
		mutation: &pb.MutationProto{
			Row:        row,
			MutateType: &mt,
			ColumnValue: []*pb.MutationProto_ColumnValue{{
				Family:         []byte(probeFamily),
				QualifierValue: []*pb.MutationProto_ColumnValue_QualifierValue{{Qualifier: []byte("p"), Value: []byte{}}},
			}},
		},
		condition: cond,
	}
}

func mustMarshal(m proto.Message) []byte {
	b, _ := proto.Marshal(m)
	return b
}

// casCall is an hrpc.Call: one Multi RPC of check-and-puts, each in a
// RegionAction of its own with its condition. The region it is sent to is
// the one holding ops[want[0]]'s row; ToProto puts in the request the ops
// of want that the region holds (sent), or, when the region's server has
// not been probed, only the probe.
type casCall struct {
	multiCall
	family  string // of the probe's condition: a family the table has
	ops     []casOp
	want    []int
	prefix  bool // only the leading ops of want that the region holds
	servers *casServers

	// Set by ToProto, read after SendRPC returned.
	sent   []int
	client hrpc.RegionClient // the connection the request went to
	probed bool              // the request was the probe
}

var _ hrpc.Call = (*casCall)(nil)

func (c *casCall) Key() []byte                { return c.ops[c.want[0]].row }
func (c *casCall) NewResponse() proto.Message { return &pb.MultiResponse{} }
func (c *casCall) Description() string        { return "CheckAndPutMulti" }

// ToProto builds the MultiRequest. It runs once per attempt, after
// SetRegion.
func (c *casCall) ToProto() proto.Message {
	c.sent, c.probed = c.sent[:0], false
	spec := &pb.RegionSpecifier{
		Type:  pb.RegionSpecifier_REGION_NAME.Enum(),
		Value: c.region.Name(),
	}
	// The connection gohbase sends on is the region's at this moment or
	// an older one, which then has failed and sends nothing.
	c.client = c.region.Client()
	req := &pb.MultiRequest{}
	switch c.servers.get(c.client) {
	case casBatched:
		start, stop := c.region.StartKey(), c.region.StopKey()
		for _, i := range c.want {
			row := c.ops[i].row
			if bytes.Compare(row, start) < 0 || (len(stop) > 0 && bytes.Compare(row, stop) >= 0) {
				if c.prefix {
					break
				}
				continue
			}
			c.sent = append(c.sent, i)
			req.RegionAction = append(req.RegionAction, conditionalAction(spec, c.ops[i]))
		}
	case casUnknown:
		c.probed = true
		req.RegionAction = append(req.RegionAction, conditionalAction(spec, probeOp(c.Key(), c.family)))
	}
	return req
}

// conditionalAction is op as a RegionAction with its condition.
func conditionalAction(spec *pb.RegionSpecifier, op casOp) *pb.RegionAction {
	ra := &pb.RegionAction{
		Region: spec,
		Action: []*pb.Action{{Index: proto.Uint32(0), Mutation: op.mutation}},
	}
	unknown := protowire.AppendTag(nil, regionActionCondition, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, op.condition)
	ra.ProtoReflect().SetUnknown(unknown)
	return ra
}

// processed reads RegionActionResult.processed from r's unknown fields;
// ok is false when the server did not set it.
func processed(r *pb.RegionActionResult) (v, ok bool) {
	b := r.ProtoReflect().GetUnknown()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false, false
		}
		b = b[n:]
		if num == resultProcessed && typ == protowire.VarintType {
			x, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return false, false
			}
			v, ok = x != 0, true
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return false, false
		}
		b = b[m:]
	}
	return v, ok
}

// CheckAndPutBatch runs the check-and-puts of ops (store.BatchCheckAndPutter):
// on region servers that honour a RegionAction's condition (HBase 2.4+,
// probed once per server), up to casBatchSize of them in one Multi RPC,
// casBatchConcurrency RPCs at once; every op such an RPC did not answer
// (another region's row, an exception for the op, an RPC that failed) and
// every op for an older server runs as a CheckAndPut of its own. written[i]
// reports whether ops[i] was written. ops on one row run in their order.
// On error, ops not reported written may or may not have landed, as with a
// failed CheckAndPut.
func (s *Store) CheckAndPutBatch(ctx context.Context, table string, ops []store.CondPut, written []bool) error {
	if len(ops) == 0 {
		return nil
	}
	if err := checkTable(table); err != nil {
		return fmt.Errorf("check-and-put %d rows in %s: %w", len(ops), table, err)
	}
	rpc, ok := s.client.(gohbase.RPCClient)
	if !ok {
		return s.checkAndPutEach(ctx, table, ops, allOps(len(ops)), written, casBatchConcurrency*4)
	}
	tbl := []byte(table)
	placeholder := region.NewInfo(0, nil, tbl, []byte("promhbase-placeholder"), nil, nil)
	cops := make([]casOp, len(ops))
	for i, op := range ops {
		if err := checkCell(table, op.Put.Row, op.Family); err != nil {
			return fmt.Errorf("check-and-put %s:%s of row %x in %s: %w", op.Family, op.Qualifier, op.Put.Row, table, err)
		}
		var err error
		if cops[i], err = newCASOp(ctx, tbl, op, placeholder); err != nil {
			return fmt.Errorf("check-and-put %s:%s of row %x in %s: %w", op.Family, op.Qualifier, op.Put.Row, table, err)
		}
	}
	chunks, repeats := chunkOps(ops, casBatchSize)
	if repeats {
		return s.casInOrder(ctx, rpc, table, ops, cops, written)
	}
	return s.casParallel(ctx, rpc, table, ops, cops, chunks, written)
}

// casInOrder runs ops where a row repeats: its ops must run in their
// order. The server runs a Multi's actions in their order, separate RPCs
// in any: one RPC at a time, each carrying the longest run of the pending
// ops its region holds, and an op the server failed runs on its own before
// the next RPC.
func (s *Store) casInOrder(ctx context.Context, rpc gohbase.RPCClient, table string, ops []store.CondPut, cops []casOp, written []bool) error {
	tbl, family := []byte(table), ops[0].Family
	pending := allOps(len(ops))
	for len(pending) > 0 {
		want := pending[:min(casBatchSize, len(pending))]
		left, rest, sent := s.sendCASChunk(ctx, rpc, tbl, family, cops, want, true, written)
		if err := s.checkAndPutEach(ctx, table, ops, left, written, 1); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("check-and-put %d rows in %s: %w", len(ops), table, err)
		}
		if sent == 0 && len(left) == 0 && len(rest) == len(want) {
			continue // a probe
		}
		pending = append(rest, pending[len(want):]...)
	}
	return nil
}

// casParallel runs the chunks of ops (no row repeats) as RPCs in parallel,
// round after round for the ops another region holds, then the ops left
// without an answer one by one.
func (s *Store) casParallel(ctx context.Context, rpc gohbase.RPCClient, table string, ops []store.CondPut, cops []casOp, chunks [][]int, written []bool) error {
	tbl, family := []byte(table), ops[0].Family
	var (
		mu     sync.Mutex
		single []int // ops left to CheckAndPut one by one
	)
	for len(chunks) > 0 {
		var next [][]int
		_ = store.Parallel(ctx, len(chunks), casBatchConcurrency, func(ctx context.Context, j int) error {
			left, rest, _ := s.sendCASChunk(ctx, rpc, tbl, family, cops, chunks[j], false, written)
			mu.Lock()
			single = append(single, left...)
			if len(rest) > 0 {
				next = append(next, rest)
			}
			mu.Unlock()
			return nil
		})
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("check-and-put %d rows in %s: %w", len(ops), table, err)
		}
		chunks = next
	}
	return s.checkAndPutEach(ctx, table, ops, single, written, casBatchConcurrency*4)
}

// chunkOps cuts 0..len(ops)-1 into runs of at most size and reports
// whether a row appears more than once.
func chunkOps(ops []store.CondPut, size int) (chunks [][]int, repeats bool) {
	seen := make(map[string]struct{}, len(ops))
	all := allOps(len(ops))
	for i, op := range ops {
		if _, ok := seen[string(op.Put.Row)]; ok {
			repeats = true
		}
		seen[string(op.Put.Row)] = struct{}{}
		if i%size == 0 {
			chunks = append(chunks, all[i:min(i+size, len(ops)):min(i+size, len(ops))])
		}
	}
	return chunks, repeats
}

// allOps is 0..n-1.
func allOps(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// sendCASChunk sends the ops of chunk (indexes into cops) as one Multi RPC
// and records the answered ones in written. With prefix, the RPC carries
// the leading ops of chunk that its region holds, else all of them that
// it holds. It returns the ops to run one by one (left), those to send
// again in another RPC (rest: another region's, or all of them after a
// probe), and how many the RPC carried.
func (s *Store) sendCASChunk(ctx context.Context, rpc gohbase.RPCClient, table []byte, family string, cops []casOp, chunk []int, prefix bool, written []bool) (left, rest []int, sent int) {
	actx, cancel := context.WithTimeout(ctx, s.cfg.RPCTimeout)
	defer cancel()
	call := &casCall{
		multiCall: newMultiCall(actx, table),
		family:    family, ops: cops, want: chunk, prefix: prefix,
		servers: &s.casServers,
	}
	msg, err := rpc.SendRPC(call)
	resp, _ := msg.(*pb.MultiResponse)
	if call.probed {
		if err != nil || resp == nil {
			// No answer: the next call probes again.
			return nil, chunk, 0
		}
		support := casSingle
		if len(resp.RegionActionResult) == 1 && resp.RegionActionResult[0].Exception == nil {
			if v, ok := processed(resp.RegionActionResult[0]); ok && !v {
				support = casBatched
			}
		}
		s.casServers.set(call.client, support)
		s.logger.Info("probed region server for batched check-and-puts", "server", call.client.Addr(), "batched", support == casBatched)
		return nil, chunk, 0
	}
	if err != nil || resp == nil || len(resp.RegionActionResult) != len(call.sent) {
		// Unknown outcome: each runs again on its own; a CheckAndPut
		// finds its own cell written and reports false, which callers
		// treat as a lost race and settle by reading the cell.
		return chunk, nil, 0
	}
	if len(call.sent) == 0 {
		// The server runs no batches: one by one.
		return chunk, nil, 0
	}
	done := make(map[int]bool, len(call.sent))
	batched := 0
	for j, i := range call.sent {
		r := resp.RegionActionResult[j]
		v, ok := processed(r)
		if r.Exception == nil && !ok {
			// Only a server that ignores conditions answers so; the probe
			// said otherwise. No more batches on this connection.
			s.casServers.set(call.client, casSingle)
			s.logger.Error("region server answered a batched check-and-put without saying whether it ran; sending check-and-puts one by one", "server", call.client.Addr(), "row", fmt.Sprintf("%x", cops[i].row))
		}
		if r.Exception != nil || !ok {
			left = append(left, i)
			done[i] = true
			continue
		}
		written[i] = v
		done[i] = true
		batched++
	}
	s.metrics.casOps.WithLabelValues("batched").Add(float64(batched))
	for _, i := range chunk {
		if !done[i] {
			rest = append(rest, i)
		}
	}
	return left, rest, len(call.sent)
}

// checkAndPutEach runs ops[idx] as CheckAndPuts of their own, at most
// concurrency at once, and reports the first error.
func (s *Store) checkAndPutEach(ctx context.Context, table string, ops []store.CondPut, idx []int, written []bool, concurrency int) error {
	if len(idx) == 0 {
		return nil
	}
	s.metrics.casOps.WithLabelValues("single").Add(float64(len(idx)))
	errs := make([]error, len(idx))
	_ = store.Parallel(ctx, len(idx), concurrency, func(ctx context.Context, j int) error {
		op := &ops[idx[j]]
		written[idx[j]], errs[j] = s.CheckAndPut(ctx, table, op.Put, op.Family, op.Qualifier, op.Expected)
		return nil
	})
	for j, err := range errs {
		if err != nil {
			for _, i := range idx {
				written[i] = false
			}
			return fmt.Errorf("check-and-put %d rows in %s: %d of them one by one: %w", len(ops), table, len(idx), errs[j])
		}
	}
	return ctx.Err()
}

// CheckAndPutSyncsEach reports true: the region server makes each
// check-and-put durable with a WAL sync of its own, in a batch as well,
// while the rows of one Put share a sync. Callers with many rows that no
// other writer races for write them blind instead.
func (s *Store) CheckAndPutSyncsEach() bool { return true }
