package mapping

import (
	"fmt"
	"math"
	"strings"
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

// TestHourCuts: a metric's range of whole hours is cut at hours' base
// times into runs of about equal hours; a range of fewer hours than
// parts, or not of MetricRanges' form, is not cut.
func TestHourCuts(t *testing.T) {
	salted := DefaultLayout()
	salted.SaltWidth, salted.SaltBuckets = 1, 3
	m := []byte{0, 0, 1}
	const day = 1292112000 // 2010-12-12T00:00Z
	for _, tc := range []struct {
		name   string
		layout Layout
		r      KeyRange
		n      int
		want   string
	}{
		{"a day in two", DefaultLayout(), DefaultLayout().MetricRanges(m, day, day+23*3600+59)[0], 2, "000001 4D04B940"},
		{"a day in three", DefaultLayout(), DefaultLayout().MetricRanges(m, day, day+23*3600)[0], 3, "000001 4D048100 000001 4D04F180"},
		{"25 hours in four", DefaultLayout(), DefaultLayout().MetricRanges(m, day, day+24*3600)[0], 4, "000001 4D0464E0 000001 4D04B940 000001 4D050DA0"},
		{"salted", salted, salted.MetricRanges(m, day, day+3*3600)[2], 2, "02 000001 4D042CA0"},
		{"fewer hours than parts", DefaultLayout(), DefaultLayout().MetricRanges(m, day, day+3600)[0], 3, ""},
		{"one part", DefaultLayout(), DefaultLayout().MetricRanges(m, day, day+5*3600)[0], 1, ""},
		{"past 32 bits", DefaultLayout(), DefaultLayout().MetricRanges(m, math.MaxUint32-10*3600, math.MaxUint32+10)[0], 2, ""},
		{"not on hours", DefaultLayout(), KeyRange{Start: []byte{0, 0, 1, 0, 0, 0, 5}, Stop: []byte{0, 0, 1, 0, 1, 0, 0}}, 2, ""},
		{"two metrics", DefaultLayout(), KeyRange{Start: []byte{0, 0, 1, 0, 0, 0, 0}, Stop: []byte{0, 0, 2, 0, 0, 0x38, 0x40}}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, k := range tc.layout.HourCuts(tc.r, tc.n) {
				got = append(got, split(k, tc.layout.SaltWidth))
			}
			if s := strings.Join(got, " "); s != tc.want {
				t.Errorf("HourCuts = %s\nwant %s", s, tc.want)
			}
		})
	}
}
