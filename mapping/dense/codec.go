package dense

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"slices"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

// Format is the first byte of every dense value. The embedded store's
// generic run format is 1, so the first byte tells the two apart.
const Format byte = 0xD1

// ErrCorrupt is wrapped by every error of Decode.
var ErrCorrupt = errors.New("dense: corrupt value")

// MaxSamples is the most samples one dense value holds: a row's
// millisecond offsets take 22 bits.
const MaxSamples = 1 << 22

// Fields of the shape byte (see the package documentation).
const (
	qualShift, qualMask   = 0, 3
	metaShift, metaMask   = 2, 3
	flagsShift, flagsMask = 4, 3
	valShift, valMask     = 6, 3

	qualMs    = 0 // every qualifier 4 bytes, milliseconds
	qualSec   = 1 // every qualifier 2 bytes, seconds
	qualMixed = 2 // both; a bitmap tells which

	metaNone = 0 // no meta byte: a single-sample cell
	metaZero = 1 // meta byte 0x00
	metaOne  = 2 // meta byte 0x01 (mixed second and millisecond qualifiers)

	flagsOne     = 0 // every sample has the same flags: one byte
	flagsRuns    = 1 // runs of equal flags
	flagsNibbles = 2 // one nibble a sample
	flagsCanon   = 3 // none: each sample's flags are those of the shortest exact encoding of its value

	valDelta  = 0 // decimal mantissas, deltas
	valDelta2 = 1 // decimal mantissas, deltas of deltas
	valXOR    = 2 // raw words, each XORed with the one before
)

// Qualifier bytes, as in OpenTSDB's Const (package mapping holds the same
// constants; this package depends on store only).
const (
	msByteFlag = 0xF0       // high nibble of a millisecond qualifier's first byte
	msFlag     = 0xF0000000 // the same marker on the whole qualifier
	msReserved = 0x30       // the two bits between offset and flags, always 0
	offMsMask  = 0x3FFFFF   // 22 bits of millisecond offset
	offSecMask = 0xFFF      // 12 bits of second offset
)

// dataFamily is the data table's family, the only one a dense value holds.
const dataFamily = 't'

// Codec packs the single cell of a settled data row (table tsdb, family t,
// one compacted column after OpenTSDB compaction) into a dense value and
// back. The zero value is ready to use. A Codec keeps scratch memory
// between calls so that they do not allocate in steady state: it is not
// safe for concurrent use; give each goroutine its own.
type Codec struct {
	// Encode's scratch.
	offs  []int64  // offsets in the row's unit
	words []uint64 // each sample's value as a word (see readWord)
	flags []byte   // each sample's flags nibble
	msbit []byte   // bitmap of millisecond qualifiers (mixed rows)
	ks    []int8   // each sample's smallest decimal exponent, -1 none
	ms    []int64  // mantissas of a candidate
	exc   []int    // exception indexes of a candidate
	tmp   []int64  // deltas and such
	cand  []byte   // a candidate values section
	best  []byte   // the shortest so far
	chk   []store.Cell
	chkb  []byte
	// sizes of the last value Encode wrote: header (through the flags),
	// timestamps, values; for measurements.
	sizes [3]int

	// Decode's scratch.
	doffs  []int64  // offsets
	dwords []uint64 // words
	dints  []int64  // mantissas, packed streams
	dflags []byte
	dexc   []int32 // exception sample indexes
	dexcAt []int   // where each exception's bytes start in the value
	pad    padBuf
	times  *TimesCache     // the times of sections decoded before (AppendPoints)
	tkey   []byte          // a section's key in times
	reader packedReader    // the one-pass decoder's stream
	block  [blockLen]int64 // and its block
}

// IsDense reports whether v starts like a dense value.
func IsDense(v []byte) bool { return len(v) > 0 && v[0] == Format }

// Family returns the family of the cell a dense value holds, "t" (the
// data table's), or "" when v does not start like a dense value. It reads
// nothing of c (a nil Codec will do).
func (*Codec) Family(v []byte) string {
	if !IsDense(v) {
		return ""
	}
	return string(rune(dataFamily))
}

