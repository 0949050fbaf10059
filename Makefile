# promhbase: the two commands a new user needs are `make run` and `make test`.
GO      ?= go
PKGS    := ./...
# Fault tests (build tag faults): they restart and split the test HBase, so
# they run on their own, after every other HBase test.
FAULTS_PKGS := ./test/e2e/faults
HBASE_ZK ?= 127.0.0.1:2181

.PHONY: all build run test test-helm test-quick test-engine test-unit test-third-party test-faults test-cluster hbase-cluster-up hbase-cluster-down vet lint hbase-up hbase-down opentsdb-up opentsdb-down prometheus bench bench-bins bench-e2e bench-disk bench-tsd bench-put bench-refresh bench-downsample fuzz clean

all: build

## build: bin/promhbase, stamped with its version, revision, branch, build
## user and date (tools/scripts/build.sh; `bin/promhbase --version`)
build:
	@GO=$(GO) tools/scripts/build.sh bin/promhbase

## run: serve on :9201 with the embedded store in ./data
run:
	$(GO) run ./cmd/promhbase serve

## test: every test (tools/scripts/test.sh; .ci/run runs this). Starts the
## standalone HBase and the test cluster (jars fetched from Maven Central
## once) and builds the peers (Prometheus, Alertmanager, VictoriaMetrics,
## vmctl; cached) in the background while vet, lint, the gohbase fork's
## and the Helm chart's tests run; then every package (end-to-end suites on
## the embedded store, the store contract suite on both stores), then the
## suites that take a backend again on HBase, the cluster tests beside
## both; then the fault tests
## (HBase restarted and split under load) alone on the standalone HBase;
## stops both HBases whatever happened. Each stage's log is in .run/test/.
test:
	@GO=$(GO) tools/scripts/test.sh

## test-quick: the edit loop, under 3 minutes: vet and the tests of every
## package that needs no server and no built binary (docs/development.md)
test-quick:
	@GO=$(GO) tools/scripts/test.sh quick

# stdmethods is off: Prometheus's chunkenc.Iterator, which query implements,
# has Seek(int64) ValueType, not io.Seeker's signature.
# The tags only add files (no file is built without them), so one run
# vets every file.
vet:
	$(GO) vet -stdmethods=false -tags faults,cluster $(PKGS)

## test-third-party: the tests of the two patches promhbase carries in its
## fork of gohbase (internal/third_party/README.md), in the fork's own module
test-third-party:
	cd internal/third_party/gohbase && $(GO) test -count=1 ./hrpc

## test-helm: the Helm chart's test (deploy/helm, its own module: Helm's
## and Kubernetes's packages stay out of promhbase's), which renders
## deploy/helm/promhbase in both modes and checks every manifest
test-helm:
	cd deploy/helm && $(GO) test -count=1 ./...

## test-cluster: the cluster tests (test/e2e/faults, tags faults and cluster):
## starts tools/scripts/hbase.sh's cluster (ZooKeeper, a master and three region
## servers, each its own JVM), kills and restarts its processes under
## ingest, and stops it. make test runs it last.
HBASE_CLUSTER_ZK ?= 127.0.0.1:2182
test-cluster:
	@tools/scripts/hbase.sh cluster-up
	@status=0; \
	PROMHBASE_HBASE_ZK=$(HBASE_CLUSTER_ZK) $(GO) test -tags 'faults cluster' -count=1 -timeout 40m -run Cluster -v $(FAULTS_PKGS) || status=$$?; \
	tools/scripts/hbase.sh cluster-down; \
	exit $$status

## hbase-cluster-up / hbase-cluster-down: start / stop the test cluster
hbase-cluster-up:
	tools/scripts/hbase.sh cluster-up
hbase-cluster-down:
	tools/scripts/hbase.sh cluster-down

## test-faults: only the fault tests, against a running tools/scripts/hbase.sh HBase
test-faults:
	PROMHBASE_HBASE_ZK=$(HBASE_ZK) $(GO) test -tags faults -count=1 -timeout 20m -v $(FAULTS_PKGS)

## test-engine: the query engine's differential tests, long: ENGINE_QUERIES
## random queries on promhbase's evaluator and on Prometheus's engine over
## the same generated data (make test runs a few thousand), and every eval
## of Prometheus's promqltest scripts (docs/query-engine.md)
ENGINE_QUERIES ?= 50000
test-engine:
	PROMHBASE_DIFF_QUERIES=$(ENGINE_QUERIES) $(GO) test -count=1 -timeout 90m -run 'TestDifferential|TestPrometheusSuite' -v ./query/engine

## test-unit: the tests that need neither HBase nor Prometheus
test-unit:
	$(GO) test -count=1 $$($(GO) list $(PKGS) | grep -v -e /store/hbase -e /e2e)

