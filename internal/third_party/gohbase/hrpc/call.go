// Copyright (C) 2015  The GoHBase Authors.  All rights reserved.
// This file is part of GoHBase.
// Use of this source code is governed by the Apache License 2.0
// that can be found in the COPYING file.

package hrpc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/tsuna/gohbase/pb"
	"google.golang.org/protobuf/proto"
)

// RegionInfo represents HBase region.
type RegionInfo interface {
	IsUnavailable() bool
	AvailabilityChan() <-chan struct{}
	MarkUnavailable() bool
	MarkAvailable()
	MarkDead()
	Context() context.Context
	String() string
	ID() uint64
	Name() []byte
	StartKey() []byte
	StopKey() []byte
	Namespace() []byte
	Table() []byte
	SetClient(RegionClient)
	Client() RegionClient
}

// RegionClient represents HBase region client.
type RegionClient interface {
	// Dial connects and bootstraps region client. Only the first caller to Dial gets to
	// actually connect, other concurrent callers will block until connected or an error.
	Dial(context.Context) error
	Close()
	Addr() string
	QueueRPC(Call)
	QueueBatch(context.Context, []Call)
	String() string
}

// Call represents an HBase RPC call.
type Call interface {
	Table() []byte
	Name() string
	Key() []byte
	Region() RegionInfo
	SetRegion(region RegionInfo)
	ToProto() proto.Message
	// Returns a newly created (default-state) protobuf in which to store the
	// response of this call.
	NewResponse() proto.Message
	ResultChan() chan RPCResult
	Description() string // Used for tracing and metrics
	Context() context.Context
}

// RPCObserver is optionally implemented by RPCs that track
// per-attempt timing and completion statistics.
type RPCObserver interface {
	// SetQueueTime is called by the region client before requesting a
	// congestion control token (registerRPC). The difference between
	// this time and the SendTime is the duration spent queued by
	// congestion control. If it is not called then congestion control
	// is not enabled.
	SetQueueTime(time.Time)

	// SetSendTime is called by the region client right after the RPC clears
	// congestion control (registerRPC), before marshaling and writing to the wire.
	SetSendTime(time.Time)

	// OnComplete is called after each RPC attempt with the response,
	// error, and whether the error is retryable.
	OnComplete(msg proto.Message, err error, retryable bool)
}

type withOptions interface {
	Options() []func(Call) error
	setOptions([]func(Call) error)
}

// Batchable interface should be implemented by calls that can be batched into MultiRequest
type Batchable interface {
	// SkipBatch returns true if a call shouldn't be batched into MultiRequest and
	// should be sent right away.
	SkipBatch() bool

	setSkipBatch(v bool)
}

// SkipBatch is an option for batchable requests (Get and Mutate) to tell
// the client to skip batching and just send the request to Region Server
// right away.
func SkipBatch() func(Call) error {
	return func(c Call) error {
		if b, ok := c.(Batchable); ok {
			b.setSkipBatch(true)
			return nil
		}
		return errors.New("'SkipBatch' option only works with Get and Mutate requests")
	}
}

// CanBatch returns true if this RPC can be included in a batch/multi
// request.
func CanBatch(c Call) bool {
	b, ok := c.(Batchable)
	return ok && !b.SkipBatch()
}

// hasQueryOptions is interface that needs to be implemented by calls
// that allow to provide Families and Filters options.
type hasQueryOptions interface {
	setFamilies(families map[string][]string)
	setFilter(filter *pb.Filter)
	setTimeRangeUint64(from, to uint64)
	setMaxVersions(versions uint32)
	setMaxResultsPerColumnFamily(maxresults uint32)
	setResultOffset(offset uint32)
	setCacheBlocks(cacheBlocks bool)
	setConsistency(consistency ConsistencyType)
	setPriority(priority uint32)
}

// RPCResult is struct that will contain both the resulting message from an RPC
// call, and any errors that may have occurred related to making the RPC call.
type RPCResult struct {
	Msg   proto.Message
	Error error
}

