#!/usr/bin/env bash
# Standalone HBase for tests and local use: master, region server and
# ZooKeeper in one JVM, data on local disk, loopback only.
#
#   tools/scripts/hbase.sh up       fetch the jars if needed, start HBase from a
#                             fresh .run/hbase/, return once a table can be
#                             created, written, read and dropped
#   tools/scripts/hbase.sh down     stop it (TERM, then KILL after a grace period)
#   tools/scripts/hbase.sh restart  stop it as down does and start it again on the
#                             same data (rootdir, WALs and ZooKeeper data
#                             are kept), return once it serves as up does
#   tools/scripts/hbase.sh status   say whether it runs (exit 0 yes, 3 no)
#   tools/scripts/hbase.sh split TABLE [SPLITROW_HEX]
#                             split TABLE's regions (or the region holding
#                             the row SPLITROW_HEX, at that row) through
#                             HBase's Java Admin API, wait until the table
#                             has more regions, print the region count
#   tools/scripts/hbase.sh regions TABLE
#                             print the number of online regions of TABLE
#   tools/scripts/hbase.sh diagnose
#                             print the signs of a stalled HBase its logs
#                             hold (JVM and GC pauses, slow calls and WAL
#                             syncs, blocked updates, stuck procedures,
#                             refused ZooKeeper connections), newest last;
#                             tools/scripts/test.sh prints them when a stage
#                             on HBase fails
#
# Cluster mode: ZooKeeper, an HMaster and HBASE_CLUSTER_REGIONSERVERS
# region servers (3), each its own JVM, in .run/hbase-cluster/, on ports of
# their own (the standalone HBase may run beside it):
#
#   tools/scripts/hbase.sh cluster-up       start a fresh cluster; return once every
#                                     region server is live and a table can
#                                     be created, written, read and dropped;
#                                     print where everything listens
#   tools/scripts/hbase.sh cluster-down     stop every process of the cluster
#   tools/scripts/hbase.sh cluster-status   each process, whether it runs, its port
#                                     and log (exit 0 all run, 3 not)
#   tools/scripts/hbase.sh cluster-kill ROLE
#                                     kill -9 one process: zk, master, rs1..
#   tools/scripts/hbase.sh cluster-start ROLE
#                                     start it again (same port and data)
#   tools/scripts/hbase.sh cluster-servers  the live region servers and their
#                                     region counts (first line: how many)
#   tools/scripts/hbase.sh cluster-move TABLE
#                                     move TABLE's first region to the region
#                                     server holding the fewest, wait until it
#                                     serves there, print "FROM TO"
#   tools/scripts/hbase.sh cluster-split TABLE [SPLITROW_HEX]
#                                     split, as split does
#
# Why an acknowledged write survives kill -9 of a region server on the
# local filesystem: HBase opens its WAL through HFileSystem, which turns
# off the checksum layer of Hadoop's LocalFileSystem, so the WAL writes
# through RawLocalFileSystem, whose hflush is a write(2) into the kernel.
# A region server acknowledges a mutation only after its WAL sync, so the
# bytes are then in the page cache, which outlives the process (not a
# power loss: that needs an fsync, hbase.wal.hsync). The live region
# servers split the dead one's WALs from the shared rootdir and replay
# them.
#
# The jars come from Maven Central through testdata/hbase/pom.xml and are
# cached in ${PROMHBASE_CACHE:-$HOME/.cache/promhbase}/hbase-<version>/lib
# (Maven's own ~/.m2 is reused as well).
#
# Compression: NONE and GZ work on every HBase (GZ is HBase's own codec
# over the JDK's deflate). For LZ4, LZO, SNAPPY and ZSTD without native
# libraries the script also fetches HBase's hbase-compression-aircompressor
# module and io.airlift:aircompressor (pure Java) into
# hbase-<version>/codecs, puts them on the classpath and names the module's
# codec classes in hbase-site.xml (hbase.io.compress.<codec>.codec), so
# that `promhbase create-tables --hbase.compression=ZSTD` (or SNAPPY, LZ4,
# LZO) works on this HBase.
#
# Environment:
#   HBASE_VERSION        HBase release, a -hadoop3 build (default 2.6.4-hadoop3)
#   JAVA_HOME            JDK to run it with (default: JDK 17 if installed,
#                        else the java on PATH)
#   HBASE_HEAP           maximum heap (default 1g)
#   HBASE_RUN            the standalone HBase's directory: configuration,
#                        data, logs, pid (default .run/hbase); with other
#                        ports below, a second standalone HBase beside the
#                        first (tools/scripts/test.sh runs the fault tests
#                        on one)
#   HBASE_ZK_PORT        ZooKeeper client port (default 2181)
#   HBASE_MASTER_PORT    master RPC port (default 16000)
#   HBASE_RS_PORT        region server RPC port (default 16020)
#   HBASE_READY_TIMEOUT  how long `up` and `restart` wait for HBase to serve
#                        (default 240s)
#   HBASE_SPLIT_TIMEOUT  how long `split` waits for the new regions, in
#                        seconds (default 120)
#   HBASE_CODECS         aircompressor (default): fetch and configure the
#                        pure-Java LZ4/LZO/SNAPPY/ZSTD codecs; none: only
#                        HBase's built-in NONE and GZ (no extra download)
#   HBASE_CODECS_VERSION version of hbase-compression-aircompressor
#                        (default: the first that Central holds of
#                        HBASE_VERSION, HBASE_VERSION without -hadoop3, and
#                        for 2.6.x 2.6.1; the module is a thin bridge from
#                        HBase's codec interface to aircompressor and does
#                        not depend on the Hadoop flavour)
#   HBASE_CLUSTER_REGIONSERVERS   the cluster's region servers (default 3)
#   HBASE_CLUSTER_ZK_PORT         its ZooKeeper client port (default 2182)
#   HBASE_CLUSTER_MASTER_PORT     its master RPC port (default 16100)
#   HBASE_CLUSTER_RS_PORT         its first region server's port (default
#                                 16120; the others follow)
#   HBASE_CLUSTER_RS_HEAP         each region server's heap (default 512m)
#   HBASE_CLUSTER_SESSION_TIMEOUT ZooKeeper session timeout (ms), which
#                                 bounds how soon the master sees a region
#                                 server die (default 10000)
#   PROMHBASE_CACHE      cache directory (default $HOME/.cache/promhbase)
#   MVN                  Maven command (default mvn)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUN=${HBASE_RUN:-$ROOT/.run/hbase}
PIDFILE=$RUN/hbase.pid
LOG=$RUN/logs/hbase.log

