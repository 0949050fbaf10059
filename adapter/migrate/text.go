package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
)

// ParseText parses body, Prometheus's text exposition format (a sample a
// line, its timestamp in Unix ms optional; # comments, HELP and TYPE
// lines skipped), into series, one a sample, appending to dst; a sample
// without a timestamp is stamped now (Unix ms). It fails on the first bad
// line, naming it. Batch.ParseText is the same into a Batch.
func ParseText(dst []prompb.TimeSeries, body []byte, now int64) ([]prompb.TimeSeries, error) {
	err := parseText(body, now, func(lbls labels.Labels, t int64, v float64) {
		ts := prompb.TimeSeries{Labels: make([]prompb.Label, 0, lbls.Len()), Samples: []prompb.Sample{{Timestamp: t, Value: v}}}
		lbls.Range(func(l labels.Label) { ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value}) })
		dst = append(dst, ts)
	})
	return dst, err
}

// ParseText parses body as the function ParseText does, appending its
// series to b; the lines before a bad one stay in b.
func (b *Batch) ParseText(body []byte, now int64) error {
	return parseText(body, now, func(lbls labels.Labels, t int64, v float64) {
		b.Append(lbls, mapping.Point{T: t, V: v})
	})
}

// parseText calls add for each sample of body, a text exposition.
func parseText(body []byte, now int64, add func(lbls labels.Labels, t int64, v float64)) error {
	st := labels.NewSymbolTable()
	var lbls labels.Labels
	for n := 1; len(body) > 0; n++ {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i+1], body[i+1:]
		} else {
			line, body = append(slices.Clip(line), '\n'), nil
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) == 0 || trimmed[0] == '#' {
			continue // HELP, TYPE and comments say nothing a sample needs
		}
		// Clipped: the parser may append to what it is given.
		p := textparse.NewPromParser(slices.Clip(line), st, false)
		for {
			et, err := p.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return &LineError{Line: n, Err: err}
			}
			if et != textparse.EntrySeries {
				continue
			}
			_, tp, v := p.Series()
			t := now
			if tp != nil {
				t = *tp
			}
			if t < MinTimestamp || t > MaxTimestamp {
				return &LineError{Line: n, Err: fmt.Errorf("timestamp %d ms is out of range [%d, %d] (1970 to 2106)", t, MinTimestamp, MaxTimestamp)}
			}
			p.Labels(&lbls)
			if lbls.Get(model.MetricNameLabel) == "" {
				return &LineError{Line: n, Err: errors.New("no metric name")}
			}
			add(lbls, t, v)
		}
	}
	return nil
}
