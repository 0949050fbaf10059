package mapping

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// utcSecond parses an RFC 3339 time into Unix seconds.
func utcSecond(t testing.TB, s string) uint32 {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("bad time %q: %v", s, err)
	}
	return uint32(tm.Unix())
}

// mustRowSpan parses a row span the test knows to be valid.
func mustRowSpan(t testing.TB, s string) RowSpan {
	t.Helper()
	span, err := ParseRowSpan(s)
	if err != nil {
		t.Fatal(err)
	}
	return span
}

// TestRollupGolden pins rollup vectors of OpenTSDB 2.4's format (its
// src/rollup/RollupUtils.java and user_guide/rollups; docs/storage-format.md):
// OpenTSDB 2.4's rollup rows of metric 000001 with tags 000001=000002 and
// 000003=000004, unsalted, under aggregation ids sum 0 and count 1. A
// failure means promhbase no longer writes or reads what a TSD does.
func TestRollupGolden(t *testing.T) {
	metric := unhex(t, "000001")
	tags := unhex(t, "000001000002 000003000004")
	for _, c := range []struct {
		name     string
		span     string  // the rollup table's rowSpan
		interval string  // the rollup table's interval
		at       string  // the interval's start, UTC
		agg      byte    // aggregation id: sum 0, count 1
		v        float64 // the aggregate
		flags    byte    // the value's flags as the vector stores it
		key      string  // row key: metric ‖ base time ‖ tagk tagv ‖ tagk tagv
		qual     string  // qualifier: agg id ‖ u16 BE index << 4 | flags
		val      string  // value
		shortest bool    // val is AppendValue's form of v (else OpenTSDB's wider one)
	}{
		// key: 000001 metric | 50E22700 2013-01-01T00Z, the day | tag pairs
		// qual: 00 sum | 005 index 5, 05:00 in 1h intervals | 0 int of 1 byte
		{"1h/1d sum", "1d", "1h", "2013-01-01T05:00:00Z", 0, 42, FlagsInt8,
			"000001 50E22700 000001000002000003000004", "00 0050", "2A", true},
		// qual: 01 count | 005 index 5 | 0 int of 1 byte
		{"1h/1d count", "1d", "1h", "2013-01-01T05:00:00Z", 1, 3, FlagsInt8,
			"000001 50E22700 000001000002000003000004", "01 0050", "03", true},
		// qual: 00 sum | 006 index 6 | F float of 8 bytes (promhbase
		// writes 1.5 as a float of 4 bytes, flags B: 00006B / 3FC00000)
		{"1h/1d sum f64", "1d", "1h", "2013-01-01T06:00:00Z", 0, 1.5, FlagsFloat64,
			"000001 50E22700 000001000002000003000004", "00 006F", "3FF8000000000000", false},
		// qual: 01 count | 006 index 6 | 1 int of 2 bytes
		{"1h/1d count 2 bytes", "1d", "1h", "2013-01-01T06:00:00Z", 1, 300, FlagsInt16,
			"000001 50E22700 000001000002000003000004", "01 0061", "012C", true},
		// key: 50E37880 2013-01-02T00Z, the next day's row
		// qual: 00 sum | 002 index 2, 02:00 | 0 int of 1 byte
		{"1h/1d next day", "1d", "1h", "2013-01-02T02:00:00Z", 0, 42, FlagsInt8,
			"000001 50E37880 000001000002000003000004", "00 0020", "2A", true},
		// key: 50E22700 2013-01-01T00Z, the month
		// qual: 00 sum | 01A index 26 = 24 h + 2 h | 0 int of 1 byte
		{"1h/1n", "1n", "1h", "2013-01-02T02:00:00Z", 0, 42, FlagsInt8,
			"000001 50E22700 000001000002000003000004", "00 01A0", "2A", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			span := mustRowSpan(t, c.span)
			interval, err := ParseRollupInterval(c.interval)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := CheckRollupInterval(span, interval); err != nil {
				t.Fatal(err)
			}
			ts := utcSecond(t, c.at)
			base := span.BaseTime(ts)
			if key := DefaultLayout().AppendRowKey(nil, metric, base, tags); !bytes.Equal(key, unhex(t, c.key)) {
				t.Errorf("row key %X, want %s", key, c.key)
			}
			index, err := RollupIndex(ts, base, interval)
			if err != nil {
				t.Fatal(err)
			}
			wantQual, wantVal := unhex(t, c.qual), unhex(t, c.val)
			q, err := AppendRollupQualifier(nil, c.agg, index, c.flags)
			if err != nil || !bytes.Equal(q, wantQual) {
				t.Errorf("AppendRollupQualifier = %X, %v, want %s", q, err, c.qual)
			}
			agg, gotIndex, flags, ok := ParseRollupQualifier(wantQual)
			if !ok || agg != c.agg || gotIndex != index || flags != c.flags {
				t.Errorf("ParseRollupQualifier(%s) = %d %d %#x %v, want %d %d %#x", c.qual, agg, gotIndex, flags, ok, c.agg, index, c.flags)
			}
			if v, err := DecodeValue(flags, wantVal); err != nil || v != c.v {
				t.Errorf("DecodeValue(%#x, %s) = %v, %v, want %v", flags, c.val, v, err, c.v)
			}
			cq, cv, err := AppendRollupCell(nil, c.agg, index, c.v)
			if err != nil {
				t.Fatal(err)
			}
			if c.shortest {
				if !bytes.Equal(cq, wantQual) || !bytes.Equal(cv, wantVal) {
					t.Errorf("AppendRollupCell = %X / %X, want %s / %s", cq, cv, c.qual, c.val)
				}
				return
			}
			// promhbase's shorter form differs only in the value's flags
			// and bytes, and reads back as the same aggregate.
			if !bytes.Equal(cq[:2], wantQual[:2]) || cq[2]&0xF0 != wantQual[2]&0xF0 || len(cv) >= len(wantVal) {
				t.Errorf("AppendRollupCell = %X / %X, want the cell of %s / %s with a shorter value", cq, cv, c.qual, c.val)
			}
			if v, err := DecodeValue(cq[2], cv); err != nil || v != c.v {
				t.Errorf("AppendRollupCell's %X / %X decodes to %v, %v, want %v", cq, cv, v, err, c.v)
			}
		})
	}
	// The f64 vector's value as promhbase writes it.
	if q, v, _ := AppendRollupCell(nil, 0, 6, 1.5); !bytes.Equal(q, unhex(t, "00006B")) || !bytes.Equal(v, unhex(t, "3FC00000")) {
		t.Errorf("AppendRollupCell(sum, 6, 1.5) = %X / %X, want 00006B / 3FC00000", q, v)
	}
}

