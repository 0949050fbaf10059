#!/usr/bin/env bash
# make bench-import: Prometheus's blocks into promhbase and into
# VictoriaMetrics, side by side, RUNS times each, the systems taking turns:
#   promhbase import  -> promhbase serve (embedded)
#   vmctl prometheus  -> VictoriaMetrics single-node
#   vmctl prometheus  -> promhbase serve (embedded)
# Each run starts from an empty store and ends when the importer exits
# (every request acknowledged). Prints each time, the median and spread,
# and the samples/s, and promhbase import's peak RSS (/usr/bin/time). SERIES, DAYS (the data: SERIES series of 15 s scrapes
# over DAYS days, written as blocks by promtool) and RUNS (3) size it;
# WORK (a temporary directory) holds the data.
set -euo pipefail

SCRIPT=bench-import.sh
# shellcheck source=tools/scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SERIES=${SERIES:-200}
DAYS=${DAYS:-3}
RUNS=${RUNS:-3}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
promhbase=$root/bin/promhbase
promtool=$("$root/tools/scripts/promtool.sh")
vm=$("$root/tools/scripts/victoriametrics.sh")
vmctl=$("$root/tools/scripts/vmctl.sh")
[[ -x $promhbase ]] || die "build bin/promhbase first (make build)"

end=$(($(date +%s) / 3600 * 3600 - 7200))
start=$((end - DAYS * 86400))
samples=$((SERIES * DAYS * 86400 / 15))
if [[ ! -d $work/blocks ]]; then
	log "writing $samples samples ($SERIES series × $DAYS days) as OpenMetrics, then blocks with promtool"
	awk -v n="$SERIES" -v s="$start" -v e="$end" 'BEGIN {
		print "# TYPE bench_requests counter";
		for (i = 0; i < n; i++) { v = 0; for (t = s; t < e; t += 15) { v += (t % 7) + 0.5; printf "bench_requests_total{instance=\"h%d\",job=\"node\"} %.1f %d\n", i, v, t } }
		print "# EOF" }' >"$work/data.om"
	"$promtool" tsdb create-blocks-from openmetrics "$work/data.om" "$work/blocks" >/dev/null
	rm -f "$work/data.om"
fi

port=19271
wait_up() { for _ in $(seq 100); do curl -sf "$1" >/dev/null && return 0; sleep 0.1; done; die "$1 not up"; }
now_ms() { date +%s%3N; }
declare -A times
run_one() { # system
	local sys=$1 dir=$work/run pid t0 t1
	rm -rf "$dir" && mkdir -p "$dir"
	case $sys in
	vm-vmctl)
		"$vm" -storageDataPath="$dir" -httpListenAddr=127.0.0.1:$port -retentionPeriod=100y -loggerLevel=ERROR >"$work/server.log" 2>&1 &
		pid=$!
		wait_up "http://127.0.0.1:$port/health" ;;
	*)
		"$promhbase" serve --storage.embedded.path="$dir" --web.listen-address=127.0.0.1:$port --log.level=warn >"$work/server.log" 2>&1 &
		pid=$!
		wait_up "http://127.0.0.1:$port/-/ready" ;;
	esac
	t0=$(now_ms)
	case $sys in
	promhbase-import)
		/usr/bin/time -f %M -o "$work/rss" "$promhbase" import --url=http://127.0.0.1:$port --progress-file="$dir.progress" "$work/blocks" >/dev/null 2>&1
		log "promhbase import peak RSS: $(cat "$work/rss") KiB" ;;
	*) "$vmctl" prometheus --prom-snapshot="$work/blocks" --vm-addr=http://127.0.0.1:$port -s --disable-progress-bar >"$work/vmctl.log" 2>&1 ;;
	esac
	t1=$(now_ms)
	kill "$pid"; wait "$pid" 2>/dev/null || true
	rm -f "$dir.progress"
	times[$sys]+="$((t1 - t0)) "
	log "$sys: $((t1 - t0)) ms"
}
systems=(promhbase-import vm-vmctl promhbase-vmctl)
for r in $(seq "$RUNS"); do
	for k in 0 1 2; do
		run_one "${systems[$(((k + r) % 3))]}"
	done
done
printf '\n| importer -> store | median | min – max | samples/s (median) |\n| --- | --- | --- | --- |\n'
for sys in "${systems[@]}"; do
	read -r -a ts <<<"${times[$sys]}"
	IFS=$'\n' sorted=($(sort -n <<<"${ts[*]}")); unset IFS
	med=${sorted[$((${#sorted[@]} / 2))]}
	printf '| %s | %d ms | %d – %d ms | %d |\n' "$sys" "$med" "${sorted[0]}" "${sorted[-1]}" $((samples * 1000 / med))
done
