package main

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/prometheus/promql/parser"
)

func TestDiskCatalogMix(t *testing.T) {
	t.Parallel()
	if len(nodeCatalog) != 100 {
		t.Fatalf("%d series a target, want 100 (the bytes per sample of earlier runs were of 100)", len(nodeCatalog))
	}
	kinds := map[seriesKind]int{}
	seen := map[string]bool{}
	for _, cs := range nodeCatalog {
		kinds[cs.fam.kind]++
		name := cs.fam.name
		if cs.name != "" {
			name = cs.name
		}
		key := name + "/" + strings.Join(func() []string {
			var out []string
			for _, l := range cs.labels {
				out = append(out, l[0]+"="+l[1])
			}
			return out
		}(), ",")
		if seen[key] {
			t.Errorf("%s twice in the catalog", key)
		}
		seen[key] = true
	}
	want := map[seriesKind]int{kindCounter: 45, kindGauge: 32, kindConst: 13, kindHistogram: 10}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("kind %d: %d series, want %d", k, kinds[k], n)
		}
	}
}

// TestDiskHistogramCatalog: the histogram's series are its buckets with le
// ascending, +Inf last, written as Prometheus's clients write them, then
// _sum and _count.
func TestDiskHistogramCatalog(t *testing.T) {
	t.Parallel()
	for _, f := range []family{
		{name: "h", kind: kindHistogram, buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, math.Inf(1)}},
		{name: "h", kind: kindHistogram, buckets: []float64{1, 2.5, 10, math.Inf(1)}},
	} {
		t.Run(strconv.Itoa(len(f.buckets)), func(t *testing.T) {
			ss := listCatalog([]family{f})
			if len(ss) != len(f.buckets)+2 {
				t.Fatalf("%d series, want %d", len(ss), len(f.buckets)+2)
			}
			prev := math.Inf(-1)
			for i, s := range ss[:len(f.buckets)] {
				if s.name != "h_bucket" || s.part != i || len(s.labels) != 1 || s.labels[0][0] != "le" {
					t.Fatalf("bucket %d: %+v", i, s)
				}
				le, err := strconv.ParseFloat(s.labels[0][1], 64)
				if err != nil || le <= prev {
					t.Fatalf("bucket %d: le %q after %v (%v)", i, s.labels[0][1], prev, err)
				}
				prev = le
			}
			if !math.IsInf(prev, 1) || ss[len(f.buckets)-1].labels[0][1] != "+Inf" {
				t.Errorf("last bucket %v, want +Inf", prev)
			}
			if s := ss[len(f.buckets)]; s.name != "h_sum" || s.part != f.sumPart() || len(s.labels) != 0 {
				t.Errorf("sum: %+v", s)
			}
			if s := ss[len(f.buckets)+1]; s.name != "h_count" || s.part != f.countPart() || len(s.labels) != 0 {
				t.Errorf("count: %+v", s)
			}
		})
	}
	for le, want := range map[float64]string{0.005: "0.005", 0.25: "0.25", 1: "1", 2.5: "2.5", math.Inf(1): "+Inf"} {
		if got := formatLe(le); got != want {
			t.Errorf("formatLe(%v) = %q, want %q", le, got, want)
		}
	}
}

// checkHist checks one scrape of a histogram: whole, cumulative counts,
// the last bucket the count.
func checkHist(t *testing.T, h *genHist) {
	t.Helper()
	for i, c := range h.cum {
		if c != math.Trunc(c) || c < 0 || (i > 0 && c < h.cum[i-1]) {
			t.Fatalf("buckets %v: not cumulative whole counts", h.cum)
		}
	}
	if h.value(h.fam.countPart()) != h.cum[len(h.cum)-1] || h.sum < 0 {
		t.Fatalf("count %v, +Inf %v, sum %v", h.value(h.fam.countPart()), h.cum[len(h.cum)-1], h.sum)
	}
}

