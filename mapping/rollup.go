package mapping

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// OpenTSDB 2.4 keeps downsampled data in rollup tables (family t), one
// table per interval, each named in tsd.rollups.config (package rollup
// reads that file). A rollup row has the data table's row key (same salt,
// UIDs and tag order, see [Layout.AppendRowKey]) with the base time of the
// interval's row span instead of the hour:
//
//	row span   base time of a row holding second ts (UTC)
//	Nh         ts - ts % (N × 3600), N = 1 or even: aligned to the epoch
//	1d         midnight
//	1n         00:00 on the 1st of the month
//	1y         00:00 on 1 January
//
// Each aggregate of each interval of the row is one cell:
//
//	qualifier  agg id (1 byte, 0..127) ‖ u16 BE (index << 4 | flags)
//	           index = floor((ts - base) / interval), 0..3839
//	           flags as for raw data: bit 3 float, bits 2..0 length - 1
//	value      as for raw data (see [AppendValue]): a signed big-endian
//	           integer on 1, 2, 4 or 8 bytes or an IEEE-754 float on 4 or 8
//
// The agg id is the aggregator's id in the config's aggregationIds (sum 0,
// count 1, max 2, min 3 in OpenTSDB's tests). Readers mask it with 0x7F.
// OpenTSDB bounds the index three ways: a rollup interval must cut its row
// span (the nominal length of [RowSpan.NominalSeconds]) into 12 to 7774
// intervals; its writer refuses an index at or past that count; and an
// index of 3840 or more puts 0xF_ in the first offset byte, which its
// readers take for a millisecond qualifier (and fail on). Its
// configuration checks only the first, so 10m intervals in 1n rows reach
// index 3840 on day 27 of a month. [CheckRollupInterval] enforces all
// three; the encoders refuse an index from 3840 on. OpenTSDB does not
// compact rollup rows: every cell is one point. Its legacy qualifiers, the
// aggregator's name and a colon before the two offset bytes ("sum:" ‖
// u16), are not parsed here.

// Rollup qualifier constants.
const (
	// RollupQualifierBytes is the length of a rollup cell's qualifier.
	RollupQualifierBytes = 3
	// RollupAggIDMask selects the aggregation id from a qualifier's
	// first byte, as OpenTSDB's readers do.
	RollupAggIDMask byte = 0x7F
	// MaxRollupAggID is the largest aggregation id.
	MaxRollupAggID = 127
	// RollupIndexLimit is one past the largest index OpenTSDB reads back:
	// index 3840 is 0xF00, whose first offset byte 0xF0 marks a
	// millisecond qualifier.
	RollupIndexLimit = 3840
	// MinRollupIntervals and MaxRollupIntervals bound the number of
	// intervals in a row span (RollupInterval's MIN_INTERVALS and
	// MAX_INTERVALS).
	MinRollupIntervals = 12
	MaxRollupIntervals = 7774

	// rollupMonthNominal and rollupYearNominal are OpenTSDB's lengths of
	// the n and y spans for counting intervals (32 and 366 days);
	// rollupMonthMax is the longest real month.
	rollupMonthNominal = 32 * DaySeconds
	rollupMonthMax     = 31 * DaySeconds
	rollupYearNominal  = 366 * DaySeconds
	// maxRollupSeconds bounds spans and intervals: OpenTSDB computes
	// them in Java ints.
	maxRollupSeconds = math.MaxInt32
)

// ErrInvalidRollup is wrapped by the rollup parsers and encoders for a row
// span, interval, aggregation id or index OpenTSDB would not accept or not
// read back.
var ErrInvalidRollup = errors.New("mapping: invalid rollup")

// RowSpan is the row span of a rollup table: how much time one row
// covers. Make one with [ParseRowSpan]; the zero RowSpan is not a valid
// span, and its methods treat it as 1h. A RowSpan is a small comparable
// value.
type RowSpan struct {
	unit  byte // 'h', 'd', 'n' or 'y'; 0 in the zero value
	hours int  // the multiplier of 'h': 1 or even; 0 otherwise
}

