#!/usr/bin/env bash
# What `make test` (and so .ci/run) runs: every test of the project, the
# servers they need started once, the stages overlapped where they do not
# contend for the same server.
#
#   tools/scripts/test.sh          every stage below
#   tools/scripts/test.sh quick    the edit loop: vet, then the packages that need
#                            no server and no built binary (make test-quick)
#
# The stages of the full run, in time order (docs/development.md says what
# each suite checks):
#
#   start     in the background: the standalone HBase (tools/scripts/hbase.sh up,
#             ZooKeeper 127.0.0.1:2181), a second standalone HBase for
#             the fault tests (HBASE_RUN=.run/hbase-faults, ZooKeeper
#             127.0.0.1:2183), the test cluster (cluster-up,
#             ZooKeeper 127.0.0.1:2182), the peers the suites run
#             (Prometheus and promtool, Alertmanager, VictoriaMetrics, vmctl:
#             built once; the TSD's jars: fetched once; cached by version in
#             ~/.cache/promhbase), and Debian's Chromium for the
#             web UI's browser tests (tools/scripts/chromium.sh: apt-get install
#             chromium when it is missing)
#   static    golangci-lint (build tags faults and cluster: every file; its
#             govet is go vet's analyzers and more), then the gohbase fork's
#             tests and the Helm chart's (deploy/helm, a module of its own)
#   embedded  go test: every package but those whose tests all run on HBase,
#             the end-to-end suites on the embedded store
#   hbase     the HBase store's own tests and the interop tests beside a real
#             TSD (on HBase whatever the backend), and the suites that take
#             a backend again, on the standalone HBase,
#             after embedded (side by side, the two loaded 2 cores until
#             the standalone HBase once answered nothing for 2 minutes);
#             they wait on HBase far more than they compute, so -p 3
#   faults    the fault tests (test/e2e/faults, tag faults), which restart,
#             freeze and split their HBase: beside hbase, on the second
#             standalone HBase, which nothing else uses
#   cluster   the cluster tests (test/e2e/faults, tags faults and cluster) on the
#             test cluster, once it is up and the peers are built: beside
#             everything else
#   stop      the three HBases are stopped whatever happened
#
# The tests' scratch directories (TMPDIR: t.TempDir, the embedded stores
# the suites open, the build's work) are on a tmpfs when one is at hand
# (/dev/shm): the suites fsync far more than any disk of theirs needs
# (the power-loss tests keep Pebble's files in memory themselves), and
# on this machine's disk those syncs doubled store/embedded's time.
#
# Each stage's output goes to .run/test/<stage>.log; a stage's log is
# printed whole when it fails, its last lines when it passes. The run ends
# with what failed (each failing test's lines, a panic's first lines, the
# failed packages, the stage log's last lines: digest), then each stage's
# time and result, and exits 1 when any failed.
#
# Environment: GO (go), TEST_PARALLEL (go test -parallel of the suites,
# 4: their tests wait on servers more than on the CPU, but 8 loaded 2 cores
# past what the timing tests bear), HBASE_HEAP (the
# standalone HBase's heap, 4g), HBASE_ZK (127.0.0.1:2181),
# HBASE_CLUSTER_ZK (127.0.0.1:2182), HBASE_FAULTS_ZK (127.0.0.1:2183),
# TEST_TMPDIR (the scratch directory's parent: /dev/shm when it is a
# writable tmpfs, else TMPDIR).
set -uo pipefail

SCRIPT=test.sh
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
GO=${GO:-go}
PARALLEL=${TEST_PARALLEL:-4}
HBASE_ZK=${HBASE_ZK:-127.0.0.1:2181}
HBASE_CLUSTER_ZK=${HBASE_CLUSTER_ZK:-127.0.0.1:2182}
HBASE_FAULTS_ZK=${HBASE_FAULTS_ZK:-127.0.0.1:2183}
# The standalone HBase's heap (tools/scripts/hbase.sh; 1g by default): the suites
# create and drop tables and write from many tests at once, and 1g ran out
# under that load. Exported: the fault tests restart HBase with it.
export HBASE_HEAP=${HBASE_HEAP:-4g}
LOGS=$ROOT/.run/test
# The suites that take a backend (PROMHBASE_TEST_BACKEND), run again on HBase.
HBASE_PKGS=(./test/e2e ./cmd/... ./jobs/retention ./jobs/deletion ./jobs/rollup ./ingest/hatracker ./query/engine ./jobs/ruler ./jobs/compact)
# The packages whose every test runs on HBase whatever the backend (the
# HBase store's own tests, the interop tests beside a real TSD): they
# wait on HBase, so they run in the hbase stage, not in embedded's.
HBASE_ONLY_PKGS=(./store/hbase ./test/e2e/interop)

mkdir -p "$LOGS"
began=$(date +%s)
summary=()
failed=0
failed_stages=()