func TestParseRowSpan(t *testing.T) {
	for _, c := range []struct {
		in               string
		nominal, longest int64  // NominalSeconds, MaxSeconds
		errSub           string // "" = valid
	}{
		{"1h", 3600, 3600, ""},
		{"2h", 7200, 7200, ""},
		{"6h", 21600, 21600, ""},
		{"24h", 86400, 86400, ""},
		{"596522h", 596522 * 3600, 596522 * 3600, ""},
		{"1d", 86400, 86400, ""},
		{"1n", 32 * 86400, 31 * 86400, ""},
		{"1y", 366 * 86400, 366 * 86400, ""},
		{"3h", 0, 0, "3 hours, want 1 or an even number"},
		{"596524h", 0, 0, "want at most 596523"},
		{"2d", 0, 0, "a count of 2, only h"},
		{"12n", 0, 0, "a count of 12"},
		{"1m", 0, 0, `unit "m", want h, d, n or y`},
		{"1s", 0, 0, `unit "s"`},
		{"1w", 0, 0, `unit "w"`},
		{"1ms", 0, 0, "milliseconds are not supported"},
		{"1H", 0, 0, `unit "H"`},
		{"0h", 0, 0, "zero length"},
		{"02h", 0, 0, "leading zero"},
		{"-2h", 0, 0, "want a count and a unit"},
		{"h", 0, 0, "want a count and a unit"},
		{"1", 0, 0, "no unit"},
		{"", 0, 0, "want a count and a unit"},
		{"1.5h", 0, 0, `unit ".5h"`},
		{" 1h", 0, 0, "want a count and a unit"},
		{"1h ", 0, 0, `unit "h "`},
		{"99999999999999999999h", 0, 0, "value out of range"},
	} {
		t.Run(c.in, func(t *testing.T) {
			span, err := ParseRowSpan(c.in)
			if wantRollupErr(t, err, c.errSub) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if span.String() != c.in || span.NominalSeconds() != c.nominal || span.MaxSeconds() != c.longest {
				t.Errorf("%s: nominal %d, longest %d, want %s %d %d", span, span.NominalSeconds(), span.MaxSeconds(), c.in, c.nominal, c.longest)
			}
		})
	}
	if z := (RowSpan{}); z.String() != "1h" || z.NominalSeconds() != 3600 || z.BaseTime(7199) != 3600 || z.NextBase(7199) != 7200 {
		t.Errorf("zero RowSpan is not 1h: %s %d %d %d", z, z.NominalSeconds(), z.BaseTime(7199), z.NextBase(7199))
	}
}

