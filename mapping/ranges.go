package mapping

import (
	"encoding/binary"
	"math"
)

// KeyRange is the row keys in [Start, Stop); a nil Stop runs to the end of
// the table.
type KeyRange struct {
	Start, Stop []byte
}

// MetricRanges returns the key ranges that hold the rows of metric whose
// base time lies in the hours of [from, to] (Unix seconds, inclusive): one
// range per salt bucket,
//
//	[salt] metric hour(from)  ..  [salt] metric hour(to)+3600
//
// as OpenTSDB's scanners bound them. It returns nil when the range is empty
// or lies beyond the 32-bit base time.
func (l Layout) MetricRanges(metric []byte, from, to int64) []KeyRange {
	if to < from || to < 0 {
		return nil
	}
	from = max(from, 0) / MaxTimespan * MaxTimespan
	if from > math.MaxUint32 {
		return nil
	}
	next := to/MaxTimespan*MaxTimespan + MaxTimespan
	buckets := 1
	if l.SaltWidth > 0 {
		buckets = l.SaltBuckets
	}
	out := make([]KeyRange, 0, buckets)
	for b := range buckets {
		prefix := append(l.AppendSalt(nil, b), metric...)
		r := KeyRange{Start: binary.BigEndian.AppendUint32(prefix[:len(prefix):len(prefix)], uint32(from))}
		if next <= math.MaxUint32 {
			r.Stop = binary.BigEndian.AppendUint32(prefix[:len(prefix):len(prefix)], uint32(next))
		} else {
			r.Stop = keyAfterPrefix(prefix)
		}
		out = append(out, r)
	}
	return out
}

// keyAfterPrefix returns the first key after every key that starts with p
// (p with its last byte below 0xFF incremented and what follows it
// dropped), or nil, the end of the table, when p is all 0xFF.
func keyAfterPrefix(p []byte) []byte {
	i := len(p) - 1
	for i >= 0 && p[i] == 0xFF {
		i--
	}
	if i < 0 {
		return nil
	}
	return append(p[:i:i], p[i]+1)
}

// HourCuts returns n-1 row keys that cut r, a range of MetricRanges (one
// metric and salt bucket, from one hour's base time to another's), into n
// runs of about as many whole hours, in order: each key is the range's
// prefix and an hour's base time strictly inside it. nil when r spans
// fewer than n hours, or is not of that form.
func (l Layout) HourCuts(r KeyRange, n int) [][]byte {
	pl := l.PrefixLen()
	if n < 2 || len(r.Start) != pl || len(r.Stop) != pl || string(r.Start[:pl-TimestampBytes]) != string(r.Stop[:pl-TimestampBytes]) {
		return nil
	}
	from := int64(binary.BigEndian.Uint32(r.Start[pl-TimestampBytes:]))
	next := int64(binary.BigEndian.Uint32(r.Stop[pl-TimestampBytes:]))
	if from%MaxTimespan != 0 || next%MaxTimespan != 0 {
		return nil
	}
	hours := (next - from) / MaxTimespan
	if hours < int64(n) {
		return nil
	}
	cuts := make([][]byte, 0, n-1)
	for k := int64(1); k < int64(n); k++ {
		base := from + hours*k/int64(n)*MaxTimespan
		cuts = append(cuts, binary.BigEndian.AppendUint32(r.Start[:pl-TimestampBytes:pl-TimestampBytes], uint32(base)))
	}
	return cuts
}
