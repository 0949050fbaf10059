//go:build faults

package faults

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/series/uid"
)

// TestRestartDuringWrites restarts HBase (tools/scripts/hbase.sh restart: same
// data, WALs and ZooKeeper state) while a writer streams remote-write
// requests into promhbase, retrying as Prometheus does. Every sample must
// then read back exactly once with its exact value, the writer must have
// seen the outage (5xx answers), and the UID table must be consistent
// though new UIDs were being assigned during the outage.
func TestRestartDuringWrites(t *testing.T) {
	const (
		numSeries    = 200
		numRequests  = 300
		restartAfter = 50                     // requests acknowledged before the restart starts
		pace         = 100 * time.Millisecond // at most one request per pace
		step         = int64(15_000)          // ms between the samples of a series: 300 requests span two hours
	)
	srv := newServer(t, "restart")
	w := newWriter(srv.url)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	build := func(r int) *prompb.WriteRequest {
		ts := t0 + int64(r)*step
		req := &prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, 0, numSeries+1)}
		for s := range numSeries {
			req.Timeseries = append(req.Timeseries, series([]prompb.Sample{{Timestamp: ts, Value: valueOf(s, r)}},
				"__name__", "fault_restart", "series", fmt.Sprintf("s%03d", s), "job", "faults"))
		}
		// A brand-new series in every request: new UIDs are assigned
		// while HBase goes down and comes back too.
		req.Timeseries = append(req.Timeseries, series([]prompb.Sample{{Timestamp: ts, Value: float64(r)}},
			"__name__", "fault_restart_new", "request", fmt.Sprintf("r%04d", r)))
		return req
	}

	acked := make([]time.Time, numRequests)
	var sentN, ackedN atomic.Int64
	reached := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for r := range numRequests {
			if r == restartAfter {
				close(reached)
			}
			start := time.Now()
			sentN.Add(1)
			if err := w.send(ctx, build(r)); err != nil {
				done <- fmt.Errorf("request %d: %w", r, err)
				return
			}
			acked[r] = time.Now()
			ackedN.Add(1)
			if d := pace - time.Since(start); d > 0 {
				time.Sleep(d) // pacing the load at its rate: not a wait on anything
			}
		}
		done <- nil
	}()

	// A reader follows one series all along, as a dashboard would: its
	// answers must be 200 or 5xx, and every 200 must hold what was
	// acknowledged before the read started.
	stopReader := make(chan struct{})
	readerDone := make(chan restartReads, 1)
	go func() {
		readerDone <- followSeries(ctx, srv.url, stopReader, func() (int64, int64) { return ackedN.Load(), sentN.Load() },
			t0+numRequests*step, step, func(r int64) float64 { return valueOf(0, int(r)) })
	}()

	select {
	case <-reached:
	case err := <-done:
		t.Fatalf("writer ended before the restart: %v", err)
	}
	restartStart := time.Now()
	_, restartErr := hbaseScript(ctx, t, "restart")
	restartEnd := time.Now()
	if restartErr != nil {
		cancel()
		if err := <-done; err != nil {
			t.Logf("writer, cancelled: %v", err)
		}
		close(stopReader)
		<-readerDone
		t.Fatalf("restart HBase: %v", restartErr)
	}
	writeErr := <-done
	close(stopReader)
	reads := <-readerDone
	if writeErr != nil {
		t.Fatalf("writer: %v (%s)", writeErr, &w.stats)
	}

	var before, during, after int
	var longest time.Duration
	for r, at := range acked {
		switch {
		case at.Before(restartStart):
			before++
		case at.Before(restartEnd):
			during++
		default:
			after++
		}
		if r > 0 {
			longest = max(longest, at.Sub(acked[r-1]))
		}
	}
	t.Logf("restart took %s; requests acknowledged before it %d, during it %d, after it %d; longest gap between acknowledgements %s",
		restartEnd.Sub(restartStart).Round(100*time.Millisecond), before, during, after, longest.Round(100*time.Millisecond))
	t.Logf("writer: %s", &w.stats)
	if w.stats.status5xx.Load()+w.stats.connErrors.Load() == 0 {
		t.Errorf("the writer saw no 5xx answer and no connection error: the restart was not seen")
	}
	if after == 0 {
		t.Errorf("no request was acknowledged after the restart")
	}
	t.Logf("reader of one series: %d answers 200 (all checked), other answers %v, %d without an answer", reads.ok, reads.codes, reads.connErrors)
	for _, p := range reads.problems[:min(len(reads.problems), 20)] {
		t.Error(p)
	}
	if reads.ok == 0 {
		t.Errorf("the reader got no answer")
	}

	t.Run("read back", func(t *testing.T) {
		want := expectation{}
		for s := range numSeries {
			lbls := labels.FromStrings("__name__", "fault_restart", "series", fmt.Sprintf("s%03d", s), "job", "faults")
			smp := make([]sample, numRequests)
			for r := range numRequests {
				smp[r] = sample{t0 + int64(r)*step, valueOf(s, r)}
			}
			want[lbls.String()] = smp
		}
		end := t0 + numRequests*step
		checkExact(t, "fault_restart", srv.url, want, t0, end, eq("__name__", "fault_restart"))

		wantNew := expectation{}
		for r := range numRequests {
			lbls := labels.FromStrings("__name__", "fault_restart_new", "request", fmt.Sprintf("r%04d", r))
			wantNew[lbls.String()] = []sample{{t0 + int64(r)*step, float64(r)}}
		}
		checkExact(t, "fault_restart_new", srv.url, wantNew, t0, end, re("__name__", "fault_restart_new"), re("request", "r.*"))
	})

	t.Run("uid fsck", func(t *testing.T) {
		rep, err := uid.UIDFsck(t.Context(), srv.st, srv.tables.UID, srv.layout)
		if err != nil {
			t.Fatal(err)
		}
		logFsck(t, rep)
		// fault_restart and fault_restart_new; series, job and request;
		// 200 series values, "faults" and 300 request values.
		if want := [3]int{2, 3, numSeries + 1 + numRequests}; rep.Forward != want {
			t.Errorf("forward mappings (metrics, tagk, tagv) = %v, want %v", rep.Forward, want)
		}
	})
}

