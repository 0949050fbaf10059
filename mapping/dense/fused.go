package dense

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/promhbase/promhbase/mapping"
)

// appendFused is AppendPoints in one pass per section, for the values
// promhbase's writer and OpenTSDB's compaction make: every qualifier of
// one kind (milliseconds or seconds), one flags byte for all or canonical
// flags, and any values section. Each packed block is unpacked into 32
// words on the stack and turned at once into the points' times or values,
// with no offsets, mantissas or words kept for a later pass.
//
// It reports false, with dst's length unchanged, for every other value,
// well-formed or not (mixed qualifiers, flag runs or nibbles, anything
// it finds corrupt): AppendPoints then takes the general path, which
// gives the same points or the error that names what is wrong. So both
// paths give the same points bit for bit (TestFusedAgrees, and the
// decoders' fuzz test through AppendPoints).
func (c *Codec) appendFused(dst []mapping.Point, baseTime uint32, v []byte) ([]mapping.Point, uint64, bool, bool) {
	h, ok := fusedHeader(v)
	if !ok {
		return dst, 0, false, false
	}
	start := len(dst)
	out := slices.Grow(dst, h.n)[:start+h.n]
	pts := out[start:]
	k, asc, ok := c.fusedTimes(pts, v[h.pos:], int64(baseTime)*1000, h.qk)
	if !ok {
		return dst, 0, false, false
	}
	pos := h.pos + k
	if h.vk == valXOR {
		k, ok = fusedXOR(pts, v[pos:], h.f1)
	} else {
		k, ok = c.fusedDecimal(pts, v, pos, h.vk, h.f1)
	}
	if !ok || pos+k != len(v) {
		return dst, 0, false, false
	}
	return out, h.ts, asc, true
}

// fusedShape is the header of a value appendFused takes.
type fusedShape struct {
	ts     uint64
	n      int
	qk, vk byte
	f1     byte // the flags of every sample (canonical: 0xF, every word a float64)
	pos    int  // the timestamps section's first byte
}

// fusedHeader reads v's header up to its timestamps section, checked as
// unpack checks it; false for a shape appendFused leaves to the general
// path.
func fusedHeader(v []byte) (fusedShape, bool) {
	var h fusedShape
	if len(v) < 2 || v[0] != Format {
		return h, false
	}
	shape := v[1]
	qk, mk := shape>>qualShift&qualMask, shape>>metaShift&metaMask
	fk, vk := shape>>flagsShift&flagsMask, shape>>valShift&valMask
	if qk > qualSec || mk > metaOne || vk > valXOR || fk == flagsRuns || fk == flagsNibbles {
		return h, false
	}
	pos := 2
	ts, k := binary.Uvarint(v[pos:])
	if k <= 0 {
		return h, false
	}
	pos += k
	un, k := binary.Uvarint(v[pos:])
	if k <= 0 {
		return h, false
	}
	pos += k
	if un == 0 || un > MaxSamples || un-1 > uint64(blockLen*(len(v)-pos)) {
		return h, false
	}
	n := int(un)
	if (n == 1) != (mk == metaNone) {
		return h, false
	}
	f1 := byte(0xF)
	if fk == flagsOne {
		if pos >= len(v) || v[pos] > 0xF || !flagInfo[v[pos]].ok {
			return h, false
		}
		f1 = v[pos]
		pos++
	}
	return fusedShape{ts: ts, n: n, qk: qk, vk: vk, f1: f1, pos: pos}, true
}

// fusedTimes decodes the timestamps section at the start of src into
// pts' times (base plus each offset cut to its qualifier's bits, as
// AppendPoints cuts them) and returns the bytes it took; false where
// decodeTimes or checkShape would refuse the section.
// asc reports whether the times strictly ascend. Sections seen before
// are copied from the Codec's times cache.
func (c *Codec) fusedTimes(pts []mapping.Point, src []byte, base int64, qk byte) (k int, asc, ok bool) {
	n := len(pts)
	tc := c.timesOf()
	if n < timesMinSamples || tc.off {
		return c.decodeTimesInto(pts, src, base, qk)
	}
	k, ok = timesLen(src, n)
	if !ok {
		return c.decodeTimesInto(pts, src, base, qk)
	}
	c.tkey = append(append(c.tkey[:0], qk), src[:k]...)
	if e, hit := tc.lookup(c.tkey, n); hit {
		for i := range pts {
			pts[i].T = base + int64(e.offs[i])
		}
		return k, e.asc, true
	}
	got, asc, ok := c.decodeTimesInto(pts, src, base, qk)
	if ok && got == k {
		tc.store(c.tkey, pts, base, asc)
	}
	return got, asc, ok
}

