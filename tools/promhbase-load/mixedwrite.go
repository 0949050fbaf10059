package main

// The mixed command's writes: open-loop senders on a fixed schedule,
// and the load window that runs them beside the dashboards.
//
// Each series belongs to a target (100 series, nodeCatalog's), each
// target to one sender (target % --senders), as Prometheus's queue
// shards series. A target is scraped every --interval at its phase (the
// history generator's, modulo the interval), its series' values moved
// on from where the history left them, stamped with the scrape's
// scheduled time. A sender cuts a request when it holds --batch samples
// (whole scrapes) or its first sample is 5 s old (Prometheus's
// batch_send_deadline), and sends it at the time its last scrape was
// scheduled, or at once when it is behind: one request at a time, so a
// series' samples arrive in order. Its ack latency runs from that
// scheduled time, so a server that falls behind pays for the wait of
// every request queued behind a slow one (no coordinated omission).

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/golang/snappy"
)

// sendDeadlineMs is Prometheus's batch_send_deadline: a request goes
// once its oldest sample is this old, full or not.
const sendDeadlineMs = 5000

// mixedDrain bounds how long after --duration the senders may go on
// sending what their schedule held (a server that fell behind); what is
// left then is counted unsent.
const mixedDrain = time.Minute

// liveScrape is one target of a sender and its phase in the interval.
type liveScrape struct {
	target *genTarget
	phase  int64 // ms
}

// liveSender is one sender's schedule and where it stands in it.
type liveSender struct {
	scrapes        []liveScrape // by phase
	g              genConfig    // the load's (its interval, for the targets' restarts)
	batch          int
	intervalMs     int64
	startMs, endMs int64 // the load's window; scrapes at or after endMs are not made
	round, next    int   // the next scrape: scrapes[next] of round
}

// liveRequest is one remote-write 1.0 request of a sender.
type liveRequest struct {
	body    []byte // snappy-encoded
	samples int
	sched   int64 // when it is due (Unix ms)
	lastTs  int64 // its newest sample
}

// newLiveSenders runs hist's generator to its end, so that the load's
// values continue the history's, and deals its targets to m.senders
// senders, each a sample every m.interval.
func newLiveSenders(hist genConfig, m mixedOptions, batch int) []*liveSender {
	gen := newGenerator(hist)
	var sc scrape
	ti := 0
	for gen.next(&sc, &ti) {
	}
	live := hist
	live.interval = m.interval
	iv := m.interval.Milliseconds()
	senders := make([]*liveSender, m.senders)
	for i := range senders {
		senders[i] = &liveSender{g: live, batch: batch, intervalMs: iv}
	}
	for _, tg := range gen.targets {
		ls := senders[tg.idx%m.senders]
		ls.scrapes = append(ls.scrapes, liveScrape{target: tg, phase: tg.phase % iv})
	}
	for _, ls := range senders {
		slices.SortStableFunc(ls.scrapes, func(a, b liveScrape) int { return int(a.phase - b.phase) })
	}
	return senders
}

// nextRequest makes the sender's next request from its next scrapes;
// false once its schedule up to endMs is done.
func (ls *liveSender) nextRequest() (liveRequest, bool) {
	var req liveRequest
	buf := make([]byte, 0, ls.batch*160)
	first := int64(-1)
	for req.samples < ls.batch {
		if ls.next == len(ls.scrapes) {
			ls.next, ls.round = 0, ls.round+1
		}
		sc := ls.scrapes[ls.next]
		ts := ls.startMs + int64(ls.round)*ls.intervalMs + sc.phase
		if ts >= ls.endMs {
			break
		}
		if first >= 0 && ts-first >= sendDeadlineMs {
			req.sched = first + sendDeadlineMs
			break
		}
		ls.next++
		if first < 0 {
			first = ts
		}
		sc.target.advance(ls.g)
		for i := range sc.target.series {
			s := &sc.target.series[i]
			buf = appendTimeSeries(buf, s.pbLabels, ts, s.value)
		}
		req.samples += len(sc.target.series)
		req.sched, req.lastTs = ts, ts
	}
	if req.samples == 0 {
		return req, false
	}
	req.body = snappy.Encode(nil, buf)
	return req, true
}

