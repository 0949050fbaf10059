package deletion

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/promhbase/promhbase/mapping"
)

// TestCutAfterCompaction: a compacted row cut down to one point, the
// first or the last, or to a few: the points kept are read back. On
// HBase compaction left delete markers on the single cells it replaced,
// at the version of the compacted cell (ingest writes a request's cells
// with one version); a cut column with one of those qualifiers must not
// be written at or before that version, or the marker hides it.
func TestCutAfterCompaction(t *testing.T) {
	t.Parallel()
	h := int64(t0) * 1000
	for _, tc := range []struct {
		name       string
		start, end int64
	}{
		{"last point left", h, h + 55*60*1000 - 1},
		{"first point left", h + 1, h + hourMs - 1},
		{"two points left", h + 5*60*1000, h + 50*60*1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newRig(t, mapping.DefaultLayout())
			ls := labelsOf("m", "job", "a")
			g.write(floats(ls, every(h, h+hourMs-1, 5*60*1000)...))
			g.compactAll()
			data := g.data()
			if _, err := g.deleter(Options{}).Delete(ctxFor(t), []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "a")}, tc.start, tc.end); err != nil {
				t.Fatal(err)
			}
			want := without(data, []string{`{__name__="m", job="a"}`}, tc.start, tc.end)
			if got := g.data(); got != want {
				t.Errorf("after the delete:\n%s\nwant\n%s", got, want)
			}
			// And once more after compacting what is left.
			g.compactAll()
			if got := g.data(); got != want {
				t.Errorf("after the delete and compaction:\n%s\nwant\n%s", got, want)
			}
		})
	}
}
