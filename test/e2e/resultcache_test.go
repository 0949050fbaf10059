package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/ingest/limits"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/query/resultcache"
	"github.com/promhbase/promhbase/server"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// The tests of the results cache through the real server, on the
// backend PROMHBASE_TEST_BACKEND chooses, on the real time axis: samples
// of the last five hours, and range queries over steps older than the
// cache's offset (5m), which it keeps. Each test keeps the answers (a
// second query is a full hit: without an invalidation the cache would
// answer it again), changes what they read, and checks that the next
// answer is, bytes of the JSON included, the one nocache=1 gets, and that
// the change shows in it (so that the stale answer would have failed).

// cacheSeries are the series every test writes: counters whose values
// are their times in seconds, a sample every 15 s on the minute's grid.
var cacheSeries = [][]prompb.Label{
	lbl("__name__", "cachet_total", "job", "a", "i", "0"),
	lbl("__name__", "cachet_total", "job", "a", "i", "1"),
	lbl("__name__", "cachet_total", "job", "b", "i", "0"),
}

// cacheQueries are the queries the tests keep: a selector, a range
// function and an aggregation of a rate.
var cacheQueries = []string{`cachet_total`, `count_over_time(cachet_total[5m])`, `sum by (job) (rate(cachet_total[5m]))`}

// cacheRig is a promhbase with a results cache over a store holding
// cacheSeries from now−5h to now; start..end (a minute apart) are the
// steps of the queries, from 4 h to 10 min ago.
type cacheRig struct {
	t          *testing.T
	url        string
	srv        *testserver.Server
	reg        *prometheus.Registry // the cache's metrics
	start, end int64                // ms
	step       time.Duration
	queries    []string   // cacheQueries unless set
	params     url.Values // more form values of each query
}

// newCacheRig starts a server over st with a cache of maxAge (offset 5m),
// or opts.ResultsCache when set, and writes cacheSeries through it unless
// another server wrote them.
func newCacheRig(t *testing.T, st store.Store, tb testbackend.Tables, opts testserver.Options, maxAge time.Duration, write bool) *cacheRig {
	t.Helper()
	reg := prometheus.NewRegistry()
	if opts.ResultsCache == nil {
		opts.ResultsCache = resultcache.New(resultcache.Options{MaxBytes: 64 << 20, Offset: 5 * time.Minute, MaxAge: maxAge, Registerer: reg})
	}
	srv := testserver.Start(t, st, tb, mapping.DefaultLayout(), opts)
	now := time.Now().UnixMilli() / 60_000 * 60_000
	r := &cacheRig{t: t, url: srv.URL, srv: srv, reg: reg, start: now - 4*hour(), end: now - 10*60_000, step: time.Minute, queries: cacheQueries}
	if write {
		r.write(cacheData(now))
	}
	return r
}

// cacheData is cacheSeries from now−5h to now.
func cacheData(now int64) []prompb.TimeSeries {
	var out []prompb.TimeSeries
	for _, ls := range cacheSeries {
		out = append(out, floatSeries(ls, every(now-5*hour(), now, 15_000)))
	}
	return out
}

func (r *cacheRig) write(series []prompb.TimeSeries) {
	r.t.Helper()
	if err := remoteWrite(r.t.Context(), r.url, series); err != nil {
		r.t.Fatal(err)
	}
}

// answer is a query_range answer: its status, body and resolution.
type answer struct {
	code int
	body []byte
	res  string
}

// queryRange asks base for q over start..end; extra are more form values
// (nocache, max_source_resolution).
func queryRangeAt(t *testing.T, base, q string, start, end int64, step time.Duration, extra url.Values) answer {
	t.Helper()
	form := url.Values{"query": {q}, "start": {apiTime(start)}, "end": {apiTime(end)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	for k, v := range extra {
		form[k] = v
	}
	resp, err := http.PostForm(base+"/api/v1/query_range", form)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return answer{code: resp.StatusCode, body: body, res: resp.Header.Get("X-Promhbase-Resolution")}
}

func (r *cacheRig) query(q string, nocache bool) answer {
	r.t.Helper()
	extra := url.Values{}
	for k, v := range r.params {
		extra[k] = v
	}
	if nocache {
		extra.Set("nocache", "1")
	}
	return queryRangeAt(r.t, r.url, q, r.start, r.end, r.step, extra)
}

// counter returns the value of the cache's counter
// promhbase_query_results_cache_<name>.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	full := "promhbase_query_results_cache_" + name
	mfs, err := reg.Gather()
	i := slices.IndexFunc(mfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == full })
	if err != nil || i < 0 {
		t.Fatalf("no metric %s: %v", full, err)
	}
	return mfs[i].GetMetric()[0].GetCounter().GetValue()
}