// logFsck logs a UID fsck report and fails the test on its errors.
func logFsck(t *testing.T, rep uid.FsckReport) {
	t.Helper()
	t.Logf("uid fsck: forward mappings: metrics %d, tagk %d, tagv %d; %d errors, %d orphans",
		rep.Forward[uid.KindMetric], rep.Forward[uid.KindTagK], rep.Forward[uid.KindTagV], len(rep.Errors), len(rep.Orphans))
	if len(rep.Orphans) > 0 {
		t.Logf("uid fsck orphans (harmless; first 10):\n%s", strings.Join(rep.Orphans[:min(10, len(rep.Orphans))], "\n"))
	}
	for _, e := range rep.Errors {
		t.Errorf("uid fsck: %s", e)
	}
}

// restartReads is what followSeries saw.
type restartReads struct {
	ok         int
	codes      map[int]int // answers other than 200, by status code
	connErrors int
	problems   []string
}

// followSeries reads series s000 of fault_restart every 200 ms until stop
// is closed. progress returns the requests acknowledged and sent so far.
// An answer other than 200 or 5xx is a problem, as is a 200 that misses a
// sample acknowledged before the read or holds one that was not sent.
func followSeries(ctx context.Context, base string, stop <-chan struct{}, progress func() (acked, sent int64), end, step int64, value func(r int64) float64) restartReads {
	client := &http.Client{Timeout: clientTimeout}
	rep := restartReads{codes: map[int]int{}}
	want := labels.FromStrings("__name__", "fault_restart", "series", "s000", "job", "faults")
	for {
		select {
		case <-stop:
			return rep
		case <-ctx.Done():
			return rep
		case <-time.After(200 * time.Millisecond):
		}
		acked, _ := progress()
		got, err := remoteRead(ctx, client, base, t0, end, eq("__name__", "fault_restart"), eq("series", "s000"))
		_, sent := progress()
		var se *statusError
		switch {
		case errors.As(err, &se):
			rep.codes[se.code]++
			if se.code/100 != 5 {
				rep.problems = append(rep.problems, fmt.Sprintf("read answered %s", se))
			}
			continue
		case err != nil:
			rep.connErrors++
			continue
		}
		rep.ok++
		switch {
		case len(got) == 0 && acked == 0:
		case len(got) != 1 || !labels.Equal(got[0].labels, want):
			rep.problems = append(rep.problems, fmt.Sprintf("read of %s returned %d series", want, len(got)))
		default:
			for _, p := range streamProblems(got[0].samples, step, acked, sent, value) {
				rep.problems = append(rep.problems, fmt.Sprintf("read of %s (acknowledged %d, sent %d): %s", want, acked, sent, p))
			}
		}
	}
}
