package testrollup

import "testing"

// TestWindows: a sample at a window's end is in that window, one just
// after it in the next; windows without samples are left out.
func TestWindows(t *testing.T) {
	got := Windows([]Sample{{T: 10, V: 1}, {T: 11, V: 2}, {T: 20, V: 5}, {T: 45, V: 3}}, 10, 0, 50)
	want := []struct {
		end   int64
		count uint64
	}{{10, 1}, {20, 2}, {50, 1}}
	if len(got) != len(want) {
		t.Fatalf("%d windows %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if got[i].End != w.end || uint64(got[i].Count) != w.count {
			t.Errorf("window %d: end %d, %d samples; want end %d, %d", i, got[i].End, got[i].Count, w.end, w.count)
		}
	}
}