HBASE_VERSION=${HBASE_VERSION:-2.6.4-hadoop3}
HBASE_HEAP=${HBASE_HEAP:-1g}
HBASE_ZK_PORT=${HBASE_ZK_PORT:-2181}
HBASE_MASTER_PORT=${HBASE_MASTER_PORT:-16000}
HBASE_RS_PORT=${HBASE_RS_PORT:-16020}
HBASE_READY_TIMEOUT=${HBASE_READY_TIMEOUT:-240s}
HBASE_SPLIT_TIMEOUT=${HBASE_SPLIT_TIMEOUT:-120}
CACHE=${PROMHBASE_CACHE:-$HOME/.cache/promhbase}
LIB=$CACHE/hbase-$HBASE_VERSION/lib
HBASE_CODECS=${HBASE_CODECS:-aircompressor}
HBASE_CODECS_VERSION=${HBASE_CODECS_VERSION:-}
CODECS=$CACHE/hbase-$HBASE_VERSION/codecs
# The codec classes of hbase-compression-aircompressor by HBase's codec
# name (the <name> of hbase.io.compress.<name>.codec).
AIRCOMPRESSOR_PACKAGE=org.apache.hadoop.hbase.io.compress.aircompressor
AIRCOMPRESSOR_CODECS="lz4:Lz4Codec lzo:LzoCodec snappy:SnappyCodec zstd:ZstdCodec"
MVN=${MVN:-mvn}
DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

# Every JVM this script starts carries this property, so that `down` can
# find exactly our processes and nobody else's.
MARKER="-Dpromhbase.hbase.run=$RUN"

SCRIPT=hbase.sh
# shellcheck source=tools/scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# java_major prints the major version of the given java binary.
java_major() {
	local v
	v=$("$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')
	v=${v#1.} # 1.8 -> 8
	printf '%s\n' "${v%%.*}"
}

# port_busy reports whether something listens on the TCP port on loopback.
port_busy() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# our_pids prints the PIDs of every live process started by this script for
# this run directory, whatever the PID file says.
our_pids() {
	local d pid
	for d in /proc/[0-9]*; do
		pid=${d#/proc/}
		if has_arg "$pid" "$MARKER"; then
			printf '%s\n' "$pid"
		fi
	done
}

# has_arg PID ARG succeeds when ARG is one of the command-line arguments
# of process PID (a live one).
has_arg() {
	{ tr '\0' '\n' <"/proc/$1/cmdline"; } 2>/dev/null | grep -qxF -- "$2"
}

# pid_in FILE ARG prints the PID in the PID file FILE when that process is
# alive and carries the argument ARG: it is ours, not a reused PID.
pid_in() {
	[[ -f $1 ]] || return 1
	local pid
	pid=$(<"$1")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	has_arg "$pid" "$2" || return 1
	printf '%s\n' "$pid"
}

# running_pid prints the PID from the PID file when that process is alive
# and is ours.
running_pid() { pid_in "$PIDFILE" "$MARKER"; }

fetch_jars() {
	if [[ -f $LIB/.complete ]]; then
		log "jars: cached in $LIB"
		return
	fi
	command -v "$MVN" >/dev/null || die "maven ($MVN) is needed to fetch HBase $HBASE_VERSION"
	log "jars: fetching HBase $HBASE_VERSION from Maven Central into $LIB"
	local tmp start
	tmp=$LIB.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp"
	start=$SECONDS
	if ! "$MVN" -B -q -Dstyle.color=never -f "$ROOT/testdata/hbase/pom.xml" \
		"$DEPENDENCY_PLUGIN:copy-dependencies" \
		-Dhbase.version="$HBASE_VERSION" \
		-DincludeScope=runtime \
		-DoutputDirectory="$tmp" >&2; then
		rm -rf "$tmp"
		die "maven could not fetch HBase $HBASE_VERSION (is it on Maven Central? only some releases have -hadoop3 builds)"
	fi
	[[ -f $tmp/hbase-server-$HBASE_VERSION.jar ]] || die "fetched jars lack hbase-server-$HBASE_VERSION.jar"
	touch "$tmp/.complete"
	rm -rf "$LIB"
	mv "$tmp" "$LIB"
	log "jars: $(find "$LIB" -name '*.jar' | wc -l) jars fetched in $((SECONDS - start))s"
}

# codecs_versions prints the versions of hbase-compression-aircompressor to
# try, best first. Central holds the module for only some releases: none
# for 2.6.4-hadoop3 or 2.6.4, but 2.6.1.
codecs_versions() {
	if [[ -n $HBASE_CODECS_VERSION ]]; then
		printf '%s\n' "$HBASE_CODECS_VERSION"
		return
	fi
	printf '%s\n' "$HBASE_VERSION"
	if [[ $HBASE_VERSION == *-hadoop3 ]]; then
		printf '%s\n' "${HBASE_VERSION%-hadoop3}"
	fi
	if [[ $HBASE_VERSION == 2.6.* && ${HBASE_VERSION%-hadoop3} != 2.6.1 ]]; then
		printf '%s\n' 2.6.1
	fi
}

# fetch_codecs fetches hbase-compression-aircompressor and aircompressor
# into $CODECS, and nothing else: HBase's own jars in $LIB provide what
# the module needs of HBase and Hadoop.
fetch_codecs() {
	case $HBASE_CODECS in
	none) return ;;
	aircompressor) ;;
	*) die "HBASE_CODECS=$HBASE_CODECS: want aircompressor or none" ;;
	esac
	if [[ -f $CODECS/.complete ]]; then
		log "codecs: cached in $CODECS ($(<"$CODECS/.complete"))"
		return
	fi
	command -v "$MVN" >/dev/null || die "maven ($MVN) is needed to fetch the compression codecs (or set HBASE_CODECS=none)"
	local tmp v got=
	tmp=$CODECS.tmp.$$
	for v in $(codecs_versions); do
		rm -rf "$tmp"
		mkdir -p "$tmp"
		cat >"$tmp/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by tools/scripts/hbase.sh to fetch the pure-Java compression codecs.
     The module's dependencies on HBase, Hadoop and SLF4J are excluded (the
     server has its own); aircompressor comes at the version the module was
     built with. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.github.promhbase.scripts</groupId>
  <artifactId>hbase-codecs</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.hbase</groupId>
      <artifactId>hbase-compression-aircompressor</artifactId>
      <version>$v</version>
      <exclusions>
        <exclusion><groupId>org.apache.hbase</groupId><artifactId>*</artifactId></exclusion>
        <exclusion><groupId>org.apache.hadoop</groupId><artifactId>*</artifactId></exclusion>
        <exclusion><groupId>org.slf4j</groupId><artifactId>*</artifactId></exclusion>
      </exclusions>
    </dependency>
  </dependencies>
