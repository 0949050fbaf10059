package dense

import (
	"encoding/binary"

	"github.com/promhbase/promhbase/mapping"
)

// The series of one scrape target share their scrape timestamps, so the
// rows of one hour of those series have byte-identical timestamps
// sections (the design notes in doc.go). A TimesCache keeps the offsets
// decoded from recent sections, by the section's bytes and the row's
// qualifier kind, and a Codec copies them for a section seen before:
// what the section's bytes give, whatever series, hour or query they are
// in, so a copy is always the decoded times. An offset, cut to a
// qualifier's bits (22 of milliseconds, or 12 of seconds times 1000), is
// below 2^32.
//
// The cache is bounded (timesCacheBytes) and gives up on values whose
// sections seldom repeat (one series a target, OpenTSDB's own data): after
// timesProbe lookups with fewer than one hit in four, it is off until
// RetryTimes. It belongs to its Codec's goroutine: a query's workers each
// keep their own, from one query to the next (sharing one cost more than
// it saved: a worker copying offsets that another core has just written
// waits for their cache lines).
type TimesCache struct {
	m       map[string]timesEntry
	bytes   int
	lookups int
	hits    int
	off     bool
}

const (
	timesCacheBytes = 1 << 20 // bytes kept, at most: keys, offsets (4 bytes each), slots
	timesProbe      = 64
	timesMinSamples = 16 // a section of fewer samples is decoded each time
)

// timesEntry is a section's offsets and whether its times strictly
// ascend.
type timesEntry struct {
	offs []uint32
	asc  bool
}

// RetryTimes turns c's times cache on again, keeping the sections it
// holds, and starts its probe anew: for a Codec kept for rows of another
// kind (another query), where sections may repeat as they did not.
func (c *Codec) RetryTimes() {
	tc := c.timesOf()
	tc.off, tc.lookups, tc.hits = false, 0, 0
}

// timesOf returns the cache c uses, made at the first use.
func (c *Codec) timesOf() *TimesCache {
	if c.times == nil {
		c.times = &TimesCache{}
	}
	return c.times
}

// lookup returns the cached offsets from the row's base time (ms, cut to
// the qualifier's bits) of the section whose key is key (the qualifier
// kind, then the section's bytes), and whether there are.
func (tc *TimesCache) lookup(key []byte, n int) (timesEntry, bool) {
	if tc.off {
		return timesEntry{}, false
	}
	e, ok := tc.m[string(key)]
	tc.lookups++
	if ok && len(e.offs) == n {
		tc.hits++
		return e, true
	}
	if tc.lookups >= timesProbe && tc.hits*4 < tc.lookups {
		tc.off = true
	}
	return timesEntry{}, false
}

// store keeps the times of pts, of a row of base time base (ms), and
// whether they ascend, under key.
func (tc *TimesCache) store(key []byte, pts []mapping.Point, base int64, asc bool) {
	if tc.off {
		return
	}
	if tc.m == nil {
		tc.m = map[string]timesEntry{}
	}
	if old, ok := tc.m[string(key)]; ok {
		tc.bytes -= entryBytes(len(key), len(old.offs))
	}
	if tc.bytes+entryBytes(len(key), len(pts)) > timesCacheBytes {
		clear(tc.m)
		tc.bytes = 0
	}
	offs := make([]uint32, len(pts))
	for i, p := range pts {
		offs[i] = uint32(p.T - base)
	}
	tc.m[string(key)] = timesEntry{offs: offs, asc: asc}
	tc.bytes += entryBytes(len(key), len(offs))
}

// entryBytes is what an entry of a key of keyLen bytes and n offsets
// holds: the key, the offsets, and about a map slot.
func entryBytes(keyLen, n int) int { return keyLen + 4*n + 64 }

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