// ParseRowSpan parses an OpenTSDB rowSpan: "Nh" with N = 1 or an even
// number (N × 3600 within a Java int), "1d", "1n" (a calendar month) or
// "1y" (a calendar year), in UTC. It is stricter than OpenTSDB in its
// spelling: the unit is lower case and the count has no sign and no
// leading zero, so that every accepted string is the one String gives
// back. Other strings, milliseconds and other units return an error
// wrapping [ErrInvalidRollup].
func ParseRowSpan(s string) (RowSpan, error) {
	n, unit, err := splitDuration(s)
	if err != nil {
		return RowSpan{}, fmt.Errorf("%w: row span %q: %w", ErrInvalidRollup, s, err)
	}
	switch unit {
	case "h":
		if n != 1 && n%2 != 0 {
			return RowSpan{}, fmt.Errorf("%w: row span %q: %d hours, want 1 or an even number", ErrInvalidRollup, s, n)
		}
		if n > maxRollupSeconds/3600 {
			return RowSpan{}, fmt.Errorf("%w: row span %q: %d hours, want at most %d", ErrInvalidRollup, s, n, maxRollupSeconds/3600)
		}
		return RowSpan{unit: 'h', hours: int(n)}, nil
	case "d", "n", "y":
		if n != 1 {
			return RowSpan{}, fmt.Errorf("%w: row span %q: a count of %d, only h takes a count other than 1", ErrInvalidRollup, s, n)
		}
		return RowSpan{unit: unit[0]}, nil
	case "ms":
		return RowSpan{}, fmt.Errorf("%w: row span %q: milliseconds are not supported", ErrInvalidRollup, s)
	}
	return RowSpan{}, fmt.Errorf("%w: row span %q: unit %q, want h, d, n or y", ErrInvalidRollup, s, unit)
}

// String returns the span as OpenTSDB's rowSpan spells it: "1h", "6h",
// "1d", "1n" or "1y".
func (s RowSpan) String() string {
	switch s.unit {
	case 'd', 'n', 'y':
		return "1" + string(rune(s.unit))
	}
	return strconv.Itoa(s.hourCount()) + "h"
}

// hourCount is the multiplier of an h span, 1 for the zero value.
func (s RowSpan) hourCount() int {
	if s.hours < 1 {
		return 1
	}
	return s.hours
}

// NominalSeconds is the span's length as OpenTSDB counts intervals in it:
// N × 3600 for Nh, 86400 for 1d, 32 days for 1n and 366 days for 1y.
func (s RowSpan) NominalSeconds() int64 {
	switch s.unit {
	case 'd':
		return DaySeconds
	case 'n':
		return rollupMonthNominal
	case 'y':
		return rollupYearNominal
	}
	return int64(s.hourCount()) * 3600
}

// MaxSeconds is the length of the span's longest row: N × 3600 for Nh,
// 86400 for 1d, 31 days for 1n and 366 days (a leap year) for 1y. Every
// index a row holds is below MaxSeconds / interval, rounded up.
func (s RowSpan) MaxSeconds() int64 {
	if s.unit == 'n' {
		return rollupMonthMax
	}
	return s.NominalSeconds()
}

// BaseTime returns the base time (Unix seconds, UTC) of the row that holds
// second ts: ts rounded down to a multiple of N hours for Nh, to midnight
// for 1d, to the 1st of its month for 1n, to 1 January for 1y. The result
// is at most ts, so it fits a row key whenever ts does.
func (s RowSpan) BaseTime(ts uint32) uint32 {
	switch s.unit {
	case 'd':
		return ts - ts%DaySeconds
	case 'n', 'y':
		y, m, _ := time.Unix(int64(ts), 0).UTC().Date()
		if s.unit == 'y' {
			m = time.January
		}
		return uint32(time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).Unix())
	}
	n := uint32(s.hourCount()) * 3600
	return ts - ts%n
}

// NextBase returns the base time of the row after the one that holds
// second ts: the end of ts's row. It is int64 because the row after the
// last one a row key can hold starts beyond 32 bits.
func (s RowSpan) NextBase(ts uint32) int64 {
	base := s.BaseTime(ts)
	switch s.unit {
	case 'd':
		return int64(base) + DaySeconds
	case 'n', 'y':
		t := time.Unix(int64(base), 0).UTC()
		if s.unit == 'y' {
			return t.AddDate(1, 0, 0).Unix()
		}
		return t.AddDate(0, 1, 0).Unix()
	}
	return int64(base) + int64(s.hourCount())*3600
}

// rollupUnitSeconds are the lengths of OpenTSDB's duration units
// (DateTime.parseDuration): a month is 30 days and a year 365.
func rollupUnitSeconds(unit string) (int64, bool) {
	switch unit {
	case "s":
		return 1, true
	case "m":
		return 60, true
	case "h":
		return 3600, true
	case "d":
		return DaySeconds, true
	case "w":
		return 7 * DaySeconds, true
	case "n":
		return 30 * DaySeconds, true
	case "y":
		return 365 * DaySeconds, true
	}
	return 0, false
}

