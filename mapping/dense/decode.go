package dense

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/promhbase/promhbase/store"
)

// Decode appends to dst the cell that Encode packed into v, exactly as
// Encode was given it: family, qualifier, value and timestamp. row is the
// row key, used only in error messages. The cell's bytes are appended to
// buf, and the returned cell aliases the returned buf (capacity-clipped),
// so that with a buf of enough capacity Decode does not allocate. A value
// that is not a well-formed dense value gives an error wrapping
// ErrCorrupt, and dst and buf back unchanged; Decode never panics.
func (c *Codec) Decode(dst []store.Cell, buf []byte, row []byte, v []byte) ([]store.Cell, []byte, error) {
	cell, nb, err := c.decode(buf, v)
	if err != nil {
		return dst, buf, fmt.Errorf("row %X: %w", row, err)
	}
	return append(dst, cell), nb, nil
}

// grow returns s resliced to n elements, reallocated when it is too
// small. The contents are not kept.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// unpacked is what unpack read of a dense value besides the offsets and
// words it left in the Codec's scratch (doffs, dwords).
type unpacked struct {
	ts     uint64 // the cell's version
	qk, mk byte   // qualifier kind, meta byte kind
	msbit  []byte // mixed qualifiers: the millisecond bitmap (aliases v)
	flags  []byte // each sample's flags; nil: f1 for all
	f1     byte
	qlen   int // the qualifier's bytes
}

