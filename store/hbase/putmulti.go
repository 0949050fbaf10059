package hbase

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/promhbase/promhbase/store"
)

// Puts as Multi RPCs of one RegionAction each, encoded here.
//
// gohbase's own path builds an hrpc.Mutate per row (a map of maps of the
// cells), finds its region, encodes it, and delivers each row's answer on
// a channel of its own: most of promhbase's CPU on a steady write load. A
// putCall carries all the rows of one region in one Multi RPC:
//
//	MultiRequest
//	  1 regionAction: RegionAction
//	      1 region: RegionSpecifier {1 type: REGION_NAME (1), 2 value: region name}
//	      3 action: Action, one per row
//	          1 index: the row's place in the RegionAction
//	          2 mutation: MutationProto
//	              1 row
//	              2 mutate_type: PUT (2)
//	              3 column_value: ColumnValue, one per family
//	                  1 family
//	                  2 qualifier_value: QualifierValue, one per cell
//	                      1 qualifier, 2 value, 3 timestamp (absent: the server's time)
//
// The request and the response travel as the unknown fields of an empty
// message, so that neither is built nor read as a tree of Go structs. The
// answer is one RegionActionResult: a region-wide exception (2), or a
// ResultOrException (1) per action, with its index (1) and, when the row
// failed, an exception (3). Rows without a clean answer, and rows of a
// region that moved, go through gohbase's own path, which finds regions
// again and retries; a Put written twice is harmless.
//
// A put call is keyed by one row; gohbase finds that row's region and the
// call carries the rows of the batch that the region holds. The regions'
// bounds seen so far are kept per table (regionBounds), so that a batch is
// split by region before it is sent and its calls run in parallel.

const (
	putCallRows        = 4096    // rows of one put call at most
	putCallBytes       = 8 << 20 // and bytes of their mutations
	putCallConcurrency = 8       // put calls of one Put in flight
	putRounds          = 8       // rounds of calls before the rest go through gohbase's path
)

// encodedRows are the MutationProtos of a Put's rows, back to back.
type encodedRows struct {
	buf  []byte
	end  []int // row i's mutation is buf[end[i-1]:end[i]]
	rows [][]byte
}

func (e *encodedRows) mutation(i int) []byte {
	start := 0
	if i > 0 {
		start = e.end[i-1]
	}
	return e.buf[start:e.end[i]]
}

// encodePuts encodes each put with cells as a MutationProto (a put
// without cells is left out; puts index the rows). Cells of a family
// share a ColumnValue when they are adjacent.
func encodePuts(puts []store.Put) (enc encodedRows, idx []int, err error) {
	size := 0
	for _, p := range puts {
		size += len(p.Row) + 8
		for _, c := range p.Cells {
			size += len(c.Family) + len(c.Qualifier) + len(c.Value) + 24
		}
	}
	enc.buf = make([]byte, 0, size)
	for i, p := range puts {
		if len(p.Cells) == 0 {
			continue
		}
		if len(p.Row) == 0 {
			return enc, nil, fmt.Errorf("put with an empty row key: %w", store.ErrInvalid)
		}
		if len(p.Row) > math.MaxInt16 {
			return enc, nil, fmt.Errorf("row %x...: key of %d bytes, beyond HBase's %d: %w", p.Row[:16], len(p.Row), math.MaxInt16, store.ErrInvalid)
		}
		for _, c := range p.Cells {
			if len(c.Family) == 0 {
				return enc, nil, fmt.Errorf("row %x: cell with an empty family: %w", p.Row, store.ErrInvalid)
			}
			if c.Timestamp > math.MaxInt64 {
				return enc, nil, fmt.Errorf("row %x: cell timestamp %d beyond HBase's range: %w", p.Row, c.Timestamp, store.ErrInvalid)
			}
		}
		enc.buf = appendMutation(enc.buf, p)
		enc.end = append(enc.end, len(enc.buf))
		enc.rows = append(enc.rows, p.Row)
		idx = append(idx, i)
	}
	// The rows as the mutations hold them (each begins with its row, field
	// 1): the calls read their keys, to route them and to split them by
	// region, from this buffer, never from the caller's puts, which the
	// caller reuses once Put has returned, while an attempt given up on
	// may not yet have been encoded.
	for i, row := range enc.rows {
		at := protowire.SizeTag(1) + protowire.SizeVarint(uint64(len(row)))
		enc.rows[i] = enc.mutation(i)[at : at+len(row) : at+len(row)]
	}
	return enc, idx, nil
}