// run sends the sender's requests, each when due (at once when behind),
// one at a time, and records them in st; once ctx ends, what is left is
// counted unsent.
func (ls *liveSender) run(ctx context.Context, client *http.Client, url string, st *writeStats) {
	for {
		req, ok := ls.nextRequest()
		if !ok {
			return
		}
		sched := time.UnixMilli(req.sched)
		if !sleepUntil(ctx, sched) {
			st.unsend(req)
			continue
		}
		began := time.Now()
		err := postWith(ctx, client, url, "application/x-protobuf", "snappy", req.body)
		st.record(req, began.Sub(sched), time.Since(sched), err)
	}
}

// sleepUntil waits until t; false when ctx ended first (or had).
func sleepUntil(ctx context.Context, t time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// writeStats is what the senders recorded.
type writeStats struct {
	mu       sync.Mutex
	lat      []time.Duration // of each request, from when it was due to its answer
	requests int
	errors   int
	firstErr error
	// samples were acknowledged; unsent were left when the drain's
	// bound came.
	samples, unsent int64
	behind          time.Duration // the latest a request was sent after it was due
	lastTs          int64         // the newest sample sent
	lastAck         time.Time
}

// record counts one request sent, sent late by behind, answered after
// took (from when it was due), failed when err is set.
func (st *writeStats) record(req liveRequest, behind, took time.Duration, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.requests++
	st.lat = append(st.lat, took)
	st.behind = max(st.behind, behind)
	st.lastTs = max(st.lastTs, req.lastTs)
	if err != nil {
		st.errors++
		if st.firstErr == nil {
			st.firstErr = err
		}
		return
	}
	st.samples += int64(req.samples)
	st.lastAck = time.Now()
}

// unsend counts a request not sent.
func (st *writeStats) unsend(req liveRequest) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.unsent += int64(req.samples)
}

// newLoadClient is an HTTP client that keeps conns connections open to
// one host (the default keeps 2: the senders would open new ones).
func newLoadClient(conns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = conns, conns
	return &http.Client{Transport: t}
}

// mixedLoad runs the senders and the dashboards from the next whole
// second for o.duration (the senders drain their schedule for at most
// mixedDrain after it), and records in res what they measured, the
// server's CPU seconds and peak resident set over it, and the load
// generator's own CPU seconds.
func (s *compared) mixedLoad(o options, m mixedOptions, senders []*liveSender, res *mixedResult) error {
	pid := s.cmd.Process.Pid
	res.peakReset = resetPeakRSS(pid)
	cpu0, gen0, err := procCPUs(pid)
	if err != nil {
		return err
	}
	client := newLoadClient(m.senders + len(mixedPanels)*m.dashboards)
	defer client.CloseIdleConnections()
	start := time.Now().Add(time.Second).Truncate(time.Second)
	end := start.Add(o.duration)
	ctx, cancel := context.WithDeadline(context.Background(), end.Add(mixedDrain))
	defer cancel()
	res.writes, res.dash = &writeStats{}, newDashStats(m.ranges)
	var wg sync.WaitGroup
	for _, ls := range senders {
		ls.startMs, ls.endMs = start.UnixMilli(), end.UnixMilli()
		wg.Go(func() { ls.run(ctx, client, s.base+"/api/v1/write", res.writes) })
	}
	for i := range m.dashboards {
		wg.Go(func() { runDashboard(ctx, client, s.base, m, i, start, end, res.dash) })
	}
	wg.Wait()
	res.elapsed = res.writes.lastAck.Sub(start)
	cpu1, gen1, err := procCPUs(pid)
	if err != nil {
		return err
	}
	res.cpu, res.genCPU = cpu1-cpu0, gen1-gen0
	if res.peakRSS, err = procHWM(pid); err != nil {
		return fmt.Errorf("peak RSS of %d: %w", pid, err)
	}
	return nil
}