</project>
EOF
		log "codecs: fetching org.apache.hbase:hbase-compression-aircompressor:$v"
		if "$MVN" -B -q -Dstyle.color=never -f "$tmp/pom.xml" \
			"$DEPENDENCY_PLUGIN:copy-dependencies" \
			-DincludeScope=runtime \
			-DincludeArtifactIds=hbase-compression-aircompressor,aircompressor \
			-DoutputDirectory="$tmp/jars" >"$tmp/mvn.log" 2>&1; then
			got=$v
			break
		fi
		log "codecs: hbase-compression-aircompressor $v is not on Maven Central"
	done
	if [[ -z $got ]]; then
		cat "$tmp/mvn.log" >&2
		rm -rf "$tmp"
		die "maven could not fetch hbase-compression-aircompressor (tried: $(codecs_versions | tr '\n' ' ')); set HBASE_CODECS_VERSION, or HBASE_CODECS=none for NONE and GZ only"
	fi
	compgen -G "$tmp/jars/hbase-compression-aircompressor-*.jar" >/dev/null ||
		die "the fetched codecs lack hbase-compression-aircompressor (see $tmp)"
	compgen -G "$tmp/jars/aircompressor-*.jar" >/dev/null ||
		die "the fetched codecs lack io.airlift:aircompressor (see $tmp)"
	(cd "$tmp/jars" && ls -- *.jar) | tr '\n' ' ' | sed 's/ $//' >"$tmp/jars/.complete"
	rm -rf "$CODECS"
	mv "$tmp/jars" "$CODECS"
	rm -rf "$tmp"
	log "codecs: $(<"$CODECS/.complete") in $CODECS"
}

# codecs_ready reports whether the aircompressor codecs are configured and
# fetched.
codecs_ready() {
	[[ $HBASE_CODECS != none && -f $CODECS/.complete ]]
}

# classpath prints the JVM classpath: the configuration, HBase's jars and,
# when configured, the codecs.
classpath() {
	local cp="$RUN/conf:$LIB/*"
	if codecs_ready; then
		cp+=":$CODECS/*"
	fi
	printf '%s\n' "$cp"
}

# codec_properties prints the hbase-site.xml properties that name the
# aircompressor codec classes (nothing when they are not configured).
codec_properties() {
	codecs_ready || return 0
	local c
	for c in $AIRCOMPRESSOR_CODECS; do
		printf '  <property><name>hbase.io.compress.%s.codec</name><value>%s.%s</value></property>\n' \
			"${c%%:*}" "$AIRCOMPRESSOR_PACKAGE" "${c#*:}"
	done
}

# log4j_config FILE HEADER ROOT_LEVEL ZK_LEVEL writes a log4j2
# configuration to FILE: HEADER as its first comment, everything to
# stderr at ROOT_LEVEL, ZooKeeper at ZK_LEVEL, then stdin's lines (more
# loggers).
log4j_config() {
	{
		cat <<EOF
# $2
status = warn
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger.level = $3
rootLogger.appenderRef.console.ref = console
logger.zookeeper.name = org.apache.zookeeper
logger.zookeeper.level = $4
EOF
		cat
	} >"$1"
}

# write_log_config writes the log4j2 configuration of HBase's JVMs:
# warnings of ZooKeeper and Hadoop, HBase's info lines, to stderr (the log
# file of each JVM).
write_log_config() {
	log4j_config "$RUN/conf/log4j2.properties" "Written by tools/scripts/hbase.sh; rewritten on every up and cluster-up." info warn <<EOF
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = warn
logger.hbase.name = org.apache.hadoop.hbase
logger.hbase.level = info
EOF
}

# loopback_properties prints the hbase-site.xml properties both
# configurations share: the WAL on the local filesystem, reaching the
# kernel at each sync (see the script's header), and every server on
# 127.0.0.1.
loopback_properties() {
	cat <<'XML'
  <property><name>hbase.unsafe.stream.capability.enforce</name><value>false</value></property>
  <property><name>hbase.wal.provider</name><value>filesystem</value></property>
  <property><name>hbase.master.hostname</name><value>127.0.0.1</value></property>
  <property><name>hbase.unsafe.regionserver.hostname</name><value>127.0.0.1</value></property>
  <property><name>hbase.master.ipc.address</name><value>127.0.0.1</value></property>
  <property><name>hbase.regionserver.ipc.address</name><value>127.0.0.1</value></property>
XML
}

