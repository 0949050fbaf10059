package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/promjson"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// delT0 is the first sample of the deletion tests: 2010-12-12T10:00:00Z,
// an hour boundary.
const delT0 = int64(1292148000000)

// writeDeleteFixture writes del_test{i="0".."n-1"}: a sample every 30 s
// for three hours, value k for the k-th.
func writeDeleteFixture(t *testing.T, base string, n int) {
	t.Helper()
	for i := range n {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "del_test"}, {Name: "i", Value: fmt.Sprint(i)}}}
		for k := range 360 {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: delT0 + int64(k)*30_000, Value: float64(k)})
		}
		remoteWrite(t, base, []prompb.TimeSeries{ts})
	}
}

// readDeleteFixture returns the sample timestamps of every del_test
// series, by its label i, through the query API.
func readDeleteFixture(t *testing.T, base string) map[string][]int64 {
	t.Helper()
	q := url.Values{"query": {"del_test[4h]"}, "time": {fmt.Sprint((delT0 + 3*3600_000) / 1000)}}
	resp, err := http.Get(base + "/api/v1/query?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := promjson.Decode(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("query: %d %v", resp.StatusCode, err)
	}
	out := map[string][]int64{}
	for _, r := range body.Data.Result {
		ps, err := r.Points()
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		for _, p := range ps {
			out[r.Metric["i"]] = append(out[r.Metric["i"]], p.T)
		}
	}
	return out
}

