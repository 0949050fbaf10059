package mapping

import "math/bits"

// UvarintLen is the length of v's shortest uvarint (as
// binary.AppendUvarint writes it): one byte for each 7 bits of v, at least
// one. The row codecs that accept only the shortest form (rollup's packed
// runs, the embedded store's dense rows) check a read length against it,
// and the protobuf encoders size a message with it before writing.
func UvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }
