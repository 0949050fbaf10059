package mapping

import (
	"math/rand/v2"
	"testing"
)

// TestZeroAllocs enforces the allocation budget of the hot paths: none, when
// the caller's buffers have room.
func TestZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	l := Layout{SaltWidth: 1, SaltBuckets: 20, MetricWidth: 3, TagKWidth: 3, TagVWidth: 3}
	metric := []byte{0, 0, 1}
	tags := []byte{0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0, 0, 2, 0, 0, 9}
	key := l.AppendRowKey(nil, metric, 1292148000, tags)
	pts := randomPoints(rand.New(rand.NewPCG(9, 10)), 1292148000, 3600)
	cq, cv := AppendCompacted(nil, nil, 1292148000, pts)
	appendQ, appendV := AppendColumnQualifier(), appendColumn(msCell(1, 1), secCell(2, 0.1), msCell(3, 1e300))
	secQ, secV := []byte{0x07, 0xBB}, []byte{0, 0, 0, 0, 0x3F, 0, 0, 0}
	buf := make([]byte, 0, 64<<10)
	qbuf := make([]byte, 0, 16<<10)
	out := make([]Point, 0, 4096)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"AppendRowKey salted", func() { buf = l.AppendRowKey(buf[:0], metric, 1292148000, tags) }},
		{"SaltBucket", func() { _ = l.SaltBucket(metric, tags) }},
		{"SortTags", func() {
			tags[0], tags[6] = tags[6], tags[0]
			l.SortTags(tags)
		}},
		{"ParseRowKey", func() { _, _, _, _, _ = l.ParseRowKey(key) }},
		{"AppendMsQualifier+AppendValue", func() {
			var flags byte
			buf, flags = AppendValue(buf[:0], 0.1)
			qbuf = AppendMsQualifier(qbuf[:0], 123456, flags)
		}},
		{"DecodeValue", func() { _, _ = DecodeValue(FlagsFloat64, cv[:8]) }},
		{"AppendPoints compacted 3600", func() { out, _ = AppendPoints(out[:0], 1292148000, cq, cv) }},
		{"AppendPoints single ms", func() { out, _ = AppendPoints(out[:0], 1292148000, cq[:4], cv[:ValueLen(cq[3])]) }},
		{"AppendPoints single s", func() { out, _ = AppendPoints(out[:0], 1292148000, secQ, secV) }},
		{"AppendPoints append column", func() { out, _ = AppendPoints(out[:0], 1292148000, appendQ, appendV) }},
		{"AppendCompacted 3600", func() { qbuf, buf = AppendCompacted(qbuf[:0], buf[:0], 1292148000, pts) }},
		{"AppendRegexQuoted", func() { buf = AppendRegexQuoted(buf[:0], key) }},
		{"AppendLatin1", func() { buf = AppendLatin1(buf[:0], key) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, c.f); n != 0 {
				t.Fatalf("%v allocations per run, want 0", n)
			}
		})
	}
}
