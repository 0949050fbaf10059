package migrate

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/wire"
)

// Batch holds parsed import series as the write path takes them
// (ingest.Writer.WriteSeries), in three shared arrays rather than a value
// per series: each series' key, its labels as remote write's Label fields
// in name order (wire.Series.Key, so that a series imported and the same
// series remote-written share the series cache's entry), and its samples
// in the order the body gave them. The zero Batch is empty; Reset keeps
// its arrays for the next body.
type Batch struct {
	keys   []byte
	points []mapping.Point
	ends   []seriesEnd

	// One JSON line's scratch: its labels, and the unescaped bytes of
	// those that had escapes (the others alias the line).
	lbls  []rawLabel
	unesc []byte
}

// seriesEnd is where a series' key and samples end in keys and points.
type seriesEnd struct{ key, points int }

type rawLabel struct{ name, value []byte }

// Len is the number of series.
func (b *Batch) Len() int { return len(b.ends) }

// Samples is the number of samples of all series.
func (b *Batch) Samples() int { return len(b.points) }

// Series returns series i's key and samples; they alias the Batch until
// its next Reset.
func (b *Batch) Series(i int) (key []byte, points []mapping.Point) {
	k0, p0 := 0, 0
	if i > 0 {
		k0, p0 = b.ends[i-1].key, b.ends[i-1].points
	}
	e := b.ends[i]
	return b.keys[k0:e.key:e.key], b.points[p0:e.points:e.points]
}

// Cap is the bytes the Batch's arrays hold.
func (b *Batch) Cap() int {
	return cap(b.keys) + 16*cap(b.points) + 16*cap(b.ends) + 48*cap(b.lbls) + cap(b.unesc)
}

// Reset empties the Batch, keeping its arrays.
func (b *Batch) Reset() {
	b.keys, b.points, b.ends = b.keys[:0], b.points[:0], b.ends[:0]
	clear(b.lbls)
	b.lbls, b.unesc = b.lbls[:0], b.unesc[:0]
}

// Append adds a series of labels (in name order, as labels.Labels keeps
// them) and samples.
func (b *Batch) Append(lbls labels.Labels, pts ...mapping.Point) {
	lbls.Range(func(l labels.Label) { b.keys = wire.AppendLabel(b.keys, l.Name, l.Value) })
	b.points = append(b.points, pts...)
	b.ends = append(b.ends, seriesEnd{key: len(b.keys), points: len(b.points)})
}

// TimeSeries returns series i as a remote-write TimeSeries (tests, and
// callers that want one).
func (b *Batch) TimeSeries(i int) (prompb.TimeSeries, error) {
	key, pts := b.Series(i)
	s := wire.Series{Key: key}
	lbls, err := s.Labels()
	if err != nil {
		return prompb.TimeSeries{}, fmt.Errorf("series %d: %w", i, err)
	}
	ts := prompb.TimeSeries{Labels: make([]prompb.Label, len(lbls)), Samples: make([]prompb.Sample, len(pts))}
	for j, l := range lbls {
		ts.Labels[j] = prompb.Label{Name: string(l.Name), Value: string(l.Value)}
	}
	for j, p := range pts {
		ts.Samples[j] = prompb.Sample{Timestamp: p.T, Value: p.V}
	}
	return ts, nil
}

// endLine closes the series of a JSON line whose labels are in b.lbls and
// samples in points[p0:]: it sorts and checks the labels, then appends the
// key. On an error nothing of the line stays.
func (b *Batch) endLine(p0 int) error {
	lbls := b.lbls
	if len(lbls) <= 16 {
		// Insertion sort: a series has a handful of labels, often in
		// order.
		for i := 1; i < len(lbls); i++ {
			for j := i; j > 0 && bytes.Compare(lbls[j-1].name, lbls[j].name) > 0; j-- {
				lbls[j-1], lbls[j] = lbls[j], lbls[j-1]
			}
		}
	} else { // O(n log n) whatever a hostile line holds
		slices.SortFunc(lbls, func(a, b rawLabel) int { return bytes.Compare(a.name, b.name) })
	}
	named := false
	for i, l := range lbls {
		if i > 0 && bytes.Equal(lbls[i-1].name, l.name) {
			b.points = b.points[:p0]
			return fmt.Errorf(`"metric" has the label %q twice`, l.name)
		}
		if string(l.name) == "__name__" && len(l.value) > 0 {
			named = true
		}
	}
	if !named {
		b.points = b.points[:p0]
		return fmt.Errorf(`"metric" has no "__name__"`)
	}
	for _, l := range lbls {
		b.keys = wire.AppendLabel(b.keys, l.name, l.value)
	}
	b.ends = append(b.ends, seriesEnd{key: len(b.keys), points: len(b.points)})
	return nil
}