// decodeTimesInto is fusedTimes without the cache.
// long: one decoder of the section's fields in order, its hot loop kept inline per coding (steps, grid).
func (c *Codec) decodeTimesInto(pts []mapping.Point, src []byte, base int64, qk byte) (int, bool, bool) {
	// A second qualifier holds 12 bits of seconds, below 0xF00;
	// a millisecond one 22 bits.
	mask, mul, limit := int64(offMsMask), int64(1), int64(math.MaxInt64)
	if qk == qualSec {
		mask, mul, limit = offSecMask, 1000, 0xF00
	}
	o0, pos := binary.Uvarint(src)
	if pos <= 0 || int64(o0)&mask >= limit {
		return 0, false, false
	}
	prev := int64(o0)
	pts[0].T = base + prev&mask*mul
	n := len(pts)
	if n == 1 {
		return pos, true, true
	}
	d, k := binary.Varint(src[pos:])
	if k <= 0 {
		return 0, false, false
	}
	pos += k
	if pos >= len(src) || src[pos] > timesGrid {
		return 0, false, false
	}
	grid := src[pos] == timesGrid
	pos++
	// The reader and the block live in the Codec: a decoding goroutine's
	// stack stays small.
	r, blk := &c.reader, &c.block
	if r.start(src[pos:], n-1, &c.pad) != nil {
		return 0, false, false
	}
	half := absU(d) / 2
	asc, last := true, pts[0].T
	for i := 1; i < n; {
		cnt, err := r.next(blk[:])
		if err != nil {
			return 0, false, false
		}
		out := pts[i : i+cnt]
		for j := range out {
			res := blk[j]
			var o int64
			if !grid {
				prev += d + res
				o = prev
			} else {
				pred := prev + d
				o = pred + res
				if absU(res) <= half {
					prev = pred
				} else {
					prev = o
				}
			}
			if o&mask >= limit {
				return 0, false, false
			}
			t := base + o&mask*mul
			asc = asc && t > last
			out[j].T, last = t, t
		}
		i += cnt
	}
	return pos + r.pos, asc, true
}

// fusedXOR decodes the XOR values section at the start of src into pts'
// values (each word read as flags f1 say) and returns the bytes it took;
// false where decodeXOR would refuse it.
func fusedXOR(pts []mapping.Point, src []byte, f1 byte) (int, bool) {
	pos := 0
	var w uint64
	for i := range pts {
		if pos >= len(src) {
			return 0, false
		}
		ctl := src[pos]
		pos++
		lz, tz := uint(ctl>>4), uint(ctl&0xF)
		if lz+tz > 8 {
			return 0, false
		}
		nb := 8 - lz - tz
		if uint(len(src)-pos) < nb {
			return 0, false
		}
		w ^= readXOR(src[pos:], nb) << (8 * tz)
		pos += int(nb)
		if f1 == 0xF {
			pts[i].V = math.Float64frombits(w)
		} else {
			pts[i].V = wordValue(w, f1)
		}
	}
	return pos, true
}

// fusedDecimal decodes the decimal values section at v[pos:] into pts'
// values and returns the bytes it took; false where decodeDecimal would
// refuse it. Mantissas are summed block by block and each turned into
// its value as it is summed; the exceptions (staleness markers, values
// no decimal holds) are read where their index comes.
// long: one decoder of the section's fields in order (exponent, exceptions, mantissas), its hot loop kept inline for float64s.
func (c *Codec) fusedDecimal(pts []mapping.Point, v []byte, pos int, mode byte, f1 byte) (int, bool) {
	n, start := len(pts), pos
	if pos >= len(v) || v[pos] > maxK {
		return 0, false
	}
	k := int(v[pos])
	pos++
	nexc, kk := binary.Uvarint(v[pos:])
	if kk <= 0 || nexc > uint64(n) {
		return 0, false
	}
	pos += kk
	info := flagInfo[f1]
	c.dexc, c.dexcAt = c.dexc[:0], c.dexcAt[:0]
	next := uint64(0)
	for range nexc {
		gap, kk := binary.Uvarint(v[pos:])
		if kk <= 0 || gap >= uint64(n)-next {
			return 0, false
		}
		pos += kk
		if len(v)-pos < int(info.n) {
			return 0, false
		}
		c.dexc = append(c.dexc, int32(next+gap))
		c.dexcAt = append(c.dexcAt, pos)
		pos += int(info.n)
		next += gap + 1
	}
	// Mantissas straight into values when every sample is a float64
	// mantissa (the common case); else their bits first, spread among
	// the exceptions and turned into values by placeValues.
	conv := convRaw
	if nexc == 0 {
		conv = convOf(info, k)
	}
	p := pow10f[k]
	nm := n - int(nexc)
	if nm > 0 {
		m, kk := binary.Varint(v[pos:])
		if kk <= 0 {
			return 0, false
		}
		pos += kk
		pts[0].V = mantissaValue(m, conv, p)
		var d int64
		first := 1
		if mode == valDelta2 && nm > 1 {
			if d, kk = binary.Varint(v[pos:]); kk <= 0 {
				return 0, false
			}
			pos += kk
			m += d
			pts[1].V = mantissaValue(m, conv, p)
			first = 2
		}
		r, blk := &c.reader, &c.block
		if r.start(v[pos:], nm-first, &c.pad) != nil {
			return 0, false
		}
		for i := first; i < nm; {
			cnt, err := r.next(blk[:])
			if err != nil {
				return 0, false
			}
			if mode == valDelta {
				m = sumDeltas(pts[i:i+cnt], blk[:cnt], m, conv, p)
			} else {
				m, d = sumDeltas2(pts[i:i+cnt], blk[:cnt], m, d, conv, p)
			}
			i += cnt
		}
		pos += r.pos
	}
	if conv == convRaw {
		c.placeValues(pts, nm, v, k, f1)
	}
	return pos - start, true
}

