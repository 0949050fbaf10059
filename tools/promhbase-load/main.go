// Command promhbase-load measures sustained write throughput, the way
// Prometheus sends: batches of series with one sample each, several
// requests in flight.
//
//	promhbase-load http   --url=http://127.0.0.1:9201/api/v1/write ...
//	    remote-write requests to a running promhbase
//	promhbase-load direct --storage.backend=hbase ...
//	    the same cells put straight into the store, no HTTP, no protobuf:
//	    the ratio of the two is promhbase's own overhead
//	promhbase-load read --url=http://127.0.0.1:9201/api/v1/read ...
//	    --concurrency streamed remote reads at once of what the others
//	    wrote, each answer decoded and counted
//	promhbase-load disk --promhbase=... --victoria-metrics=... ...
//	    disk use and long-range reads of the same node_exporter-like data
//	    in promhbase, VictoriaMetrics and Prometheus's blocks (make
//	    bench-disk; docs/disk.md)
//	promhbase-load cardinality --promhbase=... --victoria-metrics=... --series=1000000
//	    /api/v1/status/tsdb of promhbase and VictoriaMetrics on the same
//	    series, timed in turns, the counts checked against the generator's
//	promhbase-load compare --promhbase=... --prometheus=... --systems=... --runs=100000x10
//	    the same load into each system in turn, side by side (make bench-e2e;
//	    BENCHMARKS.md): every request encoded up front; each system a fresh
//	    process on a fresh directory once the machine is idle (--idle-wait):
//	    Prometheus with --web.enable-remote-write-receiver, serve on the
//	    embedded store or on HBase with fresh tables, VictoriaMetrics; --churn
//	    replaces that fraction of the series a round, --histograms sends
//	    integer native histograms of 12 buckets, --server.cpus pins each
//	    server; one metric read back by both remote-read types and
//	    /api/v1/query_range. TestCompareSmoke runs it small and checks both
//	    systems answer the query with the same points
//	promhbase-load mixed --promhbase=... --victoria-metrics=... --runs=3
//	    writes and dashboards at once (docs/bench/mixed-load.md): 2 h of
//	    node_exporter-like history, then --rate samples/s open-loop by
//	    --senders while --dashboards refresh six panels over 1 h and 6 h,
//	    results caches off, the systems in turns; write-ack and query
//	    latencies, server CPU and peak RSS, every sample counted back
//
// The writers print samples/s and request latency quantiles. The load is
// bounded by --duration (and --max-rounds) and stops by itself.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/prompb"

	"github.com/promhbase/promhbase/mapping"
	"github.com/promhbase/promhbase/series"
	"github.com/promhbase/promhbase/series/uid"
	"github.com/promhbase/promhbase/store"
	"github.com/promhbase/promhbase/store/embedded"
	"github.com/promhbase/promhbase/store/hbase"
)

type options struct {
	series      int
	batch       int
	concurrency int
	duration    time.Duration
	rounds      int
	maxRounds   int
	// shift is how many positions the window of series slides a round
	// (compare's churn); 0: none.
	shift     int
	match     []string
	url       string
	backend   string
	path      string
	quorum    string
	dataTable string
	uidTable  string
}

