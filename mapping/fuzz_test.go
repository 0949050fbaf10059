package mapping

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"regexp"
	"testing"
)

// Fuzz targets: run each with, for example,
//
//	go test ./mapping -run '^$' -fuzz '^FuzzAppendPoints$' -fuzztime 20s
//
// Without -fuzz, go test runs them over their seed corpus.

// fuzzLayout derives a valid layout from fuzz inputs.
func fuzzLayout(sw, mw, kw, vw uint8) Layout {
	return Layout{
		SaltWidth:   int(sw % (MaxSaltWidth + 1)),
		SaltBuckets: 20,
		MetricWidth: 1 + int(mw%MaxUIDWidth),
		TagKWidth:   1 + int(kw%MaxUIDWidth),
		TagVWidth:   1 + int(vw%MaxUIDWidth),
	}
}

func FuzzParseRowKey(f *testing.F) {
	f.Add(unhex(f, "0000014D049D20000002000003"), uint8(0), uint8(2), uint8(2), uint8(2))
	f.Add(unhex(f, "080000014D049D20000001000001"), uint8(1), uint8(2), uint8(2), uint8(2))
	f.Add(unhex(f, "00000150E227"), uint8(0), uint8(2), uint8(2), uint8(2))
	f.Add([]byte{}, uint8(8), uint8(7), uint8(7), uint8(7))
	f.Fuzz(func(t *testing.T, key []byte, sw, mw, kw, vw uint8) {
		l := fuzzLayout(sw, mw, kw, vw)
		salt, metric, base, tags, err := l.ParseRowKey(key)
		wantOK := len(key) >= l.PrefixLen() && (len(key)-l.PrefixLen())%l.PairLen() == 0
		if wantOK != (err == nil) {
			t.Fatalf("ParseRowKey(%X) with %+v: err %v, want ok=%v", key, l, err, wantOK)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformedRowKey) {
				t.Fatalf("error %v does not wrap ErrMalformedRowKey", err)
			}
			return
		}
		// Rebuilding from the parts, with the parsed salt, gives the key back.
		unsalted := l
		unsalted.SaltWidth = 0
		rebuilt := unsalted.AppendRowKey(bytes.Clone(salt), metric, base, tags)
		if !bytes.Equal(rebuilt, key) {
			t.Fatalf("rebuilt %X from %X", rebuilt, key)
		}
		// The other helpers take whatever the key holds without panicking.
		_ = l.CheckSeries(metric, tags)
		sorted := bytes.Clone(tags)
		l.SortTags(sorted)
		if !bytes.Equal(sortPairsRef(tags, l.PairLen()), sorted) {
			t.Fatalf("SortTags(%X) = %X", tags, sorted)
		}
		if b := l.SaltBucket(metric, tags); b < 0 || b >= l.SaltBuckets {
			t.Fatalf("SaltBucket = %d", b)
		}
	})
}

func FuzzDecodeValue(f *testing.F) {
	for _, s := range []struct {
		flags byte
		b     string
	}{{0x0, "2A"}, {0x1, "8000"}, {0x3, "FFFFFFFF"}, {0x7, "8000000000000000"}, {0xB, "3F000000"},
		{0xF, "7FF0000000000002"}, {0x4, "000000002A"}, {0xB, "000000003F000000"}, {0xF, ""}} {
		f.Add(s.flags, unhex(f, s.b))
	}
	f.Fuzz(func(t *testing.T, flags byte, b []byte) {
		v, err := DecodeValue(flags, b)
		if err != nil {
			if !errors.Is(err, ErrMalformedValue) {
				t.Fatalf("error %v does not wrap ErrMalformedValue", err)
			}
			return
		}
		if len(b) != ValueLen(flags) {
			t.Fatalf("accepted %d bytes for flags %#x", len(b), flags)
		}
		// Whatever was decoded, promhbase's own encoding keeps its bits.
		enc, encFlags := AppendValue(nil, v)
		back, err := DecodeValue(encFlags, enc)
		if err != nil || math.Float64bits(back) != math.Float64bits(v) {
			t.Fatalf("re-encoding %#016x: %X flags %#x gave %#016x, %v", math.Float64bits(v), enc, encFlags, math.Float64bits(back), err)
		}
	})
}

func FuzzAppendValue(f *testing.F) {
	for _, b := range []uint64{0, 1 << 63, 0x7ff0000000000002, 0x3FB999999999999A, 0x43E0000000000000, 0x7FF0000000000000, 1} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		enc, flags := AppendValue(nil, math.Float64frombits(bits))
		v, err := DecodeValue(flags, enc)
		if err != nil || math.Float64bits(v) != bits {
			t.Fatalf("%#016x: %X flags %#x decoded to %#016x, %v", bits, enc, flags, math.Float64bits(v), err)
		}
	})
}