// unpack checks and decodes v into the Codec's scratch: the offsets
// (doffs) and the words (dwords) of its samples, their flags (canonical
// flags derived from the words), and the header. With floats, canonical
// flags are not derived: every word of a value with canonical flags is
// then its float64's bits, flags nil and f1 0xF, which is all a reader
// of values (not of bytes) needs.
// long: a decoder of one cell's sections in their order (header, qualifier bitmap, flags, offsets, words); the shape's kinds, the count and the byte position run through all of them, and each error names the byte it stopped at.
func (c *Codec) unpack(v []byte, floats bool) (unpacked, error) {
	var none unpacked
	if len(v) < 2 || v[0] != Format {
		return none, fmt.Errorf("%w: %d bytes, first %X, want format %#x", ErrCorrupt, len(v), v[:min(len(v), 1)], Format)
	}
	shape := v[1]
	qk, mk := shape>>qualShift&qualMask, shape>>metaShift&metaMask
	fk, vk := shape>>flagsShift&flagsMask, shape>>valShift&valMask
	if qk > qualMixed || mk > metaOne || vk > valXOR {
		return none, fmt.Errorf("%w: bad shape byte %#02x", ErrCorrupt, shape)
	}
	pos := 2
	ts, k := binary.Uvarint(v[pos:])
	if k <= 0 {
		return none, fmt.Errorf("%w: bad timestamp varint at byte %d", ErrCorrupt, pos)
	}
	pos += k
	un, k := binary.Uvarint(v[pos:])
	if k <= 0 {
		return none, fmt.Errorf("%w: bad sample count varint at byte %d", ErrCorrupt, pos)
	}
	pos += k
	// Every block of up to 32 steps takes a byte of the timestamps
	// section, which bounds the count before anything is sized by it.
	if un == 0 || un > MaxSamples || un-1 > uint64(blockLen*(len(v)-pos)) {
		return none, fmt.Errorf("%w: sample count %d in a value of %d bytes", ErrCorrupt, un, len(v))
	}
	n := int(un)

	// Qualifier kinds.
	var msbit []byte
	qlen := 4 * n
	switch qk {
	case qualSec:
		qlen = 2 * n
	case qualMixed:
		nb := (n + 7) / 8
		if len(v)-pos < nb {
			return none, fmt.Errorf("%w: qualifier bitmap of %d bytes at byte %d, %d left", ErrCorrupt, nb, pos, len(v)-pos)
		}
		msbit = v[pos : pos+nb]
		pos += nb
		if n&7 != 0 && msbit[nb-1]>>(n&7) != 0 {
			return none, fmt.Errorf("%w: qualifier bitmap has bits past sample %d", ErrCorrupt, n)
		}
		nMs := 0
		for _, b := range msbit {
			nMs += bits.OnesCount8(b)
		}
		qlen = 2*n + 2*nMs
	}

	// Flags: one for all (flags nil), one a sample, or canonical (from
	// the words, below; the words are then float64s).
	var flags []byte
	f1 := byte(0xF)
	switch fk {
	case flagsOne:
		if pos >= len(v) || v[pos] > 0xF || !flagInfo[v[pos]].ok {
			return none, fmt.Errorf("%w: missing or bad flags at byte %d", ErrCorrupt, pos)
		}
		f1 = v[pos]
		pos++
	case flagsRuns:
		runs, k := binary.Uvarint(v[pos:])
		if k <= 0 || runs == 0 || runs > un {
			return none, fmt.Errorf("%w: bad flag run count at byte %d", ErrCorrupt, pos)
		}
		pos += k
		flags = grow(c.dflags, n)[:0]
		for r := uint64(0); r < runs; r++ {
			if pos >= len(v) || v[pos] > 0xF || !flagInfo[v[pos]].ok {
				return none, fmt.Errorf("%w: flag run %d: missing or bad flags at byte %d", ErrCorrupt, r, pos)
			}
			f := v[pos]
			pos++
			l, k := binary.Uvarint(v[pos:])
			if k <= 0 || l == 0 || l > uint64(n-len(flags)) {
				return none, fmt.Errorf("%w: flag run %d: bad length at byte %d", ErrCorrupt, r, pos)
			}
			pos += k
			for range l {
				flags = append(flags, f)
			}
		}
		c.dflags = flags
		if len(flags) != n {
			return none, fmt.Errorf("%w: flag runs cover %d of %d samples", ErrCorrupt, len(flags), n)
		}
	case flagsNibbles:
		nb := (n + 1) / 2
		if len(v)-pos < nb {
			return none, fmt.Errorf("%w: flag nibbles of %d bytes at byte %d, %d left", ErrCorrupt, nb, pos, len(v)-pos)
		}
		flags = grow(c.dflags, n)
		for i := range flags {
			f := v[pos+i/2] >> (4 * (i & 1)) & 0xF
			if !flagInfo[f].ok {
				return none, fmt.Errorf("%w: sample %d has flags %#x", ErrCorrupt, i, f)
			}
			flags[i] = f
		}
		if n&1 == 1 && v[pos+nb-1]>>4 != 0 {
			return none, fmt.Errorf("%w: flag nibbles: padding nibble not zero", ErrCorrupt)
		}
		pos += nb
		c.dflags = flags
	}

	// Offsets and words.
	c.doffs = grow(c.doffs, n)
	k, err := c.decodeTimes(c.doffs, v[pos:])
	if err != nil {
		return none, err
	}
	pos += k
	if err := checkShape(c.doffs, qk, mk, msbit); err != nil {
		return none, err
	}
	c.dwords = grow(c.dwords, n)
	var canon []byte // canonical flags: filled with the words
	if fk == flagsCanon && !floats {
		c.dflags = grow(c.dflags, n)
		canon = c.dflags
	}
	if vk == valXOR {
		k, err = decodeXOR(c.dwords, v[pos:])
		for i, w := range c.dwords[:len(canon)] {
			canon[i], c.dwords[i] = canonical(w)
		}
	} else {
		k, err = c.decodeDecimal(c.dwords, v, pos, vk, flags, f1, canon)
	}
	if err != nil {
		return none, err
	}
	pos += k
	if pos != len(v) {
		return none, fmt.Errorf("%w: %d bytes after the values, at byte %d", ErrCorrupt, len(v)-pos, pos)
	}
	if canon != nil {
		flags = canon
	}
	return unpacked{ts: ts, qk: qk, mk: mk, msbit: msbit, flags: flags, f1: f1, qlen: qlen}, nil
}

