package blockimport

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"github.com/promhbase/promhbase/adapter/migrate"
)

// recorder keeps every sample it is sent, by series and time, as the
// remote-write message prints it; with chunks it decodes them as
// promhbase's /api/v1/import/chunks does. It fails its failAt-th request.
type recorder struct {
	mu     sync.Mutex
	got    map[string]string
	n      atomic.Int32
	failAt int32
	chunks atomic.Int64 // chunks sent whole
}

func (r *recorder) Send(_ context.Context, req *prompb.WriteRequest) error {
	if r.n.Add(1) == r.failAt {
		return errOutage
	}
	r.record(req.Timeseries)
	return nil
}

func (r *recorder) record(tss []prompb.TimeSeries) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ts := range tss {
		name := fmt.Sprint(ts.Labels)
		for _, s := range ts.Samples {
			r.got[fmt.Sprintf("%s@%d", name, s.Timestamp)] = fmt.Sprint(s.Value)
		}
		for _, h := range ts.Histograms {
			r.got[fmt.Sprintf("%s@%d", name, h.Timestamp)] = h.String()
		}
	}
}

// chunkRecorder is a recorder that also takes chunks.
type chunkRecorder struct{ recorder }

func (r *chunkRecorder) SendChunks(_ context.Context, req *prompb.ChunkedReadResponse) error {
	if r.n.Add(1) == r.failAt {
		return errOutage
	}
	data, err := req.Marshal()
	if err != nil {
		return err
	}
	var b migrate.Batch
	if err := b.ParseChunks(data, 1<<20); err != nil {
		return err
	}
	tss := make([]prompb.TimeSeries, b.Len())
	for i := range tss {
		if tss[i], err = b.TimeSeries(i); err != nil {
			return err
		}
	}
	for _, cs := range req.ChunkedSeries {
		r.chunks.Add(int64(len(cs.Chunks)))
	}
	r.record(tss)
	return nil
}

// TestImportChunks: blocks of float series, integer and float native
// histograms, imported by chunks, give the samples the import by samples
// gives: whole, cut by a range and by ExpireBefore (partly inside
// chunks), and after an outage and a second run.
func TestImportChunks(t *testing.T) {
	dir := t.TempDir()
	for b := range 2 {
		var ss []storage.Series
		for i := range 12 {
			var smp []chunks.Sample
			for k := range 500 {
				ts := int64(b*10_000_000 + k*15_000)
				switch i % 3 {
				case 0:
					smp = append(smp, fsample{ts, float64(i*k) + 0.25})
				case 1:
					h := &histogram.Histogram{Count: uint64(2*(k%4+1) + 1), Sum: float64(k) * 1.5, Schema: 1, ZeroThreshold: 0.001, ZeroCount: 1,
						PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{int64(k%4 + 1), 0}}
					smp = append(smp, hsample{t: ts, h: h})
				case 2:
					fh := &histogram.FloatHistogram{Count: float64(k) + 2.5, Sum: float64(k) / 3, Schema: 0,
						PositiveSpans: []histogram.Span{{Offset: 1, Length: 1}}, PositiveBuckets: []float64{float64(k) + 2.5}}
					smp = append(smp, hsample{t: ts, fh: fh})
				}
			}
			ss = append(ss, seriesM(i, smp))
		}
		createBlock(t, dir, ss)
	}
	all := Options{Paths: []string{dir}, MinT: -1 << 62, MaxT: 1 << 62, BatchSamples: 700, Concurrency: 4, Job: "test"}
	for _, tc := range []struct {
		name   string
		opts   func(o *Options)
		failAt int32
	}{
		{name: "whole", opts: func(*Options) {}},
		{name: "a range cutting chunks", opts: func(o *Options) { o.MinT, o.MaxT = 1_000_007, 10_003_000 }},
		{name: "expired before", opts: func(o *Options) { o.ExpireBefore = 10_100_000 }},
		{name: "batches smaller than a chunk", opts: func(o *Options) { o.BatchSamples = 50 }},
		{name: "an outage, then again", opts: func(o *Options) { o.ProgressFile = filepath.Join(t.TempDir(), "p.json") }, failAt: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := all
			tc.opts(&o)
			want := &recorder{got: map[string]string{}}
			ref := o
			ref.ProgressFile = ""
			wst, err := Import(context.Background(), want, ref)
			if err != nil {
				t.Fatal(err)
			}
			got := &chunkRecorder{recorder{got: map[string]string{}, failAt: tc.failAt}}
			st, err := Import(context.Background(), got, o)
			if tc.failAt > 0 {
				if !errors.Is(err, errOutage) {
					t.Fatalf("first run: %v, want the outage", err)
				}
				st, err = Import(context.Background(), got, o)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.chunks.Load() == 0 {
				t.Fatal("no chunk sent whole")
			}
			if len(want.got) == 0 || !maps.Equal(got.got, want.got) {
				for k, v := range want.got {
					if got.got[k] != v {
						t.Errorf("%s: by chunks %q, by samples %q", k, got.got[k], v)
						break
					}
				}
				t.Fatalf("by chunks %d samples, by samples %d; differ", len(got.got), len(want.got))
			}
			// Series count those sent: by samples also the series whose
			// chunks overlap the range with no sample in it.
			if tc.failAt == 0 && (st.Samples != wst.Samples || st.Expired != wst.Expired || st.Series > wst.Series) {
				t.Errorf("stats by chunks %+v, by samples %+v", st, wst)
			}
		})
	}
}
