package dense

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/promhbase/promhbase/mapping"
)

// AppendPoints decodes the dense value v of a row whose base time is
// baseTime (Unix seconds) straight into data points, appended to dst in
// the column's order, and returns the column's version (the cell's
// Timestamp) with them. The points are exactly those
// mapping.AppendPoints gives for the cell Decode returns, without
// building that cell: the read path's way to a settled row's samples.
//
// A value that is not a well-formed dense value gives an error wrapping
// ErrCorrupt and dst back unchanged; AppendPoints never panics and does
// not allocate once the Codec's scratch and dst have room.
func (c *Codec) AppendPoints(dst []mapping.Point, baseTime uint32, v []byte) ([]mapping.Point, uint64, error) {
	if out, ts, _, ok := c.appendFused(dst, baseTime, v); ok {
		return out, ts, nil
	}
	return c.appendUnpacked(dst, baseTime, v)
}

// AppendPointsOrdered is AppendPoints that also reports whether the
// times of the points it appended strictly ascend, found while decoding
// them: a reader keeps such a row's points as they are.
func (c *Codec) AppendPointsOrdered(dst []mapping.Point, baseTime uint32, v []byte) ([]mapping.Point, uint64, bool, error) {
	if out, ts, asc, ok := c.appendFused(dst, baseTime, v); ok {
		return out, ts, asc, nil
	}
	start := len(dst)
	out, ts, err := c.appendUnpacked(dst, baseTime, v)
	if err != nil {
		return out, ts, false, err
	}
	asc := true
	for i := start + 1; i < len(out) && asc; i++ {
		asc = out[i].T > out[i-1].T
	}
	return out, ts, asc, nil
}

// appendUnpacked is AppendPoints by way of unpack: every shape, and the
// errors that name what is wrong.
func (c *Codec) appendUnpacked(dst []mapping.Point, baseTime uint32, v []byte) ([]mapping.Point, uint64, error) {
	u, err := c.unpack(v, true)
	if err != nil {
		return dst, 0, err
	}
	base := int64(baseTime) * 1000
	n := len(c.doffs)
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	// n is bounded by MaxSamples; the three slices below have length n.
	pts, offs, words := dst[start:start+n], c.doffs[:n], c.dwords[:n]
	// Offsets are cut to the bits a qualifier holds, as writeQualifiers
	// cuts them, so that both ways give the same times.
	switch u.qk {
	case qualMs:
		for i := range pts {
			pts[i].T = base + offs[i]&offMsMask
		}
	case qualSec:
		for i := range pts {
			pts[i].T = base + (offs[i]&offSecMask)*1000
		}
	default:
		for i := range pts {
			if u.msbit[i>>3]&(1<<(i&7)) != 0 {
				pts[i].T = base + offs[i]&offMsMask
			} else {
				pts[i].T = base + (offs[i]/1000&offSecMask)*1000
			}
		}
	}
	if u.flags == nil {
		switch u.f1 {
		case 0xF:
			for i := range pts {
				pts[i].V = math.Float64frombits(words[i])
			}
		case 0xB:
			for i := range pts {
				pts[i].V = float64(math.Float32frombits(uint32(words[i])))
			}
		default:
			l := flagLen[u.f1]
			for i := range pts {
				pts[i].V = intValue(words[i], l)
			}
		}
		return dst, u.ts, nil
	}
	flags := u.flags[:n]
	for i := range pts {
		pts[i].V = wordValue(words[i], flags[i])
	}
	return dst, u.ts, nil
}

// wordValue is the value of a sample whose word is w and flags f, as
// mapping reads the bytes writeValues writes for it.
func wordValue(w uint64, f byte) float64 {
	switch f & 0xF {
	case 0xF:
		return math.Float64frombits(w)
	case 0xB:
		return float64(math.Float32frombits(uint32(w)))
	}
	return intValue(w, flagLen[f&0xF])
}

// intValue is the signed big-endian integer of the l low bytes of w.
func intValue(w uint64, l uint8) float64 {
	switch l {
	case 1:
		return float64(int8(w))
	case 2:
		return float64(int16(w))
	case 4:
		return float64(int32(w))
	}
	return float64(int64(w))
}

// AppendPoints is Codec.AppendPoints on a borrowed Codec.
func (p *Pool) AppendPoints(dst []mapping.Point, baseTime uint32, v []byte) ([]mapping.Point, uint64, error) {
	c := p.get()
	defer p.codecs.Put(c)
	return c.AppendPoints(dst, baseTime, v)
}

// Samples returns the number of samples the dense value v holds, read
// from its header (0 when the header is not well-formed): for a reader
// to size its buffer before decoding rows.
func Samples(v []byte) int {
	if len(v) < 2 || v[0] != Format {
		return 0
	}
	_, k := binary.Uvarint(v[2:])
	if k <= 0 {
		return 0
	}
	n, k2 := binary.Uvarint(v[2+k:])
	if k2 <= 0 || n > MaxSamples {
		return 0
	}
	return int(n)
}
