#!/usr/bin/env bash
# make bench-tsd: promhbase's reads against an OpenTSDB 2.4.1 TSD's on the
# same HBase tables, side by side.
#
#   1. the standalone HBase (tools/scripts/hbase.sh up, when it does not serve);
#   2. bench-disk's node_exporter-like data (SERIES series over TARGETS
#      targets, SPAN of 15 s scrapes, seed 1) written through promhbase
#      serve on fresh tables, compacted and settled (promhbase-load disk
#      --systems=promhbase-hbase --hbase.keep-tables);
#   3. a TSD (tools/scripts/opentsdb.sh) and promhbase serve on those tables;
#   4. each shape asked of both, in turns: WARMUPS (100) untimed, then RUNS (21) timed
#      (curl's time_total, gzip asked, a new connection each); the median
#      and spread of each, and the answers' series and points.
#
# The shapes are what a dashboard asks of each over the whole span:
# PromQL query_range at step span/300 of promhbase (nocache=1), the
# TSD's /api/query with the downsampling that gives about as many points
# (explicitTags for the series named with all its tags). The answers are
# each system's own (OpenTSDB's windows and rates are not PromQL's); the
# time is the comparison.
#
# The tables are left in HBase (their names are printed, with the command
# that times them again without loading: PREFIX, START, END);
# tools/scripts/hbase.sh down removes them with the rest of its data. WORK holds
# the logs.
set -euo pipefail

SCRIPT=bench-tsd.sh
# shellcheck source=tools/scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SERIES=${SERIES:-2000}
TARGETS=${TARGETS:-20}
SPAN=${SPAN:-24h}
RUNS=${RUNS:-21}
WARMUPS=${WARMUPS:-100}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
promhbase=$root/bin/promhbase
load=$root/bin/promhbase-load
[[ -x $promhbase && -x $load ]] || die "build bin/promhbase and bin/promhbase-load first (make bench-bins)"
zk=${HBASE_ZK:-127.0.0.1:2181}
pport=19291
tport=14291

"$root/tools/scripts/hbase.sh" status >/dev/null 2>&1 || "$root/tools/scripts/hbase.sh" up

if [[ -n ${PREFIX:-} ]]; then
	# Tables an earlier run loaded (its last line names them), with the
	# span of their data: PREFIX=bench-disk-... START=<s> END=<s>.
	[[ -n ${START:-} && -n ${END:-} ]] || die "PREFIX needs START and END (Unix seconds)"
	tables="$PREFIX-tsdb $PREFIX-tsdb-uid (loaded before)"
	prefix=$PREFIX start=$START end=$END
else
	log "loading $SERIES series × $SPAN into fresh HBase tables (promhbase-load disk; log in $work/load.log)"
	"$load" disk --promhbase="$promhbase" --systems=promhbase-hbase --hbase.keep-tables --dir="$work" \
		--hbase.zookeeper.quorum="$zk" --data.series="$SERIES" --data.targets="$TARGETS" --data.span="$SPAN" \
		--query.repeats=1 --query='vector(1)' >"$work/load.log" 2>&1 || { tail -20 "$work/load.log" >&2; die "the load failed"; }
	tables=$(sed -n 's/^promhbase-hbase: tables kept: //p' "$work/load.log")
	prefix=$(tr ' ' '\n' <<<"$tables" | sed -n 's/-tsdb$//p' | head -1)
	[[ -n $prefix ]] || die "no kept tables in $work/load.log"
	span=$(sed -n 's/.* samples, \([0-9TZ:-]*\) to \([0-9TZ:-]*\)$/\1 \2/p' "$work/load.log" | head -1)
	[[ -n $span ]] || die "no data span in $work/load.log"
	start=$(date -u -d "${span% *}" +%s)
	end=$(date -u -d "${span#* }" +%s)
fi
step=$(((end - start) / 300))
log "tables $tables; data $start to $end, step ${step}s"

export OPENTSDB_RUN=$work/opentsdb OPENTSDB_PORT=$tport OPENTSDB_ZK=$zk \
	OPENTSDB_DATA_TABLE=$prefix-tsdb OPENTSDB_UID_TABLE=$prefix-tsdb-uid
"$root/tools/scripts/opentsdb.sh" up
"$promhbase" serve --web.listen-address=127.0.0.1:$pport --storage.backend=hbase --hbase.zookeeper.quorum="$zk" \
	--hbase.table.data="$prefix-tsdb" --hbase.table.uid="$prefix-tsdb-uid" --hbase.table.exemplar="$prefix-tsdb-exemplar" \
	--hbase.table.meta="$prefix-tsdb-meta" --hbase.table.index="$prefix-tsdb-index" --no-rollup.enabled \
	--no-storage.compaction.enabled >"$work/serve.log" 2>&1 &