// ParseRollupInterval parses an OpenTSDB interval string, a count and a
// unit: s, m, h, d, w, n (30 days) or y (365 days), and returns it in
// seconds, 1 to 2^31-1 (OpenTSDB keeps it in a Java int). Milliseconds,
// zero, a sign, a leading zero, an upper-case unit and any other text
// return an error wrapping [ErrInvalidRollup]. Whether the interval fits a
// row span is [CheckRollupInterval]'s question.
func ParseRollupInterval(s string) (int64, error) {
	n, unit, err := splitDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%w: interval %q: %w", ErrInvalidRollup, s, err)
	}
	if unit == "ms" {
		return 0, fmt.Errorf("%w: interval %q: milliseconds are not supported", ErrInvalidRollup, s)
	}
	mult, ok := rollupUnitSeconds(unit)
	if !ok {
		return 0, fmt.Errorf("%w: interval %q: unit %q, want s, m, h, d, w, n or y", ErrInvalidRollup, s, unit)
	}
	if n > maxRollupSeconds/mult {
		return 0, fmt.Errorf("%w: interval %q: longer than %d s", ErrInvalidRollup, s, maxRollupSeconds)
	}
	return n * mult, nil
}

// splitDuration splits "<count><unit>" into a count of 1 or more (decimal
// digits, no sign, no leading zero) and the unit text after it.
func splitDuration(s string) (n int64, unit string, err error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	digits, unit := s[:i], s[i:]
	switch {
	case digits == "":
		return 0, "", errors.New("want a count and a unit, such as 5m")
	case unit == "":
		return 0, "", errors.New("no unit after the count")
	}
	n, err = strconv.ParseInt(digits, 10, 64)
	switch {
	case err != nil:
		return 0, "", fmt.Errorf("count %s: %w", digits, err)
	case n == 0:
		return 0, "", errors.New("zero length")
	case digits[0] == '0':
		return 0, "", fmt.Errorf("count %s has a leading zero", digits)
	}
	return n, unit, nil
}

// CheckRollupInterval reports whether an interval of interval seconds fits
// row span span as OpenTSDB requires, and returns the number of intervals
// in the span as OpenTSDB counts them (NominalSeconds / interval, rounded
// down). It returns an error wrapping [ErrInvalidRollup] unless
//
//   - the interval is shorter than the span's nominal length and the span
//     holds MinRollupIntervals to MaxRollupIntervals of them (OpenTSDB's
//     RollupInterval checks), and
//   - every index the span's longest row can hold (up to (MaxSeconds - 1)
//     / interval) is below RollupIndexLimit and below the count: checks
//     OpenTSDB does not make at configuration time, but without them its
//     reader fails on indexes from 3840 on (10m in 1n rows from day 27 of
//     a month on), and its writer refuses an index at or past the count
//     (1n in 1y rows from late December on, 7000s in 1d rows in the
//     day's last 2400 s).
func CheckRollupInterval(span RowSpan, interval int64) (intervals int, err error) {
	nominal := span.NominalSeconds()
	switch {
	case interval <= 0:
		return 0, fmt.Errorf("%w: interval of %d s in row span %s, want a positive interval", ErrInvalidRollup, interval, span)
	case interval >= nominal:
		return 0, fmt.Errorf("%w: interval of %d s in row span %s: not shorter than the span's %d s", ErrInvalidRollup, interval, span, nominal)
	}
	count := nominal / interval
	if count < MinRollupIntervals || count > MaxRollupIntervals {
		return 0, fmt.Errorf("%w: interval of %d s in row span %s: %d intervals in the span, want %d..%d",
			ErrInvalidRollup, interval, span, count, MinRollupIntervals, MaxRollupIntervals)
	}
	last := (span.MaxSeconds() - 1) / interval
	if last >= RollupIndexLimit {
		return 0, fmt.Errorf("%w: interval of %d s in row span %s: indexes up to %d, want below %d (OpenTSDB reads 0xF_ offsets as milliseconds)",
			ErrInvalidRollup, interval, span, last, RollupIndexLimit)
	}
	if last >= count {
		return 0, fmt.Errorf("%w: interval of %d s in row span %s: indexes up to %d, want below the %d intervals OpenTSDB counts in the span (its writer refuses the rest)",
			ErrInvalidRollup, interval, span, last, count)
	}
	return int(count), nil
}