// appendMutation appends p as a MutationProto. Of cells with the same
// family, qualifier and timestamp only the last is put, as a later sample
// of an instant replaces an earlier one.
func appendMutation(b []byte, p store.Put) []byte {
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, p.Row)
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, 2) // PUT
	shadowed := shadowedCells(p.Cells)
	for i := 0; i < len(p.Cells); {
		fam := p.Cells[i].Family
		j := i
		size := protowire.SizeTag(1) + protowire.SizeBytes(len(fam))
		kept := 0
		for ; j < len(p.Cells) && bytes.Equal(p.Cells[j].Family, fam); j++ {
			if shadowed == nil || !shadowed[j] {
				size += protowire.SizeTag(2) + protowire.SizeBytes(qualifierValueSize(p.Cells[j]))
				kept++
			}
		}
		if kept == 0 {
			i = j
			continue
		}
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(size))
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, fam)
		for k, c := range p.Cells[i:j] {
			if shadowed != nil && shadowed[i+k] {
				continue
			}
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(qualifierValueSize(c)))
			b = protowire.AppendTag(b, 1, protowire.BytesType)
			b = protowire.AppendBytes(b, c.Qualifier)
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			b = protowire.AppendBytes(b, c.Value)
			if c.Timestamp != 0 {
				b = protowire.AppendTag(b, 3, protowire.VarintType)
				b = protowire.AppendVarint(b, c.Timestamp)
			}
		}
		i = j
	}
	return b
}

// shadowedCells marks the cells a later cell of the same family,
// qualifier and timestamp replaces; nil when there are none.
func shadowedCells(cells []store.Cell) []bool {
	if len(cells) < 2 {
		return nil
	}
	type coord struct {
		fam, qual string
		ts        uint64
	}
	var (
		shadowed []bool
		last     map[coord]int
	)
	for i, c := range cells {
		if len(cells) <= 8 {
			// Few cells: compare with the later ones.
			for _, d := range cells[i+1:] {
				if d.Timestamp == c.Timestamp && bytes.Equal(d.Qualifier, c.Qualifier) && bytes.Equal(d.Family, c.Family) {
					if shadowed == nil {
						shadowed = make([]bool, len(cells))
					}
					shadowed[i] = true
					break
				}
			}
			continue
		}
		if last == nil {
			last = make(map[coord]int, len(cells))
		}
		k := coord{string(c.Family), string(c.Qualifier), c.Timestamp}
		if prev, ok := last[k]; ok {
			if shadowed == nil {
				shadowed = make([]bool, len(cells))
			}
			shadowed[prev] = true
		}
		last[k] = i
	}
	return shadowed
}

func qualifierValueSize(c store.Cell) int {
	n := protowire.SizeTag(1) + protowire.SizeBytes(len(c.Qualifier)) + protowire.SizeTag(2) + protowire.SizeBytes(len(c.Value))
	if c.Timestamp != 0 {
		n += protowire.SizeTag(3) + protowire.SizeVarint(c.Timestamp)
	}
	return n
}

// regionBounds are the bounds of the regions put calls met, per table.
type regionBounds struct {
	mu sync.Mutex
	m  map[string][]bound // sorted by start, not overlapping
}

type bound struct{ start, stop []byte } // stop empty: the table's end

// find returns the index in bs of the bound holding row, or -1.
func find(bs []bound, row []byte) int {
	i, _ := slices.BinarySearchFunc(bs, row, func(b bound, row []byte) int { return bytes.Compare(b.start, row) })
	// bs[i-1].start < row <= bs[i].start
	if i < len(bs) && bytes.Equal(bs[i].start, row) {
		return i
	}
	if i == 0 {
		return -1
	}
	if b := bs[i-1]; len(b.stop) == 0 || bytes.Compare(row, b.stop) < 0 {
		return i - 1
	}
	return -1
}

func (r *regionBounds) get(table string) []bound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[table]
}

// learn records the region [start, stop) of table, dropping the bounds it
// overlaps (regions split or merged since).
func (r *regionBounds) learn(table string, start, stop []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[string][]bound)
	}
	old := r.m[table]
	if i := find(old, start); i >= 0 && bytes.Equal(old[i].start, start) && bytes.Equal(old[i].stop, stop) {
		return
	}
	bs := make([]bound, 0, len(old)+1)
	for _, b := range old {
		if (len(stop) == 0 || bytes.Compare(b.start, stop) < 0) && (len(b.stop) == 0 || bytes.Compare(start, b.stop) < 0) {
			continue // overlaps
		}
		bs = append(bs, b)
	}
	nb := bound{start: bytes.Clone(start), stop: bytes.Clone(stop)}
	i, _ := slices.BinarySearchFunc(bs, nb.start, func(b bound, s []byte) int { return bytes.Compare(b.start, s) })
	r.m[table] = slices.Insert(bs, i, nb)
}