func main() {
	var o options
	app := kingpin.New("promhbase-load", "Sustained write load for promhbase, and a side-by-side comparison with Prometheus's own receiver.")
	app.Flag("series", "Distinct series; each round writes one sample to each.").Default("20000").IntVar(&o.series)
	app.Flag("batch", "Series per request, like max_samples_per_send.").Default("2000").IntVar(&o.batch)
	app.Flag("concurrency", "Requests in flight, like Prometheus's shards.").Default("4").IntVar(&o.concurrency)
	var durationSet bool
	app.Flag("duration", "How long to send (mixed: 5m unless given).").Default("60s").IsSetByUser(&durationSet).DurationVar(&o.duration)
	app.Flag("rounds", "When > 0, encode this many rounds of requests (or Puts) before the clock starts and cycle through them, so that the generator's own encoding does not compete for CPU; later cycles rewrite the same cells.").Default("0").IntVar(&o.rounds)
	app.Flag("max-rounds", "When > 0, stop after this many rounds (one sample per series each, 10 s apart) even if --duration has not ended.").Default("0").IntVar(&o.maxRounds)
	httpCmd := app.Command("http", "Send remote-write requests to a running promhbase.")
	httpCmd.Flag("url", "Remote-write URL.").Default("http://127.0.0.1:9201/api/v1/write").StringVar(&o.url)
	directCmd := app.Command("direct", "Put the same cells straight into the store.")
	directCmd.Flag("storage.backend", "embedded or hbase.").Default("hbase").EnumVar(&o.backend, "embedded", "hbase")
	directCmd.Flag("storage.embedded.path", "Embedded store directory.").Default("./data-load").StringVar(&o.path)
	directCmd.Flag("hbase.zookeeper.quorum", "ZooKeeper quorum.").Default("127.0.0.1:2181").StringVar(&o.quorum)
	directCmd.Flag("hbase.table.data", "Data table.").Default(mapping.DefaultDataTable).StringVar(&o.dataTable)
	directCmd.Flag("hbase.table.uid", "UID table.").Default(mapping.DefaultUIDTable).StringVar(&o.uidTable)
	readCmd := app.Command("read", "Run --concurrency streamed remote reads at once and count what they return.")
	readCmd.Flag("url", "Remote-read URL.").Default("http://127.0.0.1:9201/api/v1/read").StringVar(&o.url)
	readCmd.Flag("match", "Equality matcher name=value of the read; repeatable.").Default("job=node").StringsVar(&o.match)
	var po putOptions
	putCmd := app.Command("put", "Send OpenTSDB put traffic (telnet lines or /api/put) to a TSD, promhbase's --opentsdb.listen-address or VictoriaMetrics's OpenTSDB listener: --series series x --max-rounds points, encoded before the clock.")
	putCmd.Flag("addr", "The OpenTSDB port, host:port.").Default("127.0.0.1:4242").StringVar(&po.addr)
	putCmd.Flag("protocol", "telnet or http.").Default("telnet").EnumVar(&po.protocol, "telnet", "http")
	putCmd.Flag("query", "/api/put's query string, e.g. sync.").StringVar(&po.query)
	putCmd.Flag("vm-metrics", "VictoriaMetrics's /metrics URL: a telnet run ends when vm_rows_inserted_total{type=\"opentsdb\"} counts every point (its listener answers no version).").StringVar(&po.vmMetrics)
	var c compareOptions
	compareCmd := app.Command("compare", "Write the same pre-encoded traffic into Prometheus's own remote-write receiver and into promhbase (embedded), each a fresh process, then read back; print a Markdown table (and with --svg, plots).")
	compareCmd.Flag("prometheus", "Prometheus binary (tools/scripts/prometheus.sh prints the project's); for --systems=prometheus.").StringVar(&c.prometheus)
	compareCmd.Flag("victoria-metrics", "VictoriaMetrics single-node binary (tools/scripts/victoriametrics.sh prints the project's pinned v1.151.0); for --systems=victoriametrics.").StringVar(&c.victoriaMetrics)
	compareCmd.Flag("server.cpus", "Run each system pinned to this many cores (taskset on cores 0..N-1, GOMAXPROCS=N), the load generator on the others when the machine has more; repeatable: each system at each count in turn, side by side. Default: unpinned.").IntsVar(&c.serverCPUs)
	compareCmd.Flag("profile", "Save promhbase's mutex and block profiles of each run's writes in this directory (add --promhbase.flag=--web.enable-pprof --promhbase.flag=--debug.mutex-profile-fraction=10 --promhbase.flag=--debug.block-profile-rate=10000).").StringVar(&c.profile)
	compareCmd.Flag("profile.cpu-seconds", "With --profile, also save promhbase's CPU profile of this long from the start of each run's writes (whole seconds; the run waits for it).").DurationVar(&c.profileCPU)
	compareCmd.Flag("promhbase", "promhbase binary.").Required().StringVar(&c.promhbase)
	compareCmd.Flag("protocol", "Write protocol: v1 or v2 (remote write), or otlp (OTLP/HTTP gauges, gzip protobuf: Prometheus with --web.enable-otlp-receiver, VictoriaMetrics with -opentelemetry.usePrometheusNaming).").Default("v1").StringVar(&c.protocol)
	compareCmd.Flag("histograms", "Send one integer native histogram (schema 3, 12 buckets) per series a round instead of a float sample.").BoolVar(&c.histograms)
	compareCmd.Flag("idle-wait", "Before each system's run, wait until the machine's CPUs are less than a tenth busy (what the run before left running, such as HBase's flushes, would otherwise share the cores), at most this long; 0 does not wait.").Default("2m").DurationVar(&c.idleWait)
	compareCmd.Flag("read-repeats", "Times each read (both remote-read response types, query_range) is timed; the median is reported.").Default("15").IntVar(&c.readRepeats)
	compareCmd.Flag("churn", "Fraction of the series replaced every round, as pods restart (0.1: 10 %).").Default("0").Float64Var(&c.churn)
	compareCmd.Flag("series-counts", "Active series of each run, in turn (default: --series).").IntsVar(&c.seriesCounts)
	compareCmd.Flag("dir", "Where the systems' data directories go (removed after each run).").Default(os.TempDir()).StringVar(&c.dir)
	compareCmd.Flag("runs", "Loads to run, in turn, as SERIESxROUNDS (e.g. 20000x100); repeatable. Default: --series-counts, each for --max-rounds.").StringsVar(&c.runs)
	compareCmd.Flag("systems", "Systems to run, in turn: prometheus, promhbase (embedded store), promhbase-hbase (the HBase at --hbase.zookeeper.quorum, on fresh tables it drops after the run), victoriametrics (single-node, --victoria-metrics; no remote read, only its query_range is timed); repeatable.").StringsVar(&c.systems)
	compareCmd.Flag("hbase.zookeeper.quorum", "ZooKeeper quorum of promhbase-hbase's HBase.").Default("127.0.0.1:2181").StringVar(&c.hbaseQuorum)
	compareCmd.Flag("promhbase.flag", "Extra flag for every promhbase serve it starts, e.g. --promhbase.flag=--web.enable-pprof; repeatable.").StringsVar(&c.extraFlags)
	compareCmd.Flag("svg", "Also draw the results into this SVG file.").StringVar(&c.svg)
	diskCmd, disk := registerDisk(app)
	cardCmd, card := registerCardinality(app)
	mixedCmd, mixed := registerMixed(app)
	cmd := kingpin.MustParse(app.Parse(os.Args[1:]))
	var err error
	switch cmd {
	case httpCmd.FullCommand():
		err = runHTTP(o)
	case directCmd.FullCommand():
		err = runDirect(o)
	case readCmd.FullCommand():
		err = runRead(o)
	case putCmd.FullCommand():
		err = runPut(o, po)
	case compareCmd.FullCommand():
		_, err = runCompare(o, c)
	case diskCmd.FullCommand():
		err = runDisk(o, *disk)
	case cardCmd.FullCommand():
		err = runCardinality(o, *card)
	case mixedCmd.FullCommand():
		if !durationSet {
			o.duration = 5 * time.Minute
		}
		_, err = runMixed(o, *mixed)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "promhbase-load:", err)
		os.Exit(1)
	}
}

