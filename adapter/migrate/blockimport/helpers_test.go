package blockimport

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// errOutage is the error of a fake sender's failing request.
var errOutage = errors.New("outage")

// fsample is a float sample.
type fsample struct {
	t int64
	f float64
}

func (s fsample) T() int64                      { return s.t }
func (s fsample) ST() int64                     { return 0 }
func (s fsample) F() float64                    { return s.f }
func (s fsample) H() *histogram.Histogram       { return nil }
func (s fsample) FH() *histogram.FloatHistogram { return nil }
func (s fsample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s fsample) Copy() chunks.Sample           { return s }

// hsample is a native histogram sample, integer or float.
type hsample struct {
	t  int64
	h  *histogram.Histogram
	fh *histogram.FloatHistogram
}

func (s hsample) T() int64                      { return s.t }
func (s hsample) ST() int64                     { return 0 }
func (s hsample) F() float64                    { return 0 }
func (s hsample) H() *histogram.Histogram       { return s.h }
func (s hsample) FH() *histogram.FloatHistogram { return s.fh }
func (s hsample) Copy() chunks.Sample           { return s }
func (s hsample) Type() chunkenc.ValueType {
	if s.h != nil {
		return chunkenc.ValHistogram
	}
	return chunkenc.ValFloatHistogram
}

// seriesM is the series m{i="<i>"} of samples smp.
func seriesM(i int, smp []chunks.Sample) storage.Series {
	return storage.NewListSeries(labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)), smp)
}

// createBlock writes a TSDB block of ss into dir.
func createBlock(t *testing.T, dir string, ss []storage.Series) {
	t.Helper()
	if _, err := tsdb.CreateBlock(ss, dir, 0, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
}
