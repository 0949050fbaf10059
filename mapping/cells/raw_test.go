package cells

import (
	"testing"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/store"
)

func TestRawMergerNewestWins(t *testing.T) {
	const base = 1292148000
	cells := []store.Cell{
		{Qualifier: []byte{0x00, 0xA0}, Value: []byte{0x05}, Timestamp: 3},             // 10 s, newest
		{Qualifier: []byte{0xF0, 0x09, 0xC4, 0x00}, Value: []byte{0x06}, Timestamp: 2}, // 10 000 ms
		{Qualifier: []byte{0x00, 0xA0, 0x01, 0x41}, Value: []byte{0x07, 0x00, 0x08, 0x00}, Timestamp: 1},
	}
	var m RawMerger
	pts, err := m.Merge(base, cells)
	if err != nil {
		t.Fatal(err)
	}
	q, v := mapping.AppendCompactedRaw(nil, nil, pts)
	if got, want := string(q), string([]byte{0x00, 0xA0, 0x01, 0x41}); got != want {
		t.Errorf("qualifier %X, want %X", q, want)
	}
	if got, want := string(v), string([]byte{0x05, 0x00, 0x08, 0x00}); got != want {
		t.Errorf("value %X, want %X", v, want)
	}
}
