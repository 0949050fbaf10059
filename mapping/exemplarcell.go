package mapping

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Exemplars live in promhbase's exemplar table (family e), which OpenTSDB
// never reads, in the row whose key is the series' data row key for the
// hour (same salt, metric, base time and tags). The hour is cut into N
// equal slots (--storage.exemplars.per-series-hour); an exemplar's cell is
// that of its slot, so a series keeps at most N exemplars an hour and a
// later exemplar in a slot replaces the earlier one:
//
//	qualifier  u16 BE slot = offset ms × N / 3,600,000
//	value      00 (version) ‖ u32 BE offset ms in the hour ‖ f64 value
//	           (raw IEEE-754 bits) ‖ uvarint label count ‖ per label
//	           uvarint name length, name, uvarint value length, value

// exemplarVersion is the first byte of an exemplar cell's value.
const exemplarVersion byte = 0x00

// ExemplarFamily is the exemplar table's column family.
const ExemplarFamily = "e"

// MaxExemplarSlots is the most slots an hour can be cut into.
const MaxExemplarSlots = 65535

// ExemplarSlot returns the slot of an exemplar offsetMs past its row's base
// time when the hour has slots slots (1..MaxExemplarSlots).
func ExemplarSlot(offsetMs uint32, slots int) uint16 {
	s := uint64(offsetMs) * uint64(slots) / MaxOffsetMs
	if s >= uint64(slots) {
		s = uint64(slots) - 1
	}
	return uint16(s)
}

// AppendExemplarQualifier appends the qualifier of slot: u16 BE.
func AppendExemplarQualifier(dst []byte, slot uint16) []byte {
	return binary.BigEndian.AppendUint16(dst, slot)
}

// AppendExemplarValue appends the value of an exemplar cell.
func AppendExemplarValue(dst []byte, offsetMs uint32, v float64, lbls []Label) []byte {
	dst = append(dst, exemplarVersion)
	dst = binary.BigEndian.AppendUint32(dst, offsetMs)
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
	dst = binary.AppendUvarint(dst, uint64(len(lbls)))
	for _, l := range lbls {
		dst = binary.AppendUvarint(dst, uint64(len(l.Name)))
		dst = append(dst, l.Name...)
		dst = binary.AppendUvarint(dst, uint64(len(l.Value)))
		dst = append(dst, l.Value...)
	}
	return dst
}

// DecodeExemplarValue decodes an exemplar cell's value. The labels alias b
// and are appended to dst[:0]. Lengths are checked before slicing; a
// malformed value gives an error wrapping [ErrMalformedCell].
func DecodeExemplarValue(b []byte, dst []Label) (offsetMs uint32, v float64, lbls []Label, err error) {
	if len(b) < 14 {
		return 0, 0, nil, fmt.Errorf("%w: exemplar value of %d bytes, want at least 14", ErrMalformedCell, len(b))
	}
	if b[0] != exemplarVersion {
		return 0, 0, nil, fmt.Errorf("%w: exemplar value version %#02x", ErrMalformedCell, b[0])
	}
	offsetMs = binary.BigEndian.Uint32(b[1:])
	v = math.Float64frombits(binary.BigEndian.Uint64(b[5:]))
	rest := b[13:]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k)/2 {
		return 0, 0, nil, fmt.Errorf("%w: exemplar label count", ErrMalformedCell)
	}
	rest = rest[k:]
	lbls = dst[:0]
	field := func() ([]byte, bool) {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return nil, false
		}
		f := rest[k : k+int(l) : k+int(l)]
		rest = rest[k+int(l):]
		return f, true
	}
	for i := uint64(0); i < n; i++ {
		name, ok1 := field()
		val, ok2 := field()
		if !ok1 || !ok2 {
			return 0, 0, nil, fmt.Errorf("%w: exemplar label %d cut", ErrMalformedCell, i)
		}
		lbls = append(lbls, Label{Name: name, Value: val})
	}
	if len(rest) > 0 {
		return 0, 0, nil, fmt.Errorf("%w: %d bytes after the exemplar's labels", ErrMalformedCell, len(rest))
	}
	return offsetMs, v, lbls, nil
}
