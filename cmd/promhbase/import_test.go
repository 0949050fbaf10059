package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/promhbase/promhbase/adapter/migrate"
	"github.com/promhbase/promhbase/test/testkit/poll"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testproc"
)

// TestImportCommand writes five hours of counters and gauges as
// Prometheus's blocks with a real promtool (create-blocks-from
// openmetrics), imports them with `promhbase import` into a running
// promhbase, and reads every sample back (/api/v1/export) with the same
// bits as the blocks hold. Then, into a fresh store, an import killed
// with SIGKILL at three random points and run again each time ends with
// the same samples, nothing lost or doubled. A block truncated is refused
// with an error naming it and the series it broke in.
func TestImportCommand(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	promtool := testproc.ScriptBinary(t, testproc.Root(t, "tools/scripts/promtool.sh"), "promtool")
	dir := t.TempDir()
	end := time.Now().Add(-2 * time.Hour).Truncate(time.Hour).Unix()
	var om strings.Builder
	for _, fam := range []struct{ name, typ string }{{"imp_requests", "counter"}, {"imp_temperature", "gauge"}} {
		fmt.Fprintf(&om, "# TYPE %s %s\n", fam.name, fam.typ)
		for i := range 4 {
			v := float64(i) * 100
			for ts := end - 5*3600; ts < end; ts += 15 {
				sample := fam.name
				if fam.typ == "counter" {
					sample += "_total"
					v += float64(ts%7) + 0.5
				} else {
					v = 20 + float64(ts%97)/7.3
				}
				fmt.Fprintf(&om, "%s{i=\"%d\"} %s %d\n", sample, i, strconvG(v), ts)
			}
		}
	}
	om.WriteString("# EOF\n")
	input := filepath.Join(dir, "data.om")
	if err := os.WriteFile(input, []byte(om.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks := filepath.Join(dir, "blocks")
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", input, blocks).CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
	want := blockSamples(t, blocks)
	if len(want) != 8 {
		t.Fatalf("the blocks hold %d series, want 8", len(want))
	}

	imp := func(base, progress string, args ...string) *exec.Cmd {
		return exec.Command(bin, append([]string{"import", "--url=" + base, "--progress-file=" + progress, blocks}, args...)...)
	}
	// The cases run at once: each has a serve and a store of its own; the
	// blocks are only read.
	t.Run("whole", func(t *testing.T) {
		t.Parallel()
		srv, base := startServe(t, bin, append([]string{"--storage.compaction.check-interval=100ms", "--rollup.check-interval=100ms"},
			testbackend.ServeFlags(t)...)...)
		defer stopServe(t, srv)
		out, err := imp(base, filepath.Join(t.TempDir(), "p.json")).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "9600 samples") {
			t.Fatalf("import: %v\n%s", err, out)
		}
		if got := exported(t, base); got != want.String() {
			t.Errorf("promhbase holds\n%.1500s\nthe blocks\n%.1500s", got, want.String())
		}
		// The imported hours are compacted and rolled up as written ones
		// are: the rows of 8 series over 5 hours (6 rows where an hour's
		// first sample falls in the next).
		testproc.WaitMetrics(t, base, 2*time.Minute, "40 rows compacted and every hour rolled up", func(page testproc.MetricPage) (bool, string) {
			compacted := page.Sum("promhbase_compaction_rows_compacted_total")
			from, hours := page.Sum("promhbase_rollup_built_from_timestamp_seconds"), page.Sum("promhbase_rollup_hours_built_total")
			return compacted >= 40 && from == 0 && hours >= 5, fmt.Sprintf("%v rows compacted, rollups built from %v (%v hours)", compacted, from, hours)
		})
		if got := exported(t, base); got != want.String() {
			t.Errorf("after compaction promhbase holds\n%.1500s\nthe blocks\n%.1500s", got, want.String())
		}
	})
	t.Run("older than the retention", func(t *testing.T) {
		t.Parallel()
		// The blocks end two hours ago and span five: with a retention of
		// 4h the first three hours (and a little) are skipped by the
		// importer, counted, and the rest written.
		srv, base := startServe(t, bin, append([]string{"--storage.retention.time=4h"}, testbackend.ServeFlags(t)...)...)
		defer stopServe(t, srv)
		before := time.Now()
		out, err := imp(base, filepath.Join(t.TempDir(), "p.json")).CombinedOutput()
		after := time.Now()
		if err != nil {
			t.Fatalf("import: %v\n%s", err, out)
		}
		var sent, skipped int
		m := regexp.MustCompile(`(\d+) samples in .*, (\d+) samples older than the server's retention \(4h\) skipped`).FindStringSubmatch(string(out))
		if m == nil {
			t.Fatalf("import's output names no samples skipped for the retention:\n%s", out)
		}
		sent, _ = strconv.Atoi(m[1])
		skipped, _ = strconv.Atoi(m[2])
		if sent+skipped != 9600 || skipped < 8*3*240 {
			t.Errorf("%d samples sent and %d skipped, want 9600 in all, at least three hours of 8 series skipped", sent, skipped)
		}
		// The importer's cutoff is now − 4h at its start: what promhbase
		// holds is the blocks from some time in that window on.
		got := exported(t, base)
		lo, hi := before.Add(-4*time.Hour-15*time.Second).UnixMilli(), after.Add(-4*time.Hour+15*time.Second).UnixMilli()
		found := false
		for c := lo; c <= hi && !found; c += 1000 {
			if kept := want.since(c); kept.String() == got {
				found = kept.count() == sent
			}
		}
		if !found {
			t.Errorf("promhbase holds\n%.1500s\nwant the blocks' samples from between %d and %d on, %d of them", got, lo, hi, sent)
		}
	})
	t.Run("serve killed in the middle", func(t *testing.T) {
		t.Parallel()
		// An outage of the receiving side: serve SIGKILLed while requests
		// are in flight, started again over the same store after a
		// while. The import retries and goes on; every sample is there
		// once (what serve acknowledged survived its kill).
		addr, flags := testproc.FreeAddr(t), testbackend.ServeFlags(t)
		start := func(name string) *testproc.Process {
			cmd := exec.Command(bin, append([]string{"serve", "--web.listen-address=" + addr}, flags...)...)
			srv := testproc.Start(t, name, cmd, filepath.Join(t.TempDir(), name+".log"), 0)
			if err := srv.WaitReady(t.Context(), "http://"+addr+"/-/ready", time.Minute); err != nil {
				t.Fatalf("%s not ready: %v\n%s", name, err, srv.Log())
			}
			return srv
		}
		srv := start("serve")
		cmd := imp("http://"+addr, filepath.Join(t.TempDir(), "p.json"), "--batch-samples=10", "--concurrency=2")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// The outage is the subject: serve killed 30 ms into the import,
		// with requests in flight wherever they are then, and away for a
		// while (the importer's retries meet a closed port).
		time.Sleep(30 * time.Millisecond)
		_ = srv.Cmd.Process.Kill()
		_ = srv.Wait()
		time.Sleep(300 * time.Millisecond)
		srv = start("serve-again")
		defer stopServe(t, srv)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("import across the outage: %v\n%s", err, out.String())
			}
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("import still running two minutes after serve came back\n%s", out.String())
		}
		if !strings.Contains(out.String(), "retrying in") {
			t.Fatalf("the import met no outage (it ended before serve was killed?)\n%s", out.String())
		}
		t.Logf("%s", out.String())
		if got := exported(t, "http://"+addr); got != want.String() {
			t.Errorf("after the outage promhbase holds\n%.1500s\nthe blocks\n%.1500s", got, want.String())
		}
	})
	t.Run("a truncated block", func(t *testing.T) {
		t.Parallel()
		srv, base := startServe(t, bin, testbackend.ServeFlags(t)...)
		defer stopServe(t, srv)
		bad := filepath.Join(t.TempDir(), "blocks")
		if out, err := exec.Command("cp", "-r", blocks, bad).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		segs, _ := filepath.Glob(filepath.Join(bad, "*", "chunks", "000001"))
		st, err := os.Stat(segs[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(segs[0], st.Size()/2); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "import", "--url="+base, "--progress-file="+filepath.Join(t.TempDir(), "p.json"), bad).CombinedOutput()
		block := filepath.Base(filepath.Dir(filepath.Dir(segs[0])))
		if err == nil || !strings.Contains(string(out), block) || !strings.Contains(string(out), "series {") {
			t.Errorf("import of a truncated block: %v, want an error naming the block %s and the series\n%s", err, block, out)
		}
	})
	t.Run("killed and resumed", func(t *testing.T) {
		t.Parallel()
		srv, base := startServe(t, bin, testbackend.ServeFlags(t)...)
		defer stopServe(t, srv)
		progress := filepath.Join(t.TempDir(), "p.json")
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
		killed := 0
		for k := range 3 {
			// About 80 requests (a chunk each, and the samples of the
			// chunks the range cuts): the kill lands once the progress
			// file moved, a few batches later.
			before, _ := os.Stat(progress)
			cmd := imp(base, progress, "--batch-samples=20")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited, waitErr := make(chan struct{}), error(nil)
			go func() { waitErr = cmd.Wait(); close(exited) }()
			// Until the progress file moved or the import ended; after 10 s
			// the kill lands anyway (the check below counts the kills).
			_ = poll.Wait(t.Context(), 10*time.Second, 200*time.Microsecond, "progress saved", func() (bool, string, error) {
				select {
				case <-exited:
					return true, "", nil
				default:
				}
				st, err := os.Stat(progress)
				return err == nil && (before == nil || st.ModTime() != before.ModTime()), "", nil
			})
			// The kill's moment is the subject: a random few ms after a
			// save, anywhere in the batches that follow.
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			t.Logf("kill %d: %v", k, waitErr)
			if waitErr != nil {
				killed++
			}
		}
		if killed == 0 {
			t.Fatal("every import ended before its kill: the test did not interrupt one")
		}
		out, err := imp(base, progress, "--batch-samples=20").CombinedOutput()
		if err != nil {
			t.Fatalf("import after the kills: %v\n%s", err, out)
		}
		t.Logf("%s", out)
		if got := exported(t, base); got != want.String() {
			t.Errorf("after kills and a resume promhbase holds\n%.1500s\nthe blocks\n%.1500s", got, want.String())
		}
		// Done: the same command has nothing left to send.
		if out, err := imp(base, progress).CombinedOutput(); err != nil || !strings.Contains(string(out), "0 series (counted in each block), 0 samples") {
			t.Errorf("import again: %v\n%s", err, out)
		}
	})
}