func FuzzAppendPoints(f *testing.F) {
	seeds := []struct{ q, v string }{
		{"07B0", "2A"}, {"07BB", "000000003F000000"}, {"F078900F", "3FB999999999999A"},
		{"0000F00177000021F7A1200B", "0105FF9CC020000001"}, {"07B007C0", "010200"},
		{"050000", "07B02AF078900F3FB999999999999A"}, {"01007B", "7B7D"}, {"", ""},
		{"07B4", "0000002A"}, {"F0", ""}, {"050000", "F078"},
	}
	for _, s := range seeds {
		f.Add(uint32(1292148000), unhex(f, s.q), unhex(f, s.v))
	}
	f.Fuzz(func(t *testing.T, base uint32, q, v []byte) {
		dst := []Point{{T: -1}}
		pts, err := AppendPoints(dst, base, q, v)
		if err != nil {
			if !errors.Is(err, ErrMalformedCell) {
				t.Fatalf("error %v does not wrap ErrMalformedCell", err)
			}
			if len(pts) != 1 {
				t.Fatalf("error with %d points in dst, want dst unchanged", len(pts))
			}
			return
		}
		lo := int64(base) * 1000
		for _, p := range pts[1:] {
			// 22 bits of milliseconds or 12 bits of seconds past the base.
			if p.T < lo || p.T >= lo+1<<22 {
				t.Fatalf("point time %d outside the row of %d", p.T, base)
			}
		}
		if len(q)%2 == 1 && !IsAppendQualifier(q) && len(pts) != 1 {
			t.Fatalf("odd qualifier %X gave points", q)
		}
	})
}

// FuzzCompactedRoundTrip builds a column with AppendCompacted from points
// derived from data and checks that AppendPoints returns them bit for bit.
func FuzzCompactedRoundTrip(f *testing.F) {
	f.Add(uint32(1292148000), []byte{})
	f.Add(uint32(0), unhex(f, "0000 3FB999999999999A 0001 7FF0000000000002 FFFF 8000000000000000"))
	f.Add(uint32(4294965600), unhex(f, "0000 0000000000000001 0000 3FF0000000000000"))
	f.Fuzz(func(t *testing.T, base uint32, data []byte) {
		// Each 10 bytes: a 2-byte step in ms (plus 1) and float64 bits.
		var pts []Point
		off := -1
		for ; len(data) >= 10; data = data[10:] {
			off += 1 + int(binary.BigEndian.Uint16(data))
			if off >= MaxOffsetMs {
				break
			}
			pts = append(pts, Point{
				T: int64(base)*1000 + int64(off),
				V: math.Float64frombits(binary.BigEndian.Uint64(data[2:])),
			})
		}
		q, v := AppendCompacted(nil, nil, base, pts)
		if len(pts) == 0 {
			if len(q) != 0 || len(v) != 0 {
				t.Fatalf("no points gave %X / %X", q, v)
			}
			return
		}
		got, err := AppendPoints(nil, base, q, v)
		if err != nil {
			t.Fatalf("AppendPoints(%X, %X): %v", q, v, err)
		}
		requirePoints(t, got, pts)
	})
}

func FuzzRegexQuoted(f *testing.F) {
	f.Add([]byte{0x5C, 0x45, 0x45}, []byte{0x5C, 0x45})
	f.Add([]byte{0x0A, 0x85, 0x00, 0xFF}, []byte{0x0A, 0x85, 0x00, 0xFE})
	f.Add([]byte("\\Q.*\\E"), []byte("\\Q.*\\E"))
	f.Add([]byte{}, []byte{0x0A})
	f.Fuzz(func(t *testing.T, b, other []byte) {
		if len(b) > 256 || len(other) > 256 {
			return
		}
		re := exactPattern(t, b)
		if !re.MatchString(Latin1String(b)) {
			t.Fatalf("%s does not match %X", re, b)
		}
		if got := re.MatchString(Latin1String(other)); got != bytes.Equal(b, other) {
			t.Fatalf("%s on %X = %v", re, other, got)
		}
		// As a fragment inside a larger pattern it still matches exactly
		// its bytes.
		inner := regexp.MustCompile(`(?s)^.` + string(AppendRegexQuoted(nil, b)) + `.\z`)
		wrapped := append(append([]byte{0x0A}, b...), 0x85)
		if !inner.MatchString(Latin1String(wrapped)) {
			t.Fatalf("%s does not match %X", inner, wrapped)
		}
	})
}