// RollupIndex returns the index of the interval that holds second ts in
// the row whose base time is base: floor((ts - base) / interval). It
// returns an error wrapping [ErrInvalidRollup] when interval is not
// positive, ts is before base, or the index reaches RollupIndexLimit.
func RollupIndex(ts, base uint32, interval int64) (int, error) {
	switch {
	case interval <= 0:
		return 0, fmt.Errorf("%w: interval of %d s, want a positive interval", ErrInvalidRollup, interval)
	case ts < base:
		return 0, fmt.Errorf("%w: second %d is before its row's base time %d", ErrInvalidRollup, ts, base)
	}
	index := int64(ts-base) / interval
	if index >= RollupIndexLimit {
		return 0, fmt.Errorf("%w: second %d is interval %d of %d s past base time %d, want below %d",
			ErrInvalidRollup, ts, index, interval, base, RollupIndexLimit)
	}
	return int(index), nil
}

// checkRollupCell checks what a rollup qualifier is made of.
func checkRollupCell(aggID byte, index int) error {
	switch {
	case aggID > MaxRollupAggID:
		return fmt.Errorf("%w: aggregation id %d, want 0..%d", ErrInvalidRollup, aggID, MaxRollupAggID)
	case index < 0 || index >= RollupIndexLimit:
		return fmt.Errorf("%w: index %d, want 0..%d", ErrInvalidRollup, index, RollupIndexLimit-1)
	}
	return nil
}

// AppendRollupQualifier appends the 3-byte qualifier of a rollup cell to
// dst: aggID, then u16 BE index << 4 | flags (the flags of the value, see
// [AppendValue]; bits above the low four are dropped). It returns dst
// unchanged and an error wrapping [ErrInvalidRollup] for an aggID above
// MaxRollupAggID or an index outside 0..RollupIndexLimit-1. It does not
// allocate when dst has room for 3 more bytes.
func AppendRollupQualifier(dst []byte, aggID byte, index int, flags byte) ([]byte, error) {
	if err := checkRollupCell(aggID, index); err != nil {
		return dst, err
	}
	at := len(dst)
	dst = append(dst, 0, 0, 0)
	putRollupQualifier(dst[at:], aggID, index, flags)
	return dst, nil
}

// putRollupQualifier writes a checked qualifier into q[:3].
func putRollupQualifier(q []byte, aggID byte, index int, flags byte) {
	q[0] = aggID
	binary.BigEndian.PutUint16(q[1:], uint16(index)<<4|uint16(flags&FlagsMask))
}

// ParseRollupQualifier decodes a rollup cell's qualifier: the aggregation
// id (masked with RollupAggIDMask, as OpenTSDB reads it), the interval
// index (0..4095) and the value's flags. ok is false when q is not
// RollupQualifierBytes long. An index of RollupIndexLimit or more is
// returned as stored: promhbase never writes one, and OpenTSDB writes one
// only under an interval that CheckRollupInterval refuses.
func ParseRollupQualifier(q []byte) (aggID byte, index int, flags byte, ok bool) {
	if len(q) != RollupQualifierBytes {
		return 0, 0, 0, false
	}
	u := binary.BigEndian.Uint16(q[1:])
	return q[0] & RollupAggIDMask, int(u >> 4), byte(u) & FlagsMask, true
}

// RollupCellBytes is the most bytes AppendRollupCell appends: a 3-byte
// qualifier and an 8-byte value.
const RollupCellBytes = RollupQualifierBytes + 8

// AppendRollupCell appends the cell of aggregate v, of aggregation aggID
// at interval index index of its row, to dst: the qualifier (see
// AppendRollupQualifier), then the value in its shortest exact form (see
// AppendValue). It returns the qualifier and the value, each
// capacity-clipped within dst's new bytes, or, for an aggID or index
// AppendRollupQualifier refuses, an error wrapping [ErrInvalidRollup] and
// nothing appended. It does not allocate when dst has RollupCellBytes of
// room.
func AppendRollupCell(dst []byte, aggID byte, index int, v float64) (qual, val []byte, err error) {
	if err := checkRollupCell(aggID, index); err != nil {
		return nil, nil, err
	}
	at := len(dst)
	dst = append(dst, 0, 0, 0)
	dst, flags := AppendValue(dst, v)
	q := at + RollupQualifierBytes
	putRollupQualifier(dst[at:q], aggID, index, flags)
	return dst[at:q:q], dst[q:len(dst):len(dst)], nil
}