// seriesSamples are series (labels) with their samples ("t:bits"), in
// label order.
type seriesSamples map[string][]string

func (s seriesSamples) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %s\n", k, strings.Join(s[k], " "))
	}
	return b.String()
}

// where returns the samples whose time (Unix ms) keep keeps.
func (s seriesSamples) where(keep func(t int64) bool) seriesSamples {
	out := seriesSamples{}
	for k, smps := range s {
		for _, smp := range smps {
			if keep(sampleTime(smp)) {
				out[k] = append(out[k], smp)
			}
		}
	}
	return out
}

// since returns the samples at or after t (Unix ms).
func (s seriesSamples) since(t int64) seriesSamples {
	return s.where(func(ts int64) bool { return ts >= t })
}

// until returns the samples at or before t (Unix ms).
func (s seriesSamples) until(t int64) seriesSamples {
	return s.where(func(ts int64) bool { return ts <= t })
}

// staleAsNaN returns the samples with each staleness marker a plain NaN
// (Go's math.NaN()), as vmctl sends them: its JSON lines write every NaN
// alike ("NaN"), so the marker's payload does not reach the importer.
func (s seriesSamples) staleAsNaN() seriesSamples {
	stale := fmt.Sprintf(":%x", value.StaleNaN)
	nan := fmt.Sprintf(":%x", math.Float64bits(math.NaN()))
	out := seriesSamples{}
	for k, smps := range s {
		for _, smp := range smps {
			if t, ok := strings.CutSuffix(smp, stale); ok {
				smp = t + nan
			}
			out[k] = append(out[k], smp)
		}
	}
	return out
}