type base struct {
	ctx context.Context

	table   []byte
	key     []byte
	options []func(Call) error

	region   RegionInfo
	resultch chan RPCResult
}

func (b *base) Context() context.Context {
	return b.ctx
}

func (b *base) Region() RegionInfo {
	return b.region
}

func (b *base) SetRegion(region RegionInfo) {
	b.region = region
}

var RegionSpecifierRegionName = pb.RegionSpecifier_REGION_NAME.Enum()

func (b *base) regionSpecifier() *pb.RegionSpecifier {
	if i, ok := b.region.(interface{ RegionSpecifier() *pb.RegionSpecifier }); ok {
		return i.RegionSpecifier()
	}
	return &pb.RegionSpecifier{
		Type:  RegionSpecifierRegionName,
		Value: b.region.Name(),
	}
}

func (b *base) setOptions(options []func(Call) error) {
	b.options = options
}

// Options returns all the options passed to this call
func (b *base) Options() []func(Call) error {
	return b.options
}

func applyOptions(call Call, options ...func(Call) error) error {
	call.(withOptions).setOptions(options)
	for _, option := range options {
		err := option(call)
		if err != nil {
			return err
		}
	}
	return nil
}

func (b *base) Table() []byte {
	return b.table
}

func (b *base) Key() []byte {
	return b.key
}

func (b *base) ResultChan() chan RPCResult {
	return b.resultch
}

// Cell is the smallest level of granularity in returned results.
// Represents a single cell in HBase (a row will have one cell for every qualifier).
type Cell pb.Cell

func (c *Cell) String() string {
	return (*pb.Cell)(c).String()
}

// cellFromCellBlock deserializes the KeyValue at the start of b, as
// HBase's KeyValueCodec frames it, and returns it with the bytes it took:
//
//	u32  kvLen, the length of the rest
//	u32  keyLen, the length of the key (row length through type)
//	u32  valueLen
//	u16  row length, the row
//	u8   family length, the family
//	     the qualifier (the rest of the key)
//	u64  timestamp
//	u8   type
//	     the value (valueLen bytes)
//
// Every length is checked against the lengths around it and against b
// before a slice is cut, so that a cell whose body does not agree with
// its frame gives an error rather than a panic.
func cellFromCellBlock(b []byte) (*pb.Cell, uint32, error) {
	if len(b) < 4 {
		return nil, 0, fmt.Errorf(
			"buffer is too small: expected %d, got %d", 4, len(b))
	}

	kvLen := binary.BigEndian.Uint32(b[0:4])
	if uint64(len(b)) < uint64(kvLen)+4 {
		return nil, 0, fmt.Errorf(
			"buffer is too small: expected %d, got %d", uint64(kvLen)+4, len(b))
	}
	b = b[4 : 4+uint64(kvLen)]
	// The key's fixed part: row length, family length, timestamp, type.
	const fixedKey = 2 + 1 + 8 + 1
	if len(b) < 4+4+fixedKey {
		return nil, 0, fmt.Errorf("KeyValue of %d bytes is shorter than its fixed fields", kvLen)
	}
	keyLen := binary.BigEndian.Uint32(b[0:4])
	valueLen := binary.BigEndian.Uint32(b[4:8])
	if uint64(kvLen) != 4+4+uint64(keyLen)+uint64(valueLen) {
		return nil, 0, fmt.Errorf("HBase has lied about KeyValue length: expected %d, got %d",
			kvLen, 4+4+uint64(keyLen)+uint64(valueLen))
	}
	key, value := b[8:8+uint64(keyLen)], b[8+uint64(keyLen):]
	if keyLen < fixedKey {
		return nil, 0, fmt.Errorf("KeyValue key of %d bytes is shorter than its fixed fields", keyLen)
	}
	rowLen := uint32(binary.BigEndian.Uint16(key[0:2]))
	if rowLen > keyLen-fixedKey {
		return nil, 0, fmt.Errorf("KeyValue row of %d bytes in a key of %d", rowLen, keyLen)
	}
	row := key[2 : 2+rowLen]
	familyLen := uint32(key[2+rowLen])
	if rowLen+familyLen > keyLen-fixedKey {
		return nil, 0, fmt.Errorf("KeyValue row of %d bytes and family of %d in a key of %d",
			rowLen, familyLen, keyLen)
	}
	family := key[3+rowLen : 3+rowLen+familyLen]
	qualifier := key[3+rowLen+familyLen : keyLen-8-1]
	timestamp := binary.BigEndian.Uint64(key[keyLen-8-1 : keyLen-1])
	cellType := key[keyLen-1]

	return &pb.Cell{
		Row:       row,
		Family:    family,
		Qualifier: qualifier,
		Timestamp: &timestamp,
		Value:     value,
		CellType:  pb.CellType(cellType).Enum(),
	}, kvLen + 4, nil
}