hbase-up:
	tools/scripts/hbase.sh up

hbase-down:
	tools/scripts/hbase.sh down

opentsdb-up:
	tools/scripts/opentsdb.sh up

opentsdb-down:
	tools/scripts/opentsdb.sh down

## prometheus: build (or reuse) the Prometheus 3.15.0 binary for e2e tests
prometheus:
	tools/scripts/prometheus.sh

## bench: the hot-path benchmarks recorded in BENCHMARKS.md
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 3 ./adapter ./mapping ./query ./query/engine

## bench-bins: build bin/promhbase and bin/promhbase-load, which the
## benchmarks below run. DISK_TOOLS (a recipe's first command) finds the
## project's Prometheus, promtool and VictoriaMetrics into $prom, $promtool
## and $vm; DISK_LOAD then runs promhbase-load disk against them.
DISK_TOOLS = prom=$$(tools/scripts/prometheus.sh) && promtool=$$(tools/scripts/promtool.sh) && vm=$$(tools/scripts/victoriametrics.sh)
DISK_LOAD = bin/promhbase-load disk --promhbase=bin/promhbase --prometheus=$$prom --promtool=$$promtool --victoria-metrics=$$vm
bench-bins:
	@mkdir -p bin
	$(GO) build -o bin/promhbase ./cmd/promhbase
	$(GO) build -o bin/promhbase-load ./tools/promhbase-load

## bench-e2e: promhbase (embedded) side by side with Prometheus's own
## remote-write receiver (the project's Prometheus 3.15): the same
## pre-encoded traffic, remote write 1.0 and 2.0, steady and with churn,
## and 2.0 native histograms; reads back by remote read and query_range;
## Markdown tables on stdout, plots in docs/bench/. BENCH_SERIES sizes it,
## as SERIESxROUNDS loads (1000000 series need about 6 GB of memory).
BENCH_SERIES ?= --runs=20000x100 --runs=100000x20
## BENCH_SYSTEMS adds promhbase on the standalone HBase (make hbase-up
## first): BENCH_SYSTEMS="--systems=prometheus --systems=promhbase --systems=promhbase-hbase"
BENCH_SYSTEMS ?= --systems=prometheus --systems=promhbase
bench-e2e: bench-bins
	@mkdir -p docs/bench
	@prom=$$(tools/scripts/prometheus.sh) && \
	for proto in v1 v2; do \
		bin/promhbase-load compare --prometheus=$$prom --promhbase=bin/promhbase $(BENCH_SERIES) $(BENCH_SYSTEMS) \
			--protocol=$$proto --svg=docs/bench/compare-$$proto.svg || exit 1; \
	done && \
	bin/promhbase-load compare --prometheus=$$prom --promhbase=bin/promhbase $(BENCH_SERIES) $(BENCH_SYSTEMS) \
		--protocol=v1 --churn=0.1 --svg=docs/bench/compare-churn.svg && \
	bin/promhbase-load compare --prometheus=$$prom --promhbase=bin/promhbase $(BENCH_SERIES) $(BENCH_SYSTEMS) \
		--protocol=v2 --histograms --svg=docs/bench/compare-histograms.svg

## bench-disk: bytes per sample on disk, and long-range query_range
## timings, of the same seeded node_exporter-like data (15 s scrapes with
## jitter, counters with resets, gauges, constants) in promhbase (embedded
## store, remote write 1.0, settled), VictoriaMetrics single-node (remote
## write, force-merged) and Prometheus's blocks (promtool); promhbase's
## directory by file kind. Builds or reuses Prometheus, promtool and
## VictoriaMetrics in ~/.cache/promhbase. See docs/disk.md.
## BENCH_DISK_CONFIGS: the data of each run, flags joined by commas
## (default 2000 series x 24 h over 20 targets, then 200 series x 7 days
## over 2 targets); BENCH_DISK_FLAGS: flags added to every run (e.g.
## --keep, --query.repeats=9, --dir=/var/tmp). The queries (10 dashboard
## shapes by default: rates over 5m and 1h, histogram_quantile of classic
## buckets, topk, avg by instance, a ratio, increase, *_over_time, a plain
## selector) also run on promhbase restarted as further rows, each its own
## process at once with the others (peak RSS and CPU s of each reported):
## --promhbase.gomaxprocs=N (GOMAXPROCS=N in its environment) and
## --promhbase.variant=[NAME:]FLAGS (serve flags, comma-separated), e.g.
##   make bench-disk BENCH_DISK_FLAGS='--promhbase.gomaxprocs=1 --promhbase.gomaxprocs=2 --promhbase.variant=--query.engine=prometheus'
BENCH_DISK_CONFIGS ?= --data.series=2000,--data.targets=20,--data.span=24h --data.series=200,--data.targets=2,--data.span=7d
BENCH_DISK_FLAGS ?=
bench-disk: bench-bins
	@$(DISK_TOOLS) && \
	for c in $(BENCH_DISK_CONFIGS); do \
		$(DISK_LOAD) $$(echo "$$c" | tr , ' ') $(BENCH_DISK_FLAGS) || exit 1; \
	done

