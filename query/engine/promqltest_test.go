package engine

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/storage"
)

// prometheusEngine is Prometheus's engine with promhbase's options
// (promapi.New): the engine's fallback, and the reference of the tests.
func prometheusEngine(t testing.TB, p parser.Parser) *promql.Engine {
	ng := promql.NewEngine(promql.EngineOpts{
		Logger:                   slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxSamples:               50_000_000,
		Timeout:                  100 * time.Second,
		NoStepSubqueryIntervalFn: func(int64) int64 { return time.Minute.Milliseconds() },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		LookbackDelta:            5 * time.Minute,
		Parser:                   p,
	})
	t.Cleanup(func() { _ = ng.Close() })
	return ng
}

// suiteEval is one eval command of a promqltest script.
type suiteEval struct {
	line       int
	expr       string
	start, end time.Time
	step       time.Duration // 0: instant
	loads      string        // the script's load commands before it
}

// parseScript reads the load and eval commands of a promqltest script
// (the expected results are not read: the reference is Prometheus's
// engine itself).
func parseScript(script string) []suiteEval {
	var (
		out    []suiteEval
		loads  strings.Builder
		inLoad bool
	)
	at := func(s string) (time.Time, bool) {
		d, err := model.ParseDuration(s)
		if err != nil {
			return time.Time{}, false
		}
		return time.Unix(0, 0).UTC().Add(time.Duration(d)), true
	}
	for i, line := range strings.Split(script, "\n") {
		trimmed := strings.TrimSpace(line)
		indented := line != trimmed && trimmed != ""
		if inLoad && indented {
			loads.WriteString(line + "\n")
			continue
		}
		inLoad = false
		fields := strings.Fields(trimmed)
		switch {
		case len(fields) == 0 || strings.HasPrefix(trimmed, "#"):
		case fields[0] == "clear":
			loads.Reset()
		case fields[0] == "load":
			loads.WriteString("\n" + trimmed + "\n")
			inLoad = true
		case strings.HasPrefix(fields[0], "eval") && len(fields) > 3:
			var e suiteEval
			e.line, e.loads = i+1, loads.String()
			switch {
			case fields[1] == "instant" && fields[2] == "at":
				t, ok := at(fields[3])
				if !ok {
					continue
				}
				e.start, e.end = t, t
				e.expr = strings.TrimSpace(strings.SplitN(trimmed, fields[3], 2)[1])
			case fields[1] == "range" && fields[2] == "from" && len(fields) > 7 && fields[4] == "to" && fields[6] == "step":
				s, ok1 := at(fields[3])
				en, ok2 := at(fields[5])
				st, err := model.ParseDuration(fields[7])
				if !ok1 || !ok2 || err != nil || st == 0 {
					continue
				}
				e.start, e.end, e.step = s, en, time.Duration(st)
				_, rest, _ := strings.Cut(trimmed, " step "+fields[7])
				e.expr = strings.TrimSpace(rest)
			default:
				continue
			}
			if e.expr != "" && e.loads != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// TestPrometheusSuite runs the eval commands of Prometheus's own PromQL
// test scripts (the promqltest package's testdata: every function,
// operator, aggregation, staleness, @ and offset case its authors wrote)
// on the engine and on Prometheus's engine with promhbase's options, over
// the scripts' data, and requires the same answers: values within 1e-12
// (bit for bit where Prometheus's own computation is order-independent),
// the same annotations, the same errors. The engine must answer a good
// share of them itself.
func TestPrometheusSuite(t *testing.T) {
	p := parser.NewParser(promqltest.TestParserOpts)
	reg := prometheus.NewRegistry()
	ref := prometheusEngine(t, p)
	own := New(Options{Fallback: prometheusEngine(t, p), Parser: p, Timeout: 100 * time.Second, Registerer: reg})
	scripts, err := builtinScripts()
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(scripts))
	evals := 0
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			stores := map[string]storage.Storage{}
			for _, e := range parseScript(scripts[name]) {
				st, ok := stores[e.loads]
				if !ok {
					st = promqltest.LoadedStorage(t, e.loads)
					stores[e.loads] = st
				}
				evals++
				if d := compareEngines(t, ref, own, st, e.expr, e.start, e.end, e.step); d != "" {
					t.Errorf("line %d: %s: %s", e.line, e.expr, d)
				}
			}
		})
	}
	logReasons(t, own)
	ownEvals := testutil.ToFloat64(own.queries.WithLabelValues(PathPromhbase, ""))
	t.Logf("%d evals of %d scripts; %v answered by promhbase's evaluator", evals, len(names), ownEvals)
	if ownEvals < 200 {
		t.Errorf("promhbase's evaluator answered %v of the scripts' evals, want at least 200", ownEvals)
	}
}

// builtinScripts are the promqltest scripts of the pinned Prometheus
// module, read from its directory in the module cache.
func builtinScripts() (map[string]string, error) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/prometheus/prometheus").Output()
	if err != nil {
		return nil, fmt.Errorf("finding the prometheus module: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(dir)), "promql", "promqltest", "testdata", "*.test"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no promqltest scripts in %s: %w", dir, err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out[filepath.Base(f)] = string(b)
	}
	return out, nil
}

func logReasons(t *testing.T, e *Engine) {
	ch := make(chan prometheus.Metric, 100)
	go func() { e.queries.Collect(ch); close(ch) }()
	for m := range ch {
		var pb dto.Metric
		_ = m.Write(&pb)
		t.Logf("%v %v", pb.GetLabel(), pb.GetCounter().GetValue())
	}
}
