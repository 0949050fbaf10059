package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/adapter/migrate"
	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/test/testkit/testbackend"
	"github.com/promhbase/promhbase/test/testkit/testhttp"
	"github.com/promhbase/promhbase/test/testkit/testproc"
	"github.com/promhbase/promhbase/test/testkit/testserver"
)

// TestMigrateVictoriaMetrics moves data between a real VictoriaMetrics
// v1.151.0 and promhbase through the endpoints migration tools speak:
//
//  1. series imported into VictoriaMetrics (/api/v1/import) and exported
//     from it (/api/v1/export) are imported into promhbase, gzip'd as
//     vmctl sends them, and promhbase exports every sample VictoriaMetrics
//     exported, bit for bit;
//  2. what one promhbase exports, another imports and exports again, the
//     same bytes;
//  3. Prometheus's text with timestamps (/api/v1/import/prometheus) is
//     imported into both, and both export the same samples;
//  4. a body with a bad line gets 400 naming the line, and none of its
//     lines is written; /health answers as VictoriaMetrics's.
func TestMigrateVictoriaMetrics(t *testing.T) {
	t.Parallel()
	vmBin := testproc.ScriptBinary(t, testproc.Root(t, "tools/scripts/victoriametrics.sh"), "VictoriaMetrics")
	dir := t.TempDir()
	_, vmAddr := testproc.StartServer(t, testproc.ServerSpec{Name: "victoria-metrics", LogDir: dir, ReadyPath: "/health",
		ReadyTimeout: time.Minute, LogTail: 30, Command: func(listen string) *exec.Cmd {
			return exec.Command(vmBin, "-storageDataPath="+filepath.Join(dir, "vm"), "-httpListenAddr="+listen,
				"-retentionPeriod=100y", "-search.disableCache", "-loggerLevel=ERROR")
		}})
	vm := "http://" + vmAddr
	srcSt, srcTb := testbackend.New(t)
	src := testserver.Start(t, srcSt, srcTb, mapping.DefaultLayout(), testserver.Options{})
	dstSt, dstTb := testbackend.New(t)
	dst := testserver.Start(t, dstSt, dstTb, mapping.DefaultLayout(), testserver.Options{})

	// Six hours up to an hour ago: counters, gauges with fractions, an
	// infinity.
	end := time.Now().Add(-time.Hour).Truncate(time.Hour).UnixMilli()
	var body []byte
	for i := range 12 {
		name := "mig_requests_total"
		if i%3 == 2 {
			name = "mig_temperature"
		}
		lbls := labels.FromStrings("__name__", name, "instance", fmt.Sprintf("h%d:9100", i), "job", "node")
		var ts []int64
		var vs []float64
		c := float64(i * 1000)
		for t := end - 6*3600_000; t < end; t += 15_000 {
			c += float64((t/15_000)%7) + 0.25
			v := c
			if name == "mig_temperature" {
				v = 20 + float64((t/15_000)%97)/7.3
			}
			if i == 5 && t == end-3600_000 {
				v = math.Inf(1)
			}
			ts, vs = append(ts, t), append(vs, v)
		}
		body = migrate.AppendJSONLine(body, lbls, ts, vs)
	}
	post(t, vm+"/api/v1/import", body, "", http.StatusNoContent)
	get(t, vm+"/internal/force_flush", http.StatusOK)
	match := url.Values{"match[]": {`{__name__=~"mig_.*"}`}}
	fromVM := get(t, vm+"/api/v1/export?"+match.Encode(), http.StatusOK)
	if n := bytes.Count(fromVM, []byte("\n")); n != 12 {
		t.Fatalf("VictoriaMetrics exported %d lines, want 12:\n%.500s", n, fromVM)
	}

	// 1. VictoriaMetrics's export into promhbase, gzip'd.
	post(t, src.URL+"/api/v1/import", gzipped(t, fromVM), "gzip", http.StatusNoContent)
	fromSrc := get(t, src.URL+"/api/v1/export?"+match.Encode(), http.StatusOK)
	if got, want := samplesOf(t, fromSrc), samplesOf(t, fromVM); got != want {
		t.Errorf("promhbase's export differs from VictoriaMetrics's:\n%.2000s\nwant\n%.2000s", got, want)
	}
	// 2. One promhbase's export into another.
	post(t, dst.URL+"/api/v1/import", fromSrc, "", http.StatusNoContent)
	if fromDst := get(t, dst.URL+"/api/v1/export?"+match.Encode(), http.StatusOK); sortedLines(fromDst) != sortedLines(fromSrc) {
		t.Errorf("export of the import of an export differs:\n%.1000s\nwant\n%.1000s", fromDst, fromSrc)
	}
	// 3. Prometheus's text, with timestamps.
	text := fmt.Sprintf("# TYPE mig_text gauge\nmig_text{k=\"a\"} 1.5 %d\nmig_text{k=\"a\"} -2e-7 %d\nmig_text{k=\"b\"} 7 %d\n", end-60_000, end-45_000, end-60_000)
	for _, base := range []string{vm, src.URL} {
		post(t, base+"/api/v1/import/prometheus", []byte(text), "", http.StatusNoContent)
	}
	get(t, vm+"/internal/force_flush", http.StatusOK)
	textMatch := url.Values{"match[]": {"mig_text"}}.Encode()
	if got, want := samplesOf(t, get(t, src.URL+"/api/v1/export?"+textMatch, http.StatusOK)), samplesOf(t, get(t, vm+"/api/v1/export?"+textMatch, http.StatusOK)); got != want || !strings.Contains(got, "-2e-07") {
		t.Errorf("text import: promhbase exports\n%s\nVictoriaMetrics\n%s", got, want)
	}
	// 4. A bad line: nothing of its body is written.
	bad := `{"metric":{"__name__":"mig_bad"},"values":[1],"timestamps":[` + fmt.Sprint(end-60_000) + `]}` + "\n" +
		`{"metric":{"__name__":"mig_bad"},"values":[1,2],"timestamps":[` + fmt.Sprint(end-60_000) + `]}` + "\n"
	if msg := post(t, src.URL+"/api/v1/import", []byte(bad), "", http.StatusBadRequest); !strings.Contains(string(msg), "line 2") {
		t.Errorf("bad line: answer %q, want it to name line 2", msg)
	}
	if got := get(t, src.URL+"/api/v1/export?"+url.Values{"match[]": {"mig_bad"}}.Encode(), http.StatusOK); len(got) != 0 {
		t.Errorf("a body with a bad line wrote %s", got)
	}
	if got := get(t, src.URL+"/health", http.StatusOK); string(got) != "OK" {
		t.Errorf("/health: %q", got)
	}
}

