package mapping

import (
	"encoding/binary"
	"strconv"
)

// The series index.
//
// Two tables hold it. Neither is read by OpenTSDB's data queries, its
// compaction or its fsck tools.
//
// tsdb-meta (OpenTSDB's own meta table): one row per series, written once,
// when a promhbase process first sees the series and finds no row (a GET,
// then a PUT, as OpenTSDB's realtime TS meta does):
//
//	row       TSUID = metric UID ‖ tagk1 tagv1 … tagkN tagvN (no salt, no time)
//	name:ts_meta  OpenTSDB's TSMeta storage JSON (AppendTSMetaJSON)
//
// so that OpenTSDB's /api/search/lookup (meta mode) and /api/uid/tsmeta find
// promhbase's series. promhbase writes no ts_ctr cell: OpenTSDB's
// /api/query/last reads the hour of its cell timestamp, and a counter per
// sample would double the writes.
//
// tsdb-index (promhbase's own table, family "i"): label lookups by day
// (UTC days, Unix seconds / 86400, 4 bytes big-endian). All cell values
// are empty; the qualifiers carry the data:
//
//	row 'K' ‖ day                      qualifiers: the tagk UIDs seen that day
//	row 'N' ‖ day                      qualifiers: the metric UIDs seen that day
//	row 'V' ‖ day ‖ tagk UID ‖ tagv UID  qualifiers: the metric UIDs with a series
//	                                   carrying tagk=tagv that day
//	row 'S' ‖ day ‖ metric UID ‖ bucket  qualifiers: the tag pairs of each series
//	                                   of the metric with data that day whose
//	                                   bucket (IndexSeriesBucket) it is
//	row 'A'                            qualifiers: every metric UID ever indexed
//	row 'C'                            qualifier "since": the first day (4 bytes)
//	                                   from which every write went through the index;
//	                                   qualifier "series-since": the same for the
//	                                   'S' rows (which came later)
//	row 'X' ‖ ms ‖ writer ‖ seq          the results cache's log of changes of old
//	                                   data (package cachelog; HBase only)
//
// A cell is written once per process and key (bounded caches remember
// what was written; an 'S' cell once per series and day, as the series'
// mark remembers); writing it again is harmless. The 'S' cells of a day
// are what a cardinality count reads: a cell a series (a key in the
// embedded store), its TSUID split between the row (the metric) and the
// qualifier (the tags), a metric's series spread over up to 256 rows by
// a hash of their tags (a row holds about a 256th of them). The reserved
// tag __name__ of label-less series is indexed like any tag and hidden by
// readers, as on the data rows.
const (
	IndexFamily    = "i"
	TSMetaFamily   = "name"
	TSMetaQual     = "ts_meta"
	IndexSinceQual = "since"
	// IndexSeriesSinceQual is the qualifier of the 'C' row's day from
	// which every write has its 'S' row.
	IndexSeriesSinceQual = "series-since"

	IndexKindTagKs    byte = 'K'
	IndexKindMetrics  byte = 'N'
	IndexKindValues   byte = 'V'
	IndexKindSeries   byte = 'S'
	IndexKindCoverage byte = 'C'
	IndexKindEver     byte = 'A'
)

// IndexEverKey is the key of the 'A' row.
var IndexEverKey = []byte{IndexKindEver}

// DaySeconds is the length of an index day.
const DaySeconds = 86400

// DayOf returns the index day of a time in Unix milliseconds (≥ 0).
func DayOf(ms int64) uint32 { return uint32(ms / 1000 / DaySeconds) }

// AppendIndexDayKey appends the key of a 'K' or 'N' row.
func AppendIndexDayKey(dst []byte, kind byte, day uint32) []byte {
	return binary.BigEndian.AppendUint32(append(dst, kind), day)
}

// AppendIndexValueKey appends the key of a 'V' row; tagv may be empty for
// the prefix of every value of tagk.
func AppendIndexValueKey(dst []byte, day uint32, tagk, tagv []byte) []byte {
	dst = binary.BigEndian.AppendUint32(append(dst, IndexKindValues), day)
	return append(append(dst, tagk...), tagv...)
}

// IndexValueOf returns the tagv UID of a 'V' row key for tagk UIDs of
// tagkWidth bytes; ok is false for a key of another shape.
func IndexValueOf(key []byte, tagkWidth, tagvWidth int) (tagv []byte, ok bool) {
	if len(key) != 5+tagkWidth+tagvWidth || key[0] != IndexKindValues {
		return nil, false
	}
	return key[5+tagkWidth:], true
}

// IndexSeriesBucket returns the bucket of the 'S' row of a series of
// tags: the low byte of the 32-bit FNV-1a hash of the tag pairs.
func IndexSeriesBucket(tags []byte) byte {
	h := uint32(2166136261)
	for _, c := range tags {
		h = (h ^ uint32(c)) * 16777619
	}
	return byte(h)
}

// AppendIndexSeriesKey appends the key of the 'S' row whose qualifier the
// series of metric and tags with data on day is.
func AppendIndexSeriesKey(dst []byte, day uint32, metric, tags []byte) []byte {
	return append(AppendIndexSeriesPrefix(dst, day, metric), IndexSeriesBucket(tags))
}

// AppendIndexSeriesPrefix appends the prefix of the 'S' rows of day, of
// metric's only when metric is not empty.
func AppendIndexSeriesPrefix(dst []byte, day uint32, metric []byte) []byte {
	return append(binary.BigEndian.AppendUint32(append(dst, IndexKindSeries), day), metric...)
}

// IndexSeriesRowOf returns the day of an 'S' row key and what follows
// it: the metric UID and the bucket (its last byte); ok is false for a
// key of another kind.
func IndexSeriesRowOf(key []byte) (day uint32, metricBucket []byte, ok bool) {
	if len(key) < 7 || key[0] != IndexKindSeries {
		return 0, nil, false
	}
	return binary.BigEndian.Uint32(key[1:5]), key[5:], true
}

// IndexCoverageKey is the key of the 'C' row.
var IndexCoverageKey = []byte{IndexKindCoverage}

// AppendTSMetaJSON appends OpenTSDB's TSMeta storage JSON of a new series:
//
//	{"tsuid":"<TSUID, upper-case hex>","displayName":"","description":"","notes":"",
//	 "created":<Unix seconds>,"custom":null,"units":"","dataType":"","retention":0,
//	 "max":"NaN","min":"NaN"}
//
// (one line; fields in OpenTSDB's order, NaN quoted as Jackson writes it).
func AppendTSMetaJSON(dst []byte, tsuid []byte, created int64) []byte {
	dst = append(dst, `{"tsuid":"`...)
	for _, b := range tsuid {
		dst = append(dst, hexDigits[b>>4], hexDigits[b&0xF])
	}
	dst = append(dst, `","displayName":"","description":"","notes":"","created":`...)
	dst = strconv.AppendInt(dst, created, 10)
	return append(dst, `,"custom":null,"units":"","dataType":"","retention":0,"max":"NaN","min":"NaN"}`...)
}