// minCellBlockCell is the fewest bytes a KeyValue takes in a cell block:
// its frame and the fixed fields of its key.
const minCellBlockCell = 4 + 4 + 4 + 2 + 1 + 8 + 1

func deserializeCellBlocks(b []byte, cellsLen uint32) ([]*pb.Cell, uint32, error) {
	if cellsLen == 0 {
		return nil, 0, nil
	}
	if uint64(cellsLen) > uint64(len(b))/minCellBlockCell {
		return nil, 0, fmt.Errorf("cell block of %d bytes cannot hold %d cells", len(b), cellsLen)
	}
	cells := make([]*pb.Cell, cellsLen)
	var readLen uint32
	for i := 0; i < int(cellsLen); i++ {
		c, l, err := cellFromCellBlock(b[readLen:])
		if err != nil {
			return nil, readLen, err
		}
		cells[i] = c
		readLen += l
	}
	return cells, readLen, nil
}

// Result holds a slice of Cells as well as miscellaneous information about the response.
type Result struct {
	Cells   []*Cell
	Stale   bool
	Partial bool
	// Exists is only set if existence_only was set in the request query.
	Exists *bool
}

func (c *Result) String() string {
	return fmt.Sprintf("cells:%v stale:%v partial:%v exists:%v",
		c.Cells, c.Stale, c.Partial, c.Exists)
}

func extractBool(v *bool) bool {
	return v != nil && *v
}

// ToLocalResult takes a protobuf Result type and converts it to our own
// Result type in constant time.
func ToLocalResult(pbr *pb.Result) *Result {
	if pbr == nil {
		return &Result{}
	}
	return &Result{
		// Should all be O(1) operations.
		Cells:   toLocalCells(pbr),
		Stale:   extractBool(pbr.Stale),
		Partial: extractBool(pbr.Partial),
		Exists:  pbr.Exists,
	}
}

func ResultV2ToResult(r ResultV2) *Result {
	if len(r.Cells) == 0 && !r.Partial {
		return nil
	}
	return &Result{
		Cells:   cellsV2toCells(r.Cells),
		Partial: r.Partial,
	}
}

func toLocalCells(pbr *pb.Result) []*Cell {
	return *(*[]*Cell)(unsafe.Pointer(&pbr.Cell))
}

func cellsV2toCells(v2 []CellV2) []*Cell {
	if len(v2) == 0 {
		return nil
	}
	// Allocate the memory for the v1 values in a single slice.
	// Pointers to each of the values will fill in v1.
	type cellFlat struct {
		cell     Cell
		ts       uint64
		cellType pb.CellType
	}
	v1Flat := make([]cellFlat, len(v2))
	v1 := make([]*Cell, len(v2))

	for i, c := range v2 {
		cellV1 := &v1Flat[i].cell
		cellV1.Row = c.Row()
		cellV1.Family = c.Family()
		cellV1.Qualifier = c.Qualifier()
		cellV1.Value = c.Value()
		v1Flat[i].ts = c.Timestamp()
		cellV1.Timestamp = &v1Flat[i].ts
		v1Flat[i].cellType = c.CellType()
		cellV1.CellType = &v1Flat[i].cellType

		v1[i] = cellV1
	}

	return v1
}