// How fusedDecimal turns a mantissa m into a point's value, as
// fromMantissa and wordValue do.
const (
	convInt = iota // a float64 or an 8-byte integer, exponent 0: m
	convDiv        // a float64, exponent k > 0: m / 10^k
	convF32        // a float32: m / 10^k rounded to float32
	convI8         // integers of 1, 2, 4 bytes, exponent 0: m cut to them
	convI16
	convI32
	convRaw // the mantissa's bits, for placeValues
)

// convOf is the conversion of the mantissas of samples of flags info at
// exponent k: convRaw for integers at k > 0 (an integer division).
func convOf(info flagKind, k int) int {
	switch {
	case info.kind == kindF64 && k > 0:
		return convDiv
	case info.kind == kindF32:
		return convF32
	case info.kind == kindF64 || k == 0 && info.n == 8:
		return convInt
	case k > 0:
		return convRaw
	case info.n == 1:
		return convI8
	case info.n == 2:
		return convI16
	}
	return convI32
}

// mantissaValue is the value of mantissa m (see convInt); p is 10^k.
func mantissaValue(m int64, conv int, p float64) float64 {
	switch conv {
	case convInt:
		return float64(m)
	case convDiv:
		return float64(m) / p
	case convF32:
		x := float64(m)
		if p != 1 {
			x /= p
		}
		return float64(float32(x))
	case convI8:
		return float64(int8(m))
	case convI16:
		return float64(int16(m))
	case convI32:
		return float64(int32(m))
	}
	return math.Float64frombits(uint64(m))
}

// placeValues spreads the nm mantissas at the start of pts (their bits,
// convRaw) among the exceptions (c.dexc, c.dexcAt into v) and turns each
// into its value as flags f1 say, from the last sample back, so that a
// mantissa is read before its place is written.
func (c *Codec) placeValues(pts []mapping.Point, nm int, v []byte, k int, f1 byte) {
	info := flagInfo[f1]
	j, e := nm-1, len(c.dexc)-1
	for i := len(pts) - 1; i >= 0; i-- {
		if e >= 0 && int(c.dexc[e]) == i {
			at := c.dexcAt[e]
			pts[i].V = wordValue(readWord(v[at:at+int(info.n)], info.kind), f1)
			e--
			continue
		}
		m := int64(math.Float64bits(pts[j].V))
		pts[i].V = wordValue(fromMantissa(info.kind, m, k), f1)
		j--
	}
}

// sumDeltas adds each delta of ds to the mantissa m, giving out (len(ds))
// the values of the sums, and returns the last; a loop for each common
// conversion keeps the switch out of the samples.
func sumDeltas(out []mapping.Point, ds []int64, m int64, conv int, p float64) int64 {
	out = out[:len(ds)]
	switch conv {
	case convInt:
		for j, x := range ds {
			m += x
			out[j].V = float64(m)
		}
	case convDiv:
		for j, x := range ds {
			m += x
			out[j].V = float64(m) / p
		}
	case convI32:
		for j, x := range ds {
			m += x
			out[j].V = float64(int32(m))
		}
	default:
		for j, x := range ds {
			m += x
			out[j].V = mantissaValue(m, conv, p)
		}
	}
	return m
}

// sumDeltas2 is sumDeltas for deltas of deltas: each of dds is added to
// the delta d, and d to m.
func sumDeltas2(out []mapping.Point, dds []int64, m, d int64, conv int, p float64) (int64, int64) {
	out = out[:len(dds)]
	switch conv {
	case convInt:
		for j, x := range dds {
			d += x
			m += d
			out[j].V = float64(m)
		}
	case convDiv:
		for j, x := range dds {
			d += x
			m += d
			out[j].V = float64(m) / p
		}
	case convI32:
		for j, x := range dds {
			d += x
			m += d
			out[j].V = float64(int32(m))
		}
	default:
		for j, x := range dds {
			d += x
			m += d
			out[j].V = mantissaValue(m, conv, p)
		}
	}
	return m, d
}
