package mapping

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func TestRowBuilder(t *testing.T) {
	l := DefaultLayout()
	for _, tc := range []struct {
		name string
		tMs  int64
		v    float64
		base int64
		q    []byte // 1111 ‖ offset ms (22 bits) ‖ 00 ‖ flags (8: float, low 3: length-1)
		val  []byte
	}{
		{"hour start, integer", 1_700_002_800_000, 1, 1_700_002_800, []byte{0xF0, 0x00, 0x00, 0x00}, []byte{0x01}},
		{"last ms of the hour, float", 1_700_006_399_999, 0.5, 1_700_002_800, []byte{0xFD, 0xBB, 0x9F, 0xCB}, []byte{0x3F, 0x00, 0x00, 0x00}},
		{"epoch", 0, -2, 0, []byte{0xF0, 0x00, 0x00, 0x00}, []byte{0xFE}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if b := HourBase(tc.tMs); b != tc.base {
				t.Fatalf("HourBase = %d, want %d", b, tc.base)
			}
			dst := make([]byte, 2, 2+SampleCellBytes)
			q, v := AppendSampleCell(dst, tc.base, tc.tMs, tc.v)
			if !bytes.Equal(q, tc.q) || !bytes.Equal(v, tc.val) {
				t.Fatalf("cell %X %X, want %X %X", q, v, tc.q, tc.val)
			}
			if cap(q) != 4 || &q[0] != &dst[:3][2] {
				t.Error("qualifier not in dst's new bytes, capacity clipped")
			}
			pts, err := AppendPoints(nil, uint32(tc.base), q, v)
			if err != nil || len(pts) != 1 || pts[0].T != tc.tMs || pts[0].V != tc.v {
				t.Errorf("decoded %v %v", pts, err)
			}
		})
	}
	key := l.AppendRowKey(nil, []byte{0, 0, 7}, 1_700_002_800, []byte{0, 0, 1, 0, 0, 2})
	if base, ok := l.BaseTimeOf(key); !ok || base != 1_700_002_800 {
		t.Errorf("BaseTimeOf = %d %v", base, ok)
	}
	if m := l.MetricOf(key); !bytes.Equal(m, []byte{0, 0, 7}) {
		t.Errorf("MetricOf = %X", m)
	}
	if n := l.RowKeyBytes(3, 6); n != len(key) {
		t.Errorf("RowKeyBytes = %d, key has %d", n, len(key))
	}
	if _, ok := l.BaseTimeOf(key[:5]); ok {
		t.Error("BaseTimeOf of a short key")
	}
	q, v := AppendHistogramCell(nil, 3600, 3600_250, []byte{HistogramCodecPrometheus})
	if off, ok := ParseHistogramQualifier(q); !ok || off != 250 || len(q) != HistogramQualifierBytes || !bytes.Equal(v, []byte{HistogramCodecPrometheus}) {
		t.Errorf("histogram cell %X %X", q, v)
	}
}

// TestAppendEncodedCell: the cells of OpenTSDB's put, against the bytes
// a TSD 2.4.1 writes (../shared/notes/opentsdb-format.md §1.5's vectors).
func TestAppendEncodedCell(t *testing.T) {
	const base = 1292148000 // the hour of 1292148123
	for _, tc := range []struct {
		name      string
		s         EncodedSample
		qual, val string
	}{
		// offset 123 s << 4 | flags 0x0 (1-byte integer)
		{"seconds int8", EncodedSample{T: 1292148123000, Seconds: true, Flags: FlagsInt8, Bits: 42}, "07b0", "2a"},
		// offset 123 s, flags 0x7 (8-byte integer): -1 on 8 bytes
		{"seconds int64", EncodedSample{T: 1292148123000, Seconds: true, Flags: FlagsInt64, Bits: ^uint64(0)}, "07b7", "ffffffffffffffff"},
		// flags 0xB (4-byte float): 0.5
		{"seconds float32", EncodedSample{T: 1292148123000, Seconds: true, Flags: FlagsFloat32, Bits: 0x3F000000}, "07bb", "3f000000"},
		// offset 3599 s (the row's last second), flags 0xF: 0.1
		{"last second float64", EncodedSample{T: 1292151599000, Seconds: true, Flags: FlagsFloat64, Bits: 0x3FB999999999999A}, "e0ff", "3fb999999999999a"},
		// 0xF marker, offset 123456 ms << 6, flags 0xF
		{"ms float64", EncodedSample{T: 1292148123456, Flags: FlagsFloat64, Bits: 0x3FB999999999999A}, "f078900f", "3fb999999999999a"},
		// ms on the row's first instant: still a 4-byte qualifier
		{"ms on the second int8", EncodedSample{T: 1292148000000, Flags: FlagsInt8, Bits: 1}, "f0000000", "01"},
		// 2-byte integer 0x1234
		{"ms int16", EncodedSample{T: 1292151599999, Flags: FlagsInt16, Bits: 0x1234}, "fdbb9fc1", "1234"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, v := AppendEncodedCell(make([]byte, 0, SampleCellBytes), base, tc.s)
			if got := hex.EncodeToString(q); got != tc.qual {
				t.Errorf("qualifier %s, want %s", got, tc.qual)
			}
			if got := hex.EncodeToString(v); got != tc.val {
				t.Errorf("value %s, want %s", got, tc.val)
			}
			off, flags, n, err := ParseQualifier(q)
			if err != nil || n != len(q) || flags != tc.s.Flags || int64(off) != tc.s.T-base*1000 {
				t.Errorf("ParseQualifier = %d, %#x, %d, %v", off, flags, n, err)
			}
		})
	}
}
