package main

// The disk command's long-range queries and its report.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// queryTiming is one query on one query system.
type queryTiming struct {
	query, system  string
	name           string // the query system's name in the report
	qs             *querySystem
	times          []time.Duration
	series, points int
	headers        []string // the distinct X-Promhbase-Resolution headers of its answers, in the order seen
	err            error
}

// querySystem is one row of the query tables: a system's server, and for
// promhbase the max_source_resolution it is asked with.
type querySystem struct {
	sys, name string
	res       string // max_source_resolution sent ("": none)
	srv       *server
	extra     url.Values
}

// queryProc is a process serving the queries (one or more query
// systems): its peak resident set and its CPU seconds over the queries'
// runs (warm-ups included).
type queryProc struct {
	name string
	srv  *server
	// hwmReset: VmHWM was reset (/proc/<pid>/clear_refs) before the
	// warm-ups, so hwm is the peak over the queries; else since start.
	hwmReset  bool
	hwm       int64
	cpu0, cpu float64
	err       error
}

// queryReport is what the queries found.
type queryReport struct {
	systems []*querySystem
	procs   []*queryProc
	timings []*queryTiming
	// rollups: promhbase's rollups' progress at its restart for the
	// queries, by system.
	rollups map[string]*rollupProgress
	// agreements: answers compared point by point.
	agreements []*agreement
	// joined: how the joined case's rollups were built (--rollup.joined;
	// nil: not, or by an earlier report's run).
	joined *joinedBuild
}

// resolutionName names a max_source_resolution value in the report.
func resolutionName(res string) string {
	switch res {
	case "0s", "0", "raw":
		return "raw"
	}
	return res
}

func isRawResolution(res string) bool { return resolutionName(res) == "raw" }

// queryWindow returns the queries' start and end (Unix ms): the data's,
// the start moved by --query.start-offset.
func queryWindow(g genConfig, d diskOptions) (start, end int64) {
	return g.startMs() + time.Duration(d.queryStartOffset).Milliseconds(), g.endMs()
}

func diskQueries(d diskOptions, g genConfig, work string, runs []*diskRun) (*queryReport, error) {
	rep := &queryReport{rollups: map[string]*rollupProgress{}}
	var servers []*server
	defer func() {
		for _, s := range servers {
			_ = s.stop()
		}
	}()
	for _, r := range runs {
		if r.noQuery {
			continue
		}
		if r.system == sysPromhbase || r.system == sysPromhbaseHBase {
			ss, err := startPromhbaseQueries(d, g, work, r, rep)
			servers = append(servers, ss...)
			if err != nil {
				return nil, err
			}
			continue
		}
		var s *server
		var err error
		switch r.system {
		case sysVM:
			s, err = startVM(d, r.dataDir, filepath.Join(work, "victoriametrics-query.log"))
		case sysPrometheus:
			s, err = startPrometheus(d, r.dataDir, work)
		}
		if err != nil {
			return nil, err
		}
		servers = append(servers, s)
		qs := &querySystem{sys: r.system, name: r.name(), srv: s, extra: url.Values{}}
		if r.system == sysVM {
			qs.extra.Set("nocache", "1")
		}
		rep.systems = append(rep.systems, qs)
		rep.procs = append(rep.procs, &queryProc{name: r.name(), srv: s})
	}
	step := stepOf(g, d)
	start, end := queryWindow(g, d)
	queries := d.queries
	if len(queries) == 0 {
		queries = defaultDiskQueries
	}
	byKey := map[[2]int]*queryTiming{}
	for qi, q := range queries {
		for si, qs := range rep.systems {
			t := &queryTiming{query: strings.ReplaceAll(q, "$step", promDuration(step)), system: qs.sys, name: qs.name, qs: qs}
			byKey[[2]int{qi, si}] = t
			rep.timings = append(rep.timings, t)
		}
	}
	n := len(rep.systems)
	fmt.Fprintf(os.Stderr, "queries: %d × %d systems, %d warm-up and %d timed runs each, step %s...\n", len(queries), n, d.warmups, d.repeats, promDuration(step))
	for _, p := range rep.procs {
		pid := p.srv.cmd.Process.Pid
		p.cpu0, _ = procCPU(pid)
		p.hwmReset = resetHWM(pid) == nil
	}
	for r := range d.warmups + d.repeats {
		for qi := range queries {
			// The systems take turns, each first in turn.
			for k := range n {
				si := (k + r + qi) % n
				t := byKey[[2]int{qi, si}]
				if t.err != nil {
					continue
				}
				a, err := rangeQuery(t.qs.srv.base, t.query, start, end, step, t.qs.extra)
				if err != nil {
					t.err = err
					continue
				}
				t.series, t.points = a.series, a.points
				if !slices.Contains(t.headers, a.header) {
					t.headers = append(t.headers, a.header)
				}
				if r >= d.warmups {
					t.times = append(t.times, a.took)
				}
			}
		}
	}
	for _, p := range rep.procs {
		pid := p.srv.cmd.Process.Pid
		cpu1, _ := procCPU(pid)
		p.cpu = cpu1 - p.cpu0
		p.hwm, p.err = procHWM(pid)
	}
	for qi := range queries {
		var ts []*queryTiming
		for si := range rep.systems {
			ts = append(ts, byKey[[2]int{qi, si}])
		}
		rep.agreements = append(rep.agreements, compareAnswers(ts, start, end, step)...)
	}
	return rep, nil
}

