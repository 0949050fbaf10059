// Package mapping holds the byte codecs of OpenTSDB 2.4's HBase layout and
// of promhbase's own cells: row keys, salt, qualifiers, values, compacted
// and append columns, histogram and exemplar cells, UIDMeta and TSMeta
// JSON, series index keys, how names are stored in tsdb-uid, and the regex
// quoting used by row-key filters. It does no I/O and imports no store:
// UID assignment is package uid, series resolution package series. Every codec here is byte-for-byte compatible with what an
// OpenTSDB 2.4 TSD writes and reads, so that either side can read the other's
// data. The encoders append into caller-supplied buffers and do not allocate
// when the buffer has room; the decoders check every length before slicing and
// return an error instead of panicking on malformed input.
//
// # Row key (table tsdb, family t)
//
//	+--------+------------+-----------+--------+--------+-----+--------+--------+
//	| salt   | metric UID | base time | tagk 1 | tagv 1 | ... | tagk N | tagv N |
//	| 0..8 B | 1..8 B     | 4 B, u32  | 1..8 B | 1..8 B |     |        |        |
//	+--------+------------+-----------+--------+--------+-----+--------+--------+
//
// The base time is Unix seconds rounded down to the hour (big-endian). The
// tag pairs are sorted by unsigned byte order of tagk‖tagv, which is order by
// tagk UID bytes since a series has each tagk once. The widths and the salt
// settings are process-wide in OpenTSDB; see [Layout].
//
// # Qualifiers and values (one data point)
//
//	2-byte, seconds:       oooooooo oooo ffff         o = offset in s (0..3599)
//	4-byte, milliseconds:  1111oooo oooooooo oooooooo oo00ffff
//	                                                  o = offset in ms (22 bits)
//	flags ffff:            bit 3 = float, bits 2..0 = value length - 1
//
// Values are signed big-endian integers on 1, 2, 4 or 8 bytes, or IEEE-754
// floats on 4 or 8 bytes. promhbase writes 4-byte millisecond qualifiers only;
// it reads every form OpenTSDB stores (see [AppendPoints]).
//
// rowbuild.go is the row builder of the write path; tables.go names the
// default tables.
package mapping
