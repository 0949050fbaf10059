#!/usr/bin/env bash
# make bench-put: OpenTSDB put ingest side by side, in turns, RUNS (3)
# times: promhbase's --opentsdb.listen-address on the standalone HBase
# against an OpenTSDB 2.4.1 TSD on the same HBase (each on fresh tables),
# and promhbase on its embedded store against VictoriaMetrics's OpenTSDB
# listeners (-opentsdbListenAddr, -opentsdbHTTPListenAddr).
#
# Each run sends SERIES series × ROUNDS points (promhbase-load put: every
# line or body encoded before the clock starts; CONCURRENCY connections)
# over telnet (BATCH lines a write), then over HTTP /api/put (arrays of
# HTTP_BATCH points) to a fresh process, and records the points a second
# and the server's CPU seconds (/proc/<pid>/stat). A telnet run ends once
# the server has taken every line: promhbase and the TSD answer a version
# after them (the TSD's points are then queued for HBase, promhbase's
# durable), VictoriaMetrics counts them in vm_rows_inserted_total. An HTTP
# run ends with the last answer (the TSD's before its writes, without
# sync; promhbase's after them). Prints each run, then a Markdown table of
# medians and spreads. WORK holds the logs.
set -euo pipefail

SCRIPT=bench-put.sh
# shellcheck source=tools/scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SERIES=${SERIES:-20000}
ROUNDS=${ROUNDS:-10}
RUNS=${RUNS:-3}
CONCURRENCY=${CONCURRENCY:-4}
BATCH=${BATCH:-1000}
HTTP_BATCH=${HTTP_BATCH:-50}
SYSTEMS=${SYSTEMS:-"tsd promhbase-hbase promhbase victoriametrics"}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
promhbase=$root/bin/promhbase
load=$root/bin/promhbase-load
[[ -x $promhbase && -x $load ]] || die "build bin/promhbase and bin/promhbase-load first (make bench-bins)"
vm=$("$root/tools/scripts/victoriametrics.sh")
zk=${HBASE_ZK:-127.0.0.1:2181}
hport=19391 oport=14391 vport=14392

"$root/tools/scripts/hbase.sh" status >/dev/null 2>&1 || "$root/tools/scripts/hbase.sh" up

pid=
stop() {
	if [[ -n $pid ]]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		pid=
	fi
	OPENTSDB_RUN=$work/opentsdb "$root/tools/scripts/opentsdb.sh" down >/dev/null 2>&1 || true
}
trap stop EXIT
cpu() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }
ready() {
	for _ in $(seq 600); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done
	die "$2 not ready: $work/$2.log"
}

# start SYSTEM RUN: a fresh process of SYSTEM; sets pid and the port.
start() {
	local sys=$1 n=$2 tables=bench_put_$$_$2
	case $sys in
	tsd | promhbase-hbase)
		"$promhbase" create-tables --storage.backend=hbase --hbase.zookeeper.quorum="$zk" \
			--hbase.table.data="$tables-$sys" --hbase.table.uid="$tables-$sys-uid" >"$work/create.log" 2>&1 ||
			die "create-tables: $work/create.log"
		;;
	esac
	case $sys in
	tsd)
		OPENTSDB_RUN=$work/opentsdb OPENTSDB_PORT=$oport OPENTSDB_ZK=$zk OPENTSDB_DATA_TABLE=$tables-$sys \
			OPENTSDB_UID_TABLE=$tables-$sys-uid "$root/tools/scripts/opentsdb.sh" up >"$work/tsd.log" 2>&1 || die "TSD: $work/tsd.log"
		pid=$(cat "$work/opentsdb/tsd.pid")
		;;
	promhbase-hbase | promhbase)
		local store=(--storage.backend=hbase --hbase.zookeeper.quorum="$zk" --hbase.table.data="$tables-$sys" --hbase.table.uid="$tables-$sys-uid")
		[[ $sys == promhbase ]] && rm -rf "$work/data" && store=(--storage.embedded.path="$work/data")
		"$promhbase" serve --web.listen-address=127.0.0.1:$hport --opentsdb.listen-address=127.0.0.1:$oport \
			--opentsdb.auto-create-metrics "${store[@]}" --limits.ingestion-rate=0 --limits.new-series-rate=0 \
			--limits.max-active-series=0 >"$work/$sys.log" 2>&1 &
		pid=$!
		ready "http://127.0.0.1:$hport/-/ready" "$sys"
		;;
	victoriametrics)
		rm -rf "$work/vmdata"
		"$vm" -storageDataPath="$work/vmdata" -httpListenAddr=127.0.0.1:$hport -opentsdbListenAddr=127.0.0.1:$oport \
			-opentsdbHTTPListenAddr=127.0.0.1:$vport -retentionPeriod=100y >"$work/$sys.log" 2>&1 &
		pid=$!
		ready "http://127.0.0.1:$hport/health" "$sys"
		;;
	esac
}

: >"$work/results"
for n in $(seq "$RUNS"); do
	for sys in $SYSTEMS; do
		for proto in telnet http; do
			start "$sys" "$n"
			addr=127.0.0.1:$oport extra=()
			if [[ $sys == victoriametrics ]]; then
				extra=(--vm-metrics="http://127.0.0.1:$hport/metrics")
				[[ $proto == http ]] && addr=127.0.0.1:$vport
			fi
			c0=$(cpu "$pid")
			out=$("$load" put --addr="$addr" --protocol="$proto" --series="$SERIES" --max-rounds="$ROUNDS" \
				--concurrency="$CONCURRENCY" --batch="$([[ $proto == http ]] && echo "$HTTP_BATCH" || echo "$BATCH")" \
				--duration=10m "${extra[@]}") || die "$sys $proto: $out; $work/$sys.log"
			c1=$(cpu "$pid")
			rate=$(sed -n 's/.*: \([0-9]*\) points\/s.*/\1/p' <<<"$out")
			echo "run $n $sys $proto: $out; server CPU $(awk -v a="$c0" -v b="$c1" 'BEGIN {print b - a}') s" >&2
			echo "$sys $proto $rate $(awk -v a="$c0" -v b="$c1" 'BEGIN {print b - a}')" >>"$work/results"
			stop
		done
	done
done

echo
echo "$SERIES series × $ROUNDS points, $CONCURRENCY connections, $RUNS runs: median (min–max)"
echo
echo "| system | telnet points/s | telnet CPU s | HTTP points/s | HTTP CPU s |"
echo "| --- | --- | --- | --- | --- |"
med() { sort -g | awk '{a[NR] = $1} END {printf "%.0f (%.0f–%.0f)", a[int((NR + 1) / 2)], a[1], a[NR]}'; }
medf() { sort -g | awk '{a[NR] = $1} END {printf "%.2f (%.2f–%.2f)", a[int((NR + 1) / 2)], a[1], a[NR]}'; }
for sys in $SYSTEMS; do
	row="| $sys"
	for proto in telnet http; do
		row+=" | $(awk -v s="$sys" -v p="$proto" '$1 == s && $2 == p {print $3}' "$work/results" | med)"
		row+=" | $(awk -v s="$sys" -v p="$proto" '$1 == s && $2 == p {print $4}' "$work/results" | medf)"
	done
	echo "$row |"
done
