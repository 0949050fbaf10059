package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/ingest"
	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/mapping/wire"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/index"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/teststack"
)

// t0 is an hour boundary (2023-11-14T23:00:00Z) in Unix ms.
const t0 = 1700002800_000

// at is a series of one sample (value v, time t0+v ms) with labels
// {__name__=name, kv...}.
func at(v float64, name string, kv ...string) prompb.TimeSeries {
	return prompb.TimeSeries{Labels: teststack.Labels(name, kv...), Samples: []prompb.Sample{{Timestamp: t0 + int64(v), Value: v}}}
}

// stored renders what the stack reads back: each series and its sample
// values.
func stored(s *teststack.Stack) string {
	s.T.Helper()
	var sb strings.Builder
	for _, sr := range s.Select() {
		fmt.Fprintf(&sb, "%s", sr.Labels)
		for _, p := range sr.Samples {
			fmt.Fprintf(&sb, " %g", p.V)
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// TestRejectedSeries: the series that can never be stored are rejected
// with a *RejectError naming each (the 400 of the HTTP layer), counted by
// reason, while the valid series of the same request are written.
func TestRejectedSeries(t *testing.T) {
	s := teststack.New(t, teststack.Options{})
	noName := prompb.TimeSeries{Labels: []prompb.Label{{Name: "job", Value: "x"}}, Samples: []prompb.Sample{{Timestamp: t0, Value: 9}}}
	repeated := at(3, "rep", "job", "a", "job", "b")
	farFuture := at(4, "late")
	farFuture.Samples = append(farFuture.Samples, prompb.Sample{Timestamp: (1 << 32) * 1000, Value: 5}) // past the row key's 2^32-1 s
	res, err := s.TryWrite(at(1, "fine", "job", "a"), noName, repeated, farFuture)
	var rej *ingest.RejectError
	if !errors.As(err, &rej) {
		t.Fatalf("write: %v, want a *ingest.RejectError", err)
	}
	for _, want := range []string{"3 samples or histograms rejected", `job="x"`, `"job" repeated`, `__name__="late"`, "timestamps outside"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if res.Samples != 2 || res.Rejected["invalid_labels"] != 2 || res.Rejected["timestamp_out_of_range"] != 1 {
		t.Errorf("result %+v, want 2 samples written, 2 invalid_labels and 1 timestamp_out_of_range rejected", res)
	}
	if got, want := stored(s), "{__name__=\"fine\", job=\"a\"} 1\n{__name__=\"late\"} 4\n"; got != want {
		t.Errorf("stored:\n%swant\n%s", got, want)
	}
}

// TestSecondPass: series missing from the series cache are resolved
// after the first pass (their UIDs assigned in one batch) and written in
// the second, interleaved with cached series and each other in request
// order, the same new series twice in one request included; a writer
// with a cache of its own (another process) finds the UIDs assigned.
func TestSecondPass(t *testing.T) {
	s := teststack.New(t, teststack.Options{})
	s.Write(at(1, "m", "job", "cached"))
	res := s.Write(at(2, "m", "job", "new1"), at(3, "m", "job", "cached"), at(4, "other", "job", "new2"), at(5, "m", "job", "new1"))
	if res.Samples != 4 || len(res.Rejected) != 0 {
		t.Errorf("result %+v, want 4 samples written", res)
	}
	// A writer of another process: UID and series caches of its own.
	uids, err := uid.NewUIDs(s.Store, s.Layout, uid.UIDOptions{Table: s.Tables.UID})
	if err != nil {
		t.Fatal(err)
	}
	s.Mapper = series.NewMapper(uids, s.Layout, 0)
	s.Writer = s.NewWriter(nil)
	if res := s.Write(at(6, "m", "job", "new1"), at(7, "third", "job", "new3")); res.Samples != 2 {
		t.Errorf("another writer: result %+v, want 2 samples written", res)
	}
	want := "{__name__=\"m\", job=\"cached\"} 1 3\n{__name__=\"m\", job=\"new1\"} 2 5 6\n{__name__=\"other\", job=\"new2\"} 4\n{__name__=\"third\", job=\"new3\"} 7\n"
	if got := stored(s); got != want {
		t.Errorf("stored:\n%swant\n%s", got, want)
	}
}

// TestExemplars: an exemplar takes the slot of its time in its series'
// hour (720 slots of 5 s), or the next free one when an earlier exemplar
// of the same request holds it; a later request replaces the exemplar of
// a slot. Result counts the exemplars written. A writer without an
// exemplar table drops them and counts none.
func TestExemplars(t *testing.T) {
	ex := func(ts ...int64) prompb.TimeSeries {
		s := at(1, "m", "job", "a")
		for _, t := range ts {
			s.Exemplars = append(s.Exemplars, prompb.Exemplar{Labels: []prompb.Label{{Name: "trace_id", Value: fmt.Sprint(t)}}, Value: 1, Timestamp: t})
		}
		return s
	}
	for _, tc := range []struct {
		name          string
		exemplars     bool
		first, second int
		read1, read2  string
	}{
		{"kept", true, 3, 1, "{__name__=\"m\", job=\"a\"}: 1700002800000 1700002800001 1700002805000\n",
			"{__name__=\"m\", job=\"a\"}: 1700002800001 1700002800002 1700002805000\n"},
		{"dropped", false, 0, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := teststack.New(t, teststack.Options{Exemplars: tc.exemplars})
			// Slot 0, then 0 taken: 1, then 1 taken: 2.
			if res := s.Write(ex(t0, t0+1, t0+5000)); res.Exemplars != tc.first {
				t.Errorf("%d exemplars written, want %d", res.Exemplars, tc.first)
			}
			if got := teststack.RenderTimes(s.SelectExemplars()); got != tc.read1 {
				t.Errorf("exemplars read:\n%swant\n%s", got, tc.read1)
			}
			// Slot 0 again, in a request of its own: replaced.
			if res := s.Write(ex(t0 + 2)); res.Exemplars != tc.second {
				t.Errorf("second request: %d exemplars written, want %d", res.Exemplars, tc.second)
			}
			if got := teststack.RenderTimes(s.SelectExemplars()); got != tc.read2 {
				t.Errorf("exemplars read after the second request:\n%swant\n%s", got, tc.read2)
			}
		})
	}
}

// TestLimits: a series breaking a per-series limit is rejected by name
// and the rest written; a request over the series-per-request limit or
// the new-series rate is refused whole, nothing of it written, every
// sample counted as rejected.
func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     func(*limits.Config)
		first   []prompb.TimeSeries // written before, whole
		series  []prompb.TimeSeries
		errHas  string
		written int
		reason  string
		stored  string
	}{
		{"label value too long", func(*limits.Config) {}, nil, []prompb.TimeSeries{at(1, "m", "job", "a"), at(2, "m", "job", strings.Repeat("v", 2049))},
			"--limits.max-label-value-length=2048", 1, limits.ReasonLabelValueLength, "{__name__=\"m\", job=\"a\"} 1\n"},
		{"series per request", func(c *limits.Config) { c.MaxSeriesPerRequest = 1 }, nil, []prompb.TimeSeries{at(1, "m", "job", "a"), at(2, "m", "job", "b")},
			"max-series-per-request", 0, limits.ReasonSeriesPerRequest, ""},
		// The first request takes the bucket into debt; the next new series
		// waits (about 1000 s).
		{"new series rate", func(c *limits.Config) { c.NewSeriesRate, c.NewSeriesBurst = 1e-3, 1 }, []prompb.TimeSeries{at(1, "m", "job", "a"), at(2, "m", "job", "b")},
			[]prompb.TimeSeries{at(3, "m", "job", "a"), at(4, "m", "job", "c")}, "--limits.new-series-rate", 0, limits.ReasonNewSeriesRate,
			"{__name__=\"m\", job=\"a\"} 1\n{__name__=\"m\", job=\"b\"} 2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := limits.DefaultConfig()
			tc.cfg(&cfg)
			s := teststack.New(t, teststack.Options{Ingest: func(o *ingest.Options) {
				l, err := limits.New(cfg, mapping.DefaultLayout(), prometheus.NewRegistry(), nil)
				if err != nil {
					t.Fatal(err)
				}
				o.Limits = l
			}})
			if len(tc.first) > 0 {
				s.Write(tc.first...)
			}
			res, err := s.TryWrite(tc.series...)
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("write: %v, want an error naming %q", err, tc.errHas)
			}
			if res.Samples != tc.written || res.Rejected[tc.reason] != len(tc.series)-tc.written {
				t.Errorf("result %+v, want %d written and %d rejected for %s", res, tc.written, len(tc.series)-tc.written, tc.reason)
			}
			if got := stored(s); got != tc.stored {
				t.Errorf("stored:\n%swant\n%s", got, tc.stored)
			}
		})
	}
}