write_config() {
	mkdir -p "$RUN/conf" "$RUN/logs" "$RUN/tmp" "$RUN/zookeeper" "$RUN/bin"
	cat >"$RUN/conf/hbase-site.xml" <<EOF
<?xml version="1.0"?>
<!-- Written by tools/scripts/hbase.sh; rewritten on every up. -->
<configuration>
  <property><name>hbase.cluster.distributed</name><value>false</value></property>
  <property><name>hbase.rootdir</name><value>file://$RUN/data</value></property>
  <property><name>hbase.tmp.dir</name><value>$RUN/tmp</value></property>
  <property><name>hbase.zookeeper.quorum</name><value>127.0.0.1:$HBASE_ZK_PORT</value></property>
  <property><name>hbase.zookeeper.property.clientPort</name><value>$HBASE_ZK_PORT</value></property>
  <property><name>hbase.zookeeper.property.dataDir</name><value>$RUN/zookeeper</value></property>
$(loopback_properties)
  <property><name>hbase.master.port</name><value>$HBASE_MASTER_PORT</value></property>
  <property><name>hbase.regionserver.port</name><value>$HBASE_RS_PORT</value></property>
  <property><name>hbase.master.info.port</name><value>-1</value></property>
  <property><name>hbase.regionserver.info.port</name><value>-1</value></property>
  <!-- HBase's default. With 10 the call queue (10 calls a handler) was
       shorter than the check-and-puts a first contact with new series
       has in flight; the region server refused the excess
       and the client backed off. A first contact with 100 000 new series,
       4 runs after a restart: 17.0, 10.9, 8.9, 8.3 s with 20 400 to 6 300
       client retries; with 30: 15.8, 9.2, 8.4, 7.2 s and none. -->
  <property><name>hbase.regionserver.handler.count</name><value>30</value></property>
  <property><name>hbase.balancer.period</name><value>2147483647</value></property>
  <property><name>hbase.client.scanner.timeout.period</name><value>60000</value></property>
  <!-- A daughter of a split cannot be split again while the files its
       compaction replaced are still held; they are archived every 2
       minutes by default, which made the second of two splits in a row
       wait that long. -->
  <property><name>hbase.hfile.compaction.discharger.interval</name><value>5000</value></property>
  <!-- On TERM the master's shutdown hook stops the in-process ZooKeeper
       before the region server deletes its znode; the region server then
       retries against a dead ZooKeeper (4 attempts, 1 s doubling pauses
       and a reconnect wait each), which made "down" take 12-25 s. ZooKeeper
       lives in the same JVM here, so fewer and shorter retries are safe. -->
  <property><name>zookeeper.recovery.retry</name><value>1</value></property>
  <property><name>zookeeper.recovery.retry.intervalmill</name><value>100</value></property>
  <!-- ZooKeeper's sessions pause with the JVM they live in (SIGSTOP in
       test/e2e/faults' TestHBaseFreeze, a long GC): on resume ZooKeeper
       expires every session not heard from within its timeout, and the
       master aborts. Local mode's timeout is 10 s. A client pings every
       third of the timeout, so a pause must stay under two thirds of it:
       180 s lets this HBase come back from pauses of up to 2 minutes
       (with 90 s a minute's pause once expired the master's session).
       ZooKeeper caps a session at maxSessionTimeout, 20 ticks (40 s), by
       default. -->
  <property><name>zookeeper.session.timeout.localHBaseCluster</name><value>180000</value></property>
  <property><name>hbase.zookeeper.property.maxSessionTimeout</name><value>180000</value></property>
  <!-- Codecs beyond HBase's built-in NONE and GZ: the pure-Java ones of
       hbase-compression-aircompressor (HBASE_CODECS; none when "none"). -->
$(codec_properties)
</configuration>
EOF
	write_log_config
}

tail_log() {
	if [[ -f $LOG ]]; then
		log "last lines of $LOG:"
		tail -n "${1:-60}" "$LOG" >&2
	fi
}

cmd_up() {
	local pid
	if pid=$(running_pid); then
		log "HBase already runs (pid $pid); checking that it serves"
		"$RUN/bin/hbase-ready" -zk "127.0.0.1:$HBASE_ZK_PORT" -timeout "$HBASE_READY_TIMEOUT" ||
			die "HBase (pid $pid) runs but does not serve; try tools/scripts/hbase.sh down"
		if [[ $HBASE_CODECS != none ]] && ! grep -q 'hbase.io.compress.zstd.codec' "$RUN/conf/hbase-site.xml" 2>/dev/null; then
			log "warning: the running HBase was started without the aircompressor codecs (only NONE and GZ work); restart it with tools/scripts/hbase.sh down && tools/scripts/hbase.sh up to get LZ4, LZO, SNAPPY and ZSTD"
		fi
		return
	fi
	check_ports

	local java major
	java=$(java_bin)
	major=$(java_major "$java")
	[[ $major =~ ^[0-9]+$ ]] || die "cannot tell the version of $java"

	fetch_jars
	fetch_codecs

	rm -rf "$RUN"
	write_config
	build_ready
	start_hbase "$java" "$major"
}

# check_ports fails when one of HBase's ports is taken.
check_ports() {
	local p
	for p in "$HBASE_ZK_PORT" "$HBASE_MASTER_PORT" "$HBASE_RS_PORT"; do
		if port_busy "$p"; then
			die "port $p on 127.0.0.1 is already in use by another process; stop it, or choose other ports (HBASE_ZK_PORT=$HBASE_ZK_PORT, HBASE_MASTER_PORT=$HBASE_MASTER_PORT, HBASE_RS_PORT=$HBASE_RS_PORT)"
		fi
	done
}

