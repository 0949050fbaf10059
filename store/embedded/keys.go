package embedded

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
)

// Encoding of Pebble keys and values (see the package comment):
//
//	key:   table 0x00 escape(row) 0x00 0x01 family 0x00 qualifier
//	value: u64 big-endian timestamp (Unix ms) ‖ cell value

// appendRowPrefix appends table 0x00 escape(row) 0x00 0x01: the prefix of
// every key of the row, and of no other row's.
func appendRowPrefix(dst []byte, table string, row []byte) []byte {
	dst = appendEscapedPrefix(dst, table, row)
	return append(dst, 0x00, 0x01)
}

// appendEscapedPrefix appends table 0x00 escape(row), without terminator: the
// lower bound of every row >= row.
//
// OpenTSDB row keys are mostly zero bytes (the high bytes of small UIDs),
// so the row is copied a byte at a time rather than between zeros found
// with bytes.IndexByte (BenchmarkCellKey: 236 -> 49 ns for a key of ten
// tags).
func appendEscapedPrefix(dst []byte, table string, row []byte) []byte {
	dst = append(dst, table...)
	dst = append(dst, 0x00)
	n := len(dst)
	dst = slices.Grow(dst, 2*len(row))[:n+2*len(row)]
	for _, c := range row {
		dst[n] = c
		n++
		if c == 0 {
			dst[n] = 0xFF
			n++
		}
	}
	return dst[:n]
}

// appendCellKey appends the key of row's cell family:qualifier in table.
// family must not hold 0x00.
func appendCellKey(dst []byte, table string, row, family, qualifier []byte) []byte {
	dst = appendRowPrefix(dst, table, row)
	dst = append(dst, family...)
	dst = append(dst, 0x00)
	return append(dst, qualifier...)
}

// rowRange returns the Pebble keys that bound the rows [start, stop) of
// table (stop empty: to the table's end), lower included, upper excluded;
// ok is false when the range holds no row.
func rowRange(table string, start, stop []byte) (lower, upper []byte, ok bool) {
	lower = appendEscapedPrefix(nil, table, start)
	if len(stop) > 0 {
		upper = appendEscapedPrefix(nil, table, stop)
	} else {
		upper = append([]byte(table), 0x01)
	}
	return lower, upper, bytes.Compare(lower, upper) < 0
}

// splitKey decodes a Pebble key after the table prefix: it returns the row
// key (unescaped, appended to rowBuf), family and qualifier.
func splitKey(rest, rowBuf []byte) (row, family, qualifier []byte, err error) {
	row, n, err := splitRow(rest, rowBuf)
	if err != nil {
		return nil, nil, nil, err
	}
	family, qualifier, err = splitColumn(rest[n:])
	return row, family, qualifier, err
}

// splitRow decodes the row of a Pebble key after the table prefix: the row
// key (unescaped, appended to rowBuf) and the length of its encoding,
// terminator included. No other row's encoding starts with that many
// bytes of it: 0x00 0x01 occurs in an encoded row only as its terminator.
//
// A byte at a time, as appendEscapedPrefix, for the same reason
// (BenchmarkSplitKey: 284 -> 65 ns).
func splitRow(rest, rowBuf []byte) (row []byte, n int, err error) {
	row = slices.Grow(rowBuf[:0], len(rest))
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if c != 0 {
			row = append(row, c)
			continue
		}
		if i+1 == len(rest) {
			break
		}
		switch rest[i+1] {
		case 0xFF:
			row = append(row, 0)
			i++
		case 0x01:
			return row, i + 2, nil
		default:
			return nil, 0, fmt.Errorf("corrupt embedded key %x", rest)
		}
	}
	return nil, 0, fmt.Errorf("corrupt embedded key %x", rest)
}

// splitColumn decodes family 0x00 qualifier.
func splitColumn(rest []byte) (family, qualifier []byte, err error) {
	j := bytes.IndexByte(rest, 0)
	if j < 0 {
		return nil, nil, fmt.Errorf("corrupt embedded key: no family terminator in %x", rest)
	}
	return rest[:j], rest[j+1:], nil
}

// appendCellValue appends the stored form of a cell's value: its version
// ts ‖ value.
func appendCellValue(dst []byte, ts uint64, value []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, ts)
	return append(dst, value...)
}

// splitValue decodes a stored value into its version and the cell's value
// (a slice of v). It fails on a value too short to hold a version.
func splitValue(v []byte) (ts uint64, value []byte, err error) {
	if len(v) < 8 {
		return 0, nil, corruptValue(len(v))
	}
	return binary.BigEndian.Uint64(v), v[8:], nil
}

// corruptValue is the error of a stored value of n bytes, too short to
// hold a version; out of line so that splitValue inlines.
func corruptValue(n int) error { return fmt.Errorf("corrupt embedded value of %d bytes", n) }