serve=$!
cleanup() {
	kill "$serve" 2>/dev/null || true
	wait "$serve" 2>/dev/null || true
	"$root/tools/scripts/opentsdb.sh" down >/dev/null 2>&1 || true
}
trap cleanup EXIT
for _ in $(seq 300); do curl -sf "http://127.0.0.1:$pport/-/ready" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$pport/-/ready" >/dev/null || die "promhbase serve not ready: $work/serve.log"

# shape NAME PROMQL TSD_QUERY_JSON (the TSD's sub-query, start and end added)
names=() pq=() tq=()
shape() { names+=("$1") pq+=("$2") tq+=("{\"start\":$start,\"end\":$end,\"msResolution\":true,\"queries\":[$3]}"); }
lit() { echo "{\"type\":\"literal_or\",\"tagk\":\"$1\",\"filter\":\"$2\",\"groupBy\":true}"; }
shape "one series, named with all its tags" 'node_load1{instance="host-003:9100",job="node"}' \
	"{\"aggregator\":\"none\",\"metric\":\"node_load1\",\"explicitTags\":true,\"downsample\":\"${step}s-last\",\"filters\":[$(lit instance host-003:9100),$(lit job node)]}"
shape "one series, one tag" 'node_load1{instance="host-003:9100"}' \
	"{\"aggregator\":\"none\",\"metric\":\"node_load1\",\"downsample\":\"${step}s-last\",\"filters\":[$(lit instance host-003:9100)]}"
shape "max over 1h, a metric's $TARGETS series" 'max_over_time(node_load1[1h])' \
	"{\"aggregator\":\"none\",\"metric\":\"node_load1\",\"downsample\":\"1h-max\",\"filters\":[{\"type\":\"wildcard\",\"tagk\":\"instance\",\"filter\":\"*\",\"groupBy\":true}]}"
shape "sum by mode of the rate of a counter" 'sum by (mode) (rate(node_cpu_seconds_total[5m]))' \
	"{\"aggregator\":\"sum\",\"metric\":\"node_cpu_seconds_total\",\"rate\":true,\"rateOptions\":{\"counter\":true},\"downsample\":\"${step}s-avg\",\"filters\":[{\"type\":\"wildcard\",\"tagk\":\"mode\",\"filter\":\"*\",\"groupBy\":true}]}"

ask_promhbase() {
	curl -sf -o "$work/p.json" -w '%{time_total}\n' --compressed -G "http://127.0.0.1:$pport/api/v1/query_range" \
		--data-urlencode "query=$1" -d start="$start" -d end="$end" -d step="$step" -d nocache=1
}
ask_tsd() {
	curl -sf -o "$work/t.json" -w '%{time_total}\n' --compressed -H 'Content-Type: application/json' -d "$1" "http://127.0.0.1:$tport/api/query"
}
median() { sort -g "$1" | awk '{a[NR] = $1} END {printf "%.1f ms (%.1f–%.1f)", a[int((NR + 1) / 2)] * 1000, a[1] * 1000, a[NR] * 1000}'; }

echo
echo "| shape | promhbase | OpenTSDB 2.4.1 TSD | TSD ÷ promhbase |"
echo "| --- | --- | --- | --- |"
for i in "${!names[@]}"; do
	: >"$work/p.times"
	: >"$work/t.times"
	for r in $(seq $((WARMUPS + RUNS))); do
		a=$(ask_promhbase "${pq[$i]}") || die "promhbase: ${pq[$i]} failed: $work/serve.log"
		b=$(ask_tsd "${tq[$i]}") || die "TSD: ${tq[$i]} failed: $OPENTSDB_RUN/tsd.log"
		if ((r > WARMUPS)); then
			echo "$a" >>"$work/p.times"
			echo "$b" >>"$work/t.times"
		fi
	done
	pn=$(grep -o '"metric":' "$work/p.json" | wc -l)
	pp=$(grep -o '\],\[' "$work/p.json" | wc -l)
	tn=$(grep -o '"metric":' "$work/t.json" | wc -l)
	tp=$(grep -o '"[0-9]\{10,13\}":' "$work/t.json" | wc -l)
	pm=$(median "$work/p.times")
	tm=$(median "$work/t.times")
	ratio=$(awk -v a="${tm%% *}" -v b="${pm%% *}" 'BEGIN {printf "%.2f", a / b}')
	echo "| ${names[$i]} \`${pq[$i]}\` | $pm; $pn series, $((pp + pn)) points | $tm; $tn series, $tp points | $ratio |"
done
echo
echo "$RUNS timed runs each after $WARMUPS untimed (the TSD's JVM compiles its paths meanwhile), the systems in turns; step ${step}s; tables: $tables"
echo "again on these tables: PREFIX=$prefix START=$start END=$end tools/scripts/bench-tsd.sh"