build_ready() {
	log "building tools/hbase-ready"
	mkdir -p "$RUN/bin"
	(cd "$ROOT" && go build -o "$RUN/bin/hbase-ready" ./tools/hbase-ready) || die "go build ./tools/hbase-ready failed"
}

# jdk_flags prints, one per line, the flags bin/hbase adds on JDK 11 and
# later (add_jdk11_jvm_flags) for the given major version.
jdk_flags() {
	(($1 >= 11)) || return 0
	printf '%s\n' \
		-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true \
		--add-modules jdk.unsupported \
		--add-opens java.base/java.io=ALL-UNNAMED \
		--add-opens java.base/java.nio=ALL-UNNAMED \
		--add-opens java.base/sun.nio.ch=ALL-UNNAMED \
		--add-opens java.base/java.lang=ALL-UNNAMED \
		--add-opens java.base/jdk.internal.ref=ALL-UNNAMED \
		--add-opens java.base/java.lang.reflect=ALL-UNNAMED \
		--add-opens java.base/java.util=ALL-UNNAMED \
		--add-opens java.base/java.util.concurrent=ALL-UNNAMED \
		--add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
		--add-exports java.security.jgss/sun.security.krb5=ALL-UNNAMED \
		--add-exports java.base/sun.net.dns=ALL-UNNAMED \
		--add-exports java.base/sun.net.util=ALL-UNNAMED
}

# start_hbase starts the HBase JVM on the configuration and data in $RUN
# and returns once it serves; it stops HBase again and fails when it does
# not become ready.
start_hbase() {
	local java=$1 major=$2 pid
	local -a opts=(
		-Dproc_master
		"$MARKER"
		"-Xms256m" "-Xmx$HBASE_HEAP"
		-XX:+UseG1GC
		"-XX:OnOutOfMemoryError=kill -9 %p"
		# Each pause with its cause and length, for diagnose.
		"-Xlog:gc:file=$RUN/logs/gc.log:uptime,time:filecount=2,filesize=20m"
		-Djava.net.preferIPv4Stack=true
		-Djava.util.logging.config.class=org.apache.hadoop.hbase.logging.JulToSlf4jInitializer
		"-Dlog4j2.configurationFile=file:$RUN/conf/log4j2.properties"
		"-Dhbase.log.dir=$RUN/logs"
		-Dhbase.log.file=hbase.log
		"-Dhbase.home.dir=$RUN"
		-Dhbase.id.str=promhbase
		-Dhbase.root.logger=INFO,console
		-Dhbase.security.logger=INFO,console
		"-Djava.io.tmpdir=$RUN/tmp"
	)
	mapfile -t -O "${#opts[@]}" opts < <(jdk_flags "$major")

	log "starting HBase $HBASE_VERSION on JDK $major (heap $HBASE_HEAP, zk 127.0.0.1:$HBASE_ZK_PORT) in $RUN"
	local start=$SECONDS
	rm -f "$PIDFILE"
	# setsid: its own session, so it outlives this shell and its terminal.
	# The inner shell writes its PID and then becomes java (exec). The log
	# is appended to, so that a restart keeps the earlier runs' lines.
	setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' hbase "$PIDFILE" \
		"$java" "${opts[@]}" -cp "$(classpath)" \
		org.apache.hadoop.hbase.master.HMaster start \
		</dev/null >>"$LOG" 2>&1 &
	local launcher=$!
	local i
	for i in $(seq 50); do
		[[ -s $PIDFILE ]] && break
		sleep 0.1
	done
	pid=$(<"$PIDFILE") || die "HBase did not start (no PID file)"
	log "HBase pid $pid; log $LOG"

	"$RUN/bin/hbase-ready" -zk "127.0.0.1:$HBASE_ZK_PORT" -timeout "$HBASE_READY_TIMEOUT" &
	local ready=$!
	while kill -0 "$ready" 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null; then
			kill "$ready" 2>/dev/null || true
			wait "$ready" 2>/dev/null || true
			wait "$launcher" 2>/dev/null || true
			tail_log
			die "HBase (pid $pid) exited during startup"
		fi
		sleep 1
	done
	if ! wait "$ready"; then
		tail_log
		log "error: HBase did not become ready within $HBASE_READY_TIMEOUT; stopping it"
		cmd_down
		exit 1
	fi
	log "HBase serves after $((SECONDS - start))s (pid $pid, zk 127.0.0.1:$HBASE_ZK_PORT)"
}

# stop_pid stops one process: TERM, up to 30 s of grace, then KILL.
stop_pid() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 300); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	log "pid $pid still alive after 30s; sending KILL"
	kill -KILL "$pid" 2>/dev/null || true
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

cmd_down() {
	local pid p stopped=0
	if pid=$(running_pid); then
		log "stopping HBase (pid $pid)"
		stop_pid "$pid" || die "could not stop pid $pid"
		stopped=1
	fi
	# Strays: JVMs started for this run directory whose PID file was lost.
	for p in $(our_pids); do
		log "stopping stray HBase process $p"
		stop_pid "$p" || die "could not stop pid $p"
		stopped=1
	done
	rm -f "$PIDFILE"
	if [[ -n $(our_pids) ]]; then
		die "HBase processes remain: $(our_pids | tr '\n' ' ')"
	fi
	local i
	for i in $(seq 50); do
		port_busy "$HBASE_ZK_PORT" || break
		sleep 0.2
	done
	if port_busy "$HBASE_ZK_PORT"; then
		die "port $HBASE_ZK_PORT is still in use after stopping HBase (another process?)"
	fi
	if ((stopped)); then
		log "HBase stopped; port $HBASE_ZK_PORT is free"
	else
		log "HBase was not running"
	fi
}