# stage NAME CMD...: runs CMD with its output in NAME's log, then records
# its time and result. Run in the background, it is waited for by
# wait_stage NAME.
stage() {
	local name=$1 start rc
	shift
	start=$(date +%s)
	"$@" >"$LOGS/$name.log" 2>&1
	rc=$?
	echo "$rc $(($(date +%s) - start)) $((start - began))" >"$LOGS/$name.result"
	return "$rc"
}

# report NAME: prints NAME's log (whole on failure, its tail on success)
# and adds its line to the summary.
report() {
	local name=$1 rc secs at
	read -r rc secs at <"$LOGS/$name.result"
	if [[ $rc -eq 0 ]]; then
		log "$name: ok in ${secs}s; the end of $LOGS/$name.log:"
		tail -n 15 "$LOGS/$name.log"
	else
		log "$name: FAILED (exit $rc) in ${secs}s; $LOGS/$name.log:"
		cat "$LOGS/$name.log"
		failed=1
		failed_stages+=("$name")
	fi
	summary+=("$(printf '%-9s %-6s %4ss (from %4ss)' "$name" "$([[ $rc -eq 0 ]] && echo ok || echo FAILED)" "$secs" "$at")")
}

# digest NAME: what failed in stage NAME, short, for the end of the run
# (where CI shows the last lines): each failing test's own lines, a
# panic's first lines (a test past -timeout panics with every goroutine),
# the packages that failed, and the log's last lines.
digest() {
	local log=$LOGS/$1.log
	log "$1 FAILED: the failing tests ($log has everything):"
	awk '
		/^(=== RUN|=== PAUSE|=== CONT|--- PASS|--- SKIP|PASS$|ok  )/ { keep = 0 }
		/^ *--- FAIL/ { keep = 1 }
		/^panic: / { keep = 1; left = 40 }
		keep && n < 400 { print; n++; if (left && !--left) keep = 0 }
	' "$log" >&2
	log "$1: the packages that failed:"
	grep -E '^(FAIL|---? FAIL)[[:space:]]' "$log" | grep -v -- '--- FAIL' | head -n 40 >&2
	log "$1: the last lines of $log:"
	tail -n 25 "$log" >&2
}

# background NAME CMD...: stage NAME in the background; its pid in pids[NAME].
declare -A pids
background() {
	local name=$1
	shift
	stage "$name" "$@" &
	pids[$name]=$!
}

# wait_stage NAME: waits for a background stage and reports it.
wait_stage() {
	wait "${pids[$1]}"
	report "$1"
}

# ok NAME: whether stage NAME has finished without error.
ok() {
	local rc
	read -r rc _ <"$LOGS/$1.result" 2>/dev/null && [[ $rc -eq 0 ]]
}

# peers: the servers the suites run, built or fetched once into their
# caches (keyed by version): Prometheus and promtool, Alertmanager,
# VictoriaMetrics and vmctl, the TSD's jars (its configuration written to
# a scratch directory), Chromium.
peers() {
	tools/scripts/prometheus.sh && tools/scripts/promtool.sh && tools/scripts/alertmanager.sh &&
		tools/scripts/victoriametrics.sh && tools/scripts/vmctl.sh &&
		OPENTSDB_RUN=$LOGS/opentsdb-fetch tools/scripts/opentsdb.sh conf && tools/scripts/chromium.sh
}

# static: golangci-lint (its govet runs every analyzer `go vet` runs, and
# more: .golangci.yml), then the fork's and the chart's tests.
static() {
	GO=$GO tools/scripts/golangci-lint.sh run --build-tags faults,cluster ./... &&
		(cd internal/third_party/gohbase && $GO test -count=1 ./hrpc) &&
		(cd deploy/helm && $GO vet ./... && $GO test -count=1 ./...)
}

quick() {
	local pkgs
	pkgs=$($GO list ./... | grep -v -e /e2e -e /cmd/ -e /tools/ -e /store/hbase -e /testkit/testproc) || return 1
	# shellcheck disable=SC2086
	$GO vet -stdmethods=false $pkgs && $GO test -count=1 -parallel "$PARALLEL" $pkgs
}

# jvm_cpu: the CPU time each JVM of the HBases has used so far (what
# the run's time is spent on, beside the tests).
jvm_cpu() {
	ps -eo cputime=,args= | awk '/promhbase\.hbase\.run=/ {
		match($0, /-Dpromhbase\.hbase\.run=[^ ]*/); run = substr($0, RSTART + 22, RLENGTH - 22)
		role = "standalone"; if (match($0, /-Dpromhbase\.hbase\.role=[^ ]*/)) role = substr($0, RSTART + 23, RLENGTH - 23)
		n = split(run, p, "/"); print $1, p[n], role }'
}

# faults_hbase ARGS...: tools/scripts/hbase.sh against the fault tests'
# standalone HBase (its own directory and ports); the fault tests' own
# calls of the script (restart, split) get the same environment.
faults_env=(HBASE_RUN="$ROOT/.run/hbase-faults" HBASE_ZK_PORT="${HBASE_FAULTS_ZK##*:}"
	HBASE_MASTER_PORT=16200 HBASE_RS_PORT=16220 HBASE_HEAP=2g)