// startPromhbaseQueries starts the processes of r, promhbase (embedded
// or on HBase), for the queries: one per --promhbase.gomaxprocs and
// --promhbase.variant, else one, all at once. On the embedded store each
// after the first gets a copy of the data directory, made before any of
// them starts (and writes rollups into it). Each waits for its rollups
// (--rollup.timeout) before the next starts. It returns the servers
// started, also when it fails.
func startPromhbaseQueries(d diskOptions, g genConfig, work string, r *diskRun, rep *queryReport) ([]*server, error) {
	variants := d.variants
	if len(variants) == 0 {
		variants = []promhbaseVariant{{}}
	}
	dirs := make([]string, len(variants))
	for i := range variants {
		dirs[i] = r.dataDir
		if i > 0 && r.system == sysPromhbase {
			dirs[i] = fmt.Sprintf("%s-query%d", r.dataDir, i)
			if err := copyDir(r.dataDir, dirs[i]); err != nil {
				return nil, fmt.Errorf("copying %s for %s: %w", r.dataDir, variantName(r.name(), variants[i]), err)
			}
		}
	}
	if d.rollupJoined > 0 && r.system == sysPromhbase {
		// Before the first process builds the rollups of the original.
		jb, err := prepareJoined(d, g, r)
		if err != nil {
			return nil, err
		}
		rep.joined = jb
	}
	var servers []*server
	for i, v := range variants {
		name := variantName(r.name(), v)
		logName := r.system + "-query.log"
		if i > 0 {
			logName = fmt.Sprintf("%s-query-%d.log", r.system, i)
		}
		var s *server
		var err error
		if r.system == sysPromhbase {
			s, err = startPromhbase(d, dirs[i], filepath.Join(work, logName), v.env(), v.flags...)
		} else {
			s, err = startPromhbaseHBase(d, r.tables, filepath.Join(work, logName), v.env(), v.flags...)
		}
		if err != nil {
			return servers, fmt.Errorf("%s: %w", name, err)
		}
		servers = append(servers, s)
		if d.rollupTimeout > 0 {
			// Before the others start: the build has the machine.
			rp, err := waitRollups(s, g, d.rollupTimeout, name+" (restarted for the queries)")
			if err != nil {
				return servers, s.withLog(err)
			}
			if rp.built+rp.rebuilt > 0 {
				// Rollups written now: let the store settle, as after the
				// load, before the queries are timed.
				began := time.Now()
				how, err := settlePromhbase(s, d.settleQuiet, d.settleTimeout)
				if err != nil {
					return servers, s.withLog(err)
				}
				rp.settle, rp.settleNote = time.Since(began), how
				fmt.Fprintf(os.Stderr, "%s: %s after %s\n", name, how, rp.settle.Round(time.Second))
			}
			if rep.rollups[r.system] == nil {
				rep.rollups[r.system] = rp
			}
		}
		rep.procs = append(rep.procs, &queryProc{name: name, srv: s})
		if len(d.resolutions) > 0 {
			for _, res := range d.resolutions {
				rep.systems = append(rep.systems, &querySystem{sys: r.system, name: name + " " + resolutionName(res), res: res, srv: s,
					extra: url.Values{"max_source_resolution": {res}, "nocache": {"1"}}})
			}
			continue
		}
		// Results caches off on every system: each run evaluates.
		rep.systems = append(rep.systems, &querySystem{sys: r.system, name: name, srv: s, extra: url.Values{"nocache": {"1"}}})
	}
	if d.rollupJoined > 0 && r.system == sysPromhbase {
		s, err := startJoined(d, work, r, rep)
		if err != nil {
			return servers, err
		}
		servers = append(servers, s)
	}
	return servers, nil
}