func TestDiskGenHist(t *testing.T) {
	t.Parallel()
	var fam *family
	for _, cs := range nodeCatalog {
		if cs.fam.kind == kindHistogram {
			fam = cs.fam
			break
		}
	}
	if fam == nil {
		t.Fatal("no histogram in the catalog")
	}
	for _, tc := range []struct {
		name  string
		reset func(scrape int) bool
	}{
		{"no resets", func(int) bool { return false }},
		{"reset every 100 scrapes", func(i int) bool { return i%100 == 50 }},
		{"reset every scrape", func(int) bool { return true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			h := newGenHist(fam, rng)
			checkHist(t, h)
			var observed float64
			for i := range 1000 {
				prev := slices.Clone(h.cum)
				prevSum := h.sum
				reset := tc.reset(i)
				h.advance(rng, reset)
				checkHist(t, h)
				for b := range h.cum {
					switch {
					case reset && h.cum[b] > fam.inc:
						t.Fatalf("scrape %d, reset: bucket %d = %v, more than a scrape's observations", i, b, h.cum[b])
					case !reset && h.cum[b] < prev[b]:
						t.Fatalf("scrape %d: bucket %d went from %v to %v without a reset", i, b, prev[b], h.cum[b])
					}
				}
				if !reset && h.sum < prevSum {
					t.Fatalf("scrape %d: sum went from %v to %v without a reset", i, prevSum, h.sum)
				}
				if !reset {
					observed += h.cum[len(h.cum)-1] - prev[len(prev)-1]
				}
			}
			if tc.name == "no resets" {
				// About inc/2 observations a scrape, spread over the buckets.
				if per := observed / 1000; per < fam.inc/4 || per > fam.inc*3/4 {
					t.Errorf("%.1f observations a scrape, want about %v", per, fam.inc/2)
				}
				if h.cum[0] == 0 || h.cum[len(h.cum)-2] == h.cum[len(h.cum)-1] && h.cum[0] == h.cum[len(h.cum)-1] {
					t.Errorf("buckets %v: observations not spread", h.cum)
				}
			}
		})
	}
}

// TestDiskHistogramStream checks the histograms in the generated stream:
// at every scrape each histogram's buckets (as far as the target has
// them) are cumulative in le, +Inf is _count; between scrapes they only
// grow, unless all of them (and _sum) start again.
func TestDiskHistogramStream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		series, targets int
		// wantFull: every histogram whole, wantGroups of them.
		wantFull   bool
		wantGroups int
	}{
		{"one target, whole catalog", 100, 1, true, 1},
		{"two targets", 200, 2, true, 2},
		{"copies", 300, 1, true, 3},
		{"part of the catalog", 250, 3, false, 0},
		{"copies, the last in part", 230, 1, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := testGenConfig()
			g.series, g.targets, g.span = tc.series, tc.targets, time.Hour
			got, order := collectRequests(t, g, 2, 1000)
			if len(order) != g.series {
				t.Fatalf("%d series, want %d", len(order), g.series)
			}
			type scrapeKey struct {
				group string // instance and copy
				ts    int64
			}
			type hscrape struct {
				buckets    map[float64]float64
				sum, count float64
				hasCount   bool
			}
			scrapes := map[scrapeKey]*hscrape{}
			groups := map[string]bool{}
			for k, v := range got {
				if !strings.HasPrefix(k.series, "{__name__=\"node_http_request_duration_seconds_") {
					continue
				}
				ls, err := parser.NewParser(parser.Options{}).ParseMetric(k.series)
				if err != nil {
					t.Fatal(err)
				}
				group := ls.Get("instance") + "/" + ls.Get("copy")
				groups[group] = true
				sk := scrapeKey{group, k.ts}
				s := scrapes[sk]
				if s == nil {
					s = &hscrape{buckets: map[float64]float64{}}
					scrapes[sk] = s
				}
				switch ls.Get("__name__") {
				case "node_http_request_duration_seconds_bucket":
					le, err := strconv.ParseFloat(ls.Get("le"), 64)
					if err != nil {
						t.Fatalf("%s: le: %v", k.series, err)
					}
					s.buckets[le] = v
				case "node_http_request_duration_seconds_sum":
					s.sum = v
				case "node_http_request_duration_seconds_count":
					s.count, s.hasCount = v, true
				}
			}
			if len(groups) == 0 {
				t.Fatal("no histogram series")
			}
			if tc.wantFull && len(groups) != tc.wantGroups {
				t.Errorf("%d histograms, want %d", len(groups), tc.wantGroups)
			}
			// In time order per histogram.
			byGroup := map[string][]int64{}
			for sk := range scrapes {
				byGroup[sk.group] = append(byGroup[sk.group], sk.ts)
			}
			for group, tss := range byGroup {
				slices.Sort(tss)
				if len(tss) != g.rounds() {
					t.Fatalf("%s: %d scrapes, want %d", group, len(tss), g.rounds())
				}
				var prev *hscrape
				for _, ts := range tss {
					s := scrapes[scrapeKey{group, ts}]
					les := make([]float64, 0, len(s.buckets))
					for le := range s.buckets {
						les = append(les, le)
					}
					slices.Sort(les)
					if tc.wantFull && len(les) != 8 {
						t.Fatalf("%s @%d: %d buckets, want 8", group, ts, len(les))
					}
					for i := 1; i < len(les); i++ {
						if s.buckets[les[i]] < s.buckets[les[i-1]] {
							t.Fatalf("%s @%d: le=%v has %v, le=%v %v: not cumulative", group, ts, les[i-1], s.buckets[les[i-1]], les[i], s.buckets[les[i]])
						}
					}
					if inf, ok := s.buckets[math.Inf(1)]; ok && s.hasCount && inf != s.count {
						t.Fatalf("%s @%d: +Inf %v, _count %v", group, ts, inf, s.count)
					}
					if prev != nil {
						reset := s.hasCount && s.count < prev.count
						for le, v := range s.buckets {
							if !reset && v < prev.buckets[le] {
								t.Fatalf("%s @%d: le=%v went from %v to %v without a reset of _count", group, ts, le, prev.buckets[le], v)
							}
						}
					}
					prev = s
				}
			}
		})
	}
}

