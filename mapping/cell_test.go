package mapping

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// cell is one single-point cell, as a TSD writes it.
type cell struct{ q, v []byte }

// secCell builds a single point with a 2-byte second qualifier, as a TSD
// writes it (test-only: promhbase writes millisecond qualifiers).
func secCell(offsetS uint16, v float64) cell {
	val, flags := AppendValue(nil, v)
	return cell{binary.BigEndian.AppendUint16(nil, offsetS<<4|uint16(flags)), val}
}

// msCell builds a single point with a 4-byte millisecond qualifier.
func msCell(offsetMs uint32, v float64) cell {
	val, flags := AppendValue(nil, v)
	return cell{AppendMsQualifier(nil, offsetMs, flags), val}
}

// tsdCompact concatenates cells (already in time order) into a compacted
// column the way OpenTSDB's compaction does: qualifiers, values, and a meta
// byte (0x01 when second and millisecond qualifiers mix) when there is more
// than one point.
func tsdCompact(cells ...cell) (q, v []byte) {
	var sec, ms bool
	for _, c := range cells {
		q = append(q, c.q...)
		v = append(v, c.v...)
		if len(c.q) == 4 {
			ms = true
		} else {
			sec = true
		}
	}
	if len(cells) > 1 {
		meta := MetaPlain
		if sec && ms {
			meta = MetaMixed
		}
		v = append(v, meta)
	}
	return q, v
}

// appendColumn concatenates cells into the value of an append column.
func appendColumn(cells ...cell) []byte {
	var v []byte
	for _, c := range cells {
		v = append(append(v, c.q...), c.v...)
	}
	return v
}

func TestAppendPointsColumns(t *testing.T) {
	const base = 1292148000
	const b = int64(base) * 1000
	nan := math.Float64frombits(0x7ff0000000000002)
	mixedQ, mixedV := tsdCompact(secCell(0, 1), msCell(500, 0.5), secCell(1, 0.1), msCell(1001, nan), secCell(3599, -129))
	allMsQ, allMsV := tsdCompact(msCell(0, 1), msCell(1, 2), msCell(3599999, 1e10))
	allSQ, allSV := tsdCompact(secCell(0, 7), secCell(1, 32768), secCell(2, math.Inf(-1)))
	oneSQ, oneSV := tsdCompact(secCell(5, 3))
	oneMsQ, oneMsV := tsdCompact(msCell(5, 3))
	for _, c := range []struct {
		name string
		q, v []byte
		want []Point
	}{
		{"mixed s and ms, meta 01", mixedQ, mixedV, []Point{{b, 1}, {b + 500, 0.5}, {b + 1000, 0.1}, {b + 1001, nan}, {b + 3599000, -129}}},
		{"all ms, meta 00", allMsQ, allMsV, []Point{{b, 1}, {b + 1, 2}, {b + 3599999, 1e10}}},
		{"all s, meta 00", allSQ, allSV, []Point{{b, 7}, {b + 1000, 32768}, {b + 2000, math.Inf(-1)}}},
		{"single s point, no meta byte", oneSQ, oneSV, []Point{{b + 5000, 3}}},
		{"single ms point, no meta byte", oneMsQ, oneMsV, []Point{{b + 5, 3}}},
		{"append column", AppendColumnQualifier(), appendColumn(secCell(2, 2), msCell(1, 1), msCell(1, 1.5)), []Point{{b + 2000, 2}, {b + 1, 1}, {b + 1, 1.5}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if len(c.want) > 1 && len(c.q) != 3 && c.v[len(c.v)-1] > MetaMixed {
				t.Fatalf("bad fixture meta byte %#x", c.v[len(c.v)-1])
			}
			got, err := AppendPoints(nil, base, c.q, c.v)
			if err != nil {
				t.Fatal(err)
			}
			requirePoints(t, got, c.want)
		})
	}
	if mixedV[len(mixedV)-1] != MetaMixed || allMsV[len(allMsV)-1] != MetaPlain {
		t.Fatal("fixture meta bytes wrong")
	}
}

// TestAppendPointsTruncated cuts a valid column at every length of its
// qualifier and of its value: every cut must give an error (or a skip, for
// odd qualifier lengths), never a panic, and leave dst as it was.
func TestAppendPointsTruncated(t *testing.T) {
	q, v := tsdCompact(secCell(0, 1), msCell(500, 0.5), secCell(1, 0.1), msCell(1001, 70000), secCell(3599, -129))
	dst := []Point{{1, 1}}
	for i := range len(v) {
		got, err := AppendPoints(dst, 0, q, v[:i])
		if !errors.Is(err, ErrMalformedCell) || len(got) != 1 {
			t.Fatalf("value cut at %d: %d points, err %v", i, len(got), err)
		}
	}
	for i := range len(q) {
		got, err := AppendPoints(dst, 0, q[:i], v)
		if i%2 == 1 {
			if err != nil || len(got) != 1 {
				t.Fatalf("odd qualifier cut at %d: %d points, err %v; want a skip", i, len(got), err)
			}
			continue
		}
		if !errors.Is(err, ErrMalformedCell) || len(got) != 1 {
			t.Fatalf("qualifier cut at %d: %d points, err %v", i, len(got), err)
		}
	}
	av := appendColumn(secCell(0, 1), msCell(500, 0.5), secCell(1, 0.1))
	for i := range len(av) {
		got, err := AppendPoints(dst, 0, AppendColumnQualifier(), av[:i])
		// A cut between two pairs is a shorter, valid append column.
		if i == 0 || i == 3 || i == 3+8 {
			if err != nil {
				t.Fatalf("append column cut at pair boundary %d: %v", i, err)
			}
			continue
		}
		if !errors.Is(err, ErrMalformedCell) || len(got) != 1 {
			t.Fatalf("append column cut at %d: %d points, err %v", i, len(got), err)
		}
	}
}

