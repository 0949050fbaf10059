package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded/memrows"
)

// The row buffer's log (store/embedded/wlog) holds the puts and deletes
// the buffer holds in memory, in the order they were applied, a record
// each. The records' payloads:
//
//	put:          0x01 ‖ table ‖ rows uvarint ‖ per row: row ‖ cells uvarint ‖
//	              per cell: family ‖ qualifier ‖ ts u64 ‖ value
//	delete:       0x02 ‖ table ‖ row ‖ columns uvarint ‖
//	              per column: family ‖ qualifier ‖ bound u64
//	delete rows:  0x03 ‖ table ‖ start ‖ stop   (every row in [start, stop);
//	              stop empty: to the table's end)
//
// where a byte string is uvarint length ‖ bytes and integers are
// little-endian.
const (
	walOpPut        = 1
	walOpDelete     = 2
	walOpDeleteRows = 3
)

// appendBytes appends b as a byte string: uvarint length ‖ bytes.
func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// appendPutRecord appends the payload of the log's put record of puts
// into table (see wlog) to dst; a cell without a timestamp takes now.
func appendPutRecord(dst []byte, table string, puts []store.Put, now uint64) []byte {
	dst = append(dst, walOpPut)
	dst = binary.AppendUvarint(dst, uint64(len(table)))
	dst = append(dst, table...)
	dst = binary.AppendUvarint(dst, uint64(len(puts)))
	for _, p := range puts {
		dst = appendBytes(dst, p.Row)
		dst = binary.AppendUvarint(dst, uint64(len(p.Cells)))
		for _, c := range p.Cells {
			ts := c.Timestamp
			if ts == 0 {
				ts = now
			}
			dst = appendBytes(dst, c.Family)
			dst = appendBytes(dst, c.Qualifier)
			dst = binary.LittleEndian.AppendUint64(dst, ts)
			dst = appendBytes(dst, c.Value)
		}
	}
	return dst
}

// appendDeleteRecord appends the payload of the log's delete record of
// cols of row in table to dst.
func appendDeleteRecord(dst []byte, table string, row []byte, cols []memrows.Column) []byte {
	dst = append(dst, walOpDelete)
	dst = binary.AppendUvarint(dst, uint64(len(table)))
	dst = append(dst, table...)
	dst = appendBytes(dst, row)
	dst = binary.AppendUvarint(dst, uint64(len(cols)))
	for _, c := range cols {
		dst = appendBytes(dst, c.Family)
		dst = appendBytes(dst, c.Qualifier)
		dst = binary.LittleEndian.AppendUint64(dst, c.Bound)
	}
	return dst
}

// appendDeleteRowsRecord appends the payload of the log's delete-rows
// record of table's rows in [start, stop) to dst.
func appendDeleteRowsRecord(dst []byte, table string, start, stop []byte) []byte {
	dst = append(dst, walOpDeleteRows)
	dst = binary.AppendUvarint(dst, uint64(len(table)))
	dst = append(dst, table...)
	dst = appendBytes(dst, start)
	return appendBytes(dst, stop)
}

// walReader decodes one payload of the row buffer's log.
type walReader struct {
	b   []byte
	err error
}

// uvarint reads a uvarint; 0 once r failed.
func (r *walReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("corrupt row buffer log record: bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes reads a byte string (a slice of the payload); nil once r failed.
func (r *walReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("corrupt row buffer log record: %d bytes wanted, %d left", n, len(r.b))
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// u64 reads a little-endian u64; 0 once r failed.
func (r *walReader) u64() uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.err = errors.New("corrupt row buffer log record: short u64")
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// count reads an element count, bounded by the bytes left; 0 once r
// failed.
func (r *walReader) count() int {
	n := r.uvarint()
	// Every element takes at least a byte: a count beyond the bytes left
	// is corrupt, and must not size an allocation.
	if r.err == nil && n > uint64(len(r.b)) {
		r.err = fmt.Errorf("corrupt row buffer log record: %d elements in %d bytes", n, len(r.b))
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}
