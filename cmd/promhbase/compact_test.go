package main

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/test/testkit/testbackend"
)

func TestRenderProgress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		done, total int
		elapsed     time.Duration
		want        string
	}{
		{0, 0, 0, "[##############################] 0/0 rows 100.0%"},
		{0, 200, 0, "[..............................] 0/200 rows   0.0%"},
		{50, 200, 10 * time.Second, "[#######.......................] 50/200 rows  25.0%  5 rows/s  ETA 30s"},
		{200, 200, 4 * time.Second, "[##############################] 200/200 rows 100.0%  50 rows/s"},
	} {
		if got := renderProgress(tc.done, tc.total, tc.elapsed); got != tc.want {
			t.Errorf("renderProgress(%d, %d, %s) =\n%q\nwant\n%q", tc.done, tc.total, tc.elapsed, got, tc.want)
		}
	}
}

// TestCompactCommand writes through `promhbase serve` with background
// compaction off, then compacts with `promhbase compact` and checks the
// summary, the progress output and the rows with `promhbase scan`.
func TestCompactCommand(t *testing.T) {
	t.Parallel()
	bin := promhbaseBinary(t)
	flags := storageFlags(t)
	createTestTables(t, bin, flags)
	srv, base := startServe(t, bin, append([]string{"--no-storage.compaction.enabled"}, flags...)...)
	// Two hours of 2010-12-12 (1292148000 is 10:00 UTC), 3 series, one
	// sample every 10 minutes, one request per round as Prometheus sends.
	const hour = int64(1292148000)
	for round := range 12 {
		var series []prompb.TimeSeries
		for _, host := range []string{"web01", "web02", "web03"} {
			series = append(series, prompb.TimeSeries{
				Labels:  []prompb.Label{{Name: "__name__", Value: "cli_compact"}, {Name: "host", Value: host}},
				Samples: []prompb.Sample{{Timestamp: (hour + int64(round)*600) * 1000, Value: float64(round) + 0.5}},
			})
		}
		remoteWrite(t, base, series)
	}
	stopServe(t, srv)

	out, err := run(t, bin, append([]string{"compact", "--from=2010-12-12T10:00:00Z", "--to=2010-12-12T11:59:59Z"}, flags...)...)
	if err != nil {
		t.Fatalf("compact: %v\n%s", err, out)
	}
	for _, want := range []string{"0/6 rows", "6/6 rows 100.0%", "compacted 6 rows: 6 compacted (36 cells deleted), 0 unchanged, 0 skipped, 0 errors"} {
		if !strings.Contains(out, want) {
			t.Errorf("compact output lacks %q:\n%s", want, out)
		}
	}
	// The embedded store is settled before the command ends (the space of
	// the deleted cells given back); HBase settles on its own.
	if settled := strings.Contains(out, "store settled in"); settled != (testbackend.Name() != "hbase") {
		t.Errorf("compact output says the store settled: %v, want %v:\n%s", settled, testbackend.Name() != "hbase", out)
	}
	out, err = run(t, bin, append([]string{"scan", "cli_compact", "--start=1292148000", "--end=1292155199"}, flags...)...)
	if err != nil {
		t.Fatalf("scan: %v\n%s", err, out)
	}
	if n := strings.Count(out, "compacted, 6 points"); n != 6 {
		t.Errorf("scan shows %d compacted cells of 6 points, want 6:\n%s", n, out)
	}
	for _, want := range []string{"1292148000000\t0.5", "1292154600000\t11.5"} {
		if !strings.Contains(out, want) {
			t.Errorf("scan output lacks %q:\n%s", want, out)
		}
	}
	// Again: nothing left to do.
	out, err = run(t, bin, append([]string{"compact", "--from=1292148000", "--to=1292155199"}, flags...)...)
	if err != nil || !strings.Contains(out, "compacted 6 rows: 0 compacted (0 cells deleted), 6 unchanged") {
		t.Errorf("compact again: %v\n%s", err, out)
	}
	if out, err := run(t, bin, append([]string{"compact", "--from=2010-12-12T12:00:00Z", "--to=2010-12-12T10:00:00Z"}, flags...)...); err == nil {
		t.Errorf("compact with --to before --from succeeded:\n%s", out)
	}
}
