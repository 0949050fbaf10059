package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/test/testkit/promremote"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// smallDisk mounts a tmpfs of size bytes on a new directory and returns
// it; unmounted when the test ends. Mounting takes root: without it the
// test fails under CI and is skipped elsewhere.
func smallDisk(t *testing.T, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount a %d-byte tmpfs (the test needs root): %v\n%s", size, err, out)
		}
		t.Skipf("mount a tmpfs (the test needs root): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
		}
	})
	return dir
}

// growDisk remounts the tmpfs at dir with size bytes.
func growDisk(t *testing.T, dir string, size int64) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", fmt.Sprintf("remount,size=%d", size), dir).CombinedOutput(); err != nil {
		t.Fatalf("grow %s to %d bytes: %v\n%s", dir, size, err, out)
	}
}

// diskFullSender is one of TestServeDiskFull's senders: its own 100
// series, a request of 20 samples each (2000 samples), sent again while
// it is answered 503, as Prometheus's queue does.
type diskFullSender struct {
	w     int
	t0    int64
	acked int // requests answered 204, in order
	sent  int // requests sent (the last may have been refused)
}

const (
	diskFullSeries  = 100
	diskFullPerReq  = 20
	diskFullStepMs  = 15_000
	diskFullMetric  = "diskfull_test"
	diskFullWriters = 8
)

// request returns the series of the sender's k-th request: sample j of
// series i at t0 + (k*20+j)*15 s, its value drawn from a seed of (w, i,
// k, j), so that any sample read back can be checked bit for bit.
func (s *diskFullSender) request(k int) []prompb.TimeSeries {
	out := make([]prompb.TimeSeries, diskFullSeries)
	for i := range out {
		out[i].Labels = []prompb.Label{{Name: "__name__", Value: diskFullMetric}, {Name: "i", Value: fmt.Sprint(i)}, {Name: "w", Value: fmt.Sprint(s.w)}}
		out[i].Samples = make([]prompb.Sample, diskFullPerReq)
		for j := range diskFullPerReq {
			n := k*diskFullPerReq + j
			out[i].Samples[j] = prompb.Sample{Timestamp: s.t0 + int64(n)*diskFullStepMs, Value: diskFullValue(s.w, i, n)}
		}
	}
	return out
}

// diskFullValue is the value of sample n of series (w, i).
func diskFullValue(w, i, n int) float64 {
	r := rand.New(rand.NewPCG(uint64(w)<<32|uint64(i), uint64(n)))
	return r.NormFloat64() * 1e3
}