// samplesOf reads JSON lines into one line a series, sorted, each sample
// with its value's bits: equal strings hold the same samples.
func samplesOf(t *testing.T, body []byte) string {
	t.Helper()
	series, err := migrate.ParseJSONLines(nil, body)
	if err != nil {
		t.Fatalf("%v\n%.500s", err, body)
	}
	var lines []string
	for _, s := range series {
		var b strings.Builder
		for _, l := range s.Labels {
			fmt.Fprintf(&b, "%s=%q ", l.Name, l.Value)
		}
		slices.SortFunc(s.Samples, func(x, y prompb.Sample) int { return int(x.Timestamp - y.Timestamp) })
		for _, smp := range s.Samples {
			fmt.Fprintf(&b, "%d:%v:%x ", smp.Timestamp, smp.Value, math.Float64bits(smp.Value))
		}
		lines = append(lines, b.String())
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func sortedLines(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// post posts body to u (with Content-Encoding enc when set), failing t
// unless the answer's status is want; it returns the answer's body.
func post(t *testing.T, u string, body []byte, enc string, want int) []byte {
	t.Helper()
	return testhttp.Expect(t, testhttp.Request{Method: http.MethodPost, URL: u, Body: body, Header: map[string]string{"Content-Encoding": enc}}, want)
}

// get gets u, failing t unless the status is want; it returns the body.
func get(t *testing.T, u string, want int) []byte {
	t.Helper()
	return testhttp.Expect(t, testhttp.Request{Method: http.MethodGet, URL: u}, want)
}