// changes counts the cache's invalidations and the hours whose rollups
// the server built or built again (its /metrics).
func (r *cacheRig) changes() float64 {
	r.t.Helper()
	ms, err := testproc.FetchMetrics(r.t.Context(), r.url)
	if err != nil {
		r.t.Fatal(err)
	}
	return counter(r.t, r.reg, "invalidations_total") +
		ms.Sum("promhbase_rollup_hours_built_total") + ms.Sum("promhbase_rollup_hours_rebuilt_total")
}

// keep asks each query twice and returns the answers: the second is a
// full hit, and both equal the answer of nocache=1.
func (r *cacheRig) keep() map[string]answer {
	r.t.Helper()
	kept := map[string]answer{}
	for _, q := range r.queries {
		var first, second answer
		// The pair again when the cache was told of a change in between
		// or a rollup build ended (a background build or compaction
		// finishing under load: a build moves the rollups' built span,
		// which a downsampled query's key holds); a miss with neither
		// fails.
		for try := 1; ; try++ {
			inv := r.changes()
			first = r.query(q, false)
			hits := counter(r.t, r.reg, "hits_total")
			second = r.query(q, false)
			got := counter(r.t, r.reg, "hits_total")
			if got == hits+1 {
				break
			}
			if r.changes() == inv || try == 5 {
				r.t.Fatalf("%s: the second query was no full hit (hits %v → %v, try %d)", q, hits, got, try)
			}
		}
		if first.code != http.StatusOK || !bytes.Equal(first.body, second.body) || !bytes.Equal(second.body, r.query(q, true).body) {
			r.t.Fatalf("%s: answers differ before any change: %d %.300s / %.300s", q, first.code, first.body, second.body)
		}
		kept[q] = second
	}
	return kept
}

// fresh checks that each query's answer now equals nocache=1's, and
// differs from the kept one (the change is visible).
func (r *cacheRig) fresh(what string, kept map[string]answer) {
	r.t.Helper()
	for _, q := range r.queries {
		got, want := r.query(q, false), r.query(q, true)
		if got.code != want.code || !bytes.Equal(got.body, want.body) {
			r.t.Errorf("%s: %s: cached %d %.300s, nocache=1 %d %.300s", what, q, got.code, got.body, want.code, want.body)
		}
		if bytes.Equal(want.body, kept[q].body) {
			r.t.Errorf("%s: %s: the change does not show: the kept answer would pass", what, q)
		}
	}
}

