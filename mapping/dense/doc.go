// Package dense is the dense physical form of a settled OpenTSDB data row,
// for the embedded store: after OpenTSDB compaction a row of table tsdb
// holds one cell of family t, a compacted column (see package mapping),
// about 12 bytes a sample; its dense form takes about 1 byte a sample on
// node-exporter-like data before block compression, and decodes back to
// the column's exact bytes, so that every reader still sees OpenTSDB's
// bytes.
//
// [Codec.Encode] packs the cells of a row when they are one data-point
// column it knows (see there) and reports false otherwise; the store then
// keeps its generic form. It checks its output by decoding it. [Codec.Decode]
// gives the cell back byte for byte: family, qualifier, value, timestamp.
//
// # Byte layout
//
// Integers are unsigned LEB128 (uvarint) or zigzag LEB128 (varint), as in
// encoding/binary, unless a width is given.
//
//	u8      format, 0xD1 (Format)
//	u8      shape:
//	          bits 0-1 qualifiers: 0 all 4-byte millisecond, 1 all 2-byte
//	                   second, 2 both (bitmap below)
//	          bits 2-3 meta byte: 0 none (one sample), 1 0x00, 2 0x01
//	          bits 4-5 flags section: 0 one, 1 runs, 2 nibbles, 3 canonical
//	          bits 6-7 values section: 0 decimal delta, 1 decimal
//	                   delta-of-delta, 2 XOR
//	uvarint cell timestamp (the HBase version, Unix ms)
//	uvarint N, the number of samples (1..MaxSamples)
//	[bitmap] with mixed qualifiers only: ceil(N/8) bytes, bit i%8 of
//	        byte i/8 set when sample i has a 4-byte millisecond qualifier
//	flags section, each sample's qualifier flags (bit 3 float, bits 0-2
//	        length-1; only 0x0, 0x1, 0x3, 0x7, 0xB and 0xF):
//	          one:     u8 the flags of every sample
//	          runs:    uvarint R, then R times: u8 flags, uvarint length
//	          nibbles: ceil(N/2) bytes, sample i in the low nibble of byte
//	                   i/2 when i is even, the high nibble when odd
//	          canonical: no bytes. Each sample is stored in the shortest
//	                   exact encoding of its value, as promhbase's writer
//	                   does (mapping.AppendValue): an integer on the fewest
//	                   of 1, 2, 4, 8 bytes if the value is integral, within
//	                   int64 and not -0, else a float32 if that holds its
//	                   exact bits (never a NaN), else a float64. The values
//	                   section then holds every sample as a float64 (flags
//	                   0xF), and the decoder derives flags and bytes
//	timestamps section (the offsets from the row's base time, in ms, or in
//	        seconds when every qualifier is a second one):
//	          uvarint first offset
//	          N > 1:  varint D, the median step between offsets
//	                  u8 coding, 0 steps or 1 grid
//	                  packed stream of N-1 values r[1..N-1]:
//	                    steps: r[i] = offset[i] - offset[i-1] - D
//	                    grid:  r[i] = offset[i] - (grid + D), where grid
//	                      starts at the first offset and then moves to
//	                      grid + D when |r[i]| <= |D|/2 (integer halving),
//	                      else to offset[i]
//	values section, decimal (0, 1): each sample's value is the mantissa m
//	        of a decimal m / 10^k, k shared by the row:
//	          u8      k, 0..15
//	          uvarint E, the exceptions: samples stored raw
//	          E times: uvarint index gap (index minus the previous
//	                  exception's index plus one; the first: its index),
//	                  then the value's bytes as the column stores them
//	                  (as many as its flags say)
//	          the N-E other samples' mantissas, if any:
//	            varint first mantissa
//	            delta:  packed stream of the N-E-1 differences
//	            delta2: N-E > 1: varint first difference, then the packed
//	                    stream of the N-E-2 differences of differences
//	values section, XOR (2): per sample, the sample's word XOR the word of
//	        the sample before (0 before the first), as u8 control (high
//	        nibble: leading zero bytes, low nibble: trailing zero bytes,
//	        their sum at most 8) and the 8 - leading - trailing bytes
//	        between, big-endian
//
// Nothing follows the values section.
//
// A value of one sample has no meta byte (bits 2-3 of the shape are 0)
// and a value of several has one, and every second qualifier's offset is
// below 3840 (0xF00): otherwise the cell would not read back as the
// samples it holds, so the decoders refuse it.
//
// A packed stream of n int64 values (n known from the context) is empty
// when n is 0, else
//
//	uvarint g, every value is a multiple of g (g >= 1) and is stored as
//	        its quotient by g (counters of 4 KiB pages store pages)
//	ceil(n/32) blocks of 32 quotients (the last one shorter), each
//	        quotient q stored as a word: q - base (mod 2^64) with a frame
//	        of reference, else zigzag(q):
//	  u8      bits 0-5 width w (0..63), bit 6 patched, bit 7 frame of
//	          reference
//	  [varint base] with the frame-of-reference bit only
//	  [patches] with the patched bit only: u8 P (1..count), then P times
//	          u8 index in the block (increasing) and uvarint the word's
//	          bits above w (word >> w)
//	  ceil(count*w/8) bytes: the low w bits of each word, least
//	          significant bit first
//
// The writer picks, per block, the form and the width that take fewest
// bytes: a few wide words (a counter reset, a late scrape) are patched
// instead of widening the block.
//
// The word of a sample (XOR) is its integer sign-extended to 64 bits, its
// float32 bits (high half zero) or its float64 bits; the decoder writes
// the word's low bytes as long as the flags say.
//
// A sample's value from its mantissa m (decimal): an integer is m / 10^k;
// a float64 is float64(m) / 10^k (k = 0: float64(m)); a float32 is that
// float64 converted to float32. For |m| < 2^53 and k <= 22 both operands
// are exact and the division rounds once, so every machine computes the
// same bits: the float nearest to the decimal, which is what parsing its
// text gives (Prometheus's values mostly come from text). Encode keeps a
// mantissa only when this gives back the sample's exact bits; the others
// (NaN such as the staleness marker 0x7FF0000000000002, -0, ±Inf,
// non-decimal floats) are exceptions, and when exceptions make the
// decimal form longer than XOR, the row is XOR.
//
// Design notes. Series of one target share their scrape timestamps, so
// their timestamp sections are byte-identical, contiguous, and a block
// compressor (snappy or zstd in Pebble) stores the repeats as matches.
// Timestamps are coded against the row's median step rather than as
// deltas of deltas: a missed scrape then costs one wide value instead of
// two, and timestamps exactly on the scrape interval (Prometheus snaps a
// scrape's timestamp to its interval when it is off by at most 2 ms) cost
// a byte per 32 samples; the grid coding makes a late scrape one patched
// value instead of two. Mantissas are the decimal form VictoriaMetrics
// describes for its blocks (an integer and a shared power of ten), here
// kept exact. Values are bit-packed rather than byte-aligned so that they
// stay small under snappy, Pebble's default block compression, which does
// no entropy coding.
//
// column.go holds float columns for the other packed forms (the rollup
// runs').
package dense