// Encode appends the dense form of a row's cells to dst and returns the
// extended slice and true. row is the row key; the dense form does not
// depend on it. cells must be the row's cells as the store returns them
// (sorted by family then qualifier). ok is false, and dst is returned
// unchanged, when the cells are not a shape Encode packs; the caller then
// keeps its generic form. Encode packs exactly one cell of family "t"
// that is a data-point column: a single sample (no meta byte) or a
// compacted column (meta byte 0x00 or 0x01), with 2-byte second or 4-byte
// millisecond qualifiers or both, and values that are integers of 1, 2, 4
// or 8 bytes or floats of 4 or 8 bytes, each of the length its flags
// declare. It refuses several cells, annotations, histograms, append
// columns, any odd-length qualifier and malformed columns.
//
// Encode decodes what it wrote and returns ok only if that gives back
// the cell byte for byte, timestamp included.
func (c *Codec) Encode(dst []byte, row []byte, cells []store.Cell) (out []byte, ok bool) {
	if len(cells) != 1 {
		return dst, false
	}
	cell := &cells[0]
	if len(cell.Family) != 1 || cell.Family[0] != dataFamily {
		return dst, false
	}
	shape, ok := c.parse(cell.Qualifier, cell.Value)
	if !ok {
		return dst, false
	}
	n := len(c.offs)
	start := len(dst)
	dst = append(dst, Format, 0)
	dst = binary.AppendUvarint(dst, cell.Timestamp)
	dst = binary.AppendUvarint(dst, uint64(n))
	if shape>>qualShift&qualMask == qualMixed {
		dst = append(dst, c.msbit...)
	}
	var fl byte
	dst, fl = c.appendFlags(dst)
	tsAt := len(dst)
	dst = c.appendTimes(dst)
	valAt := len(dst)
	var vm byte
	dst, vm = c.appendValues(dst)
	c.sizes = [3]int{tsAt - start, valAt - tsAt, len(dst) - valAt}
	dst[start+1] = shape | fl<<flagsShift | vm<<valShift

	// Cheap insurance: the value must decode to exactly the cell.
	var err error
	c.chk, c.chkb, err = c.Decode(c.chk[:0], c.chkb[:0], row, dst[start:])
	if err != nil || len(c.chk) != 1 {
		return dst[:start], false
	}
	got := &c.chk[0]
	if !bytes.Equal(got.Family, cell.Family) || !bytes.Equal(got.Qualifier, cell.Qualifier) ||
		!bytes.Equal(got.Value, cell.Value) || got.Timestamp != cell.Timestamp {
		return dst[:start], false
	}
	return dst, true
}

// parse splits a column into the Codec's offsets, flags and words and
// returns the shape byte's qualifier and meta fields; ok is false for a
// column Encode does not pack.
func (c *Codec) parse(q, val []byte) (shape byte, ok bool) {
	if len(q) == 0 || len(q)&1 == 1 {
		return 0, false
	}
	c.offs, c.flags, c.words = c.offs[:0], c.flags[:0], c.words[:0]
	c.msbit = c.msbit[:0]
	nMs, vi := 0, 0
	for qi := 0; qi < len(q); {
		var off int64
		var f byte
		isMs := q[qi]&msByteFlag == msByteFlag
		if isMs {
			if len(q)-qi < 4 {
				return 0, false
			}
			u := binary.BigEndian.Uint32(q[qi:])
			if u&msReserved != 0 {
				return 0, false
			}
			off, f = int64(u>>6&offMsMask), byte(u)&0xF
			qi += 4
			nMs++
		} else {
			u := binary.BigEndian.Uint16(q[qi:])
			off, f = int64(u>>4), byte(u)&0xF
			qi += 2
		}
		info := flagInfo[f]
		if !info.ok || len(val)-vi < int(info.n) {
			return 0, false
		}
		i := len(c.offs)
		if i >= MaxSamples {
			return 0, false
		}
		if i&7 == 0 {
			c.msbit = append(c.msbit, 0)
		}
		if isMs {
			c.msbit[i>>3] |= 1 << (i & 7)
		}
		c.offs = append(c.offs, off)
		c.flags = append(c.flags, f)
		c.words = append(c.words, readWord(val[vi:vi+int(info.n)], info.kind))
		vi += int(info.n)
	}
	n := len(c.offs)
	switch nMs {
	case n:
		shape = qualMs << qualShift
	case 0:
		shape = qualSec << qualShift
	default:
		shape = qualMixed << qualShift
		for i := range c.offs {
			if c.msbit[i>>3]&(1<<(i&7)) == 0 {
				c.offs[i] *= 1000
			}
		}
	}
	// A column of one sample has no meta byte, one of more has one; a
	// reader takes anything else as corrupt, so it stays generic.
	switch {
	case n == 1 && len(val) == vi:
		shape |= metaNone << metaShift
	case n > 1 && len(val) == vi+1 && val[vi] == 0:
		shape |= metaZero << metaShift
	case n > 1 && len(val) == vi+1 && val[vi] == 1:
		shape |= metaOne << metaShift
	default:
		return 0, false
	}
	return shape, true
}

// readWord returns a stored value as a word: an integer sign-extended to
// 64 bits, a float's raw bits.
func readWord(b []byte, kind uint8) uint64 {
	switch len(b) {
	case 1:
		return uint64(int64(int8(b[0])))
	case 2:
		return uint64(int64(int16(binary.BigEndian.Uint16(b))))
	case 4:
		u := binary.BigEndian.Uint32(b)
		if kind == kindInt {
			return uint64(int64(int32(u)))
		}
		return uint64(u)
	default:
		return binary.BigEndian.Uint64(b)
	}
}

// putWord stores the low n bytes of w big-endian in b[:n].
func putWord(b []byte, n uint8, w uint64) {
	switch n {
	case 1:
		b[0] = byte(w)
	case 2:
		binary.BigEndian.PutUint16(b, uint16(w))
	case 4:
		binary.BigEndian.PutUint32(b, uint32(w))
	default:
		binary.BigEndian.PutUint64(b, w)
	}
}

// appendFlags appends the flags section in its shortest form.
func (c *Codec) appendFlags(dst []byte) ([]byte, byte) {
	fs := c.flags
	runs, runBytes := 0, 0
	for i := 0; i < len(fs); {
		j := i + 1
		for j < len(fs) && fs[j] == fs[i] {
			j++
		}
		runs++
		runBytes += 1 + mapping.UvarintLen(uint64(j-i))
		i = j
	}
	if runs == 1 {
		return append(dst, fs[0]), flagsOne
	}
	if c.toCanonical() {
		return dst, flagsCanon
	}
	if mapping.UvarintLen(uint64(runs))+runBytes <= (len(fs)+1)/2 {
		dst = binary.AppendUvarint(dst, uint64(runs))
		for i := 0; i < len(fs); {
			j := i + 1
			for j < len(fs) && fs[j] == fs[i] {
				j++
			}
			dst = append(dst, fs[i])
			dst = binary.AppendUvarint(dst, uint64(j-i))
			i = j
		}
		return dst, flagsRuns
	}
	for i := 0; i < len(fs); i += 2 {
		b := fs[i]
		if i+1 < len(fs) {
			b |= fs[i+1] << 4
		}
		dst = append(dst, b)
	}
	return dst, flagsNibbles
}

// toCanonical reports whether every sample is stored in the shortest
// exact encoding of its value (see canonical), as promhbase writes them;
// if so it turns the samples into 8-byte floats of the same values, the
// form the values section then holds.
func (c *Codec) toCanonical() bool {
	for i, w := range c.words {
		f := c.flags[i]
		if g, cw := canonical(float64Word(flagInfo[f].kind, w)); g != f || cw != w {
			return false
		}
	}
	for i, w := range c.words {
		c.words[i] = float64Word(flagInfo[c.flags[i]].kind, w)
		c.flags[i] = 0xF
	}
	return true
}

// float64Word returns the bits of the float64 nearest a sample's value.
func float64Word(kind uint8, w uint64) uint64 {
	switch kind {
	case kindInt:
		return math.Float64bits(float64(int64(w)))
	case kindF32:
		return math.Float64bits(float64(math.Float32frombits(uint32(w))))
	}
	return w
}

// Timestamp codings (the byte after the median step).
const (
	timesSteps = 0 // each step's difference from D
	timesGrid  = 1 // each offset's difference from the grid's next point
)

// appendTimes appends the timestamps section: the first offset, the
// median step D, the coding and its packed stream, steps or grid,
// whichever is shorter.
//
// Steps: the stream holds (offset[i] - offset[i-1]) - D.
//
// Grid: a grid point starts at the first offset; the stream holds
// offset[i] - (grid + D), and the grid moves to grid + D when that
// difference is at most |D|/2 (a sample late or early on a regular
// schedule) and to offset[i] otherwise (a missed scrape, a new phase).
// Prometheus puts scrapes exactly on their interval unless a scrape runs
// late, so a late scrape costs one value here and two as steps.
func (c *Codec) appendTimes(dst []byte) []byte {
	offs := c.offs
	dst = binary.AppendUvarint(dst, uint64(offs[0]))
	if len(offs) < 2 {
		return dst
	}
	c.tmp = c.tmp[:0]
	for i := 1; i < len(offs); i++ {
		c.tmp = append(c.tmp, offs[i]-offs[i-1])
	}
	c.ms = append(c.ms[:0], c.tmp...)
	sorted := c.ms
	slices.Sort(sorted)
	d := sorted[(len(sorted)-1)/2]
	for i := range c.tmp {
		c.tmp[i] -= d
	}
	dst = binary.AppendVarint(dst, d)
	at := len(dst)
	dst = append(dst, timesSteps)
	dst = appendPacked(dst, c.tmp)

	grid, half := offs[0], absU(d)/2
	c.tmp = c.tmp[:0]
	for _, o := range offs[1:] {
		pred := grid + d
		r := o - pred
		c.tmp = append(c.tmp, r)
		if absU(r) <= half {
			grid = pred
		} else {
			grid = o
		}
	}
	c.cand = append(c.cand[:0], timesGrid)
	c.cand = appendPacked(c.cand, c.tmp)
	c.ms = sorted
	if len(c.cand) < len(dst)-at {
		dst = append(dst[:at], c.cand...)
	}
	return dst
}