faults_hbase() {
	env "${faults_env[@]}" tools/scripts/hbase.sh "$@"
}

# embedded_pkgs: every package but HBASE_ONLY_PKGS.
embedded_pkgs() {
	local skip=() p
	for p in "${HBASE_ONLY_PKGS[@]}"; do
		skip+=(-e "^github.com/promhbase/promhbase/${p#./}\$")
	done
	$GO list ./... | grep -v "${skip[@]}"
}

# scratch: points TMPDIR at a fresh directory on a tmpfs (TEST_TMPDIR,
# or /dev/shm when it is a writable tmpfs with 4 GiB free), removed by
# stop_all; elsewhere TMPDIR stays as it is.
scratch=
scratch() {
	local parent=${TEST_TMPDIR:-}
	if [[ -z $parent && $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs &&
		$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }') -ge $((4 << 20)) ]]; then
		parent=/dev/shm
	fi
	[[ -n $parent ]] || return 0
	scratch=$(mktemp -d "$parent/promhbase-test.XXXXXX") || return 0
	export TMPDIR=$scratch
	log "scratch directories in $scratch"
}

stop_all() {
	jvm_cpu >"$LOGS/jvm-cpu.log" 2>&1
	tools/scripts/hbase.sh down >>"$LOGS/stop.log" 2>&1
	faults_hbase down >>"$LOGS/stop.log" 2>&1
	tools/scripts/hbase.sh cluster-down >>"$LOGS/stop.log" 2>&1
	[[ -z $scratch ]] || rm -rf "$scratch"
}

if [[ ${1:-} == quick ]]; then
	stage quick quick
	report quick
	exit "$failed"
fi

trap stop_all EXIT
rm -f "$LOGS"/*.log "$LOGS"/*.result
scratch

# cluster: the cluster tests start once their cluster is up and the peers
# are built (from cold caches Prometheus compiles for minutes, and the
# kills' recoveries are timed; cached, at once); they take the longest, so
# they run beside everything else.
cluster() {
	stage cluster-up tools/scripts/hbase.sh cluster-up || return
	while [[ ! -f $LOGS/peers.result ]]; do
		sleep 1
	done
	stage cluster env PROMHBASE_HBASE_ZK="$HBASE_CLUSTER_ZK" \
		$GO test -tags 'faults cluster' -count=1 -timeout 40m -run Cluster -v ./test/e2e/faults
}
cluster &
cluster_pid=$!
background peers peers
background hbase-up tools/scripts/hbase.sh up
background hbase-faults-up faults_hbase up

stage static static
report static
wait_stage peers
wait_stage hbase-up
wait_stage hbase-faults-up

if ok peers && ok hbase-up; then
	# shellcheck disable=SC2046
	stage embedded env PROMHBASE_HBASE_ZK="$HBASE_ZK" \
		$GO test -count=1 -timeout 30m -parallel "$PARALLEL" $(embedded_pkgs)
	report embedded
	background hbase env PROMHBASE_TEST_BACKEND=hbase PROMHBASE_HBASE_ZK="$HBASE_ZK" \
		$GO test -count=1 -timeout 30m -p 3 -parallel "$PARALLEL" "${HBASE_ONLY_PKGS[@]}" "${HBASE_PKGS[@]}"
	if ok hbase-faults-up; then
		background faults env "${faults_env[@]}" PROMHBASE_HBASE_ZK="$HBASE_FAULTS_ZK" \
			$GO test -tags faults -count=1 -timeout 20m ./test/e2e/faults
	fi
	wait_stage hbase
	[[ -z ${pids[faults]:-} ]] || wait_stage faults
fi
wait "$cluster_pid"
report cluster-up
[[ -f $LOGS/cluster.result ]] && report cluster

stop_all
trap - EXIT
for name in "${failed_stages[@]}"; do
	digest "$name"
done
# A suite that failed on HBase: what the HBase's logs tell of a stall
# (pauses, slow calls, blocked updates), since a stalled HBase fails
# whatever test is waiting on it.
if [[ " ${failed_stages[*]} " =~ \ (embedded|hbase)\  ]]; then
	tools/scripts/hbase.sh diagnose
fi
if [[ " ${failed_stages[*]} " =~ \ faults\  ]]; then
	faults_hbase diagnose
fi
log "the HBases' JVMs, CPU time used ($LOGS/jvm-cpu.log):"
sed 's/^/  /' "$LOGS/jvm-cpu.log" >&2
log "stages (seconds, and when each began after the start):"
printf '  %s\n' "${summary[@]}" >&2
log "total $(($(date +%s) - began))s"
[[ ${#summary[@]} -ge 9 ]] || { log "error: a stage did not run (one it needs failed)"; failed=1; }
exit "$failed"