// TestRetentionExpires: with Options.Retention, samples, histograms and
// exemplars older than now minus it are dropped at their write and
// counted in Result.Expired, the rest of the request written; the
// boundary sample (exactly now minus the retention) is kept.
func TestRetentionExpires(t *testing.T) {
	now := time.UnixMilli(t0 + 10*3600_000)
	cutoff := int64(t0 + 4*3600_000) // now − 6h
	hist := func(ts int64) prompb.Histogram {
		return prompb.FromIntHistogram(ts, &histogram.Histogram{Count: 1, ZeroCount: 1, ZeroThreshold: 0.001})
	}
	for _, tc := range []struct {
		name      string
		retention time.Duration
		expired   int
		stored    string
	}{
		{"off", 0, 0, "{__name__=\"m\", job=\"a\"} 1 2 3\n"},
		{"6h", 6 * time.Hour, 2, "{__name__=\"m\", job=\"a\"} 2 3\n"},
		{"1h", time.Hour, 4, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := teststack.New(t, teststack.Options{Exemplars: true, Ingest: func(o *ingest.Options) {
				o.Retention, o.Now = tc.retention, func() time.Time { return now }
			}})
			ts := prompb.TimeSeries{Labels: teststack.Labels("m", "job", "a"), Samples: []prompb.Sample{
				{Timestamp: cutoff - 1, Value: 1}, {Timestamp: cutoff, Value: 2}, {Timestamp: cutoff + 3600_000, Value: 3}},
				Exemplars: []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: "1"}}, Value: 1, Timestamp: cutoff - 1}}}
			h := prompb.TimeSeries{Labels: teststack.Labels("h", "job", "a"), Histograms: []prompb.Histogram{hist(cutoff - 3600_000)}}
			res := s.Write(ts, h)
			if res.Expired != tc.expired {
				t.Errorf("expired %d, want %d (result %+v)", res.Expired, tc.expired, res)
			}
			if got, want := res.Samples+res.Histograms+res.Expired, 4; got != want {
				t.Errorf("written %d + %d and expired %d: %d in all, want %d", res.Samples, res.Histograms, res.Expired, got, want)
			}
			if got := floatsStored(s); got != tc.stored {
				t.Errorf("stored:\n%swant\n%s", got, tc.stored)
			}
			if wantEx := tc.retention == 0; (res.Exemplars == 1) != wantEx {
				t.Errorf("%d exemplars written, want the old one written only without retention", res.Exemplars)
			}
		})
	}
}