// maxT returns the newest sample's time (Unix ms).
func (s seriesSamples) maxT() int64 {
	var m int64
	for _, smps := range s {
		for _, smp := range smps {
			m = max(m, sampleTime(smp))
		}
	}
	return m
}

// sampleTime is the time of a sample "t:bits".
func sampleTime(smp string) int64 {
	ts, _, _ := strings.Cut(smp, ":")
	n, _ := strconv.ParseInt(ts, 10, 64)
	return n
}

// count returns the number of samples.
func (s seriesSamples) count() int {
	n := 0
	for _, smps := range s {
		n += len(smps)
	}
	return n
}

// blockSamples reads every sample of the blocks in dir.
func blockSamples(t *testing.T, dir string) seriesSamples {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := seriesSamples{}
	for _, e := range ents {
		b, err := tsdb.OpenBlock(nil, filepath.Join(dir, e.Name()), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		q, err := tsdb.NewBlockQuerier(b, math.MinInt64, math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		set := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
		for set.Next() {
			s := set.At()
			it := s.Iterator(nil)
			k := s.Labels().String()
			for it.Next() == chunkenc.ValFloat {
				ts, v := it.At()
				out[k] = append(out[k], fmt.Sprintf("%d:%x", ts, math.Float64bits(v)))
			}
		}
		if err := set.Err(); err != nil {
			t.Fatal(err)
		}
		q.Close()
		b.Close()
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// exported reads every imp_ series of the promhbase at base through its
// /api/v1/export.
func exported(t *testing.T, base string) string {
	t.Helper()
	return exportedAll(t, base, `{__name__=~"imp_.*"}`)
}

// exportedAll reads the series match selects from the promhbase at base
// through its /api/v1/export.
func exportedAll(t *testing.T, base, match string) string {
	t.Helper()
	resp, err := http.PostForm(base+"/api/v1/export", url.Values{"match[]": {match}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %d %v %s", resp.StatusCode, err, body)
	}
	series, err := migrate.ParseJSONLines(nil, body)
	if err != nil {
		t.Fatal(err)
	}
	out := seriesSamples{}
	for _, s := range series {
		var sb labels.ScratchBuilder
		for _, l := range s.Labels {
			sb.Add(l.Name, l.Value)
		}
		sb.Sort()
		k := sb.Labels().String()
		for _, smp := range s.Samples {
			out[k] = append(out[k], fmt.Sprintf("%d:%x", smp.Timestamp, math.Float64bits(smp.Value)))
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out.String()
}

func strconvG(v float64) string { return fmt.Sprintf("%g", v) }

// TestImportSnapshot: a real Prometheus 3.15 opens the blocks promtool
// wrote, scrapes itself every 200ms (a head block) five times or more, and
// is snapshotted (POST /api/v1/admin/tsdb/snapshot); `promhbase import`
// of the snapshot into one promhbase, and a real vmctl's `vmctl
// prometheus --prom-snapshot` into another's /api/v1/import, each give
// every sample of the snapshot back with the same bits (vmctl's:
// staleness markers as plain NaN, which its JSON lines cannot tell
// apart; one appears when a scrape of the loaded machine fails).
func TestImportSnapshot(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	promtool := testproc.ScriptBinary(t, testproc.Root(t, "tools/scripts/promtool.sh"), "promtool")
	prom := testproc.ScriptBinary(t, testproc.Root(t, "tools/scripts/prometheus.sh"), "Prometheus")
	vmctl := testproc.ScriptBinary(t, testproc.Root(t, "tools/scripts/vmctl.sh"), "vmctl")
	dir := t.TempDir()
	end := time.Now().Add(-3 * time.Hour).Truncate(time.Hour).Unix()
	var om strings.Builder
	om.WriteString("# TYPE imp_requests counter\n")
	for i := range 3 {
		v := 0.0
		for ts := end - 4*3600; ts < end; ts += 15 {
			v += float64(ts%11) + 0.25
			fmt.Fprintf(&om, "imp_requests_total{i=\"%d\"} %s %d\n", i, strconvG(v), ts)
		}
	}
	om.WriteString("# EOF\n")
	input, tsdbDir := filepath.Join(dir, "data.om"), filepath.Join(dir, "tsdb")
	if err := os.WriteFile(input, []byte(om.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", input, tsdbDir).CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	_, promAddr := testproc.StartServer(t, testproc.ServerSpec{Name: "prometheus", LogDir: dir, ReadyPath: "/-/ready", ReadyTimeout: time.Minute, LogTail: 30,
		Command: func(listen string) *exec.Cmd {
			conf := fmt.Sprintf("global:\n  scrape_interval: 200ms\nscrape_configs:\n  - job_name: self\n    static_configs:\n      - targets: ['%s']\n", listen)
			if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			return exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+tsdbDir, "--web.listen-address="+listen,
				"--web.enable-admin-api", "--storage.tsdb.retention.time=100y")
		}})
	// Scraping starts once discovery hands over its targets (about 5 s).
	poll.Until(t, time.Minute, 200*time.Millisecond, "scraped five times by Prometheus", func() (bool, string) {
		resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape("count_over_time(up[1m]) >= 5"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return strings.Contains(string(b), `"value"`), string(b)
	})
	resp, err := http.Post("http://"+promAddr+"/api/v1/admin/tsdb/snapshot", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var snap struct {
		Data struct{ Name string } `json:"data"`
	}
	if err := json.Unmarshal(body, &snap); err != nil || snap.Data.Name == "" {
		t.Fatalf("snapshot: %d %s %v", resp.StatusCode, body, err)
	}
	snapshot := filepath.Join(tsdbDir, "snapshots", snap.Data.Name)
	want := blockSamples(t, snapshot)
	if len(want) < 10 || !strings.Contains(want.String(), "imp_requests_total") || !strings.Contains(want.String(), `job="self"`) {
		t.Fatalf("the snapshot holds %d series; want the blocks' and the head's", len(want))
	}

	// vmctl's remote-read mode reads the live Prometheus up to the last
	// whole second of what the snapshot holds (its time filters are
	// RFC 3339 seconds): everything at or before it was in the head when
	// the snapshot was taken, as the one target's scrapes come in time
	// order. A second some sample lies exactly on is passed over: vmctl
	// cuts the range into hours and its last one left out a sample at
	// exactly its end (once in CI, at 1795864794000).
	lastSecond := want.maxT() / 1000 * 1000
	for len(want.where(func(ts int64) bool { return ts == lastSecond })) > 0 {
		lastSecond -= 1000
	}
	readStart := time.Unix(end-5*3600, 0).UTC().Format(time.RFC3339)
	readEnd := time.UnixMilli(lastSecond).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		name string
		run  func(ctx context.Context, base string) *exec.Cmd
		want seriesSamples
	}{
		{"promhbase import", func(ctx context.Context, base string) *exec.Cmd {
			return exec.CommandContext(ctx, bin, "import", "--url="+base, "--progress-file="+filepath.Join(dir, "p.json"), snapshot)
		}, want},
		{"vmctl prometheus", func(ctx context.Context, base string) *exec.Cmd {
			return exec.CommandContext(ctx, vmctl, "prometheus", "--prom-snapshot="+snapshot, "--vm-addr="+base, "-s", "--disable-progress-bar")
		}, want.staleAsNaN()},
		{"vmctl remote-read", func(ctx context.Context, base string) *exec.Cmd {
			return exec.CommandContext(ctx, vmctl, "remote-read", "--remote-read-src-addr=http://"+promAddr, "--remote-read-use-stream",
				"--remote-read-filter-time-start="+readStart, "--remote-read-filter-time-end="+readEnd, "--remote-read-step-interval=hour",
				"--vm-addr="+base, "-s", "--disable-progress-bar")
		}, want.until(lastSecond).staleAsNaN()},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // a serve and a store of its own; the snapshot is only read
			srv, base := startServe(t, bin, testbackend.ServeFlags(t)...)
			defer stopServe(t, srv)
			// vmctl retries a refused request without end: bounded here.
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			if out, err := c.run(ctx, base).CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if got := exportedAll(t, base, `{__name__=~".+"}`); got != c.want.String() {
				t.Errorf("promhbase holds (%d bytes)\n%.1500s\nthe snapshot (%d bytes)\n%.1500s", len(got), got, len(c.want.String()), c.want.String())
			}
		})
	}
}
