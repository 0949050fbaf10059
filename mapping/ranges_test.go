package mapping

import (
	"fmt"
	"math"
	"testing"
)

func TestMetricRanges(t *testing.T) {
	salted := DefaultLayout()
	salted.SaltWidth, salted.SaltBuckets = 1, 3
	m := []byte{0, 0, 1}
	for _, tc := range []struct {
		name     string
		layout   Layout
		from, to int64
		want     string
	}{
		{"one hour", DefaultLayout(), 1292148123, 1292148123, "[000001 4D049D20, 000001 4D04AB30)"},
		{"end on a boundary is inclusive", DefaultLayout(), 1292148000, 1292151600, "[000001 4D049D20, 000001 4D04B940)"},
		{"negative start", DefaultLayout(), -5, 10, "[000001 00000000, 000001 00000E10)"},
		{"end past 32 bits", DefaultLayout(), math.MaxUint32 - 10, math.MaxUint32 + 10, "[000001 FFFFF960, 000002 )"},
		{"empty", DefaultLayout(), 10, 5, ""},
		{"salted", salted, 0, 0, "[00 000001 00000000, 00 000001 00000E10)[01 000001 00000000, 01 000001 00000E10)[02 000001 00000000, 02 000001 00000E10)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			for _, r := range tc.layout.MetricRanges(m, tc.from, tc.to) {
				w := tc.layout.SaltWidth
				got += fmt.Sprintf("[%s, %s)", split(r.Start, w), split(r.Stop, w))
			}
			if got != tc.want {
				t.Errorf("MetricRanges = %s\nwant %s", got, tc.want)
			}
		})
	}
}

// split renders a key as [salt] metric rest, in hex.
func split(k []byte, salt int) string {
	s := ""
	if salt > 0 {
		s = fmt.Sprintf("%X ", k[:salt])
		k = k[salt:]
	}
	if len(k) < 3 {
		return s + fmt.Sprintf("%X", k)
	}
	return s + fmt.Sprintf("%X %X", k[:3], k[3:])
}