// TestServeDiskFull: serve on the embedded store on a small filesystem
// that fills up under 8 senders (remote write 1.0, 2000 samples a
// request, data days old so that compaction rewrites its hours as it
// goes): while the disk is full it never exits, answers writes 503 with
// Retry-After (never 4xx) and answers queries; once the filesystem grows
// a write succeeds within 60 s, without a restart; after a SIGKILL and a
// restart every acknowledged sample reads back bit for bit, and nothing
// reads back that was not sent. Once with the free-space watermark (the
// store turns read-only before the disk is full) and once without it
// (the disk really fills: ENOSPC in every log and table write).
func TestServeDiskFull(t *testing.T) {
	if testbackend.Name() != "embedded" {
		// make test runs this package on HBase too; the disk that fills is
		// the embedded store's, so the embedded run is the one that counts
		// (twice at once, on 2 cores, it starved the HBase suites).
		t.Skip("the embedded store's full disk: the embedded run (PROMHBASE_TEST_BACKEND unset) runs this test")
	}
	t.Parallel()
	bin := promhbaseBinary(t)
	for _, tc := range []struct {
		name    string
		minFree string
	}{
		{name: "watermark", minFree: "16MB"},
		{name: "no watermark", minFree: "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each fills a disk of its own
			const small, large = 96 << 20, 1 << 30
			disk := smallDisk(t, small)
			flags := []string{
				"--storage.embedded.path=" + filepath.Join(disk, "data"),
				"--storage.embedded.buffer-bytes=4194304",
				"--storage.min-free-disk-space-bytes=" + tc.minFree,
				"--storage.embedded.ballast-bytes=8MB",
				"--storage.compaction.grace=0s",
				"--query.results-cache.max-bytes=0",
			}
			srv, base := startServe(t, bin, flags...)
			t0 := time.Now().Add(-72 * time.Hour).Truncate(time.Hour).UnixMilli()
			senders := make([]*diskFullSender, diskFullWriters)
			var (
				stop                  atomic.Bool
				refused, full, growAt atomic.Int64 // 503s; when the first came; when the disk grew (Unix ns)
				firstAfterGrow        atomic.Int64 // the first 2xx after growAt (Unix ns)
				mu                    sync.Mutex
				bad                   []string
			)
			fail := func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				if len(bad) < 20 {
					bad = append(bad, fmt.Sprintf(format, args...))
				}
			}
			var wg sync.WaitGroup
			for w := range senders {
				s := &diskFullSender{w: w, t0: t0}
				senders[w] = s
				wg.Go(func() {
					for !stop.Load() {
						body := promremote.WriteBody(t, s.request(s.acked)...)
						s.sent = max(s.sent, s.acked+1)
						resp, err := http.Post(base+"/api/v1/write", "application/x-protobuf", bytes.NewReader(body))
						if err != nil {
							if !stop.Load() {
								fail("sender %d: %v", w, err)
							}
							return
						}
						resp.Body.Close()
						switch resp.StatusCode {
						case http.StatusNoContent:
							s.acked++
							if g := growAt.Load(); g != 0 {
								firstAfterGrow.CompareAndSwap(0, time.Now().UnixNano())
							}
						case http.StatusServiceUnavailable:
							if resp.Header.Get("Retry-After") == "" {
								fail("sender %d: 503 without Retry-After", w)
							}
							refused.Add(1)
							full.CompareAndSwap(0, time.Now().UnixNano())
							time.Sleep(50 * time.Millisecond)
						default:
							fail("sender %d: write answered %d", w, resp.StatusCode)
							return
						}
					}
				})
			}
			// Full: the first 503, then 20 s more with the disk kept full,
			// queries asked meanwhile.
			deadline := time.Now().Add(4 * time.Minute)
			for full.Load() == 0 && time.Now().Before(deadline) && srv.Cmd.ProcessState == nil {
				time.Sleep(100 * time.Millisecond)
			}
			if full.Load() == 0 {
				stop.Store(true)
				wg.Wait()
				t.Fatalf("no write was refused within 4 minutes\n%s", srv.Log())
			}
			for range 20 {
				q := url.Values{"query": {"count(count_over_time(" + diskFullMetric + "[1h]))"}, "time": {fmt.Sprint(t0/1000 + 3600)}}
				resp, err := http.Get(base + "/api/v1/query?" + q.Encode())
				if err != nil {
					fail("query while full: %v", err)
				} else {
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						fail("query while full: %d", resp.StatusCode)
					}
				}
				time.Sleep(time.Second)
			}
			t.Logf("disk full: %d writes refused", refused.Load())
			growAt.Store(time.Now().UnixNano())
			growDisk(t, disk, large)
			for firstAfterGrow.Load() == 0 && time.Since(time.Unix(0, growAt.Load())) < 90*time.Second {
				time.Sleep(100 * time.Millisecond)
			}
			if f := firstAfterGrow.Load(); f == 0 {
				fail("no write succeeded within 90 s of the disk growing")
			} else if d := time.Duration(f - growAt.Load()); d > time.Minute {
				fail("the first write after the disk grew succeeded after %s", d)
			} else {
				t.Logf("first write after the disk grew: %s", d.Round(time.Millisecond))
			}
			time.Sleep(2 * time.Second)
			stop.Store(true)
			if err := syscall.Kill(-srv.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-srv.Exited()
			wg.Wait()
			if strings.Contains(srv.Log(), "panic") {
				fail("serve panicked")
			}
			mu.Lock()
			for _, b := range bad {
				t.Error(b)
			}
			mu.Unlock()
			if t.Failed() {
				t.Fatalf("serve's log:\n%s", testproc.TailLines(srv.Log(), 60))
			}
			srv, base = startServe(t, bin, flags...)
			checkDiskFullSamples(t, base, senders)
			stopServe(t, srv)
		})
	}
}

// checkDiskFullSamples reads every diskfull_test sample back through the
// export API and fails the test for an acknowledged sample missing or
// different, or a sample that no request sent.
func checkDiskFullSamples(t *testing.T, base string, senders []*diskFullSender) {
	t.Helper()
	got := exportedAll(t, base, `{__name__="`+diskFullMetric+`"}`)
	have := map[string]map[int64]uint64{} // "w/i" -> timestamp -> value bits
	total := 0
	for _, line := range strings.Split(got, "\n") {
		k, smps, ok := strings.Cut(line, "} ")
		if !ok {
			continue
		}
		var w, i int
		for _, l := range strings.Split(strings.Trim(k, "{}"), ", ") {
			n, v, _ := strings.Cut(l, "=")
			var err error
			switch n {
			case "w":
				w, err = strconv.Atoi(strings.Trim(v, `"`))
			case "i":
				i, err = strconv.Atoi(strings.Trim(v, `"`))
			}
			if err != nil {
				t.Fatalf("series %s: %v", k, err)
			}
		}
		m := map[int64]uint64{}
		for _, smp := range strings.Fields(smps) {
			var ts int64
			var bits uint64
			if _, err := fmt.Sscanf(smp, "%d:%x", &ts, &bits); err != nil {
				t.Fatalf("sample %q: %v", smp, err)
			}
			m[ts] = bits
			total++
		}
		have[fmt.Sprintf("%d/%d", w, i)] = m
	}
	acked, missing, wrong, extra := 0, 0, 0, 0
	for _, s := range senders {
		for i := range diskFullSeries {
			m := have[fmt.Sprintf("%d/%d", s.w, i)]
			for n := range s.sent * diskFullPerReq {
				ts := s.t0 + int64(n)*diskFullStepMs
				want := math.Float64bits(diskFullValue(s.w, i, n))
				bits, ok := m[ts]
				if ok && bits != want {
					wrong++
				}
				if n < s.acked*diskFullPerReq {
					acked++
					if !ok {
						missing++
					}
				}
				delete(m, ts)
			}
			extra += len(m)
		}
	}
	t.Logf("%d samples acknowledged, %d read back: %d missing, %d different, %d never sent", acked, total, missing, wrong, extra)
	if missing+wrong+extra > 0 {
		t.Errorf("after the restart: %d acknowledged samples missing, %d different, %d never sent", missing, wrong, extra)
	}
}