// seriesLabels returns the labels of series i: ten labels, like a
// node_exporter series.
func seriesLabels(i int) []prompb.Label {
	return []prompb.Label{
		{Name: "__name__", Value: fmt.Sprintf("load_metric_%d", i%100)},
		{Name: "cpu", Value: fmt.Sprint(i % 16)},
		{Name: "datacenter", Value: fmt.Sprintf("dc-%d", i%3)},
		{Name: "device", Value: fmt.Sprintf("sd%c", 'a'+i%8)},
		{Name: "env", Value: "production"},
		{Name: "instance", Value: fmt.Sprintf("host-%05d:9100", i/100)},
		{Name: "job", Value: "node"},
		{Name: "mode", Value: []string{"idle", "user", "system", "iowait"}[i%4]},
		{Name: "rack", Value: fmt.Sprintf("r%02d", i%40)},
		{Name: "series", Value: fmt.Sprint(i)},
	}
}

// runResult is what run measured.
type runResult struct {
	samples             int64
	elapsed, firstRound time.Duration // firstRound: until every batch of round 0 was answered
	requests            int
	p50, p99            time.Duration
	// steadyRate and steadyP99 leave the first round out: samples/s of
	// the later rounds over the time after the first round ended, and the
	// p99 of their requests.
	steadyRate float64
	steadyP99  time.Duration
}

