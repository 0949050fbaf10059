package wire

import (
	"bytes"
	"math"
	"testing"

	"github.com/promhbase/promhbase/mapping"
)

// TestAppendSamplesSize: appendSamples writes the bytes appendSample
// writes one at a time, into a buffer it grows when it must, after what
// the buffer holds, given room for exactly them or more.
func TestAppendSamplesSize(t *testing.T) {
	fs := []mapping.Point{{T: 0, V: 0}, {T: -1, V: math.Copysign(0, -1)}, {T: math.MaxInt64, V: math.NaN()},
		{T: math.MinInt64, V: 1}, {T: 1_700_000_000_000, V: math.Inf(-1)}, {T: 127, V: 2}, {T: 128, V: 0}}
	want := encodedSamples(fs)
	for _, room := range []int{0, len(want) - 1, len(want), 2 * len(want)} {
		dst := append(make([]byte, 0, 3+room), "pre"...)
		got := AppendSamples(dst, fs, max(room, len(want)))
		if !bytes.Equal(got, append([]byte("pre"), want...)) {
			t.Errorf("room %d: %x, want pre ‖ %x", room, got, want)
		}
	}
}

// encodedSamples is fs encoded a Sample at a time by appendSample.
func encodedSamples(fs []mapping.Point) []byte {
	var b []byte
	for _, f := range fs {
		b = AppendSample(b, f.T, f.V)
	}
	return b
}

// TestSamplesBound: samplesBound is never below the samples' size, and equals
// it for millisecond timestamps of this century without zero values.
func TestSamplesBound(t *testing.T) {
	cases := []struct {
		name  string
		fs    []mapping.Point
		exact bool
	}{
		{"none", nil, true},
		{"ms timestamps", []mapping.Point{{T: 1_700_000_000_000, V: 1}, {T: 1_700_000_015_000, V: 2}}, true},
		{"zero value and time", []mapping.Point{{T: 0, V: 0}, {T: 5, V: 1}}, false},
		{"negative first", []mapping.Point{{T: -5, V: 1}, {T: 1_700_000_000_000, V: 1}}, false},
		{"all negative", []mapping.Point{{T: math.MinInt64, V: 1}, {T: -1, V: 1}}, true},
		{"growing varint", []mapping.Point{{T: 1, V: 1}, {T: 1 << 40, V: 1}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, n := SamplesBound(tc.fs), len(encodedSamples(tc.fs))
			if b < n || (tc.exact && b != n) {
				t.Fatalf("bound %d, bytes %d (exact: %v)", b, n, tc.exact)
			}
		})
	}
}
