package embedded

import (
	"bytes"
	"fmt"

	"github.com/promhbase/promhbase/store"
)

// RowCodec packs the cells of one run (the cells of a row that one flush
// of the row buffer wrote) more densely than the generic run format does,
// for a table whose rows have a shape it knows (the data table's settled
// rows: package dense). Options.RowCodecs names the codec of each table;
// a run it packs is stored as run format 2 (runs.go).
//
// A codec must be deterministic and stateless (methods are called
// concurrently), and the same codec must stay configured for a table
// across sessions once it has packed a run of it: a run of format 2 in a
// table without a codec cannot be read.
type RowCodec interface {
	// Encode appends the packed form of cells, the live cells of row in
	// strictly ascending column order (family, then qualifier, bytewise),
	// one cell a column, to dst. It reports ok false, and the caller
	// writes the run in the generic format, for a shape it does not pack;
	// what it appended to dst is then ignored. Every cell has a non-empty
	// family without 0x00 and a Timestamp.
	Encode(dst []byte, row []byte, cells []store.Cell) (out []byte, ok bool)
	// Decode appends to dst the cells that Encode packed into v for row:
	// byte for byte the cells Encode was given, in the same order. The
	// cells' slices may point into v and into buf, to which Decode
	// appends what it needs to build them (bytes of buf below its length
	// are left as they are), and returns it. It never panics on a
	// corrupt v and returns an error instead.
	Decode(dst []store.Cell, buf []byte, row []byte, v []byte) ([]store.Cell, []byte, error)
	// Family returns the family of every cell packed in v (a value Encode
	// wrote), without decoding them, or "" when they are not all of one
	// family or v is not well formed: a scan that takes packed cells
	// (store.ScanRequest.Packed) filters a packed run by it.
	Family(v []byte) string
}

// decodeCodecRun appends the cells of a run of format 2 (v without its
// format byte) to dst, keeping only family's when family is not nil, and
// checks what the codec returned as the generic decoder checks its
// input: non-empty families without 0x00, columns strictly ascending.
// buf is the codec's scratch (see RowCodec.Decode).
func decodeCodecRun(dst []store.Cell, buf []byte, codec RowCodec, row, v, family []byte) ([]store.Cell, []byte, error) {
	if codec == nil {
		return dst, buf, fmt.Errorf("%w: run of format %d and no row codec configured for its table", errCorruptRun, runFormatCodec)
	}
	start := len(dst)
	dst, buf, err := codec.Decode(dst, buf, row, v)
	if err != nil {
		return dst[:start], buf, fmt.Errorf("%w: row codec: %w", errCorruptRun, err)
	}
	for i := start; i < len(dst); i++ {
		c := dst[i]
		if len(c.Family) == 0 || bytes.IndexByte(c.Family, 0) >= 0 {
			return dst[:start], buf, fmt.Errorf("%w: row codec: cell %d: family %q", errCorruptRun, i-start, c.Family)
		}
		if i > start && cmpCell(dst[i-1], c) >= 0 {
			return dst[:start], buf, fmt.Errorf("%w: row codec: cell %d not after the one before it", errCorruptRun, i-start)
		}
	}
	if family == nil {
		return dst, buf, nil
	}
	kept := dst[:start]
	for _, c := range dst[start:] {
		if bytes.Equal(c.Family, family) {
			kept = append(kept, c)
		}
	}
	return kept, buf, nil
}