// decode decodes v into the cell Encode was given, its bytes appended to
// buf.
func (c *Codec) decode(buf []byte, v []byte) (store.Cell, []byte, error) {
	u, err := c.unpack(v, false)
	if err != nil {
		return store.Cell{}, buf, err
	}
	n := len(c.doffs)
	flags, f1, qk, mk, qlen := u.flags, u.f1, u.qk, u.mk, u.qlen
	vlen := 0
	if flags == nil {
		vlen = n * int(flagInfo[f1].n)
	} else {
		for _, f := range flags {
			vlen += int(flagLen[f&0xF])
		}
	}

	// The cell: family, qualifier, value (and meta byte).
	metaLen := 0
	if mk != metaNone {
		metaLen = 1
	}
	total := 1 + qlen + vlen + metaLen
	start := len(buf)
	out := slices.Grow(buf, total)[:start+total]
	cellb := out[start:]
	cellb[0] = dataFamily
	writeQualifiers(cellb[1:1+qlen], c.doffs, qk, u.msbit, flags, f1)
	writeValues(cellb[1+qlen:1+qlen+vlen], c.dwords, flags, f1)
	if mk != metaNone {
		cellb[total-1] = mk - 1
	}
	return store.Cell{
		Family:    cellb[0:1:1],
		Qualifier: cellb[1 : 1+qlen : 1+qlen],
		Value:     cellb[1+qlen : total : total],
		Timestamp: u.ts,
	}, out, nil
}

// checkShape refuses what Encode never writes and a reader of the cell's
// bytes would read otherwise than the samples say: a meta byte on one
// sample or none on several (mapping reads a column of several samples
// only with its meta byte, and one sample's value only without), and a
// second qualifier whose offset, cut to its 12 bits, starts with 0xF (a
// reader takes it for the start of a millisecond qualifier; offsets in
// an hour row stay below 3600). So Decode's cell and AppendPoints'
// samples always agree.
func checkShape(offs []int64, qk, mk byte, msbit []byte) error {
	if (len(offs) == 1) != (mk == metaNone) {
		return fmt.Errorf("%w: %d samples with meta byte kind %d", ErrCorrupt, len(offs), mk)
	}
	if qk == qualMs {
		return nil
	}
	for i, o := range offs {
		if qk == qualMixed {
			if msbit[i>>3]&(1<<(i&7)) != 0 {
				continue
			}
			o /= 1000
		}
		if o&offSecMask >= 0xF00 {
			return fmt.Errorf("%w: sample %d: second offset %d reads as a millisecond qualifier", ErrCorrupt, i, o&offSecMask)
		}
	}
	return nil
}

// canonical returns the flags and word of the shortest exact encoding of
// the float64 with bits b, the encoding promhbase's writer stores
// (mapping.AppendValue): an integer on the fewest of 1, 2, 4 or 8 bytes
// when the value is integral, within int64 and not -0; else a float32
// when that keeps the exact bits (never for NaN); else the float64.
func canonical(b uint64) (flags byte, word uint64) {
	x := math.Float64frombits(b)
	if x >= -0x1p63 && x < 0x1p63 {
		if i := int64(x); float64(i) == x && (i != 0 || b>>63 == 0) {
			switch {
			case i == int64(int8(i)):
				return 0x0, uint64(i)
			case i == int64(int16(i)):
				return 0x1, uint64(i)
			case i == int64(int32(i)):
				return 0x3, uint64(i)
			default:
				return 0x7, uint64(i)
			}
		}
	}
	if x == x {
		if f := float32(x); math.Float64bits(float64(f)) == b {
			return 0xB, uint64(math.Float32bits(f))
		}
	}
	return 0xF, b
}