cmd_status() {
	local pid
	if pid=$(running_pid); then
		echo "running (pid $pid, zk 127.0.0.1:$HBASE_ZK_PORT, log $LOG)"
		return 0
	fi
	echo "not running"
	return 3
}

cmd_restart() {
	[[ -f $RUN/conf/hbase-site.xml && -d $RUN/data ]] ||
		die "no HBase data in $RUN to restart on; start a fresh one with tools/scripts/hbase.sh up"
	[[ -f $LIB/.complete ]] || die "no cached HBase jars in $LIB; start a fresh HBase with tools/scripts/hbase.sh up"
	local java major
	java=$(java_bin)
	major=$(java_major "$java")
	[[ $major =~ ^[0-9]+$ ]] || die "cannot tell the version of $java"
	log "restarting HBase on the data in $RUN"
	local start=$SECONDS
	cmd_down
	check_ports
	[[ -x $RUN/bin/hbase-ready ]] || build_ready
	start_hbase "$java" "$major"
	log "restarted in $((SECONDS - start))s"
}

# admin runs testdata/hbase/Split.java (JDK 11+ single-file source launch)
# against the running HBase with the given arguments.
admin() {
	running_pid >/dev/null || die "HBase does not run; start it with tools/scripts/hbase.sh up"
	[[ -f $LIB/.complete ]] || die "no cached HBase jars in $LIB; start HBase with tools/scripts/hbase.sh up"
	local java major
	java=$(java_bin)
	major=$(java_major "$java")
	[[ $major =~ ^[0-9]+$ ]] || die "cannot tell the version of $java"
	((major >= 11)) || die "$java is JDK $major; the admin commands need JDK 11 or later (single-file source launch)"
	# The client logs warnings and errors only, to stderr.
	local logconf=$RUN/conf/log4j2-client.properties
	log4j_config "$logconf" "Written by tools/scripts/hbase.sh for its admin commands." warn error <<EOF
# "Unable to load native-hadoop library" and "ZKConnectionRegistry is
# deprecated": true, and no news.
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.registry.name = org.apache.hadoop.hbase.client.ZKConnectionRegistry
logger.registry.level = error
EOF
	local -a opts=(
		"-Xmx256m"
		-Djava.net.preferIPv4Stack=true
		"-Dlog4j2.configurationFile=file:$logconf"
		"-Djava.io.tmpdir=$RUN/tmp"
	)
	mapfile -t -O "${#opts[@]}" opts < <(jdk_flags "$major")
	"$java" "${opts[@]}" -cp "$(classpath)" "$ROOT/testdata/hbase/Split.java" "$@"
}