// TestResultsCacheInvalidation: a write of old samples (a new series and
// a sample between two of an old one), delete_series over part of the
// range, a retention cycle deleting its first hours, and a change of the
// query limits each make the kept answers go: the next answer is
// nocache=1's.
func TestResultsCacheInvalidation(t *testing.T) {
	t.Parallel()
	t.Run("old write", func(t *testing.T) {
		st, tb := testbackend.New(t)
		r := newCacheRig(t, st, tb, testserver.Options{}, time.Hour, true)
		kept := r.keep()
		late := floatSeries(lbl("__name__", "cachet_total", "job", "a", "i", "late"), every(r.start+hour(), r.start+hour()+20*60_000, 15_000))
		mid := floatSeries(cacheSeries[2], []int64{r.start + 2*hour() + 7_000})
		mid.Samples[0].Value = 1 // a counter reset
		r.write([]prompb.TimeSeries{late, mid})
		r.fresh("old write", kept)
	})
	t.Run("delete_series", func(t *testing.T) {
		st, tb := testbackend.New(t)
		r := newCacheRig(t, st, tb, testserver.Options{EnableAdmin: true}, time.Hour, true)
		kept := r.keep()
		if code, body := postAdmin(t, r.url+"/api/v1/admin/tsdb/delete_series", url.Values{
			"match[]": {`cachet_total{i="1"}`}, "start": {apiTime(r.start + 30*60_000)}, "end": {apiTime(r.start + 90*60_000)},
		}); code != http.StatusNoContent {
			t.Fatalf("delete_series: %d %s, want 204", code, body)
		}
		r.fresh("delete_series", kept)
	})
	t.Run("retention", func(t *testing.T) {
		// The cycles' clock: now, then three hours later, so that the
		// cutoff (now−6h, to the hour) moves from before the samples into
		// the range.
		var shift atomic.Int64
		now := time.Now()
		ret := &server.RetentionConfig{Time: 6 * time.Hour, Interval: 50 * time.Millisecond,
			Now: func() time.Time { return now.Add(time.Duration(shift.Load())) }}
		st, tb := testbackend.New(t)
		r := newCacheRig(t, st, tb, testserver.Options{Retention: ret}, time.Hour, true)
		kept := r.keep()
		q := cacheQueries[0]
		shiftAt := time.Now()
		shift.Store(int64(3 * time.Hour))
		// Once a cycle deleted the first hours, the next one to end has
		// told the cache of it.
		deadline := time.Now().Add(time.Minute)
		poll.Until(t, time.Until(deadline), 20*time.Millisecond, "the first hours deleted by a retention cycle", func() (bool, string) {
			return !bytes.Equal(r.query(q, true).body, kept[q].body), "nocache=1 answers as before"
		})
		n := counter(t, r.reg, "invalidations_total")
		poll.Until(t, time.Until(deadline), 10*time.Millisecond, "a retention cycle ended", func() (bool, string) {
			return counter(t, r.reg, "invalidations_total") != n, fmt.Sprintf("invalidations %v", n)
		})
		t.Logf("cycles deleted the first hours in %s", time.Since(shiftAt).Round(time.Millisecond))
		r.fresh("retention", kept)
	})
	t.Run("limits", func(t *testing.T) {
		st, tb := testbackend.New(t)
		r := newCacheRig(t, st, tb, testserver.Options{}, time.Hour, true)
		kept := r.keep()
		// 10 samples a query: every query now fails.
		if err := r.srv.Server.SetLimits(limits.DefaultConfig(), 10); err != nil {
			t.Fatal(err)
		}
		r.fresh("limit lowered", kept)
		if got := r.query(cacheQueries[0], false); got.code == http.StatusOK {
			t.Fatalf("answer %.300s under a limit of 10 samples, want an error", got.body)
		}
		if err := r.srv.Server.SetLimits(limits.DefaultConfig(), 0); err != nil {
			t.Fatal(err)
		}
		for _, q := range cacheQueries {
			if got := r.query(q, false); !bytes.Equal(got.body, kept[q].body) {
				t.Errorf("%s: limit raised again: %.300s, want the first answer %.300s", q, got.body, kept[q].body)
			}
		}
	})
}

// TestResultsCacheRollupRebuilt: downsampled answers (max_source_resolution
// =5m, read from the 5m rollups) are kept; a late write into a built hour
// has its rollups built again, and the next answer is nocache=1's.
func TestResultsCacheRollupRebuilt(t *testing.T) {
	t.Parallel()
	st, tb := testbackend.NewWithRollups(t)
	now := time.Now()
	nowMs := now.UnixMilli() / 60_000 * 60_000
	// The samples are there before the scheduler first looks: it builds
	// their hours, backwards. Its clock stands still at now, so that no
	// hour falls due meanwhile.
	w := testserver.Start(t, st, tb, mapping.DefaultLayout(), testserver.Options{})
	if err := remoteWrite(t.Context(), w.URL, cacheData(nowMs)); err != nil {
		t.Fatal(err)
	}
	r := newCacheRig(t, st, tb, testserver.Options{Rollup: &server.RollupConfig{Enabled: true, CheckInterval: 50 * time.Millisecond,
		Now: func() time.Time { return now }}}, time.Hour, false)
	hourStart := nowMs / hour() * hour()
	r.start, r.end, r.step = hourStart-3*hour(), hourStart-2*hour(), 5*time.Minute
	r.queries = []string{`max_over_time(cachet_total[10m])`, `count_over_time(cachet_total[5m])`, `sum by (job) (rate(cachet_total[30m]))`}
	r.params = url.Values{"max_source_resolution": {"5m"}}
	// Every hour built: the first hour of the samples is read from
	// rollups too (the span's start then stays put).
	deadline := time.Now().Add(2 * time.Minute)
	probe := (nowMs-5*hour())/hour()*hour() + hour()
	for _, q := range r.queries {
		poll.Until(t, time.Until(deadline), 20*time.Millisecond, q+": the rollups of the samples' hours built", func() (bool, string) {
			a := queryRangeAt(t, r.url, q, probe, r.end, r.step, url.Values{"max_source_resolution": {"5m"}, "nocache": {"1"}})
			return a.res == "5m", "resolution " + a.res
		})
	}
	kept := r.keep()
	for q, a := range kept {
		if a.res != "5m" {
			t.Fatalf("%s: resolution %q, want 5m", q, a.res)
		}
	}
	// A sample far above its neighbours in the range's first hour: its
	// hour is built again (not the hour before: the sample is not on the
	// hour's first instant, which the hour before's last window holds).
	// The scheduler's count is read before the write: it may build the
	// hours again before the write's answer is read (CI saw it).
	late := floatSeries(cacheSeries[2], []int64{r.start + 30*60_000 + 7_000})
	late.Samples[0].Value = 1e12
	const rebuilt = "promhbase_rollup_hours_rebuilt_total"
	n := testproc.GatherSum(t, r.srv.Registry, rebuilt)
	r.write([]prompb.TimeSeries{late})
	poll.Until(t, 2*time.Minute, 10*time.Millisecond, "the hour built again by the scheduler", func() (bool, string) {
		got := testproc.GatherSum(t, r.srv.Registry, rebuilt)
		return got >= n+1, fmt.Sprintf("hours rebuilt %v, want %v", got, n+1)
	})
	r.fresh("rollups built again", kept)
	for _, q := range r.queries {
		if a := r.query(q, false); a.res != "5m" {
			t.Errorf("%s: resolution %q after the rebuild, want 5m", q, a.res)
		}
	}
}