// decodeTimes decodes the timestamps section at the start of src into
// offs (len n) and returns the bytes it took.
func (c *Codec) decodeTimes(offs []int64, src []byte) (int, error) {
	n := len(offs)
	o0, pos := binary.Uvarint(src)
	if pos <= 0 {
		return 0, fmt.Errorf("%w: bad first offset varint in the timestamps", ErrCorrupt)
	}
	offs[0] = int64(o0)
	if n == 1 {
		return pos, nil
	}
	d, k := binary.Varint(src[pos:])
	if k <= 0 {
		return 0, fmt.Errorf("%w: bad step varint in the timestamps", ErrCorrupt)
	}
	pos += k
	if pos >= len(src) || src[pos] > timesGrid {
		return 0, fmt.Errorf("%w: missing or bad timestamp coding", ErrCorrupt)
	}
	grid := src[pos] == timesGrid
	pos++
	k, err := readPacked(offs[1:], src[pos:], n-1, &c.pad)
	if err != nil {
		return 0, fmt.Errorf("timestamps: %w", err)
	}
	pos += k
	prev := offs[0]
	if !grid {
		for i := 1; i < n; i++ {
			prev += d + offs[i]
			offs[i] = prev
		}
		return pos, nil
	}
	half := absU(d) / 2
	for i := 1; i < n; i++ {
		r := offs[i]
		pred := prev + d
		offs[i] = pred + r
		if absU(r) <= half {
			prev = pred
		} else {
			prev = pred + r
		}
	}
	return pos, nil
}

// writeQualifiers writes the qualifiers of offsets offs (ms, or seconds
// when every qualifier is a second one) and flags (nil: f1 for all) into
// qual, which has exactly their length.
func writeQualifiers(qual []byte, offs []int64, qk byte, msbit, flags []byte, f1 byte) {
	switch {
	case qk == qualMs && flags == nil:
		f := msFlag | uint32(f1)
		m := min(len(offs), len(qual)/4)
		for i := 0; i < m; i++ {
			binary.BigEndian.PutUint32(qual[4*i:4*i+4], f|uint32(offs[i])&offMsMask<<6)
		}
	case qk == qualMs:
		m := min(len(offs), len(flags), len(qual)/4)
		for i := 0; i < m; i++ {
			binary.BigEndian.PutUint32(qual[4*i:4*i+4], msFlag|uint32(offs[i])&offMsMask<<6|uint32(flags[i]))
		}
	case qk == qualSec:
		m := min(len(offs), len(qual)/2)
		for i := 0; i < m; i++ {
			binary.BigEndian.PutUint16(qual[2*i:2*i+2], uint16(offs[i])&offSecMask<<4|uint16(flagAt(flags, f1, i)))
		}
	default:
		at := 0
		for i, o := range offs {
			f := flagAt(flags, f1, i)
			if msbit[i>>3]&(1<<(i&7)) != 0 {
				binary.BigEndian.PutUint32(qual[at:], msFlag|uint32(o)&offMsMask<<6|uint32(f))
				at += 4
			} else {
				binary.BigEndian.PutUint16(qual[at:], uint16(o/1000)&offSecMask<<4|uint16(f))
				at += 2
			}
		}
	}
}

// writeValues writes each word as long as its flags say (flags nil: f1
// for all) into vals, which has exactly their length.
func writeValues(vals []byte, words []uint64, flags []byte, f1 byte) {
	if flags != nil {
		at := 0
		for i, w := range words {
			l := uint(flagLen[flags[i]&0xF])
			if len(vals)-at >= 8 {
				// Write 8 bytes, the value's first; the next value
				// overwrites the rest.
				binary.BigEndian.PutUint64(vals[at:at+8], w<<(64-8*l))
			} else {
				putWord(vals[at:], uint8(l), w)
			}
			at += int(l)
		}
		return
	}
	switch flagInfo[f1].n {
	case 8:
		m := min(len(words), len(vals)/8)
		for i := 0; i < m; i++ {
			binary.BigEndian.PutUint64(vals[8*i:8*i+8], words[i])
		}
	case 4:
		m := min(len(words), len(vals)/4)
		for i := 0; i < m; i++ {
			binary.BigEndian.PutUint32(vals[4*i:4*i+4], uint32(words[i]))
		}
	case 2:
		m := min(len(words), len(vals)/2)
		for i := 0; i < m; i++ {
			binary.BigEndian.PutUint16(vals[2*i:2*i+2], uint16(words[i]))
		}
	default:
		m := min(len(words), len(vals))
		for i := 0; i < m; i++ {
			vals[i] = byte(words[i])
		}
	}
}