func TestRowSpanBaseTime(t *testing.T) {
	for _, c := range []struct {
		span           string
		at, base, next string // a second, its row's base time, the next row's
	}{
		{"1h", "2013-01-01T05:30:00Z", "2013-01-01T05:00:00Z", "2013-01-01T06:00:00Z"},
		{"2h", "2013-01-01T03:10:00Z", "2013-01-01T02:00:00Z", "2013-01-01T04:00:00Z"},
		{"6h", "2013-01-01T05:59:59Z", "2013-01-01T00:00:00Z", "2013-01-01T06:00:00Z"},
		{"6h", "2013-01-01T06:00:00Z", "2013-01-01T06:00:00Z", "2013-01-01T12:00:00Z"},
		// 10 h does not divide a day: rows are aligned to the epoch.
		{"10h", "2013-01-01T05:00:00Z", "2012-12-31T20:00:00Z", "2013-01-01T06:00:00Z"},
		{"24h", "2013-01-02T02:00:00Z", "2013-01-02T00:00:00Z", "2013-01-03T00:00:00Z"},
		{"1d", "2013-01-02T02:00:00Z", "2013-01-02T00:00:00Z", "2013-01-03T00:00:00Z"},
		{"1d", "1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "1970-01-02T00:00:00Z"},
		{"1n", "2013-01-02T02:00:00Z", "2013-01-01T00:00:00Z", "2013-02-01T00:00:00Z"},
		{"1n", "2012-02-29T23:59:59Z", "2012-02-01T00:00:00Z", "2012-03-01T00:00:00Z"},
		{"1n", "2013-12-31T23:59:59Z", "2013-12-01T00:00:00Z", "2014-01-01T00:00:00Z"},
		{"1n", "2013-03-01T00:00:00Z", "2013-03-01T00:00:00Z", "2013-04-01T00:00:00Z"},
		{"1y", "2012-12-31T23:59:59Z", "2012-01-01T00:00:00Z", "2013-01-01T00:00:00Z"},
		{"1y", "1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "1971-01-01T00:00:00Z"},
		// The last second a row key holds; the next year starts beyond
		// 32 bits.
		{"1y", "2106-02-07T06:28:15Z", "2106-01-01T00:00:00Z", "2107-01-01T00:00:00Z"},
		{"1n", "2106-02-07T06:28:15Z", "2106-02-01T00:00:00Z", "2106-03-01T00:00:00Z"},
	} {
		t.Run(c.span+" "+c.at, func(t *testing.T) {
			span := mustRowSpan(t, c.span)
			ts := utcSecond(t, c.at)
			if base := span.BaseTime(ts); base != utcSecond(t, c.base) {
				t.Errorf("BaseTime = %s, want %s", time.Unix(int64(base), 0).UTC().Format(time.RFC3339), c.base)
			}
			next, err := time.Parse(time.RFC3339, c.next)
			if err != nil {
				t.Fatal(err)
			}
			if got := span.NextBase(ts); got != next.Unix() {
				t.Errorf("NextBase = %s, want %s", time.Unix(got, 0).UTC().Format(time.RFC3339), c.next)
			}
		})
	}
}

// TestRowSpanRows checks at random seconds that every span's rows tile
// time: a second lies in [base, next), base is its own row's base, and no
// row is longer than MaxSeconds.
func TestRowSpanRows(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 5))
	for _, s := range []string{"1h", "2h", "6h", "10h", "1d", "1n", "1y"} {
		span := mustRowSpan(t, s)
		for range 2000 {
			ts := r.Uint32()
			base, next := span.BaseTime(ts), span.NextBase(ts)
			if base > ts || int64(ts) >= next || span.BaseTime(base) != base || next-int64(base) > span.MaxSeconds() {
				t.Fatalf("%s at %d: row [%d, %d), longest %d", s, ts, base, next, span.MaxSeconds())
			}
			if next <= math.MaxUint32 && span.BaseTime(uint32(next)) != uint32(next) {
				t.Fatalf("%s at %d: next row's base %d is not a base", s, ts, next)
			}
		}
	}
}