// TestResultsCacheReplicas: two promhbase replicas (A and B, each with
// its own results cache and UID caches) over the same tables. B keeps
// answers; old samples written through A are not told to B, which may
// serve its kept answers until its max-age has passed since they were
// evaluated, never after: every answer B gives to a request that starts
// max-age after the write began is nocache=1's.
func TestResultsCacheReplicas(t *testing.T) {
	t.Parallel()
	const maxAge = 2 * time.Second
	st, tb := testbackend.New(t)
	a := newCacheRig(t, st, tb, testserver.Options{}, time.Hour, true)
	b := newCacheRig(t, st, tb, testserver.Options{ColdReads: true}, maxAge, false)
	b.start, b.end = a.start, a.end
	keptAt := time.Now()
	kept := b.keep()
	akept := a.keep()

	late := floatSeries(lbl("__name__", "cachet_total", "job", "a", "i", "late"), every(a.start+hour(), a.start+hour()+20*60_000, 15_000))
	wrote := time.Now()
	a.write([]prompb.TimeSeries{late})
	a.fresh("A, the replica written through", akept)

	stale, first := 0, true
	var freshAfter time.Duration
	for {
		asked := time.Now()
		if asked.After(wrote.Add(maxAge + time.Second)) {
			break
		}
		all := true
		for _, q := range b.queries {
			sent := time.Now()
			got, want := b.query(q, false), b.query(q, true)
			if bytes.Equal(got.body, want.body) {
				continue
			}
			all = false
			stale++
			if sent.After(wrote.Add(maxAge)) {
				t.Fatalf("%s: B answered stale %s after the write (max-age %s): %.300s, nocache=1 %.300s",
					q, sent.Sub(wrote).Round(time.Millisecond), maxAge, got.body, want.body)
			}
			if !bytes.Equal(got.body, kept[q].body) {
				t.Fatalf("%s: B's answer is neither the kept one nor nocache=1's: %.300s", q, got.body)
			}
		}
		if first && asked.Before(keptAt.Add(maxAge)) && all {
			// B kept them less than max-age ago and was not told: its
			// answers must be the kept ones, which the write changed.
			t.Fatal("B answered as nocache=1 before its max-age had passed: the write does not show, or B was told")
		}
		first = false
		if all && freshAfter == 0 {
			freshAfter = asked.Sub(wrote)
		}
		// The pacing of the samples of B's answers across max-age: wall
		// time passing is the subject.
		time.Sleep(100 * time.Millisecond)
	}
	if freshAfter == 0 {
		t.Fatal("B never answered as nocache=1")
	}
	t.Logf("backend %s: B answered %d stale answers, then nocache=1's from %s after the write (max-age %s)",
		testbackend.Name(), stale, freshAfter.Round(time.Millisecond), maxAge)
}