// TestRetentionExpiresNewSeries: a new series all of whose samples are
// older than the retention is not resolved (no UID is assigned for its
// name) and counts as expired.
func TestRetentionExpiresNewSeries(t *testing.T) {
	now := time.UnixMilli(t0 + 10*3600_000)
	s := teststack.New(t, teststack.Options{Ingest: func(o *ingest.Options) {
		o.Retention, o.Now = time.Hour, func() time.Time { return now }
	}})
	gone := at(1, "gone_entirely", "job", "a") // t0+1ms: ten hours old
	res := s.Write(gone)
	if res.Expired != 1 || res.Samples != 0 || len(res.Rejected) != 0 {
		t.Errorf("result %+v, want 1 expired, nothing written or rejected", res)
	}
	for _, k := range s.Keys(s.Tables.UID) {
		if strings.Contains(string(k), "gone_entirely") {
			t.Errorf("a UID row %q for a series nothing of which was stored", k)
		}
	}
}

// floatsStored is stored without the series that hold no float samples.
func floatsStored(s *teststack.Stack) string {
	var sb strings.Builder
	for _, line := range strings.SplitAfter(stored(s), "\n") {
		if strings.Contains(line, "} ") {
			sb.WriteString(line)
		}
	}
	return sb.String()
}

// checkedNoter fails its noting with err, counting the calls.
type checkedNoter struct {
	err   error
	calls int
}

func (n *checkedNoter) NoteRowsChecked(context.Context, []store.Put) error {
	n.calls++
	return n.err
}

// TestCheckedRowNoter: a CheckedRowNoter is told by NoteRowsChecked, and
// its error fails the write (a retryable error, not a RejectError) after
// the rows were stored; without an error the write succeeds.
func TestCheckedRowNoter(t *testing.T) {
	errLog := errors.New("log unreachable")
	for _, tc := range []struct {
		name string
		err  error
	}{{"noted", nil}, {"noting fails", errLog}} {
		t.Run(tc.name, func(t *testing.T) {
			s := teststack.New(t, teststack.Options{})
			n := &checkedNoter{err: tc.err}
			s.Writer = s.NewWriter(func(o *ingest.Options) { o.CheckedRowNoter = n })
			_, err := s.TryWrite(at(1, "m", "job", "a"))
			var rej *ingest.RejectError
			if !errors.Is(err, tc.err) || (err != nil && errors.As(err, &rej)) {
				t.Fatalf("write: %v, want %v", err, tc.err)
			}
			if n.calls != 1 {
				t.Errorf("noter calls %d, want NoteRowsChecked once", n.calls)
			}
			if got := stored(s); got != "{__name__=\"m\", job=\"a\"} 1\n" {
				t.Errorf("stored %q", got)
			}
		})
	}
}