func TestParseRollupInterval(t *testing.T) {
	for _, c := range []struct {
		in     string
		want   int64  // seconds
		errSub string // "" = valid
	}{
		{"1s", 1, ""},
		{"90s", 90, ""},
		{"1m", 60, ""},
		{"5m", 300, ""},
		{"1h", 3600, ""},
		{"1d", 86400, ""},
		{"1w", 7 * 86400, ""},
		{"1n", 30 * 86400, ""},
		{"1y", 365 * 86400, ""},
		{"2147483647s", math.MaxInt32, ""},
		{"2147483648s", 0, "longer than 2147483647 s"},
		{"69y", 0, "longer than"},
		{"1ms", 0, "milliseconds are not supported"},
		{"500ms", 0, "milliseconds are not supported"},
		{"0m", 0, "zero length"},
		{"05m", 0, "leading zero"},
		{"-5m", 0, "want a count and a unit"},
		{"5", 0, "no unit"},
		{"m", 0, "want a count and a unit"},
		{"", 0, "want a count and a unit"},
		{"5M", 0, `unit "M"`},
		{"5 m", 0, `unit " m"`},
		{"5mm", 0, `unit "mm"`},
		{"1.5h", 0, `unit ".5h"`},
		{"1x", 0, `unit "x"`},
		{"99999999999999999999s", 0, "value out of range"},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseRollupInterval(c.in)
			if wantRollupErr(t, err, c.errSub) {
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("= %d, %v, want %d", got, err, c.want)
			}
		})
	}
}

// TestCheckRollupInterval pins the intervals-per-span rule (12..7774, as
// OpenTSDB's RollupInterval counts them) and promhbase's index rules.
func TestCheckRollupInterval(t *testing.T) {
	for _, c := range []struct {
		span     string
		interval int64
		want     int    // intervals in the span
		errSub   string // "" = valid
	}{
		{"1h", 60, 60, ""},
		{"1h", 300, 12, ""}, // the fewest
		{"1h", 301, 0, "11 intervals in the span, want 12..7774"},
		{"1h", 1, 3600, ""},
		{"1h", 3600, 0, "not shorter than the span's 3600 s"},
		{"1h", 7200, 0, "not shorter"},
		{"1h", 0, 0, "want a positive interval"},
		{"1h", -60, 0, "want a positive interval"},
		{"2h", 1, 0, "indexes up to 7199, want below 3840"},
		{"4h", 1, 0, "14400 intervals in the span, want 12..7774"},
		// 7774 intervals pass the count (and fail the index rule); 7775
		// do not.
		{"352h", 163, 0, "indexes up to 7774, want below 3840"},
		{"352h", 162, 0, "7822 intervals"},
		{"1y", 4067, 0, "7775 intervals"},
		{"1d", 300, 288, ""},
		{"1d", 3600, 24, ""},
		{"1d", 24, 3600, ""},
		{"1d", 23, 0, "indexes up to 3756, want below the 3756 intervals"},
		{"1d", 22, 0, "indexes up to 3927, want below 3840"},
		{"1d", 7000, 0, "indexes up to 12, want below the 12 intervals"},
		{"1n", 3600, 768, ""}, // 31 days: indexes 0..743
		{"1n", 900, 3072, ""},
		{"1n", 600, 0, "indexes up to 4463, want below 3840"},
		{"1n", 86400, 32, ""},
		{"1n", 60 * 3600, 0, "indexes up to 12, want below the 12 intervals"},
		{"1y", 86400, 366, ""},
		{"1y", 7 * 86400, 0, "indexes up to 52, want below the 52"},
		{"1y", 30 * 86400, 0, "indexes up to 12, want below the 12"},
		{"1y", 3600, 0, "8784 intervals"},
	} {
		t.Run(c.span+"/"+time.Duration(c.interval*int64(time.Second)).String(), func(t *testing.T) {
			got, err := CheckRollupInterval(mustRowSpan(t, c.span), c.interval)
			if wantRollupErr(t, err, c.errSub) {
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("= %d, %v, want %d", got, err, c.want)
			}
		})
	}
}

