// Copyright (C) 2026  The promhbase Authors.  All rights reserved.
// This file is part of GoHBase.
// Use of this source code is governed by the Apache License 2.0
// that can be found in the COPYING file.

package hrpc

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/tsuna/gohbase/pb"
	"google.golang.org/protobuf/proto"
)

// keyValue returns a KeyValueCodec KeyValue: the length frame, then the
// key and value lengths, row, family, qualifier, timestamp, type, value.
func keyValue(row, family, qualifier string, ts uint64, typ byte, value []byte) []byte {
	keyLen := 2 + len(row) + 1 + len(family) + len(qualifier) + 8 + 1
	b := binary.BigEndian.AppendUint32(nil, uint32(4+4+keyLen+len(value)))
	b = binary.BigEndian.AppendUint32(b, uint32(keyLen))
	b = binary.BigEndian.AppendUint32(b, uint32(len(value)))
	b = binary.BigEndian.AppendUint16(b, uint16(len(row)))
	b = append(b, row...)
	b = append(b, byte(len(family)))
	b = append(b, family...)
	b = append(b, qualifier...)
	b = binary.BigEndian.AppendUint64(b, ts)
	b = append(b, typ)
	return append(b, value...)
}

func TestCellFromCellBlockRoundTrip(t *testing.T) {
	b := keyValue("\x00", "id", "tagk", 1795622668914, 4, []byte{0, 0, 0, 0, 0, 0, 0, 7})
	cell, n, err := cellFromCellBlock(append(b, 0xEE)) // a byte of the next cell
	if err != nil {
		t.Fatal(err)
	}
	if n != uint32(len(b)) || string(cell.Row) != "\x00" || string(cell.Family) != "id" ||
		string(cell.Qualifier) != "tagk" || cell.GetTimestamp() != 1795622668914 ||
		cell.GetCellType() != pb.CellType_PUT || len(cell.Value) != 8 || cell.Value[7] != 7 {
		t.Errorf("cell %v (%d bytes), want the one written (%d bytes)", cell, n, len(b))
	}
}

// TestCellFromCellBlockBounds: a KeyValue whose body does not agree with
// its frame gives an error, never a panic. The first case is the cell
// block of a crash seen under load: a 35-byte increment result whose
// bytes were another cell's, 7 bytes on, so that its row length read
// 0x6167 ("ag"); cellFromCellBlock sliced the row with it and panicked
// with "slice bounds out of range [:24935] with capacity 25".
func TestCellFromCellBlockBounds(t *testing.T) {
	other := keyValue("\x00", "id", "tagk", 1<<63-1, 4, []byte{0, 0, 0, 0, 0, 0, 0, 5})
	shifted := binary.BigEndian.AppendUint32(nil, 35)
	shifted = append(shifted, append(other[4:], make([]byte, 16)...)[7:7+35]...)
	good := keyValue("r", "f", "q", 1, 4, []byte("v"))
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"shifted body", shifted},
		{"row past the key", func() []byte {
			b := append([]byte(nil), good...)
			binary.BigEndian.PutUint16(b[12:], 0xFFFF)
			return b
		}()},
		{"family past the key", func() []byte {
			b := append([]byte(nil), good...)
			b[15] = 0xFF
			return b
		}()},
		{"key shorter than its fixed fields", func() []byte {
			b := append([]byte(nil), good...)
			binary.BigEndian.PutUint32(b[4:], 3)
			binary.BigEndian.PutUint32(b[8:], uint32(len(good)-4-8-3))
			return b
		}()},
		{"lengths past the frame", func() []byte {
			b := append([]byte(nil), good...)
			binary.BigEndian.PutUint32(b[8:], 0xFFFFFFFF)
			return b
		}()},
		{"frame past the buffer", good[:len(good)-1]},
		{"frame of 2^32-1", binary.BigEndian.AppendUint32(nil, 0xFFFFFFFF)},
		{"frame of zero", make([]byte, 4)},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			if cell, _, err := cellFromCellBlock(c.b); err == nil {
				t.Errorf("no error; cell %v", cell)
			}
		})
	}
	// Through a Mutate's response, as the increment's crash came.
	t.Run("mutate response", func(t *testing.T) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("panic: %v", r)
			}
		}()
		resp := &pb.MutateResponse{Result: &pb.Result{AssociatedCellCount: proto.Int32(1)}}
		if _, err := (&Mutate{}).DeserializeCellBlocks(resp, shifted); err == nil ||
			!strings.Contains(err.Error(), "lied") && !strings.Contains(err.Error(), "KeyValue") {
			t.Errorf("error %v, want one about the KeyValue", err)
		}
	})
	t.Run("count beyond the block", func(t *testing.T) {
		if _, _, err := deserializeCellBlocks(good, 1<<31); err == nil {
			t.Error("no error")
		}
	})
}
