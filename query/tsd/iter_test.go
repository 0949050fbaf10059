package tsd

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// ints is a series of integer points, (seconds, value) pairs.
func ints(tv ...int64) []Point {
	var out []Point
	for i := 0; i+1 < len(tv); i += 2 {
		out = append(out, Point{T: tv[i] * 1000, I: tv[i+1]})
	}
	return out
}

// render writes points as a TSD's dps, {sec:value,...}.
func render(pts []Point) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(',')
		}
		if p.Float {
			f := strconv.FormatFloat(p.F, 'g', -1, 64)
			if !strings.ContainsAny(f, ".eN") {
				f += ".0" // a double, as a TSD writes it
			}
			fmt.Fprintf(&b, "%d:%s", p.T/1000, f)
		} else {
			fmt.Fprintf(&b, "%d:%d", p.T/1000, p.I)
		}
	}
	return b.String() + "}"
}

// TestAggregation holds the aggregation to the answers a TSD 2.4.1 gave
// (../shared/notes/opentsdb-api.md §4.6): integer interpolation that
// truncates, no extrapolation, and with rate the previous rate held and
// a series' first rate taken against (0, 0).
func TestAggregation(t *testing.T) {
	a, b := ints(10, 10, 30, 20), ints(20, 5, 40, 6)
	ra, rb := ints(1000, 100, 1010, 200, 1020, 400), ints(1005, 1000, 1015, 1100, 1025, 1200)
	counter := ints(10, 100, 20, 200, 30, 50)
	for _, tc := range []struct {
		name  string
		agg   string
		views [][]Point
		rate  *RateOptions
		want  string
	}{
		{"sum lerps in integers", "sum", [][]Point{a, b}, nil, "{10:10,20:20,30:25,40:6}"},
		{"zimsum fills zeros", "zimsum", [][]Point{a, b}, nil, "{10:10,20:5,30:20,40:6}"},
		{"avg truncates", "avg", [][]Point{ints(10, 1), ints(10, 2)}, nil, "{10:1}"},
		{"count counts the active series", "count", [][]Point{a, b}, nil, "{10:1,20:2,30:2,40:1}"},
		{"mimmin fills the largest", "mimmin", [][]Point{a, b}, nil, "{10:10,20:5,30:20,40:6}"},
		{"a float anywhere makes doubles", "sum", [][]Point{a, {{T: 20000, F: 1.5, Float: true}}}, nil, "{10:10.0,20:16.5,30:20}"}, // the float series done: integers again
		{"rate: previous rates and a bogus first", "sum", [][]Point{ra, rb}, &RateOptions{CounterMax: math.MaxInt64}, "{1010:10.99502487562189,1015:20.0,1020:30.0,1025:10.0}"},
		{"counter wraps at Long.MAX_VALUE", "sum", [][]Point{counter}, &RateOptions{Counter: true, CounterMax: math.MaxInt64}, "{20:10.0,30:9.223372036854776e+17}"},
		{"counterMax", "sum", [][]Point{counter}, &RateOptions{Counter: true, CounterMax: 250}, "{20:10.0,30:10.0}"},
		{"resetValue", "sum", [][]Point{counter}, &RateOptions{Counter: true, CounterMax: 250, ResetValue: 1}, "{20:10.0,30:0.0}"},
		{"dropResets", "sum", [][]Point{counter}, &RateOptions{Counter: true, CounterMax: math.MaxInt64, DropResets: true}, "{20:10.0}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agg, err := lookupAggregator(tc.agg)
			if err != nil {
				t.Fatal(err)
			}
			views := tc.views
			if tc.rate != nil {
				views = make([][]Point, len(tc.views))
				for i, v := range tc.views {
					if views[i], err = rates(v, *tc.rate); err != nil {
						t.Fatal(err)
					}
				}
			}
			it := newAggIter(views, 0, math.MaxInt64-1, agg, tc.rate != nil)
			var got []Point
			for it.hasNext() {
				p, err := it.next()
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, p)
			}
			if s := render(got); s != tc.want {
				t.Errorf("got %s, want %s", s, tc.want)
			}
		})
	}
}

func TestDownsampled(t *testing.T) {
	sum, _ := lookupAggregator("sum")
	// 7-minute buckets sit on multiples of 420 s of the epoch.
	got := render(downsampled(ints(400, 1, 419, 2, 420, 3, 900, 4), 420000, sum))
	if want := "{0:3.0,420:3.0,840:4.0}"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestFilled: every bucket from the scan's start to its end, empty ones
// filled; fill scalar fails on an empty one, as a TSD's does.
func TestFilled(t *testing.T) {
	sum, _ := lookupAggregator("sum")
	pts := ints(30, 1, 50, 2, 190, 3)
	for fill, want := range map[string]string{"zero": "{0:3.0,60:0.0,120:0.0,180:3.0,240:0.0}", "nan": "{0:3.0,60:NaN,120:NaN,180:3.0,240:NaN}"} {
		got, err := filled(pts, 60000, sum, fill, 10000, 250000+60000)
		if err != nil || render(got) != want {
			t.Errorf("%s: got %s %v, want %s", fill, render(got), err, want)
		}
	}
	if _, err := filled(pts, 60000, sum, "scalar", 0, 300000); err == nil || err.Error() != "unhandled fill policy" {
		t.Errorf("scalar: %v", err)
	}
}

// TestPercentile: Commons Math's estimates (legacy, R-3, R-7) as a TSD's
// percentile aggregators take them.
func TestPercentile(t *testing.T) {
	vs := []float64{15, 20, 35, 40, 50}
	for _, tc := range []struct {
		q    float64
		est  estimate
		want float64
	}{
		{50, legacy, 35}, {90, legacy, 50}, {40, legacy, 26}, {10, legacy, 15},
		{50, r7, 35}, {90, r7, 46}, {40, r7, 29},
		{50, r3, 20}, {90, r3, 40}, {10, r3, 15}, // R-3 rounds 4.5 to the even 4
	} {
		if got := percentile(vs, tc.q, tc.est); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("p%v: got %v, want %v", tc.q, got, tc.want)
		}
	}
}