// syncRecorder is a store that defers durability (store.DeferredPutter,
// store.Syncer), recording which of its writes each call made.
type syncRecorder struct {
	store.Store
	calls []string
}

func (r *syncRecorder) Put(ctx context.Context, table string, puts []store.Put) error {
	r.calls = append(r.calls, "put")
	return r.Store.Put(ctx, table, puts)
}

func (r *syncRecorder) PutDeferred(ctx context.Context, table string, puts []store.Put) error {
	r.calls = append(r.calls, "deferred")
	return r.Store.Put(ctx, table, puts)
}

func (r *syncRecorder) Sync(context.Context) error {
	r.calls = append(r.calls, "sync")
	return nil
}

// bulkRecorder is a syncRecorder of a store that takes bulk loads; as
// the Writer's SeriesIndexer it records when the index is staged.
type bulkRecorder struct{ syncRecorder }

func (r *bulkRecorder) Stage(context.Context, []index.Entry, *store.Batch) (index.Staged, error) {
	r.calls = append(r.calls, "index")
	return index.Staged{}, nil
}

func (r *bulkRecorder) PutBulk(ctx context.Context, table string, puts []store.Put) error {
	r.calls = append(r.calls, "bulk")
	return r.Store.Put(ctx, table, puts)
}

// TestWriteSeriesBulk: on a store that takes bulk loads
// (store.BulkPutter), every WriteSeries puts through it, deferred or
// last, its new series' index staged first; the last write syncs (the
// bulk put makes only its own rows durable), also with nothing to put.
func TestWriteSeriesBulk(t *testing.T) {
	testWriteSeriesCalls(t, "wb", true, []writeSeriesCase{
		{"deferred", true, t0, "index bulk"},
		{"last", false, t0 + 1, "index bulk sync"},
		{"last, all expired", false, t0 - 7_200_000, "sync"},
	})
}

// TestWriteSeriesDeferSync: WriteSeries's deferred writes put without the
// fsync, the last write of an import puts and then syncs, and a last
// write with nothing to put (all expired) syncs what the deferred ones
// put.
func TestWriteSeriesDeferSync(t *testing.T) {
	testWriteSeriesCalls(t, "ws", false, []writeSeriesCase{
		{"deferred", true, t0, "deferred"},
		{"last", false, t0 + 1, "deferred sync"},
		{"last, all expired", false, t0 - 7_200_000, "sync"},
	})
}

// writeSeriesCase is one WriteSeries of a sample at at, and the store
// calls it makes, in order.
type writeSeriesCase struct {
	name      string
	deferSync bool
	at        int64
	want      string
}

// testWriteSeriesCalls runs each case on a Writer over a syncRecorder
// (bulk: a bulkRecorder, also its SeriesIndexer) of one store, then
// checks the store holds one sample of metric that was not expired.
func testWriteSeriesCalls(t *testing.T, metric string, bulk bool, cases []writeSeriesCase) {
	s := teststack.New(t, teststack.Options{})
	key := wire.AppendLabel(nil, "__name__", metric)
	now := time.UnixMilli(t0 + 3_600_000)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := ingest.Options{Table: s.Tables.Data, Retention: time.Hour, Now: func() time.Time { return now }}
			sr := &syncRecorder{Store: s.Store}
			var st ingest.Putter = sr
			calls := &sr.calls
			if bulk {
				br := &bulkRecorder{syncRecorder{Store: s.Store}}
				st, calls, opts.Indexer = br, &br.calls, br
			}
			w := ingest.New(s.Mapper, st, opts)
			_, err := w.WriteSeries(s.Ctx(), 1, tc.deferSync, func(fn func(*wire.Series) error) error {
				return fn(&wire.Series{Key: key, Samples: []mapping.Point{{T: tc.at, V: 1}}})
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(*calls, " "); got != tc.want {
				t.Errorf("store calls %q, want %q", got, tc.want)
			}
		})
	}
	if got, want := stored(s), fmt.Sprintf("{__name__=%q} 1 1\n", metric); got != want {
		t.Errorf("stored:\n%swant\n%s", got, want)
	}
}