// postDelete asks serve's admin API to delete and returns the status.
func postDelete(base string, form url.Values) (int, error) {
	resp, err := http.PostForm(base+"/api/v1/admin/tsdb/delete_series", form)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// checkDeleted fails the test unless every series has exactly its
// samples outside [start, end] when selected(i), all 360 otherwise;
// inside (when !complete) a selected series may still hold some.
func checkDeleted(t *testing.T, got map[string][]int64, n int, selected func(i int) bool, start, end int64, complete bool) {
	t.Helper()
	for i := range n {
		have := map[int64]bool{}
		for _, ts := range got[fmt.Sprint(i)] {
			have[ts] = true
		}
		for k := range 360 {
			ts := delT0 + int64(k)*30_000
			inside := selected(i) && ts >= start && ts <= end
			switch {
			case !inside && !have[ts]:
				t.Fatalf("series i=%d lost its sample at %d, outside the deleted range [%d, %d]", i, ts, start, end)
			case inside && complete && have[ts]:
				t.Fatalf("series i=%d still has its sample at %d, inside the deleted range [%d, %d]", i, ts, start, end)
			}
		}
	}
}

// waitCounter polls base/metrics until the unlabelled counter name is at
// least want, and fails the test if it is not within limit.
func waitCounter(t *testing.T, base, name string, want float64, limit time.Duration) {
	t.Helper()
	testproc.WaitMetrics(t, base, limit, fmt.Sprintf("%s at least %v", name, want), func(p testproc.MetricPage) (bool, string) {
		return len(p[name]) == 1 && p.Sum(name) >= want, fmt.Sprintf("%s %v", name, p[name])
	})
}

// TestDeleteKilled: a delete_series killed with SIGKILL midway leaves
// every sample outside its range and selectors; asked again after a
// restart it completes; the deleted samples stay deleted through
// compaction and another restart; `promhbase delete` does the same
// offline. Both bounds are inclusive.
func TestDeleteKilled(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	// Every table fresh (on HBase also the exemplar and index tables,
	// which a delete prunes), dropped when the test ends.
	flags := testbackend.ServeFlags(t)
	serveFlags := append([]string{"--web.enable-admin-api", "--storage.compaction.grace=1s"}, flags...)
	srv, base := startServe(t, bin, serveFlags...)
	const n = 40
	writeDeleteFixture(t, base, n)

	// Partly the first and third hours, all of the second; on exact
	// sample times, which go too.
	start, end := delT0+30*60_000, delT0+2*3600_000+10*60_000
	selected := func(i int) bool { return i == 2 || strings.HasPrefix(fmt.Sprint(i), "1") }
	form := url.Values{"match[]": {`del_test{i=~"1.*"}`, `del_test{i="2"}`},
		"start": {fmt.Sprint(float64(start) / 1000)}, "end": {fmt.Sprint(float64(end) / 1000)}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = postDelete(base, form) // killed midway: any answer, or none
	}()
	// The kill's moment is the subject: 20 ms into the delete, wherever
	// it is then (nothing to observe: any point of it will do).
	time.Sleep(20 * time.Millisecond)
	if err := syscall.Kill(-srv.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srv.Exited()
	<-done

	// Only the late sample below is written from here on: this serve's
	// compactions check every 100ms, so the test need not wait 30s.
	srv, base = startServe(t, bin, append([]string{"--storage.compaction.check-interval=100ms"}, serveFlags...)...)
	checkDeleted(t, readDeleteFixture(t, base), n, selected, start, end, false)
	if code, err := postDelete(base, form); err != nil || code != http.StatusNoContent {
		t.Fatalf("delete again: %d %v", code, err)
	}
	checkDeleted(t, readDeleteFixture(t, base), n, selected, start, end, true)
	// Late samples in a partly deleted row, then its compaction (grace 1s,
	// checked every 100ms): the deleted samples stay deleted.
	late := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "del_test"}, {Name: "i", Value: "2"}},
		Samples: []prompb.Sample{{Timestamp: delT0 + 15_000, Value: -1}}}
	remoteWrite(t, base, []prompb.TimeSeries{late})
	waitCounter(t, base, "promhbase_compaction_rows_compacted_total", 1, time.Minute)
	stopServe(t, srv)
	srv, base = startServe(t, bin, serveFlags...)
	got := readDeleteFixture(t, base)
	checkDeleted(t, got, n, selected, start, end, true)
	if len(got["2"]) != 360-int((end-start)/30_000+1)+1 {
		t.Errorf("series i=2 has %d samples after a late one and compaction, want %d", len(got["2"]), 360-int((end-start)/30_000+1)+1)
	}
	stopServe(t, srv)

	if testbackend.Name() == "hbase" {
		// The offline command, with serve running on the same tables:
		// serve's results cache learns of it from the log within a poll.
		srv, base = startServe(t, bin, append([]string{"--query.results-cache.log-poll-interval=100ms"}, serveFlags...)...)
		defer stopServe(t, srv)
		ask := func(nocache bool) string {
			t.Helper()
			form := url.Values{"query": {`sum(del_test{i="3"})`}, "start": {fmt.Sprint(delT0 / 1000)}, "end": {fmt.Sprint(delT0/1000 + 3*3600)}, "step": {"60"}}
			if nocache {
				form.Set("nocache", "1")
			}
			resp, err := http.PostForm(base+"/api/v1/query_range", form)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("query_range: %d %v %s", resp.StatusCode, err, b)
			}
			return string(b)
		}
		kept := ask(false)
		if again := ask(false); again != kept || again != ask(true) {
			t.Fatal("answers differ before the delete")
		}
		out, err := run(t, bin, append([]string{"delete", `--match=del_test{i="3"}`, fmt.Sprintf("--start=%d", delT0), fmt.Sprintf("--end=%d", delT0+29_999)}, flags...)...)
		if err != nil {
			t.Fatalf("promhbase delete: %v\n%s", err, out)
		}
		poll.Until(t, 5*time.Second, 50*time.Millisecond, "answering as after promhbase delete", func() (bool, string) {
			got := ask(false)
			return got == ask(true), fmt.Sprintf("%.200s", got)
		})
		if ask(true) == kept {
			t.Fatal("the delete does not show in the answer")
		}
		return
	}
	out, err := run(t, bin, append([]string{"delete", `--match=del_test{i="3"}`, fmt.Sprintf("--start=%d", delT0), fmt.Sprintf("--end=%d", delT0+29_999)}, flags...)...)
	if err != nil {
		t.Fatalf("promhbase delete: %v\n%s", err, out)
	}
	srv, base = startServe(t, bin, serveFlags...)
	got = readDeleteFixture(t, base)
	if len(got["3"]) != 359 || got["3"][0] != delT0+30_000 {
		t.Errorf("after promhbase delete of its first sample, i=3 has %d samples from %v", len(got["3"]), got["3"][:1])
	}
	stopServe(t, srv)
}