// copyDir copies the directory tree src to dst (which must not exist):
// directories, regular files and symbolic links.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		fi, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return os.Mkdir(to, fi.Mode().Perm())
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, to)
		case fi.Mode().IsRegular():
			return copyFile(path, to, fi.Mode().Perm())
		}
		return fmt.Errorf("%s: not a regular file, directory or link", path)
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// resetHWM resets the peak resident set (VmHWM) of pid to its current
// resident set (/proc/<pid>/clear_refs, Linux 4.0 on; the process must be
// this user's).
func resetHWM(pid int) error {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/clear_refs", pid), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString("5"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// stepOf is the step of the queries: --query.step, else span / points,
// in whole milliseconds.
func stepOf(g genConfig, d diskOptions) time.Duration {
	if d.queryStep > 0 {
		return time.Duration(d.queryStep)
	}
	return (g.span / time.Duration(d.queryParts)).Truncate(time.Millisecond)
}

// promDuration writes d as PromQL accepts it (whole seconds, else ms).
func promDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// rangeAnswer is what one timed query_range answered.
type rangeAnswer struct {
	series, points int
	took           time.Duration
	header         string // X-Promhbase-Resolution
}

// rangeForm is the form of a query_range request.
func rangeForm(query string, start, end int64, step time.Duration, extra url.Values) url.Values {
	v := url.Values{}
	for k, vs := range extra {
		v[k] = vs
	}
	v.Set("query", query)
	v.Set("start", strconv.FormatFloat(float64(start)/1000, 'f', 3, 64))
	v.Set("end", strconv.FormatFloat(float64(end)/1000, 'f', 3, 64))
	v.Set("step", strconv.FormatFloat(step.Seconds(), 'f', -1, 64))
	return v
}

// postForm posts form to target through client and returns the answer's
// status code and body (http.PostForm's request, with ctx).
func postForm(ctx context.Context, client *http.Client, target string, form url.Values) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// rangeQuery runs /api/v1/query_range and returns the series and points
// of its answer, the time it took (the answer's JSON decoded) and its
// resolution header.
func rangeQuery(base, query string, start, end int64, step time.Duration, extra url.Values) (rangeAnswer, error) {
	v := rangeForm(query, start, end, step, extra)
	began := time.Now()
	resp, err := http.PostForm(base+"/api/v1/query_range", v)
	if err != nil {
		return rangeAnswer{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return rangeAnswer{}, fmt.Errorf("%s: status %d: %s", query, resp.StatusCode, msg)
	}
	var qr struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Values []json.RawMessage `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&qr); err != nil {
		return rangeAnswer{}, err
	}
	took := time.Since(began)
	if qr.Status != "success" {
		return rangeAnswer{}, fmt.Errorf("%s: status %q", query, qr.Status)
	}
	n := 0
	for _, r := range qr.Data.Result {
		n += len(r.Values)
	}
	return rangeAnswer{series: len(qr.Data.Result), points: n, took: took, header: resp.Header.Get("X-Promhbase-Resolution")}, nil
}

// rangeBody runs /api/v1/query_range and returns its answer's bytes and
// the time to the last of them.
func rangeBody(base, query string, start, end int64, step time.Duration, extra url.Values) ([]byte, time.Duration, error) {
	began := time.Now()
	status, body, err := postForm(context.Background(), http.DefaultClient, base+"/api/v1/query_range", rangeForm(query, start, end, step, extra))
	took := time.Since(began)
	if err != nil {
		return nil, 0, err
	}
	if status != http.StatusOK {
		return nil, 0, fmt.Errorf("%s: status %d: %.4096s", query, status, body)
	}
	return body, took, nil
}

// bodyDiff describes where two answers first differ ("": they do not).
func bodyDiff(cached, uncached []byte) string {
	if string(cached) == string(uncached) {
		return ""
	}
	i := 0
	for i < len(cached) && i < len(uncached) && cached[i] == uncached[i] {
		i++
	}
	around := func(b []byte) string { return string(b[max(i-40, 0):min(i+40, len(b))]) }
	return fmt.Sprintf("byte %d of %d (cached) and %d (nocache=1): %q vs %q", i, len(cached), len(uncached), around(cached), around(uncached))
}

// countAnswer returns the series and points of a query_range answer
// (zeros when it does not decode).
func countAnswer(body []byte) (series, points int) {
	var a struct {
		Data struct {
			Result []map[string]json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &a) != nil {
		return 0, 0
	}
	for _, r := range a.Data.Result {
		for _, k := range []string{"values", "histograms"} {
			var ps []json.RawMessage
			if json.Unmarshal(r[k], &ps) == nil {
				points += len(ps)
			}
		}
	}
	return len(a.Data.Result), points
}

// ---- printing ----

var diskSystemNames = map[string]string{sysPromhbase: "promhbase (embedded)", sysVM: "VictoriaMetrics", sysPrometheus: "Prometheus blocks"}

func printDisk(w io.Writer, title string, g genConfig, runs []*diskRun) {
	samples := float64(g.samples())
	ref := map[string]float64{}
	for _, r := range runs {
		ref[r.system] = float64(r.usage.bytes)
	}
	fmt.Fprintf(w, "\n## Disk: %s\n\n", title)
	fmt.Fprintf(w, "| system | measured | bytes | du (allocated) | bytes/sample | ÷ VictoriaMetrics | ÷ Prometheus | load | settle |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	ratio := func(b float64, sys string) string {
		if v, ok := ref[sys]; ok && v > 0 {
			return fmt.Sprintf("%.2f", b/v)
		}
		return "–"
	}
	row := func(name, state string, u *dirUsage, r *diskRun) {
		fmt.Fprintf(w, "| %s | %s | %d | %d | %.3f | %s | %s | %s | %s |\n", name, state, u.bytes, u.alloc, float64(u.bytes)/samples,
			ratio(float64(u.bytes), sysVM), ratio(float64(u.bytes), sysPrometheus), r.load.Round(time.Millisecond), r.settle.Round(time.Second))
	}
	for _, r := range runs {
		switch r.system {
		case sysPromhbase:
			row(r.name(), "settled, running", r.running, r)
			row(r.name(), "stopped (SIGTERM)", r.usage, r)
		case sysPromhbaseHBase:
			row(r.name(), "store files, flushed and major-compacted", r.usage, r)
		case sysVM:
			row(r.name(), "stopped (SIGINT)", r.usage, r)
		default:
			row(r.name(), "as promtool wrote them", r.usage, r)
		}
	}
	fmt.Fprintln(w)
	for _, r := range runs {
		fmt.Fprintf(w, "- %s: %s\n", r.name(), r.note)
	}
	for _, r := range runs {
		us := []*dirUsage{r.usage}
		states := []string{""}
		if r.running != nil {
			us, states = []*dirUsage{r.running, r.usage}, []string{" (settled, running)", " (stopped)"}
		}
		by := "file kind"
		if r.system == sysPromhbaseHBase {
			by = "table (store files)"
		}
		for i, u := range us {
			fmt.Fprintf(w, "\n%s%s by %s:\n\n| kind | files | bytes | bytes/sample | share |\n| --- | --- | --- | --- | --- |\n", r.name(), states[i], by)
			kinds := make([]string, 0, len(u.kinds))
			for k := range u.kinds {
				kinds = append(kinds, k)
			}
			slices.SortFunc(kinds, func(a, b string) int { return int(u.kinds[b].bytes - u.kinds[a].bytes) })
			for _, k := range kinds {
				ku := u.kinds[k]
				fmt.Fprintf(w, "| %s | %d | %d | %.3f | %.1f %% |\n", k, ku.files, ku.bytes, float64(ku.bytes)/samples, 100*float64(ku.bytes)/float64(max(u.bytes, 1)))
			}
			if u.reserved.files > 0 {
				fmt.Fprintf(w, "\nNot counted above: %d bytes in %d file(s) held in reserve (the ballast, --storage.embedded.ballast-bytes: free space kept for a full disk, not data).\n",
					u.reserved.bytes, u.reserved.files)
			}
		}
	}
}

// median returns the median of ts (sorted in place).
func median(ts []time.Duration) time.Duration {
	slices.Sort(ts)
	if len(ts)%2 == 0 {
		return (ts[len(ts)/2-1] + ts[len(ts)/2]) / 2
	}
	return ts[len(ts)/2]
}

func printQueries(w io.Writer, g genConfig, d diskOptions, rep *queryReport) {
	offset := ""
	if d.queryStartOffset > 0 {
		offset = ", start " + d.queryStartOffset.String() + " after the data's"
	}
	fmt.Fprintf(w, "\n## query_range over the whole %s, step %s%s (%d timed runs each after %d warm-up, systems taking turns)\n\n", d.span, promDuration(stepOf(g, d)), offset, d.repeats, d.warmups)
	fmt.Fprintf(w, "| query | system | median | min – max | spread | series | points | resolution header |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	meds := map[*queryTiming]time.Duration{}
	for _, t := range rep.timings {
		if t.err != nil {
			fmt.Fprintf(w, "| `%s` | %s | error: %s | | | | | |\n", t.query, t.name, strings.ReplaceAll(t.err.Error(), "|", `\|`))
			continue
		}
		ts := slices.Clone(t.times)
		med := median(ts)
		meds[t] = med
		spread := 0.0
		if med > 0 {
			spread = 100 * float64(ts[len(ts)-1]-ts[0]) / float64(med)
		}
		hdr := strings.Join(t.headers, " / ")
		if hdr == "" {
			hdr = "–"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s – %s | %.0f %% | %d | %d | %s |\n", strings.ReplaceAll(t.query, "|", `\|`), t.name,
			roundDur(med), roundDur(ts[0]), roundDur(ts[len(ts)-1]), spread, t.series, t.points, hdr)
	}

	printProcs(w, rep.procs)

	// Ratios to promhbase's auto resolution when it was timed, else to
	// promhbase's first row.
	ref := ratioReference(rep.systems)
	if ref == nil || len(rep.systems) < 2 {
		printAgreements(w, rep.agreements)
		return
	}
	var others []*querySystem
	for _, qs := range rep.systems {
		if qs != ref {
			others = append(others, qs)
		}
	}
	fmt.Fprintf(w, "\nMedians divided by %s's:\n\n| query |", ref.name)
	for _, qs := range others {
		fmt.Fprintf(w, " %s ÷ %s |", qs.name, ref.name)
	}
	fmt.Fprintf(w, "\n| --- |%s\n", strings.Repeat(" --- |", len(others)))
	var queries []string
	byQS := map[string]map[*querySystem]*queryTiming{}
	for _, t := range rep.timings {
		if byQS[t.query] == nil {
			queries = append(queries, t.query)
			byQS[t.query] = map[*querySystem]*queryTiming{}
		}
		byQS[t.query][t.qs] = t
	}
	for _, q := range queries {
		fmt.Fprintf(w, "| `%s` |", strings.ReplaceAll(q, "|", `\|`))
		rt := byQS[q][ref]
		for _, qs := range others {
			t := byQS[q][qs]
			if rt == nil || t == nil || rt.err != nil || t.err != nil || meds[rt] <= 0 {
				fmt.Fprintf(w, " – |")
				continue
			}
			fmt.Fprintf(w, " %.2f |", float64(meds[t])/float64(meds[rt]))
		}
		fmt.Fprintln(w)
	}
	printAgreements(w, rep.agreements)
}

// ratioReference is the query system the medians are divided by:
// promhbase's auto resolution, else the first promhbase row; nil when
// promhbase was not queried.
func ratioReference(systems []*querySystem) *querySystem {
	var first *querySystem
	for _, qs := range systems {
		if qs.sys != sysPromhbase && qs.sys != sysPromhbaseHBase {
			continue
		}
		if qs.res == "auto" {
			return qs
		}
		if first == nil {
			first = qs
		}
	}
	return first
}

// printProcs prints the peak resident set and the CPU seconds of each
// process serving the queries.
func printProcs(w io.Writer, procs []*queryProc) {
	if len(procs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nThe processes serving the queries (each restarted for them, all running at once): peak resident set (VmHWM of /proc/<pid>/status, read after the timed runs) and CPU seconds over all the queries' runs, warm-ups included:\n\n")
	fmt.Fprintf(w, "| process | peak RSS | peak since | CPU s |\n| --- | --- | --- | --- |\n")
	for _, p := range procs {
		since := "reset before the warm-ups"
		if !p.hwmReset {
			since = "the process's start"
		}
		if p.err != nil {
			fmt.Fprintf(w, "| %s | error: %s | %s | %.2f |\n", p.name, strings.ReplaceAll(p.err.Error(), "|", `\|`), since, p.cpu)
			continue
		}
		fmt.Fprintf(w, "| %s | %.1f MiB | %s | %.2f |\n", p.name, float64(p.hwm)/(1<<20), since, p.cpu)
	}
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
