package mapping

import (
	"bytes"
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
