#!/usr/bin/env bash
# An OpenTSDB 2.4.1 TSD for the interop tests, against the test HBase.
#
#   tools/scripts/opentsdb.sh up      fetch the jars if needed, start a TSD on a
#                               fresh .run/opentsdb/, return once it serves
#   tools/scripts/opentsdb.sh conf    fetch the jars if needed and write the
#                               configuration only (for the tools below,
#                               without a TSD)
#   tools/scripts/opentsdb.sh down    stop it
#   tools/scripts/opentsdb.sh status  say whether it runs (exit 0 yes, 3 no)
#   tools/scripts/opentsdb.sh fsck [ARGS]      OpenTSDB's `tsdb fsck` on the TSD's tables
#   tools/scripts/opentsdb.sh uid-fsck         OpenTSDB's `tsdb uid fsck`
#   tools/scripts/opentsdb.sh scan ARGS        OpenTSDB's `tsdb scan`
# (the tools read the running TSD's opentsdb.conf)
#
# The jars come from Maven Central through testdata/opentsdb/pom.xml and
# are cached in ${PROMHBASE_CACHE:-$HOME/.cache/promhbase}/opentsdb-2.4.1/lib.
# The tables must exist (promhbase create-tables).
#
# Environment:
#   OPENTSDB_RUN           the TSD's directory (default .run/opentsdb): one
#                          per TSD where several run at once
#   OPENTSDB_PORT          HTTP port on 127.0.0.1 (default 14242)
#   OPENTSDB_ZK            ZooKeeper quorum (default 127.0.0.1:2181)
#   OPENTSDB_DATA_TABLE    data table (default tsdb)
#   OPENTSDB_UID_TABLE     UID table (default tsdb-uid)
#   OPENTSDB_SALT_WIDTH    tsd.storage.salt.width (default 0)
#   OPENTSDB_SALT_BUCKETS  tsd.storage.salt.buckets (default 20)
#   OPENTSDB_CONF_EXTRA    more opentsdb.conf lines
#   JAVA_HOME              JDK (default: JDK 17 if installed)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUN=${OPENTSDB_RUN:-$ROOT/.run/opentsdb}
PIDFILE=$RUN/tsd.pid
LOG=$RUN/tsd.log
CACHE=${PROMHBASE_CACHE:-$HOME/.cache/promhbase}
LIB=$CACHE/opentsdb-2.4.1/lib
PORT=${OPENTSDB_PORT:-14242}
MARKER="-Dpromhbase.opentsdb.run=$RUN"

SCRIPT=opentsdb.sh
# shellcheck source=tools/scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

fetch() {
	local sum
	sum=$(sha256sum "$ROOT/testdata/opentsdb/pom.xml" | cut -c1-16)
	[[ -f $LIB/.complete && $(cat "$LIB/.complete") == "$sum" ]] && return 0
	log "fetching OpenTSDB 2.4.1 jars from Maven Central into $LIB"
	rm -rf "$LIB"
	mkdir -p "$LIB"
	${MVN:-mvn} -B -q -f "$ROOT/testdata/opentsdb/pom.xml" \
		org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$LIB" >&2
	ls "$LIB"/opentsdb-2.4.1.jar "$LIB"/asynchbase-1.8.2.jar >/dev/null
	echo "$sum" >"$LIB/.complete"
}

pid_alive() { [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

# write_conf writes a fresh $RUN with opentsdb.conf and logback.xml.
write_conf() {
	rm -rf "$RUN"
	mkdir -p "$RUN/static" "$RUN/cache"
	cat >"$RUN/logback.xml" <<'XML'
<configuration>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger{0}: %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.zookeeper" level="WARN"/>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
XML
	cat >"$RUN/opentsdb.conf" <<CONF
tsd.network.port = $PORT
tsd.network.bind = 127.0.0.1
tsd.http.staticroot = $RUN/static
tsd.http.cachedir = $RUN/cache
tsd.storage.hbase.zk_quorum = ${OPENTSDB_ZK:-127.0.0.1:2181}
tsd.storage.hbase.data_table = ${OPENTSDB_DATA_TABLE:-tsdb}
tsd.storage.hbase.uid_table = ${OPENTSDB_UID_TABLE:-tsdb-uid}
tsd.storage.salt.width = ${OPENTSDB_SALT_WIDTH:-0}
tsd.storage.salt.buckets = ${OPENTSDB_SALT_BUCKETS:-20}
tsd.core.auto_create_metrics = true
tsd.storage.max_tags = 64
tsd.http.request.enable_chunked = true
tsd.http.request.max_chunk = 1048576
${OPENTSDB_CONF_EXTRA:-}
CONF
}

up() {
	pid_alive && die "already running (pid $(cat "$PIDFILE"))"
	fetch
	write_conf
	local java
	java=$(java_bin)
	"$java" "$MARKER" -Xmx512m -cp "$LIB/*:$RUN" net.opentsdb.tools.TSDMain \
		--config="$RUN/opentsdb.conf" >"$LOG" 2>&1 &
	echo $! >"$PIDFILE"
	local deadline=$((SECONDS + 120))
	until curl -fsS "http://127.0.0.1:$PORT/api/version" >/dev/null 2>&1; do
		if ! pid_alive; then
			tail -30 "$LOG" >&2
			die "TSD exited during startup"
		fi
		if ((SECONDS > deadline)); then
			tail -30 "$LOG" >&2
			down
			die "TSD did not serve within 120s"
		fi
		sleep 0.5
	done
	log "TSD serves on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"
}

down() {
	if pid_alive; then
		local pid
		pid=$(cat "$PIDFILE")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 60); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	pkill -9 -f -- "$MARKER" 2>/dev/null || true
	rm -f "$PIDFILE"
	log "TSD stopped"
}

tool() {
	[[ -f $RUN/opentsdb.conf ]] || die "no $RUN/opentsdb.conf: run up first"
	local java
	java=$(java_bin)
	"$java" -Xmx512m -cp "$LIB/*:$RUN" "$@"
}

case ${1:-} in
up) up ;;
conf)
	pid_alive && die "a TSD runs (pid $(cat "$PIDFILE")): its configuration stays"
	fetch
	write_conf
	log "wrote $RUN/opentsdb.conf (no TSD started): fsck, uid-fsck and scan use it"
	;;
fsck)
	shift
	tool net.opentsdb.tools.Fsck --config "$RUN/opentsdb.conf" "$@"
	;;
uid-fsck)
	tool net.opentsdb.tools.UidManager --config "$RUN/opentsdb.conf" --verbose fsck
	;;
scan)
	shift
	tool net.opentsdb.tools.DumpSeries --config "$RUN/opentsdb.conf" "$@"
	;;
down) down ;;
status)
	if pid_alive; then
		echo "running (pid $(cat "$PIDFILE"), http://127.0.0.1:$PORT)"
	else
		echo "not running"
		exit 3
	fi
	;;
*)
	echo "usage: $0 up|conf|down|status|fsck|uid-fsck|scan" >&2
	exit 2
	;;
esac