// putCall is an hrpc.Call: one Multi RPC putting the rows of want (indexes
// into enc) that the region of its key holds, at most putCallRows of them
// and putCallBytes of their mutations.
type putCall struct {
	multiCall
	enc  *encodedRows
	want []int

	sent []int // set by ToProto, read after SendRPC returned
}

var _ hrpc.Call = (*putCall)(nil)

func (c *putCall) Key() []byte                { return c.enc.rows[c.want[0]] }
func (c *putCall) NewResponse() proto.Message { return &emptypb.Empty{} }
func (c *putCall) Description() string        { return "PutMulti" }

// multiCall is what the Multi RPCs built here share of hrpc.Call: the
// table, the region gohbase found for the call's key, the channel of its
// answer, the context.
type multiCall struct {
	ctx    context.Context
	table  []byte
	region hrpc.RegionInfo
	result chan hrpc.RPCResult
}

func newMultiCall(ctx context.Context, table []byte) multiCall {
	return multiCall{ctx: ctx, table: table, result: make(chan hrpc.RPCResult, 1)}
}

func (c *multiCall) Table() []byte                   { return c.table }
func (c *multiCall) Name() string                    { return "Multi" }
func (c *multiCall) Region() hrpc.RegionInfo         { return c.region }
func (c *multiCall) SetRegion(r hrpc.RegionInfo)     { c.region = r }
func (c *multiCall) ResultChan() chan hrpc.RPCResult { return c.result }
func (c *multiCall) Context() context.Context        { return c.ctx }

// ToProto encodes the MultiRequest as the unknown fields of an empty
// message. It runs once per attempt, after SetRegion.
func (c *putCall) ToProto() proto.Message {
	start, stop := c.region.StartKey(), c.region.StopKey()
	c.sent = c.sent[:0]
	actions, bytesIn := 0, 0
	for _, i := range c.want {
		row := c.enc.rows[i]
		if bytes.Compare(row, start) < 0 || (len(stop) > 0 && bytes.Compare(row, stop) >= 0) {
			continue
		}
		m := len(c.enc.mutation(i))
		if len(c.sent) > 0 && (len(c.sent) >= putCallRows || bytesIn+m > putCallBytes) {
			break
		}
		c.sent = append(c.sent, i)
		bytesIn += m
		j := len(c.sent) - 1
		inner := protowire.SizeTag(1) + protowire.SizeVarint(uint64(j)) + protowire.SizeTag(2) + protowire.SizeBytes(m)
		actions += protowire.SizeTag(3) + protowire.SizeBytes(inner)
	}
	name := c.region.Name()
	spec := protowire.SizeTag(1) + protowire.SizeVarint(1) + protowire.SizeTag(2) + protowire.SizeBytes(len(name))
	ra := protowire.SizeTag(1) + protowire.SizeBytes(spec) + actions
	b := make([]byte, 0, protowire.SizeTag(1)+protowire.SizeBytes(ra))
	b = protowire.AppendTag(b, 1, protowire.BytesType) // MultiRequest.regionAction
	b = protowire.AppendVarint(b, uint64(ra))
	b = protowire.AppendTag(b, 1, protowire.BytesType) // RegionAction.region
	b = protowire.AppendVarint(b, uint64(spec))
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 1) // REGION_NAME
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, name)
	for j, i := range c.sent {
		m := c.enc.mutation(i)
		inner := protowire.SizeTag(1) + protowire.SizeVarint(uint64(j)) + protowire.SizeTag(2) + protowire.SizeBytes(len(m))
		b = protowire.AppendTag(b, 3, protowire.BytesType) // RegionAction.action
		b = protowire.AppendVarint(b, uint64(inner))
		b = protowire.AppendTag(b, 1, protowire.VarintType) // Action.index
		b = protowire.AppendVarint(b, uint64(j))
		b = protowire.AppendTag(b, 2, protowire.BytesType) // Action.mutation
		b = protowire.AppendBytes(b, m)
	}
	req := &emptypb.Empty{}
	req.ProtoReflect().SetUnknown(b)
	return req
}