## bench-tsd: promhbase's reads against an OpenTSDB 2.4.1 TSD's on the
## same HBase tables (tools/scripts/bench-tsd.sh: starts the standalone HBase
## when it does not serve, loads bench-disk's data through promhbase,
## then asks both four dashboard shapes in turns). SERIES, TARGETS, SPAN,
## RUNS and WARMUPS size it (2000, 20, 24h, 21, 100).
bench-tsd: bench-bins
	tools/scripts/bench-tsd.sh

## bench-put: OpenTSDB put ingest (telnet and /api/put) side by side, in
## turns: promhbase on the standalone HBase against an OpenTSDB 2.4.1 TSD
## on it, promhbase on its embedded store against VictoriaMetrics's
## OpenTSDB listeners (tools/scripts/bench-put.sh). SERIES, ROUNDS, RUNS,
## CONCURRENCY size it (20000, 10, 3, 4).
bench-put: bench-bins
	tools/scripts/bench-put.sh

## bench-refresh: a dashboard's refreshes on promhbase's results cache
## (promhbase-load disk --refresh=20, promhbase only, the data of
## BENCH_DISK_CONFIGS): each bench-disk query over the span, then 20
## refreshes each a step later with that step's samples written first,
## timed with the cache and with nocache=1 in turns, the answers compared
## byte for byte; medians, their ratio and the cache's counters per
## configuration. See docs/disk.md. BENCH_REFRESH_FLAGS: flags added.
BENCH_REFRESH_FLAGS ?=
bench-refresh: bench-bins
	@for c in $(BENCH_DISK_CONFIGS); do \
		bin/promhbase-load disk --promhbase=bin/promhbase --systems=promhbase --refresh=20 \
			$$(echo "$$c" | tr , ' ') $(BENCH_REFRESH_FLAGS) || exit 1; \
	done

## bench-downsample: promhbase's rollups against raw samples, VictoriaMetrics
## and Prometheus's blocks: 200 series over 2 targets, 30 days of 15 s
## scrapes (34.6 M samples), query_range over the whole span at a 1 h step
## and again at span/300 from 7m11s later (steps off the windows' ends)
## (rate, avg_over_time, max_over_time and a plain selector); promhbase
## timed with max_source_resolution=0s (raw) and auto, after waiting for
## its rollups to cover the data (the time it took is reported, with its
## ingest time); medians, spreads, ratios to promhbase auto, and the auto
## answers compared with the raw ones point by point. Takes 30-60 minutes
## on 2 cores. BENCH_DOWNSAMPLE_DATA sizes the data; BENCH_DOWNSAMPLE_FLAGS
## adds flags (e.g. --rollup.after-load: load with rollups off and time
## their build at the restart; --rollup.joined=24h: also a promhbase whose
## rollups end a day before the data, the last day read raw; --keep,
## --query.repeats=9).
BENCH_DOWNSAMPLE_DATA ?= --data.series=200 --data.targets=2 --data.span=30d
BENCH_DOWNSAMPLE_FLAGS ?=
bench-downsample: bench-bins
	@$(DISK_TOOLS) && \
	$(DISK_LOAD) $(BENCH_DOWNSAMPLE_DATA) --query.step=1h --query.also=2h24m@7m11s --query.repeats=5 \
		--promhbase.resolution=0s --promhbase.resolution=auto \
		--query='rate(node_cpu_seconds_total[1h])' \
		--query='avg_over_time(node_hwmon_temp_celsius[1h])' \
		--query='max_over_time(node_hwmon_temp_celsius[1h])' \
		--query='node_hwmon_temp_celsius' \
		$(BENCH_DOWNSAMPLE_FLAGS)

## fuzz: run every fuzz target of the module for FUZZTIME each (found by
## tools/scripts/fuzz.sh with go list and go test -list; FUZZ=regexp narrows the
## targets, FUZZPKGS the packages). Not part of make test.
FUZZTIME ?= 20s
FUZZ     ?= .
FUZZPKGS ?= $(PKGS)
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZ='$(FUZZ)' tools/scripts/fuzz.sh $(FUZZPKGS)

## lint: golangci-lint with .golangci.yml (tools/scripts/golangci-lint.sh installs
## the pinned version into ~/.cache/promhbase). The faults and cluster tags only add
## files (the fault and cluster tests), so one run with them lints every
## package.
lint:
	GO=$(GO) tools/scripts/golangci-lint.sh run --build-tags faults,cluster $(PKGS)

clean:
	rm -rf bin .run