// TestAppendCompactedMatchesTSD checks that AppendCompacted builds the very
// bytes a TSD's compaction builds from promhbase's single cells, and that
// AppendPoints reads them back.
func TestAppendCompactedMatchesTSD(t *testing.T) {
	const base = 1356998400
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 2, 3, 100, 3600} {
		pts := randomPoints(rng, base, n)
		var cells []cell
		for _, p := range pts {
			cells = append(cells, msCell(uint32(p.T-base*1000), p.V))
		}
		wantQ, wantV := tsdCompact(cells...)
		q, v := AppendCompacted(nil, nil, base, pts)
		if !bytes.Equal(q, wantQ) || !bytes.Equal(v, wantV) {
			t.Fatalf("%d points: AppendCompacted differs from a TSD compaction", n)
		}
		if n == 0 {
			if len(q) != 0 || len(v) != 0 {
				t.Fatalf("no points: got %X / %X", q, v)
			}
			continue
		}
		got, err := AppendPoints(nil, base, q, v)
		if err != nil {
			t.Fatalf("%d points: %v", n, err)
		}
		requirePoints(t, got, pts)
	}
}

// randomPoints returns n (at most 3600) points in the hour of base with
// increasing timestamps and values of every encoding.
func randomPoints(rng *rand.Rand, base uint32, n int) []Point {
	pts := make([]Point, n)
	for i := range pts {
		step := MaxOffsetMs / max(n, 1)
		off := i*step + rng.IntN(step)
		var v float64
		switch rng.IntN(4) {
		case 0:
			v = float64(int64(rng.Uint64()) >> rng.IntN(64))
		case 1:
			v = float64(math.Float32frombits(rng.Uint32()))
		case 2:
			v = math.Float64frombits(rng.Uint64())
		default:
			v = float64(rng.IntN(100))
		}
		pts[i] = Point{T: int64(base)*1000 + int64(off), V: v}
	}
	return pts
}

func TestAppendPointsKeepsDst(t *testing.T) {
	dst := make([]Point, 2, 10)
	dst[0], dst[1] = Point{1, 1}, Point{2, 2}
	q, v := tsdCompact(msCell(0, 1), msCell(1, 2))
	got, err := AppendPoints(dst, 10, q, v)
	if err != nil {
		t.Fatal(err)
	}
	requirePoints(t, got, []Point{{1, 1}, {2, 2}, {10000, 1}, {10001, 2}})
	if &got[0] != &dst[0] {
		t.Fatal("AppendPoints reallocated although dst had room")
	}
}

func TestParseQualifierShort(t *testing.T) {
	for _, q := range [][]byte{nil, {0x07}, {0xF0}, {0xF0, 0x00}, {0xF0, 0x00, 0x00}} {
		if _, _, _, err := ParseQualifier(q); !errors.Is(err, ErrMalformedCell) {
			t.Errorf("ParseQualifier(%X): err = %v, want ErrMalformedCell", q, err)
		}
	}
}

func TestAppendMsQualifierMasks(t *testing.T) {
	// Out-of-range inputs still give a well-formed millisecond qualifier.
	q := AppendMsQualifier(nil, 1<<22|5, 0xFB)
	if want := []byte{0xF0, 0x00, 0x01, 0x4B}; !bytes.Equal(q, want) {
		t.Fatalf("AppendMsQualifier = %X, want %X", q, want)
	}
}

func TestMayHoldFirstInstant(t *testing.T) {
	ms := func(off uint32) []byte { return AppendMsQualifier(nil, off, 0x07) }
	for _, c := range []struct {
		name string
		q    []byte
		want bool
	}{
		{"millisecond at 0", ms(0), true},
		{"millisecond at 1", ms(1), false},
		{"second at 0", []byte{0x00, 0x07}, true},
		{"second at 1", []byte{0x00, 0x17}, false},
		{"compacted, 0 last", append(append(ms(5), 0x00, 0x17), ms(0)...), true},
		{"compacted, no 0", append(ms(5), 0x00, 0x17), false},
		{"histogram at 0", AppendHistogramQualifier(nil, 0), true},
		{"histogram at 1000", AppendHistogramQualifier(nil, 1000), false},
		{"append column", AppendColumnQualifier(), true},
		{"annotation", []byte{AnnotationPrefix, 0x00, 0x00}, false},
		{"malformed", []byte{0xF0, 0x00}, false},
		{"empty", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := MayHoldFirstInstant(c.q); got != c.want {
				t.Errorf("MayHoldFirstInstant(%X) = %v, want %v", c.q, got, c.want)
			}
		})
	}
}