// multiAnswers reads a MultiResponse of one RegionAction of n actions:
// ok[j] is set for the actions answered without an exception. A region-wide
// exception, or an answer it cannot read, leaves them all unset.
func multiAnswers(resp []byte, ok []bool) {
	var ra []byte
	for b := resp; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 || ra != nil {
				return // cut, or a second RegionActionResult
			}
			ra, b = v, b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return
		}
		b = b[m:]
	}
	answered := make([]bool, len(ok))
	for b := ra; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		switch {
		case num == 2: // a region-wide exception
			return
		case num == 1 && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return
			}
			b = b[m:]
			idx, hasIdx, failed, good := readResultOrException(v)
			if !good || !hasIdx || idx >= uint64(len(ok)) {
				return
			}
			answered[idx] = !failed
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return
			}
			b = b[m:]
		}
	}
	copy(ok, answered)
}

// readResultOrException reads a ResultOrException's index and whether it
// holds an exception; good is false when it cannot be read.
func readResultOrException(b []byte) (idx uint64, hasIdx, failed, good bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, false, false, false
		}
		b = b[n:]
		if num == 1 && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return 0, false, false, false
			}
			idx, hasIdx, b = v, true, b[m:]
			continue
		}
		if num == 3 {
			failed = true
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return 0, false, false, false
		}
		b = b[m:]
	}
	return idx, hasIdx, failed, true
}

// putMulti writes enc's rows as put calls, region by region, and returns
// the rows (indexes into enc) that no call answered as written.
func (s *Store) putMulti(ctx context.Context, rpc gohbase.RPCClient, table string, enc *encodedRows) []int {
	tbl := []byte(table)
	pending := make([]int, len(enc.rows))
	for i := range pending {
		pending[i] = i
	}
	var failed []int
	for round := 0; len(pending) > 0 && round < putRounds && ctx.Err() == nil; round++ {
		groups := groupByRegion(s.regionBounds.get(table), enc, pending)
		var (
			mu   sync.Mutex
			next []int
		)
		_ = store.Parallel(ctx, len(groups), putCallConcurrency, func(ctx context.Context, g int) error {
			other, bad := s.sendPutCalls(ctx, rpc, tbl, enc, groups[g])
			mu.Lock()
			next = append(next, other...)
			failed = append(failed, bad...)
			mu.Unlock()
			return nil
		})
		pending = next
	}
	return append(failed, pending...)
}

// groupByRegion splits pending by the known region holding each row; the
// rows of no known region make one group of their own, which the region
// of its first row answers in part.
func groupByRegion(bs []bound, enc *encodedRows, pending []int) [][]int {
	if len(bs) == 0 {
		return [][]int{pending}
	}
	byBound := make(map[int][]int, len(bs))
	var order []int
	for _, i := range pending {
		b := find(bs, enc.rows[i])
		if _, seen := byBound[b]; !seen {
			order = append(order, b)
		}
		byBound[b] = append(byBound[b], i)
	}
	groups := make([][]int, 0, len(order))
	for _, b := range order {
		groups = append(groups, byBound[b])
	}
	return groups
}

// sendPutCalls sends the rows of want that the region of want[0] holds,
// in as many put calls as they need. It returns the other regions' rows
// (other) and the rows without a clean answer (failed: an exception, no
// answer, an RPC that failed).
func (s *Store) sendPutCalls(ctx context.Context, rpc gohbase.RPCClient, table []byte, enc *encodedRows, want []int) (other, failed []int) {
	for len(want) > 0 {
		actx, cancel := context.WithTimeout(ctx, s.cfg.RPCTimeout)
		call := &putCall{multiCall: newMultiCall(actx, table), enc: enc, want: want}
		msg, err := rpc.SendRPC(call)
		cancel()
		if err != nil || call.region == nil || len(call.sent) == 0 {
			return other, append(failed, want...)
		}
		s.regionBounds.learn(string(table), call.region.StartKey(), call.region.StopKey())
		ok := make([]bool, len(call.sent))
		if m, isEmpty := msg.(*emptypb.Empty); isEmpty {
			multiAnswers(m.ProtoReflect().GetUnknown(), ok)
		}
		done := make(map[int]bool, len(call.sent))
		for j, i := range call.sent {
			done[i] = true
			if !ok[j] {
				failed = append(failed, i)
			}
		}
		// The region's rows beyond a full call go in the next call.
		var more []int
		start, stop := call.region.StartKey(), call.region.StopKey()
		for _, i := range want {
			if done[i] {
				continue
			}
			row := enc.rows[i]
			if bytes.Compare(row, start) < 0 || (len(stop) > 0 && bytes.Compare(row, stop) >= 0) {
				other = append(other, i)
			} else {
				more = append(more, i)
			}
		}
		want = more
	}
	return other, failed
}