func TestRollupQualifier(t *testing.T) {
	for _, c := range []struct {
		name  string
		agg   byte
		index int
		flags byte
		q     string // "" = refused
	}{
		{"zero", 0, 0, FlagsInt8, "000000"},
		{"largest", MaxRollupAggID, RollupIndexLimit - 1, FlagsFloat64, "7F EFF F"},
		{"index 26 count", 1, 26, FlagsInt16, "01 01A 1"},
		{"flags above 4 bits dropped", 2, 1, 0xF3, "02 001 3"},
		{"agg id 128", 128, 0, 0, ""},
		{"index -1", 0, -1, 0, ""},
		{"index 3840, read as ms", 0, RollupIndexLimit, 0, ""},
		{"index 4096, wraps", 0, 4096, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := []byte{0xAA}
			got, err := AppendRollupQualifier(dst, c.agg, c.index, c.flags)
			if c.q == "" {
				if !errors.Is(err, ErrInvalidRollup) || !bytes.Equal(got, dst) {
					t.Fatalf("= %X, %v, want dst unchanged and ErrInvalidRollup", got, err)
				}
				if _, _, err := AppendRollupCell(dst, c.agg, c.index, 1); !errors.Is(err, ErrInvalidRollup) {
					t.Fatalf("AppendRollupCell err = %v, want ErrInvalidRollup", err)
				}
				return
			}
			if want := append([]byte{0xAA}, unhex(t, c.q)...); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("= %X, %v, want %X", got, err, want)
			}
			agg, index, flags, ok := ParseRollupQualifier(got[1:])
			if !ok || agg != c.agg || index != c.index || flags != c.flags&FlagsMask {
				t.Errorf("parsed %d %d %#x %v", agg, index, flags, ok)
			}
		})
	}
	for _, c := range []struct {
		q                 string
		agg, index, flags int // -1 = not ok
	}{
		{"FF 005 0", 0x7F, 5, 0},             // the agg id's high bit is masked
		{"00 F00 0", 0, RollupIndexLimit, 0}, // as stored; OpenTSDB cannot read it
		{"03 FFF F", 3, 4095, 0xF},
		{"-", -1, -1, -1},
		{"00", -1, -1, -1},
		{"00 0050 00", -1, -1, -1},
		{"73756D3A 0050", -1, -1, -1}, // legacy "sum:" ‖ u16
	} {
		agg, index, flags, ok := ParseRollupQualifier(unhex(t, c.q))
		if c.agg < 0 {
			if ok {
				t.Errorf("ParseRollupQualifier(%s) ok", c.q)
			}
			continue
		}
		if !ok || int(agg) != c.agg || index != c.index || int(flags) != c.flags {
			t.Errorf("ParseRollupQualifier(%s) = %d %d %#x %v, want %d %d %#x", c.q, agg, index, flags, ok, c.agg, c.index, c.flags)
		}
	}
}

func TestRollupIndex(t *testing.T) {
	for _, c := range []struct {
		ts, base uint32
		interval int64
		want     int    // -1 = error
		errSub   string // with the error
	}{
		{1357016400, 1356998400, 3600, 5, ""},
		{1357016399, 1356998400, 3600, 4, ""},
		{1356998400, 1356998400, 60, 0, ""},
		{1356998400 + 3839*600, 1356998400, 600, 3839, ""},
		{1356998400 + 3840*600, 1356998400, 600, -1, "interval 3840 of 600 s"},
		{1356998399, 1356998400, 60, -1, "before its row's base time"},
		{1357016400, 1356998400, 0, -1, "want a positive interval"},
	} {
		got, err := RollupIndex(c.ts, c.base, c.interval)
		if c.want < 0 {
			if !errors.Is(err, ErrInvalidRollup) || !strings.Contains(err.Error(), c.errSub) {
				t.Errorf("RollupIndex(%d, %d, %d) err = %v, want ErrInvalidRollup with %q", c.ts, c.base, c.interval, err, c.errSub)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("RollupIndex(%d, %d, %d) = %d, %v, want %d", c.ts, c.base, c.interval, got, err, c.want)
		}
	}
}

func TestRollupZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	month := mustRowSpan(t, "1n")
	buf := make([]byte, 0, 64)
	q := unhex(t, "0001A0")
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"AppendRollupQualifier", func() { buf, _ = AppendRollupQualifier(buf[:0], 1, 26, FlagsInt16) }},
		{"AppendRollupCell", func() { _, _, _ = AppendRollupCell(buf[:0], 0, 26, 0.1) }},
		{"ParseRollupQualifier", func() { _, _, _, _ = ParseRollupQualifier(q) }},
		{"BaseTime 1n", func() { _ = month.BaseTime(1357092000) }},
		{"NextBase 1n", func() { _ = month.NextBase(1357092000) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, c.f); n != 0 {
				t.Fatalf("%v allocations per run, want 0", n)
			}
		})
	}
}