cmd_split() {
	[[ $# -ge 1 && $# -le 2 && -n $1 ]] || {
		echo "usage: $0 split TABLE [SPLITROW_HEX]" >&2
		exit 2
	}
	if [[ $# -eq 2 && ! $2 =~ ^([0-9a-fA-F]{2})+$ ]]; then
		die "split row $2 is not hex (two digits per byte)"
	fi
	admin split "$1" "$HBASE_SPLIT_TIMEOUT" ${2:+"$2"}
}

cmd_regions() {
	[[ $# -eq 1 && -n $1 ]] || {
		echo "usage: $0 regions TABLE" >&2
		exit 2
	}
	admin regions "$1"
}

HBASE_CLUSTER_REGIONSERVERS=${HBASE_CLUSTER_REGIONSERVERS:-3}
HBASE_CLUSTER_ZK_PORT=${HBASE_CLUSTER_ZK_PORT:-2182}
HBASE_CLUSTER_MASTER_PORT=${HBASE_CLUSTER_MASTER_PORT:-16100}
HBASE_CLUSTER_RS_PORT=${HBASE_CLUSTER_RS_PORT:-16120}
HBASE_CLUSTER_RS_HEAP=${HBASE_CLUSTER_RS_HEAP:-512m}
HBASE_CLUSTER_SESSION_TIMEOUT=${HBASE_CLUSTER_SESSION_TIMEOUT:-10000}

# cluster_env points the script's paths at the cluster's run directory.
cluster_env() {
	RUN=$ROOT/.run/hbase-cluster
	MARKER="-Dpromhbase.hbase.run=$RUN"
	HBASE_ZK_PORT=$HBASE_CLUSTER_ZK_PORT
	LOG=$RUN/logs/master.log
}

# cluster_roles prints the roles of the cluster, in start order.
cluster_roles() {
	local i
	printf '%s\n' zk master
	for ((i = 1; i <= HBASE_CLUSTER_REGIONSERVERS; i++)); do
		printf 'rs%d\n' "$i"
	done
}

# role_port prints the port a role listens on.
role_port() {
	case $1 in
	zk) echo "$HBASE_CLUSTER_ZK_PORT" ;;
	master) echo "$HBASE_CLUSTER_MASTER_PORT" ;;
	rs[1-9] | rs[1-9][0-9])
		((${1#rs} <= HBASE_CLUSTER_REGIONSERVERS)) || die "no role $1: the cluster has $HBASE_CLUSTER_REGIONSERVERS region servers"
		echo $((HBASE_CLUSTER_RS_PORT + ${1#rs} - 1))
		;;
	*) die "no role $1: want zk, master or rs1..rs$HBASE_CLUSTER_REGIONSERVERS" ;;
	esac
}

# role_pid prints the PID of a role's live process.
role_pid() { pid_in "$RUN/pids/$1.pid" "-Dpromhbase.hbase.role=$1"; }

write_cluster_config() {
	mkdir -p "$RUN/conf" "$RUN/logs" "$RUN/tmp" "$RUN/zookeeper" "$RUN/bin" "$RUN/pids"
	cat >"$RUN/conf/hbase-site.xml" <<XML
<?xml version="1.0"?>
<!-- Written by tools/scripts/hbase.sh cluster-up; rewritten on every cluster-up. -->
<configuration>
  <property><name>hbase.cluster.distributed</name><value>true</value></property>
  <property><name>hbase.rootdir</name><value>file://$RUN/data</value></property>
  <property><name>hbase.tmp.dir</name><value>$RUN/tmp</value></property>
  <property><name>hbase.zookeeper.quorum</name><value>127.0.0.1:$HBASE_CLUSTER_ZK_PORT</value></property>
  <property><name>hbase.zookeeper.property.clientPort</name><value>$HBASE_CLUSTER_ZK_PORT</value></property>
  <!-- See the script's header: the WAL reaches the kernel at each sync. -->
$(loopback_properties)
  <property><name>hbase.master.port</name><value>$HBASE_CLUSTER_MASTER_PORT</value></property>
  <property><name>hbase.master.info.port</name><value>-1</value></property>
  <property><name>hbase.regionserver.info.port</name><value>-1</value></property>
  <property><name>hbase.regionserver.handler.count</name><value>30</value></property>
  <!-- How soon the master declares a killed region server dead. -->
  <property><name>zookeeper.session.timeout</name><value>$HBASE_CLUSTER_SESSION_TIMEOUT</value></property>
  <property><name>hbase.balancer.period</name><value>2147483647</value></property>
  <property><name>hbase.client.scanner.timeout.period</name><value>60000</value></property>
  <property><name>hbase.hfile.compaction.discharger.interval</name><value>5000</value></property>
  <!-- Serve once one region server is up; the others join as they come
       (cluster-up waits for all of them). -->
  <property><name>hbase.master.wait.on.regionservers.mintostart</name><value>1</value></property>
  <property><name>hbase.master.wait.on.regionservers.timeout</name><value>1000</value></property>
$(codec_properties)
</configuration>
XML
	cat >"$RUN/conf/zoo.cfg" <<CFG
# Written by tools/scripts/hbase.sh cluster-up.
dataDir=$RUN/zookeeper
clientPort=$HBASE_CLUSTER_ZK_PORT
clientPortAddress=127.0.0.1
tickTime=2000
maxClientCnxns=0
admin.enableServer=false
CFG
	write_log_config
}

# start_role starts one process of the cluster (same ports and data as
# before) and returns once its port listens.
start_role() {
	local role=$1 java major heap class port pid
	java=$(java_bin)
	major=$(java_major "$java")
	port=$(role_port "$role")
	if pid=$(role_pid "$role"); then
		log "$role already runs (pid $pid)"
		return
	fi
	port_busy "$port" && die "port $port on 127.0.0.1 (for $role) is in use by another process"
	local -a args=()
	case $role in
	zk)
		heap=128m class=org.apache.zookeeper.server.ZooKeeperServerMain
		args=("$RUN/conf/zoo.cfg")
		;;
	master)
		heap=384m class=org.apache.hadoop.hbase.master.HMaster
		args=(start)
		;;
	*)
		heap=$HBASE_CLUSTER_RS_HEAP class=org.apache.hadoop.hbase.regionserver.HRegionServer
		mkdir -p "$RUN/tmp/$role"
		args=("-Dhbase.regionserver.port=$port" "-Dhbase.tmp.dir=$RUN/tmp/$role" start)
		;;
	esac
	local -a opts=(
		"-Dproc_$role" "$MARKER" "-Dpromhbase.hbase.role=$role"
		-Xms64m "-Xmx$heap" -XX:+UseG1GC "-XX:OnOutOfMemoryError=kill -9 %p"
		-Djava.net.preferIPv4Stack=true
		-Djava.util.logging.config.class=org.apache.hadoop.hbase.logging.JulToSlf4jInitializer
		"-Dlog4j2.configurationFile=file:$RUN/conf/log4j2.properties"
		"-Dhbase.log.dir=$RUN/logs" "-Dhbase.log.file=$role.log" "-Dhbase.home.dir=$RUN"
		"-Dhbase.id.str=promhbase-$role" -Dzookeeper.admin.enableServer=false
		"-Djava.io.tmpdir=$RUN/tmp"
	)
	mapfile -t -O "${#opts[@]}" opts < <(jdk_flags "$major")
	rm -f "$RUN/pids/$role.pid"
	setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' "hbase-$role" "$RUN/pids/$role.pid" \
		"$java" "${opts[@]}" -cp "$(classpath)" "$class" "${args[@]}" \
		</dev/null >>"$RUN/logs/$role.log" 2>&1 &
	local i
	for i in $(seq 600); do
		if ((i > 20)) && ! role_pid "$role" >/dev/null; then
			tail -n 40 "$RUN/logs/$role.log" >&2 || true
			die "$role exited during startup (log $RUN/logs/$role.log)"
		fi
		port_busy "$port" && break
		sleep 0.2
	done
	port_busy "$port" || die "$role does not listen on $port after 120s (log $RUN/logs/$role.log)"
	log "$role: pid $(role_pid "$role"), 127.0.0.1:$port, log $RUN/logs/$role.log"
}

# cluster_wait_ready waits until every region server is live and a table
# can be created, written, read and dropped.
cluster_wait_ready() {
	local start=$1 n= i
	for i in $(seq 300); do
		n=$(cluster_admin servers 2>/dev/null | head -n 1 || true)
		[[ $n == "$HBASE_CLUSTER_REGIONSERVERS" ]] && break
		sleep 1
	done
	[[ $n == "$HBASE_CLUSTER_REGIONSERVERS" ]] ||
		die "${n:-no} of $HBASE_CLUSTER_REGIONSERVERS region servers live after 300s (logs in $RUN/logs)"
	"$RUN/bin/hbase-ready" -zk "127.0.0.1:$HBASE_CLUSTER_ZK_PORT" -timeout "$HBASE_READY_TIMEOUT" ||
		die "the cluster does not serve (logs in $RUN/logs)"
	log "cluster serves after $((SECONDS - start))s: $n region servers, zk 127.0.0.1:$HBASE_CLUSTER_ZK_PORT"
}

cmd_cluster_up() {
	cluster_env
	local role pid
	for role in $(cluster_roles); do
		if pid=$(role_pid "$role"); then
			die "the cluster runs already ($role pid $pid); stop it with tools/scripts/hbase.sh cluster-down"
		fi
		port_busy "$(role_port "$role")" && die "port $(role_port "$role") (for $role) is in use by another process"
	done
	fetch_jars
	fetch_codecs
	local start=$SECONDS
	rm -rf "$RUN"
	write_cluster_config
	build_ready
	for role in $(cluster_roles); do
		start_role "$role"
	done
	cluster_wait_ready "$start"
	cmd_cluster_status
}

cmd_cluster_down() {
	cluster_env
	local role pid p stopped=0
	# Region servers first, then the master, then ZooKeeper.
	for role in $(cluster_roles | tac); do
		if pid=$(role_pid "$role"); then
			log "stopping $role (pid $pid)"
			stop_pid "$pid" || die "could not stop $role (pid $pid)"
			stopped=1
		fi
	done
	for p in $(our_pids); do
		log "killing stray cluster process $p"
		kill -KILL "$p" 2>/dev/null || true
		stopped=1
	done
	rm -f "$RUN"/pids/*.pid 2>/dev/null || true
	sleep 0.5
	[[ -z $(our_pids) ]] || die "cluster processes remain: $(our_pids | tr '\n' ' ')"
	if ((stopped)); then
		log "cluster stopped"
	else
		log "the cluster was not running"
	fi
}

cmd_cluster_status() {
	cluster_env
	local role pid all=0
	for role in $(cluster_roles); do
		if pid=$(role_pid "$role"); then
			echo "$role running pid $pid 127.0.0.1:$(role_port "$role") log $RUN/logs/$role.log"
		else
			echo "$role stopped 127.0.0.1:$(role_port "$role") log $RUN/logs/$role.log"
			all=3
		fi
	done
	echo "zookeeper quorum 127.0.0.1:$HBASE_CLUSTER_ZK_PORT, configuration $RUN/conf"
	return $all
}

cmd_cluster_kill() {
	[[ $# -eq 1 ]] || usage
	cluster_env
	role_port "$1" >/dev/null
	local pid i
	pid=$(role_pid "$1") || die "$1 does not run"
	kill -KILL "$pid"
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	log "$1 (pid $pid) killed with SIGKILL"
}

cmd_cluster_start() {
	[[ $# -eq 1 ]] || usage
	cluster_env
	[[ -f $RUN/conf/hbase-site.xml ]] || die "no cluster in $RUN; start one with tools/scripts/hbase.sh cluster-up"
	start_role "$1"
}

# cluster_admin runs an admin command (testdata/hbase/Split.java) against
# the cluster.
# cmd_diagnose prints what in the logs tells of a stalled or starved
# HBase, at most 20 lines of each kind, newest last: the JVM's pause
# monitor (a GC or the host holding the process), GC pauses of a second
# or more, calls slower than 10 s, slow WAL appends and syncs, updates
# blocked on a full memstore, procedures reported stuck, ZooKeeper
# connections refused. Nothing printed under a kind: none seen.
cmd_diagnose() {
	[[ -f $LOG ]] || die "no HBase log at $LOG"
	local kind pattern
	while IFS='|' read -r kind pattern; do
		log "$kind:"
		{ grep -E "$pattern" "$LOG" || true; } | tail -n 20 | cut -c1-300 >&2
	done <<-'EOF'
		JVM pauses|JvmPauseMonitor
		slow calls|responseTooSlow|operationTooSlow
		slow WAL|took [0-9]{4,} ms (appending|syncing)|Slow sync cost
		blocked updates|[Bb]locking updates|Over memstore limit|RegionTooBusy
		stuck procedures|STUCK|[Ss]tuck (Region|procedure)|waiting for lock
		ZooKeeper refusals|Too many connections
	EOF
	local gc
	for gc in "$RUN"/logs/gc.log*; do
		[[ -f $gc ]] || continue
		log "GC pauses of a second or more ($gc):"
		{ grep -E 'Pause.* [0-9]{4,}\.[0-9]+ms' "$gc" || true; } | tail -n 20 >&2
	done
}

cluster_admin() {
	cluster_env
	PIDFILE=$RUN/pids/master.pid
	admin "$@"
}

usage() {
	echo "usage: $0 up|down|restart|status|diagnose|split TABLE [SPLITROW_HEX]|regions TABLE" >&2
	echo "       $0 cluster-up|cluster-down|cluster-status|cluster-servers|cluster-kill ROLE|cluster-start ROLE|cluster-move TABLE|cluster-split TABLE [SPLITROW_HEX]" >&2
	exit 2
}

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case $cmd in
up | down | restart | status | diagnose)
	[[ $# -eq 0 ]] || usage
	"cmd_$cmd"
	;;
split) cmd_split "$@" ;;
regions) cmd_regions "$@" ;;
cluster-up | cluster-down | cluster-status)
	[[ $# -eq 0 ]] || usage
	"cmd_${cmd//-/_}"
	;;
cluster-kill | cluster-start) "cmd_${cmd//-/_}" "$@" ;;
cluster-servers)
	[[ $# -eq 0 ]] || usage
	cluster_admin servers
	;;
cluster-move)
	[[ $# -eq 1 ]] || usage
	cluster_admin move "$1" "$HBASE_SPLIT_TIMEOUT"
	;;
cluster-split)
	[[ $# -ge 1 && $# -le 2 ]] || usage
	cluster_env
	PIDFILE=$RUN/pids/master.pid
	cmd_split "$@"
	;;
*) usage ;;
esac