// flagAt returns sample i's flags.
func flagAt(flags []byte, f1 byte, i int) byte {
	if flags == nil {
		return f1
	}
	return flags[i]
}

// decodeXOR decodes the XOR values section at the start of src into
// words and returns the bytes it took.
func decodeXOR(words []uint64, src []byte) (int, error) {
	pos := 0
	var w uint64
	for i := range words {
		if pos >= len(src) {
			return 0, fmt.Errorf("%w: XOR values end at sample %d of %d", ErrCorrupt, i, len(words))
		}
		ctl := src[pos]
		pos++
		lz, tz := uint(ctl>>4), uint(ctl&0xF)
		if lz+tz > 8 {
			return 0, fmt.Errorf("%w: XOR sample %d: control byte %#02x", ErrCorrupt, i, ctl)
		}
		nb := 8 - lz - tz
		if uint(len(src)-pos) < nb {
			return 0, fmt.Errorf("%w: XOR sample %d needs %d bytes, %d left", ErrCorrupt, i, nb, len(src)-pos)
		}
		w ^= readXOR(src[pos:], nb) << (8 * tz)
		pos += int(nb)
		words[i] = w
	}
	return pos, nil
}

// readXOR reads the nb bytes (at most 8, all in b) at the start of b as
// a big-endian number.
func readXOR(b []byte, nb uint) uint64 {
	if len(b) >= 8 {
		// Read 8 bytes and keep the first nb (a shift by 64 gives 0).
		return binary.BigEndian.Uint64(b[:8]) >> (64 - 8*nb)
	}
	var x uint64
	for _, c := range b[:nb] {
		x = x<<8 | uint64(c)
	}
	return x
}