// run drives work in o.concurrency goroutines over rounds of batches until
// the duration ends (or o.maxRounds), prints the throughput and returns it.
func run(o options, work func(ctx context.Context, round, first, n int) error) (runResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	type job struct {
		round, first, n int
		done            chan struct{} // closed once work returned
	}
	// Sharded by series, as Prometheus's queue: a batch of series always
	// goes to the same sender, which sends its rounds in order.
	shards := make([]chan job, o.concurrency)
	for i := range shards {
		shards[i] = make(chan job)
	}
	var samples atomic.Int64
	var mu sync.Mutex
	var lat, steadyLat []time.Duration
	var steadySamples int64
	var firstErr error
	var wg sync.WaitGroup
	batches := (o.series + o.batch - 1) / o.batch
	round0 := 0
	var firstRound time.Duration
	start := time.Now()
	for _, jobs := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				began := time.Now()
				err := work(context.Background(), j.round, j.first, j.n)
				d := time.Since(began)
				close(j.done)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lat = append(lat, d)
				if j.round > 0 {
					steadyLat = append(steadyLat, d)
					if err == nil {
						steadySamples += int64(j.n)
					}
				}
				if j.round == 0 {
					if round0++; round0 == batches {
						firstRound = time.Since(start)
					}
				}
				mu.Unlock()
				if err == nil {
					samples.Add(int64(j.n))
				}
			}
		}()
	}
	// With o.shift, a series moves to a lower position every round, so
	// into another batch and possibly another sender: a batch waits for
	// the batches of the round before that held its series, so that no
	// series' sample overtakes its previous one (Prometheus would refuse
	// it as out of order).
	var prev, cur []chan struct{}
feed:
	for round := 0; o.maxRounds <= 0 || round < o.maxRounds; round++ {
		prev, cur = cur, make([]chan struct{}, batches)
		for first := 0; first < o.series; first += o.batch {
			n := min(o.batch, o.series-first)
			if o.shift > 0 && prev != nil {
				for _, p := range []int{first + o.shift, first + o.shift + n - 1} {
					if p >= o.series {
						continue // new series: none before
					}
					select {
					case <-prev[p/o.batch]:
					case <-ctx.Done():
						break feed
					}
				}
			}
			j := job{round, first, n, make(chan struct{})}
			cur[first/o.batch] = j.done
			select {
			case shards[(first/o.batch)%len(shards)] <- j:
			case <-ctx.Done():
				break feed
			}
		}
	}
	for _, jobs := range shards {
		close(jobs)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return runResult{}, firstErr
	}
	q := func(lat []time.Duration, p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		slices.Sort(lat)
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	r := runResult{samples: samples.Load(), elapsed: elapsed, firstRound: firstRound, requests: len(lat), p50: q(lat, 0.5), p99: q(lat, 0.99), steadyP99: q(steadyLat, 0.99)}
	if rest := elapsed - firstRound; rest > 0 && steadySamples > 0 {
		r.steadyRate = float64(steadySamples) / rest.Seconds()
	}
	fmt.Printf("samples=%d elapsed=%s samples/s=%.0f requests=%d p50=%s p99=%s first_round=%s steady_samples/s=%.0f steady_p99=%s\n",
		r.samples, elapsed.Round(time.Millisecond), float64(r.samples)/elapsed.Seconds(), r.requests, r.p50, r.p99, firstRound.Round(time.Millisecond), r.steadyRate, r.steadyP99)
	return r, nil
}