// FuzzParseRollupQualifier: any bytes parse or not without panicking; a
// parsed qualifier with a readable index encodes back to its bytes (with
// the agg id's high bit cleared).
func FuzzParseRollupQualifier(f *testing.F) {
	for _, s := range []string{"000050", "0001A0", "FF0050", "00F000", "7FEFFF", "", "00", "73756D3A0050"} {
		f.Add(unhex(f, s))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		agg, index, flags, ok := ParseRollupQualifier(q)
		if ok != (len(q) == RollupQualifierBytes) {
			t.Fatalf("ParseRollupQualifier(%X) ok = %v", q, ok)
		}
		if !ok {
			return
		}
		if agg > MaxRollupAggID || index < 0 || index > 0xFFF || flags > FlagsMask {
			t.Fatalf("ParseRollupQualifier(%X) = %d %d %#x", q, agg, index, flags)
		}
		back, err := AppendRollupQualifier(nil, agg, index, flags)
		if (index < RollupIndexLimit) != (err == nil) {
			t.Fatalf("AppendRollupQualifier(%d, %d, %#x) = %X, %v", agg, index, flags, back, err)
		}
		if err == nil && !bytes.Equal(back, []byte{q[0] & RollupAggIDMask, q[1], q[2]}) {
			t.Fatalf("%X encoded back as %X", q, back)
		}
	})
}

// FuzzRollupSpan: any row span and interval strings parse or not without
// panicking; an accepted pair places every second in its row at an index
// the encoders take and below OpenTSDB's count.
func FuzzRollupSpan(f *testing.F) {
	for _, s := range []struct{ span, interval string }{
		{"1h", "1m"}, {"1d", "5m"}, {"1n", "1h"}, {"1y", "1d"}, {"6h", "1s"},
		{"1n", "10m"}, {"3h", "1m"}, {"1ms", "1ms"}, {"", ""}, {"02h", "-5m"},
	} {
		f.Add(s.span, s.interval, uint32(1357092000))
	}
	f.Fuzz(func(t *testing.T, spanText, intervalText string, ts uint32) {
		span, err := ParseRowSpan(spanText)
		if err != nil {
			if !errors.Is(err, ErrInvalidRollup) {
				t.Fatalf("ParseRowSpan(%q) error %v does not wrap ErrInvalidRollup", spanText, err)
			}
			return
		}
		if span.String() != spanText {
			t.Fatalf("ParseRowSpan(%q) gave %s", spanText, span)
		}
		base, next := span.BaseTime(ts), span.NextBase(ts)
		if base > ts || int64(ts) >= next || next-int64(base) > span.MaxSeconds() || span.MaxSeconds() > span.NominalSeconds() {
			t.Fatalf("%s at %d: row [%d, %d)", span, ts, base, next)
		}
		interval, err := ParseRollupInterval(intervalText)
		if err != nil {
			if !errors.Is(err, ErrInvalidRollup) {
				t.Fatalf("ParseRollupInterval(%q) error %v does not wrap ErrInvalidRollup", intervalText, err)
			}
			return
		}
		if interval < 1 || interval > math.MaxInt32 {
			t.Fatalf("ParseRollupInterval(%q) = %d", intervalText, interval)
		}
		count, err := CheckRollupInterval(span, interval)
		if err != nil {
			if !errors.Is(err, ErrInvalidRollup) {
				t.Fatalf("CheckRollupInterval error %v does not wrap ErrInvalidRollup", err)
			}
			return
		}
		index, err := RollupIndex(ts, base, interval)
		if err != nil || index >= count {
			t.Fatalf("%s/%s at %d: index %d of %d, %v", span, intervalText, ts, index, count, err)
		}
		if _, _, err := AppendRollupCell(nil, 0, index, 1); err != nil {
			t.Fatal(err)
		}
	})
}

// wantRollupErr reports whether a case expects an error (errSub is not
// ""), and then fails the test unless err wraps ErrInvalidRollup and its
// message holds errSub.
func wantRollupErr(t *testing.T, err error, errSub string) bool {
	t.Helper()
	if errSub == "" {
		return false
	}
	if !errors.Is(err, ErrInvalidRollup) || !strings.Contains(fmt.Sprint(err), errSub) {
		t.Errorf("err = %v, want ErrInvalidRollup with %q", err, errSub)
	}
	return true
}