// appendValues appends the shortest values section it finds: decimal at
// the exponent every sample needs, decimal at an exponent all but a few
// need (the others stored raw), each with deltas or deltas of deltas, or
// XOR of the raw words.
func (c *Codec) appendValues(dst []byte) ([]byte, byte) {
	n := len(c.words)
	c.ks = c.ks[:0]
	var hist [maxK + 1]int
	kmax := -1
	for i, w := range c.words {
		k := sampleK(flagInfo[c.flags[i]].kind, w)
		c.ks = append(c.ks, int8(k))
		if k >= 0 {
			hist[k]++
			kmax = max(kmax, k)
		}
	}
	bestMode := byte(valXOR)
	bestLen := c.xorLen()
	c.best = c.best[:0]
	try := func(k int) {
		c.mantissas(k)
		for _, mode := range [...]byte{valDelta, valDelta2} {
			c.cand = c.appendDecimal(c.cand[:0], k, mode)
			if len(c.cand) < bestLen {
				c.best, c.cand = c.cand, c.best
				bestMode, bestLen = mode, len(c.best)
			}
		}
	}
	if kmax >= 0 {
		try(kmax)
		// The smallest exponent that leaves at most 1/16 of the samples
		// as exceptions, when smaller.
		covered := 0
		for k := 0; k < kmax; k++ {
			covered += hist[k]
			if covered >= n-n/16 {
				try(k)
				break
			}
		}
	}
	if bestMode == valXOR {
		return c.appendXOR(dst), bestMode
	}
	return append(dst, c.best...), bestMode
}

// xorLen returns the length of the XOR values section.
func (c *Codec) xorLen() int {
	n, prev := 0, uint64(0)
	for _, w := range c.words {
		x := w ^ prev
		prev = w
		n++
		if x != 0 {
			n += 8 - bits.LeadingZeros64(x)/8 - bits.TrailingZeros64(x)/8
		}
	}
	return n
}

// mantissas fills c.ms with the mantissas at exponent k of the samples
// that have one, and c.exc with the indexes of the others.
func (c *Codec) mantissas(k int) {
	c.ms, c.exc = c.ms[:0], c.exc[:0]
	for i, w := range c.words {
		if sk := c.ks[i]; sk >= 0 && int(sk) <= k {
			if m, ok := toMantissa(flagInfo[c.flags[i]].kind, w, k); ok {
				c.ms = append(c.ms, m)
				continue
			}
		}
		c.exc = append(c.exc, i)
	}
}

// appendDecimal appends a decimal values section of c.ms and c.exc.
func (c *Codec) appendDecimal(dst []byte, k int, mode byte) []byte {
	dst = append(dst, byte(k))
	dst = binary.AppendUvarint(dst, uint64(len(c.exc)))
	next := 0
	var raw [8]byte
	for _, i := range c.exc {
		dst = binary.AppendUvarint(dst, uint64(i-next))
		next = i + 1
		n := flagInfo[c.flags[i]].n
		putWord(raw[:], n, c.words[i])
		dst = append(dst, raw[:n]...)
	}
	ms := c.ms
	if len(ms) == 0 {
		return dst
	}
	dst = binary.AppendVarint(dst, ms[0])
	c.tmp = c.tmp[:0]
	if mode == valDelta {
		for i := 1; i < len(ms); i++ {
			c.tmp = append(c.tmp, ms[i]-ms[i-1])
		}
		return appendPacked(dst, c.tmp)
	}
	if len(ms) < 2 {
		return dst
	}
	d := ms[1] - ms[0]
	dst = binary.AppendVarint(dst, d)
	for i := 2; i < len(ms); i++ {
		d2 := ms[i] - ms[i-1]
		c.tmp = append(c.tmp, d2-d)
		d = d2
	}
	return appendPacked(dst, c.tmp)
}

// appendXOR appends the XOR values section: per sample a control byte
// (leading zero bytes << 4 | trailing zero bytes of the XOR with the word
// before) and the XOR's remaining bytes, big-endian.
func (c *Codec) appendXOR(dst []byte) []byte {
	prev := uint64(0)
	for _, w := range c.words {
		x := w ^ prev
		prev = w
		if x == 0 {
			dst = append(dst, 8<<4)
			continue
		}
		lz := bits.LeadingZeros64(x) / 8
		tz := bits.TrailingZeros64(x) / 8
		dst = append(dst, byte(lz<<4|tz))
		for b := 7 - lz; b >= tz; b-- {
			dst = append(dst, byte(x>>(8*b)))
		}
	}
	return dst
}