func TestParseVariants(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		gomaxprocs []int
		specs      []string
		want       []promhbaseVariant
		err        string
	}{
		{name: "none"},
		{name: "gomaxprocs", gomaxprocs: []int{1, 2},
			want: []promhbaseVariant{{name: "GOMAXPROCS=1", gomaxprocs: 1}, {name: "GOMAXPROCS=2", gomaxprocs: 2}}},
		{name: "flag, named by it", specs: []string{"--query.engine=prometheus"},
			want: []promhbaseVariant{{name: "--query.engine=prometheus", flags: []string{"--query.engine=prometheus"}}}},
		{name: "gomaxprocs then variants", gomaxprocs: []int{1}, specs: []string{"fallback:--query.engine=prometheus, GOMAXPROCS=2", "GOMAXPROCS=2,--a=b"},
			want: []promhbaseVariant{{name: "GOMAXPROCS=1", gomaxprocs: 1},
				{name: "fallback", flags: []string{"--query.engine=prometheus"}, gomaxprocs: 2},
				{name: "GOMAXPROCS=2 --a=b", flags: []string{"--a=b"}, gomaxprocs: 2}}},
		{name: "named, nothing else", specs: []string{"default:"}, want: []promhbaseVariant{{name: "default"}}},
		{name: "name with spaces", specs: []string{"Prometheus engine : --query.engine=prometheus"},
			want: []promhbaseVariant{{name: "Prometheus engine", flags: []string{"--query.engine=prometheus"}}}},
		{name: "gomaxprocs 0", gomaxprocs: []int{0}, err: "at least 1"},
		{name: "no name, no flag", specs: []string{"fallback"}, err: "want NAME:FLAGS"},
		{name: "empty name", specs: []string{":--a"}, err: "want NAME:FLAGS"},
		{name: "not a flag", specs: []string{"x:query.engine=prometheus"}, err: "neither a flag"},
		{name: "bad GOMAXPROCS", specs: []string{"x:GOMAXPROCS=zero"}, err: "want GOMAXPROCS=N"},
		{name: "GOMAXPROCS=0", specs: []string{"GOMAXPROCS=0"}, err: "want GOMAXPROCS=N"},
		{name: "empty", specs: []string{"--,"}, err: "neither a flag"},
		{name: "same name twice", gomaxprocs: []int{1}, specs: []string{"GOMAXPROCS=1"}, err: "two promhbase variants"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseVariants(tc.gomaxprocs, tc.specs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].name != tc.want[i].name || got[i].gomaxprocs != tc.want[i].gomaxprocs || !slices.Equal(got[i].flags, tc.want[i].flags) {
					t.Errorf("variant %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestDiskFlags parses the disk command's command line as kingpin does.
func TestDiskFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		args       []string
		gomaxprocs []int
		specs      []string
		flags      []string
	}{
		{name: "defaults", args: nil},
		{name: "gomaxprocs 1 and 2, the fallback",
			args:       []string{"--promhbase.gomaxprocs=1", "--promhbase.gomaxprocs=2", "--promhbase.variant=--query.engine=prometheus"},
			gomaxprocs: []int{1, 2}, specs: []string{"--query.engine=prometheus"}},
		{name: "flags for every promhbase and two variants",
			args:  []string{"--promhbase.flag=--web.enable-pprof", "--promhbase.variant=a:--x=1", "--promhbase.variant", "b:GOMAXPROCS=1"},
			specs: []string{"a:--x=1", "b:GOMAXPROCS=1"}, flags: []string{"--web.enable-pprof"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := kingpin.New("test", "")
			cmd, d := registerDisk(app)
			got, err := app.Parse(append([]string{"disk", "--promhbase=bin/promhbase"}, tc.args...))
			if err != nil {
				t.Fatal(err)
			}
			if got != cmd.FullCommand() {
				t.Fatalf("command %q", got)
			}
			if !slices.Equal(d.gomaxprocs, tc.gomaxprocs) || !slices.Equal(d.variantSpecs, tc.specs) || !slices.Equal(d.promhbaseFlags, tc.flags) {
				t.Errorf("gomaxprocs %v, variants %q, flags %q", d.gomaxprocs, d.variantSpecs, d.promhbaseFlags)
			}
			if _, err := parseVariants(d.gomaxprocs, d.variantSpecs); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestVariantNameAndEnv(t *testing.T) {
	for _, tc := range []struct {
		system string
		v      promhbaseVariant
		want   string
	}{
		{"promhbase (embedded)", promhbaseVariant{}, "promhbase (embedded)"},
		{"promhbase (embedded)", promhbaseVariant{name: "GOMAXPROCS=1"}, "promhbase (embedded, GOMAXPROCS=1)"},
		{"promhbase (HBase, GZ)", promhbaseVariant{name: "--query.engine=prometheus"}, "promhbase (HBase, GZ, --query.engine=prometheus)"},
		{"promhbase", promhbaseVariant{name: "x"}, "promhbase (x)"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := variantName(tc.system, tc.v); got != tc.want {
				t.Errorf("variantName = %q, want %q", got, tc.want)
			}
		})
	}
	if env := (promhbaseVariant{}).env(); env != nil {
		t.Errorf("env without GOMAXPROCS: %d entries, want nil (inherited)", len(env))
	}
	t.Setenv("GOMAXPROCS", "7")
	env := promhbaseVariant{gomaxprocs: 1}.env()
	// exec uses the last value of a duplicated key.
	var last string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "GOMAXPROCS="); ok {
			last = v
		}
	}
	if last != "1" {
		t.Errorf("GOMAXPROCS in the environment: %q, want 1", last)
	}
}

// TestDefaultDiskQueries: the default queries parse as PromQL at both
// configurations' steps, cover the dashboard shapes, and select metrics
// the generator makes.
func TestDefaultDiskQueries(t *testing.T) {
	t.Parallel()
	if len(defaultDiskQueries) < 8 {
		t.Fatalf("%d default queries, want at least 8", len(defaultDiskQueries))
	}
	names := map[string]bool{}
	for _, cs := range nodeCatalog {
		names[cs.fam.name] = true
		if cs.name != "" {
			names[cs.name] = true
		}
	}
	d := diskOptions{queryParts: 300}
	for _, tc := range []struct {
		span time.Duration
		step string
	}{
		{24 * time.Hour, "288s"},
		{7 * 24 * time.Hour, "2016s"},
	} {
		t.Run(tc.step, func(t *testing.T) {
			step := promDuration(stepOf(genConfig{span: tc.span}, d))
			if step != tc.step {
				t.Fatalf("step %s, want %s (span / 300)", step, tc.step)
			}
			for _, q := range defaultDiskQueries {
				q = strings.ReplaceAll(q, "$step", step)
				e, err := parser.NewParser(parser.Options{}).ParseExpr(q)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
					if vs, ok := n.(*parser.VectorSelector); ok && !names[vs.Name] {
						t.Errorf("%s: %s is not generated", q, vs.Name)
					}
					return nil
				})
			}
		})
	}
	all := strings.Join(defaultDiskQueries, "\n")
	for _, shape := range []string{
		`sum by (mode) (rate(node_cpu_seconds_total[5m]))`,
		`max_over_time(node_load1[$step])`,
		"\nnode_memory_MemFree_bytes\n",
		`rate(node_cpu_seconds_total[1h])`,
		`histogram_quantile(0.9, sum by (le) (rate(node_http_request_duration_seconds_bucket[5m])))`,
		`topk(5, `,
		`avg by (instance) (`,
		`node_memory_MemFree_bytes / node_memory_MemTotal_bytes`,
		`increase(`,
		`_over_time(0.95, `,
	} {
		if !strings.Contains(all, shape) {
			t.Errorf("no default query has %q", shape)
		}
	}
}

func TestRatioReference(t *testing.T) {
	t.Parallel()
	vm := &querySystem{sys: sysVM, name: "VictoriaMetrics"}
	p1 := &querySystem{sys: sysPromhbase, name: "promhbase (embedded, GOMAXPROCS=1)"}
	p2 := &querySystem{sys: sysPromhbase, name: "promhbase (embedded, GOMAXPROCS=2)"}
	auto := &querySystem{sys: sysPromhbase, name: "promhbase (embedded) auto", res: "auto"}
	for _, tc := range []struct {
		name    string
		systems []*querySystem
		want    *querySystem
	}{
		{"first promhbase", []*querySystem{vm, p1, p2}, p1},
		{"auto", []*querySystem{p1, auto, vm}, auto},
		{"no promhbase", []*querySystem{vm}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ratioReference(tc.systems); got != tc.want {
				t.Errorf("ratioReference = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCopyDir(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "src")
	files := map[string]string{"a.sst": "aaa", "rowbuf/1.wal": "log", "rowbuf/deep/x": "", "OPTIONS": "o"}
	for name, body := range files {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "dst")
	if err := copyDir(src, dst); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		b, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(name)))
		if err != nil || string(b) != body {
			t.Errorf("%s: %q, %v", name, b, err)
		}
	}
	if err := copyDir(src, dst); err == nil {
		t.Error("copying onto an existing directory: no error")
	}
}

func TestResetHWM(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	pid := os.Getpid()
	if err := resetHWM(pid); err != nil {
		t.Skipf("clear_refs: %v", err)
	}
	hwm, err := procHWM(pid)
	if err != nil || hwm <= 0 {
		t.Fatalf("procHWM = %d, %v", hwm, err)
	}
}

// TestDiskHistogramRestarts follows one target for days, past its
// restarts: the histogram's series always move together, and start
// again with the target's counters (and rarely on their own).
func TestDiskHistogramRestarts(t *testing.T) {
	t.Parallel()
	g := testGenConfig()
	g.series, g.targets, g.span = 100, 1, 4*24*time.Hour
	gen := newGenerator(g)
	var sc scrape
	ti := 0
	tg := gen.targets[0]
	if len(tg.hists) != 1 {
		t.Fatalf("%d histograms, want 1", len(tg.hists))
	}
	h := tg.hists[0]
	var cpu *genSeries
	for i := range tg.series {
		if tg.series[i].fam.name == "node_cpu_seconds_total" {
			cpu = &tg.series[i]
			break
		}
	}
	prevCount, prevCPU := -1.0, -1.0
	resets, restarts := 0, 0
	for gen.next(&sc, &ti) {
		checkHist(t, h)
		for i := range tg.series {
			if s := &tg.series[i]; s.hist != nil && s.value != h.value(s.part) {
				t.Fatalf("series %v = %v, its histogram's part %d = %v", s.labels, s.value, s.part, h.value(s.part))
			}
		}
		count := h.value(h.fam.countPart())
		if count < prevCount {
			resets++
			if count > h.fam.inc {
				t.Fatalf("reset to %v, more than a scrape's observations", count)
			}
			if cpu.value < prevCPU {
				restarts++
			}
		}
		prevCount, prevCPU = count, cpu.value
	}
	// About one restart a day, and now and then a reset of its own.
	if restarts < 1 || resets > 12 {
		t.Errorf("%d resets in 4 days, %d of them with node_cpu_seconds_total's (a restart)", resets, restarts)
	}
}
