package ruler

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
)

// WriteFunc hands a remote write 1.0 WriteRequest, marshaled and not
// compressed, to a tenant's write path (ingest.Writer.Write with v2
// false). It returns only once every series is stored; any series
// rejected (a limit, an invalid label) is an error.
type WriteFunc func(ctx context.Context, body []byte) error

// maxBatchSeries bounds the series of one write request the ruler sends.
const maxBatchSeries = 5000

// appendable turns the samples the rules manager appends into remote
// write requests to a tenant's write path. drop, when set, reports the
// appends to leave out: the stale markers of a group this replica let go
// to another (see Ruler), whose new holder writes its series on.
type appendable struct {
	write WriteFunc
	drop  func(ctx context.Context) bool
}

func (a appendable) Appender(ctx context.Context) storage.Appender {
	return &appender{ctx: ctx, a: a}
}

// appender buffers one transaction's series; Commit writes them in
// batches of at most maxBatchSeries.
type appender struct {
	ctx    context.Context
	a      appendable
	series []prompb.TimeSeries
	// stale counts the stale markers of a group let go (dropped).
	stale int
}

func (a *appender) Append(_ storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	if value.IsStaleNaN(v) && a.a.drop != nil && a.a.drop(a.ctx) {
		a.stale++
		return 0, nil
	}
	a.series = append(a.series, prompb.TimeSeries{Labels: prompb.FromLabels(l, nil), Samples: []prompb.Sample{{Timestamp: t, Value: v}}})
	return 0, nil
}

func (a *appender) AppendHistogram(_ storage.SeriesRef, l labels.Labels, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) (storage.SeriesRef, error) {
	ts := prompb.TimeSeries{Labels: prompb.FromLabels(l, nil)}
	switch {
	case fh != nil:
		ts.Histograms = []prompb.Histogram{prompb.FromFloatHistogram(t, fh)}
	case h != nil:
		ts.Histograms = []prompb.Histogram{prompb.FromIntHistogram(t, h)}
	default:
		return 0, nil
	}
	a.series = append(a.series, ts)
	return 0, nil
}

func (*appender) SetOptions(*storage.AppendOptions) {}

func (*appender) AppendExemplar(storage.SeriesRef, labels.Labels, exemplar.Exemplar) (storage.SeriesRef, error) {
	return 0, nil
}

func (*appender) UpdateMetadata(storage.SeriesRef, labels.Labels, metadata.Metadata) (storage.SeriesRef, error) {
	return 0, nil
}

func (*appender) AppendSTZeroSample(storage.SeriesRef, labels.Labels, int64, int64) (storage.SeriesRef, error) {
	return 0, nil
}

func (*appender) AppendHistogramSTZeroSample(storage.SeriesRef, labels.Labels, int64, int64, *histogram.Histogram, *histogram.FloatHistogram) (storage.SeriesRef, error) {
	return 0, nil
}

// Commit writes the transaction's series; an error (a series rejected,
// the store failing) fails the rule's evaluation, which the rules
// manager counts.
func (a *appender) Commit() error {
	series := a.series
	a.series = nil
	err := writeSeries(a.ctx, a.a.write, series)
	if err != nil {
		noteCommitFailed(a.ctx)
	}
	return err
}

func (a *appender) Rollback() error {
	a.series = nil
	return nil
}

// writeSeries writes series in requests of at most maxBatchSeries.
func writeSeries(ctx context.Context, write WriteFunc, series []prompb.TimeSeries) error {
	for len(series) > 0 {
		n := min(len(series), maxBatchSeries)
		req := prompb.WriteRequest{Timeseries: series[:n]}
		body, err := req.Marshal()
		if err != nil {
			return fmt.Errorf("ruler: encode %d series: %w", n, err)
		}
		if err := write(ctx, body); err != nil {
			return fmt.Errorf("ruler: write %d series: %w", n, err)
		}
		series = series[n:]
	}
	return nil
}

// groupOf returns the rule group (file, name) a context of the rules
// manager evaluates, from the origin Prometheus's group attaches.
func groupOf(ctx context.Context) (file, name string, ok bool) {
	m, _ := ctx.Value(promql.QueryOrigin{}).(map[string]any)
	g, _ := m["ruleGroup"].(map[string]string)
	if g == nil {
		return "", "", false
	}
	return g["file"], g["name"], true
}
