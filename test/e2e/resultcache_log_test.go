package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/query/resultcache"
	"github.com/promhbase/promhbase/server"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// TestResultsCacheReplicasLog: two promhbase replicas (A and B, each with
// its own results cache, UID caches and a max-age of an hour) over the
// same tables, each appending its changes of old data to the results
// cache's log in the store and reading the other's every poll interval.
// B keeps answers; then an old write, and then a delete_series, through
// A: every answer B gives to a request sent more than a poll interval
// (plus a slack for the poll's own read) after A acknowledged the change
// is nocache=1's, also when A keeps no answers itself. Without the log, B
// still serves its kept answers then, which shows that the check sees a
// stale answer.
func TestResultsCacheReplicasLog(t *testing.T) {
	t.Parallel()
	const (
		pollEvery = 100 * time.Millisecond
		slack     = 2 * time.Second
	)
	for _, tc := range []struct {
		name     string
		log      bool
		aNoCache bool // A keeps no answers (a replica that only takes writes)
	}{{"with the log", true, false}, {"with the log, A keeping no answers", true, true}, {"without the log", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			st, tb := testbackend.New(t)
			lc := server.ResultsCacheLogConfig{Enabled: tc.log, PollInterval: pollEvery}
			aOpts := testserver.Options{EnableAdmin: true, ResultsCacheLog: lc}
			if tc.aNoCache {
				aOpts.ResultsCache = resultcache.New(resultcache.Options{Offset: 5 * time.Minute})
			}
			a := newCacheRig(t, st, tb, aOpts, time.Hour, true)
			b := newCacheRig(t, st, tb, testserver.Options{ColdReads: true, ResultsCacheLog: lc}, time.Hour, false)
			b.start, b.end = a.start, a.end
			changes := []struct {
				name string
				do   func()
			}{
				{"old write", func() {
					a.write([]prompb.TimeSeries{floatSeries(lbl("__name__", "cachet_total", "job", "a", "i", "late"),
						every(a.start+hour(), a.start+hour()+20*60_000, 15_000))})
				}},
				{"delete_series", func() {
					if code, body := postAdmin(t, a.url+"/api/v1/admin/tsdb/delete_series", url.Values{
						"match[]": {`cachet_total{i="1"}`}, "start": {apiTime(a.start + 30*60_000)}, "end": {apiTime(a.start + 90*60_000)},
					}); code != http.StatusNoContent {
						t.Fatalf("delete_series: %d %s, want 204", code, body)
					}
				}},
			}
			if !tc.log {
				changes = changes[:1]
			}
			for _, ch := range changes {
				kept := b.keep()
				ch.do()
				done := time.Now()
				if !tc.log {
					// Nothing to observe: B must go on answering from its cache
					// for longer than a poll interval, so wall time passes.
					time.Sleep(pollEvery + slack)
					for _, q := range b.queries {
						if got := b.query(q, false); !bytes.Equal(got.body, kept[q].body) {
							t.Fatalf("%s: %s: without the log B no longer answers its kept answer: %.300s", ch.name, q, got.body)
						}
						if bytes.Equal(b.query(q, true).body, kept[q].body) {
							t.Fatalf("%s: %s: the change does not show in nocache=1's answer", ch.name, q)
						}
					}
					return
				}
				fresh := time.Duration(0)
				if err := poll.Wait(t.Context(), time.Minute, pollEvery/4, "fresh in B", func() (bool, string, error) {
					sent := time.Now()
					stale := ""
					for _, q := range b.queries {
						got, want := b.query(q, false), b.query(q, true)
						if bytes.Equal(want.body, kept[q].body) {
							t.Fatalf("%s: %s: the change does not show in nocache=1's answer", ch.name, q)
						}
						if !bytes.Equal(got.body, want.body) && stale == "" {
							stale = q
						}
					}
					switch {
					case stale == "":
						fresh = sent.Sub(done)
						return true, "", nil
					case sent.After(done.Add(pollEvery + slack)):
						return false, "", fmt.Errorf("%s: %s: B answered stale %s after A acknowledged the change (poll interval %s)",
							ch.name, stale, sent.Sub(done).Round(time.Millisecond), pollEvery)
					}
					return false, "stale " + stale, nil
				}); err != nil {
					t.Fatal(err)
				}
				b.fresh(ch.name+", B", kept)
				t.Logf("backend %s: %s: B answered nocache=1's from %s after A acknowledged it", testbackend.Name(), ch.name, fresh.Round(time.Millisecond))
			}
		})
	}
}
