package embedded

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/promhbase/promhbase/store"
)

// splitRowKey is an OpenTSDB-like row key of metric m, hour h and series
// s (ten tags).
func splitRowKey(m, h, s int) []byte {
	k := []byte{0, 0, byte(m + 1)}
	k = binary.BigEndian.AppendUint32(k, uint32(1_700_000_000/3600+h)*3600)
	for t := range 10 {
		k = append(k, 0, 0, byte(t+1), 0, byte(s>>8), byte(s))
	}
	return k
}

// putSplitRows writes metrics × hours × series rows of cells cells each.
func putSplitRows(t *testing.T, s *Store, metrics, hours, series, cells int) {
	t.Helper()
	for c := range cells {
		var puts []store.Put
		for m := range metrics {
			for h := range hours {
				for sr := range series {
					q := binary.BigEndian.AppendUint32(nil, 0xF0000000|uint32(c)<<10|0x0B)
					v := binary.BigEndian.AppendUint64(nil, rand.Uint64())
					puts = append(puts, store.Put{Row: splitRowKey(m, h, sr), Cells: []store.Cell{{Family: []byte("t"), Qualifier: q, Value: v}}})
				}
			}
		}
		if err := s.Put(t.Context(), "tsdb", puts); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSplitRange: the keys cut a metric's range into parts of about equal
// rows, each key a stored row strictly inside the range, in order, from
// the row buffer and from Pebble's tables alike; a small range is not cut.
func TestSplitRange(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flush bool
	}{{"buffer", false}, {"tables", true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t, Options{NoSync: true, Tables: []string{"tsdb"}, BufferTables: []string{"tsdb"}, BufferBytes: 1 << 30, SplitPartBytes: 64 << 10})
			const metrics, hours, series = 3, 2, 1000
			putSplitRows(t, s, metrics, hours, series, 40)
			if tc.flush {
				if err := s.CompactAll(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			start, stop := []byte{0, 0, 2}, []byte{0, 0, 3} // metric 1: 2000 rows
			for _, n := range []int{2, 3, 4} {
				keys, err := s.SplitRange(t.Context(), "tsdb", start, stop, n)
				if err != nil {
					t.Fatal(err)
				}
				if len(keys) != n-1 && (!tc.flush || len(keys) == 0) {
					t.Fatalf("n=%d: %d keys, want %d", n, len(keys), n-1)
				}
				bounds := append(append([][]byte{start}, keys...), stop)
				for i := 1; i < len(bounds); i++ {
					if bytes.Compare(bounds[i-1], bounds[i]) >= 0 {
						t.Fatalf("n=%d: bound %d %x not above %x", n, i, bounds[i], bounds[i-1])
					}
				}
				total := 0
				for i := 1; i < len(bounds); i++ {
					rows := 0
					sc := s.Scan(t.Context(), store.ScanRequest{Table: "tsdb", Start: bounds[i-1], Stop: bounds[i]})
					for sc.Next() {
						if rows == 0 && i > 1 && !bytes.Equal(sc.Row().Key, bounds[i-1]) {
							t.Errorf("n=%d: part %d starts at %x, not at its key %x (a stored row)", n, i, sc.Row().Key, bounds[i-1])
						}
						rows++
					}
					if err := sc.Err(); err != nil {
						t.Fatal(err)
					}
					// The buffer's cut is balanced; Pebble's within the
					// granularity of its estimate, coarse at this size.
					if want := hours * series / n; !tc.flush && (rows < want*2/3 || rows > want*4/3) {
						t.Errorf("n=%d: part %d has %d rows, want about %d", n, i, rows, want)
					}
					total += rows
				}
				if total != hours*series {
					t.Errorf("n=%d: parts hold %d rows, want %d", n, total, hours*series)
				}
			}
			// One metric's 40 rows: too little to cut.
			small, err := s.SplitRange(t.Context(), "tsdb", splitRowKey(0, 0, 0), splitRowKey(0, 0, 40), 2)
			if err != nil || small != nil {
				t.Errorf("small range: %x, %v; want none", small, err)
			}
			if keys, err := s.SplitRange(t.Context(), "tsdb", start, stop, 1); err != nil || keys != nil {
				t.Errorf("n=1: %x, %v; want none", keys, err)
			}
			if _, err := s.SplitRange(t.Context(), "nope", start, stop, 2); err == nil {
				t.Error("unknown table: no error")
			}
		})
	}
}

// TestMidKey: midKey(a, b) lies in [a, b) for a < b.
func TestMidKey(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		a := make([]byte, r.IntN(6))
		b := make([]byte, r.IntN(6))
		for i := range a {
			a[i] = byte(r.IntN(4)) * 85
		}
		for i := range b {
			b[i] = byte(r.IntN(4)) * 85
		}
		switch bytes.Compare(a, b) {
		case 0:
			continue
		case 1:
			a, b = b, a
		}
		m := midKey(a, b)
		if bytes.Compare(m, a) < 0 || bytes.Compare(m, b) >= 0 {
			t.Fatalf("midKey(%x, %x) = %x: not in [a, b)", a, b, m)
		}
	}
}
