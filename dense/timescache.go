package dense

import (
	"encoding/binary"

	"github.com/promhbase/promhbase/mapping"
)

// The series of one scrape target share their scrape timestamps, so the
// rows of one hour of those series have byte-identical timestamps
// sections (the design notes in doc.go). A Codec keeps the offsets it
// decoded from recent sections, by the section's bytes and the row's
// qualifier kind, and copies them for a section it has seen:
// what the section's bytes give, whatever series or hour they are in, so
// a copy is always the decoded times. An offset, cut to a qualifier's
// bits (22 of milliseconds, or 12 of seconds times 1000), is below 2^32.
//
// The cache is bounded (timesCacheBytes) and gives up on values whose
// sections seldom repeat (one series a target, OpenTSDB's own data): after
// timesProbe lookups with fewer than one hit in four, the Codec stops
// looking for the rest of its life (a query's worker has its own).
type timesCache struct {
	m       map[string]timesEntry
	key     []byte
	bytes   int
	lookups int
	hits    int
	off     bool
}

const (
	timesCacheBytes = 1 << 20 // offsets kept, at most (4 bytes each)
	timesProbe      = 64
	timesMinSamples = 16 // a section of fewer samples is decoded each time
)

// timesEntry is a section's offsets and whether its times strictly
// ascend.
type timesEntry struct {
	offs []uint32
	asc  bool
}

// lookup returns the cached offsets from the row's base time (ms, cut to
// the qualifier's bits) of the section sec (the timestamps section's
// bytes) of qualifier kind qk, and whether there are; it builds the key
// that store takes.
func (tc *timesCache) lookup(sec []byte, qk byte, n int) (timesEntry, bool) {
	if tc.off || n < timesMinSamples {
		return timesEntry{}, false
	}
	tc.key = append(append(tc.key[:0], qk), sec...)
	tc.lookups++
	if e, ok := tc.m[string(tc.key)]; ok && len(e.offs) == n {
		tc.hits++
		return e, true
	}
	if tc.lookups >= timesProbe && tc.hits*4 < tc.lookups {
		tc.off = true
		clear(tc.m)
		tc.bytes = 0
	}
	return timesEntry{}, false
}

// store keeps the times of pts, of a row of base time base (ms), and
// whether they ascend, under the key lookup built last.
func (tc *timesCache) store(pts []mapping.Point, base int64, asc bool) {
	if tc.off || len(pts) < timesMinSamples {
		return
	}
	if tc.m == nil {
		tc.m = map[string]timesEntry{}
	}
	if tc.bytes+4*len(pts) > timesCacheBytes {
		clear(tc.m)
		tc.bytes = 0
	}
	offs := make([]uint32, len(pts))
	for i, p := range pts {
		offs[i] = uint32(p.T - base)
	}
	tc.m[string(tc.key)] = timesEntry{offs: offs, asc: asc}
	tc.bytes += 4 * len(offs)
}

// timesLen returns the length of the timestamps section of n samples at
// the start of src, walking its packed blocks' headers without unpacking
// them; false where the section is malformed (the decoder then names the
// error).
func timesLen(src []byte, n int) (int, bool) {
	_, pos := binary.Uvarint(src)
	if pos <= 0 {
		return 0, false
	}
	if n == 1 {
		return pos, true
	}
	_, k := binary.Varint(src[pos:])
	if k <= 0 {
		return 0, false
	}
	pos += k + 1 // the coding byte
	if pos > len(src) {
		return 0, false
	}
	k, ok := packedLen(src[pos:], n-1)
	return pos + k, ok
}

// packedLen returns the length of the packed stream of n values at the
// start of src (see readPacked), from its headers.
func packedLen(src []byte, n int) (int, bool) {
	if n == 0 {
		return 0, true
	}
	_, pos := binary.Uvarint(src)
	if pos <= 0 {
		return 0, false
	}
	for i := 0; i < n; i += blockLen {
		cnt := min(blockLen, n-i)
		if pos >= len(src) {
			return 0, false
		}
		hdr := src[pos]
		pos++
		if hdr&forBit != 0 {
			_, k := binary.Varint(src[pos:])
			if k <= 0 {
				return 0, false
			}
			pos += k
		}
		if hdr&patchedBit != 0 {
			if pos >= len(src) {
				return 0, false
			}
			np := int(src[pos])
			pos++
			for range np {
				pos++ // the index
				if pos > len(src) {
					return 0, false
				}
				_, k := binary.Uvarint(src[pos:])
				if k <= 0 {
					return 0, false
				}
				pos += k
			}
		}
		pos += (cnt*int(hdr&widthMask) + 7) / 8
		if pos > len(src) {
			return 0, false
		}
	}
	return pos, true
}