// baseTime is where the load's timestamps start: one sample per series
// every 10 s from there (so rows stay within a few hours).
func baseTime() int64 { return time.Now().Add(-6 * time.Hour).Truncate(time.Hour).UnixMilli() }

func runHTTP(o options) error {
	t0 := baseTime()
	lbls := make([][]prompb.Label, o.series)
	for i := range lbls {
		lbls[i] = seriesLabels(i)
	}
	encode := func(round, first, n int) []byte {
		req := prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, n)}
		for i := range n {
			req.Timeseries[i] = prompb.TimeSeries{Labels: lbls[first+i], Samples: []prompb.Sample{{Timestamp: t0 + int64(round)*10_000, Value: float64(round*o.series + first + i)}}}
		}
		data, err := proto.Marshal(&req)
		if err != nil {
			panic(err) // a prompb message always marshals
		}
		return snappy.Encode(nil, data)
	}
	pre := precompute(o, encode)
	_, err := run(o, func(ctx context.Context, round, first, n int) error {
		var body []byte
		if pre != nil {
			body = pre[round%o.rounds][first/o.batch]
		} else {
			body = encode(round, first, n)
		}
		return post(ctx, o.url, "application/x-protobuf", body)
	})
	return err
}

func runDirect(o options) error {
	ctx := context.Background()
	var st store.Store
	var err error
	switch o.backend {
	case "hbase":
		st, err = hbase.New(hbase.Config{ZKQuorum: o.quorum}, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(os.Stderr, nil)))
	default:
		st, err = embedded.Open(o.path, embedded.Options{BufferTables: []string{o.dataTable}})
	}
	if err != nil {
		return err
	}
	defer st.Close()
	layout := mapping.DefaultLayout()
	uids, err := uid.NewUIDs(st, layout, uid.UIDOptions{Table: o.uidTable})
	if err != nil {
		return err
	}
	m := series.NewMapper(uids, layout, 0)
	// The series' UIDs, assigned before the clock starts, a request's
	// worth at a time.
	resolved := make([]series.Series, o.series)
	for first := 0; first < o.series; first += o.batch {
		items := make([]series.ResolveItem, min(o.batch, o.series-first))
		for j := range items {
			var wl []mapping.Label
			for _, l := range seriesLabels(first + j) {
				wl = append(wl, mapping.Label{Name: []byte(l.Name), Value: []byte(l.Value)})
			}
			items[j] = series.ResolveItem{Key: []byte(fmt.Sprint(first + j)), Labels: wl}
		}
		m.ResolveBatch(ctx, items)
		for j, it := range items {
			if it.Err != nil {
				return it.Err
			}
			resolved[first+j] = it.Series
		}
	}
	t0 := baseTime()
	build := func(round, first, n int) []store.Put {
		ts := t0 + int64(round)*10_000
		base := ts / 1000 / 3600 * 3600
		puts := make([]store.Put, n)
		for i := range n {
			val, flags := mapping.AppendValue(nil, float64(round*o.series+first+i))
			puts[i] = store.Put{Row: m.AppendRowKey(nil, resolved[first+i], uint32(base)), Cells: []store.Cell{{
				Family: []byte("t"), Qualifier: mapping.AppendMsQualifier(nil, uint32(ts-base*1000), flags), Value: slices.Clip(val),
			}}}
		}
		return puts
	}
	pre := precompute(o, build)
	_, err = run(o, func(ctx context.Context, round, first, n int) error {
		if pre != nil {
			return st.Put(ctx, o.dataTable, pre[round%o.rounds][first/o.batch])
		}
		return st.Put(ctx, o.dataTable, build(round, first, n))
	})
	return err
}

// precompute builds o.rounds rounds of batches up front, or returns nil
// when --rounds is 0.
func precompute[T any](o options, build func(round, first, n int) T) [][]T {
	if o.rounds <= 0 {
		return nil
	}
	out := make([][]T, o.rounds)
	for r := range out {
		for first := 0; first < o.series; first += o.batch {
			out[r] = append(out[r], build(r, first, min(o.batch, o.series-first)))
		}
	}
	return out
}
