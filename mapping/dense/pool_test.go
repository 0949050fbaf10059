package dense

import (
	"bytes"
	"sync"
	"testing"

	"github.com/promhbase/promhbase/store"
)

// TestPoolConcurrent: a Pool packs and unpacks rows from many goroutines
// at once, each getting its own exact bytes back (run with -race).
func TestPoolConcurrent(t *testing.T) {
	var p Pool
	rows := make([][]store.Cell, 8)
	for i := range rows {
		ts := make([]int64, 240)
		vs := make([]float64, 240)
		for k := range ts {
			ts[k], vs[k] = int64(k)*15_000+int64(k%3), float64(i*1000+k*k)
		}
		q, v := floatRow(ts, vs, i%2 == 0)
		rows[i] = cellOf(q, v, uint64(1700000000000+i))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 50 {
				want := rows[(g+n)%len(rows)]
				v, ok := p.Encode(nil, []byte("row"), want)
				if !ok {
					t.Errorf("goroutine %d: row not packed", g)
					return
				}
				got, _, err := p.Decode(nil, nil, []byte("row"), v)
				if err != nil || len(got) != 1 || !bytes.Equal(got[0].Qualifier, want[0].Qualifier) ||
					!bytes.Equal(got[0].Value, want[0].Value) || got[0].Timestamp != want[0].Timestamp {
					t.Errorf("goroutine %d: round trip differs (err %v)", g, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestPoolSkipsSingleSamples: Pool leaves single-sample cells and rows of
// several cells to the store's generic form, and packs a column of two
// second-qualified samples (four qualifier bytes without the ms marker).
func TestPoolSkipsSingleSamples(t *testing.T) {
	var p Pool
	for _, tc := range []struct {
		name string
		ts   []int64
		want bool
	}{
		{"one ms sample", []int64{1234}, false},
		{"two ms samples", []int64{1234, 16000}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, v := floatRow(tc.ts, make([]float64, len(tc.ts)), true)
			if _, ok := p.Encode(nil, nil, cellOf(q, v, 1)); ok != tc.want {
				t.Errorf("packed %v, want %v", ok, tc.want)
			}
		})
	}
	sec := cellOf([]byte{0x00, 0x00, 0x00, 0x10}, []byte{1, 2, 0}, 1) // two 1-byte ints at 0 s and 1 s
	if _, ok := p.Encode(nil, nil, sec); !ok {
		t.Error("two second-qualified samples not packed")
	}
	if _, ok := p.Encode(nil, nil, append(cellOf([]byte{0x00, 0x00}, []byte{1}, 1), cellOf([]byte{0x00, 0x10}, []byte{2}, 1)...)); ok {
		t.Error("two cells packed")
	}
}