// decodeDecimal decodes the decimal values section at v[pos:] into words
// (each sample's kind from flags, nil: f1 for all) and returns the bytes
// it took. With canon (len(words)), the words are float64s turned into
// their canonical flags, into canon, and words.
// long: a decoder of one section in its order (exponent, exceptions, mantissas, then the words in one of three loops), sharing its byte position; the loops are the read path's hot loops, kept inline per kind.
func (c *Codec) decodeDecimal(words []uint64, v []byte, pos int, mode byte, flags []byte, f1 byte, canon []byte) (int, error) {
	n := len(words)
	start := pos
	if pos >= len(v) || v[pos] > maxK {
		return 0, fmt.Errorf("%w: missing or bad decimal exponent at byte %d", ErrCorrupt, pos)
	}
	k := int(v[pos])
	pos++
	nexc, kk := binary.Uvarint(v[pos:])
	if kk <= 0 || nexc > uint64(n) {
		return 0, fmt.Errorf("%w: bad exception count at byte %d", ErrCorrupt, pos)
	}
	pos += kk
	c.dexc, c.dexcAt = c.dexc[:0], c.dexcAt[:0]
	next := uint64(0)
	for e := uint64(0); e < nexc; e++ {
		gap, kk := binary.Uvarint(v[pos:])
		if kk <= 0 || gap >= uint64(n)-next {
			return 0, fmt.Errorf("%w: exception %d: bad index at byte %d", ErrCorrupt, e, pos)
		}
		pos += kk
		i := next + gap
		l := int(flagInfo[flagAt(flags, f1, int(i))].n)
		if len(v)-pos < l {
			return 0, fmt.Errorf("%w: exception %d (sample %d) needs %d bytes at byte %d", ErrCorrupt, e, i, l, pos)
		}
		c.dexc = append(c.dexc, int32(i))
		c.dexcAt = append(c.dexcAt, pos)
		pos += l
		next = i + 1
	}
	nm := n - int(nexc)
	c.dints = grow(c.dints, nm)
	ms := c.dints
	if nm > 0 {
		m0, kk := binary.Varint(v[pos:])
		if kk <= 0 {
			return 0, fmt.Errorf("%w: bad first mantissa varint at byte %d", ErrCorrupt, pos)
		}
		pos += kk
		ms[0] = m0
		if mode == valDelta {
			kk, err := readPacked(ms[1:], v[pos:], nm-1, &c.pad)
			if err != nil {
				return 0, fmt.Errorf("values: %w", err)
			}
			pos += kk
			for i := 1; i < nm; i++ {
				ms[i] += ms[i-1]
			}
		} else if nm > 1 {
			d, kk := binary.Varint(v[pos:])
			if kk <= 0 {
				return 0, fmt.Errorf("%w: bad first delta varint at byte %d", ErrCorrupt, pos)
			}
			pos += kk
			kk, err := readPacked(ms[2:], v[pos:], nm-2, &c.pad)
			if err != nil {
				return 0, fmt.Errorf("values: %w", err)
			}
			pos += kk
			ms[1] = m0 + d
			for i := 2; i < nm; i++ {
				d += ms[i]
				ms[i] = ms[i-1] + d
			}
		}
	}

	if nexc == 0 && canon != nil {
		m := min(len(ms), len(words), len(canon))
		if k == 0 {
			// Integers below 2^53 are exact float64s, whose canonical
			// encoding is the integer on its fewest bytes.
			for i := 0; i < m; i++ {
				x := ms[i]
				switch {
				case x == int64(int8(x)):
					canon[i], words[i] = 0x0, uint64(x)
				case x == int64(int16(x)):
					canon[i], words[i] = 0x1, uint64(x)
				case x == int64(int32(x)):
					canon[i], words[i] = 0x3, uint64(x)
				case x > -1<<53 && x < 1<<53:
					canon[i], words[i] = 0x7, uint64(x)
				default:
					canon[i], words[i] = canonical(math.Float64bits(float64(x)))
				}
			}
		} else {
			p := pow10f[k]
			for i := 0; i < m; i++ {
				canon[i], words[i] = canonical(math.Float64bits(float64(ms[i]) / p))
			}
		}
		return pos - start, nil
	}
	if nexc == 0 && flags == nil {
		// One kind, no exceptions: the common case.
		m := min(len(ms), len(words))
		switch kind := flagInfo[f1].kind; {
		case kind == kindF64 && k == 0:
			for i := 0; i < m; i++ {
				words[i] = math.Float64bits(float64(ms[i]))
			}
		case kind == kindF64:
			p := pow10f[k]
			for i := 0; i < m; i++ {
				words[i] = math.Float64bits(float64(ms[i]) / p)
			}
		case kind == kindInt && k == 0:
			for i := 0; i < m; i++ {
				words[i] = uint64(ms[i])
			}
		default:
			for i := 0; i < m; i++ {
				words[i] = fromMantissa(kind, ms[i], k)
			}
		}
		return pos - start, nil
	}
	j, e := 0, 0
	for i := range words {
		info := flagInfo[flagAt(flags, f1, i)]
		if e < len(c.dexc) && int(c.dexc[e]) == i {
			p := c.dexcAt[e]
			words[i] = readWord(v[p:p+int(info.n)], info.kind)
			e++
		} else {
			words[i] = fromMantissa(info.kind, ms[j], k)
			j++
		}
	}
	for i, w := range words[:len(canon)] {
		canon[i], words[i] = canonical(w)
	}
	return pos - start, nil
}
