# shellcheck shell=bash
# The functions the scripts here share. A script sets SCRIPT (its name in
# log lines) and sources this file:
#   SCRIPT=name.sh
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# log writes its arguments as one line to stderr, after the script's name.
log() { printf '%s: %s\n' "$SCRIPT" "$*" >&2; }

# die logs an error and exits 1.
die() {
	log "error: $*"
	exit 1
}

# java_bin prints the java to run: $JAVA_HOME's, else JDK 17's where it is
# installed, else the one on PATH.
java_bin() {
	local home=${JAVA_HOME:-}
	if [[ -z $home ]]; then
		if [[ -x /usr/lib/jvm/java-17-openjdk-amd64/bin/java ]]; then
			home=/usr/lib/jvm/java-17-openjdk-amd64
		else
			local j
			j=$(command -v java) || die "no java: set JAVA_HOME"
			home=$(dirname "$(dirname "$(readlink -f "$j")")")
		fi
	fi
	[[ -x $home/bin/java ]] || die "JAVA_HOME=$home has no bin/java"
	printf '%s\n' "$home/bin/java"
}

# cached_bin BIN: where the binary BIN is built already, prints its path
# and exits 0. Else it makes BIN's directory and, where flock is
# installed, takes that directory's lock (fd 9, held until the script
# exits) so that only one caller builds: a caller that waited for another's
# build prints BIN and exits 0 too. Under the lock it removes the .build.*
# directories a killed build left behind.
cached_bin() {
	local bin=$1 dir
	dir=$(dirname "$bin")
	if [[ -x $bin ]]; then
		printf '%s\n' "$bin"
		exit 0
	fi
	mkdir -p "$dir"
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$dir/.lock"
		flock 9
		if [[ -x $bin ]]; then
			printf '%s\n' "$bin"
			exit 0
		fi
		rm -rf "$dir"/.build.*
	fi
}

# pinned_tool NAME VERSION: for the script that builds NAME from the tools
# module tools/NAME at VERSION, sets tools_dir (that module), cache_dir
# (NAME's cache entry at VERSION) and bin (the binary there); prints bin
# and exits when it is built already (cached_bin, which also serialises
# concurrent callers so that only one of them builds); and sets the
# build's environment.
pinned_tool() {
	tools_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../$1" && pwd)"
	cache_dir="${PROMHBASE_CACHE:-$HOME/.cache/promhbase}/$1-$2"
	bin="$cache_dir/$1"
	cached_bin "$bin"
	export GOWORK=off CGO_ENABLED=0
}

# prom_build_flags MODDIR: downloads the pinned Prometheus module
# ($prom_module at $prom_module_version, which MODDIR's go.mod requires;
# checked) and sets version (its VERSION file) and ldflags (what a release
# build, promu, sets: the module zip carries no VCS data).
prom_build_flags() {
	local got mod_dir pkg=github.com/prometheus/common/version
	got="$(cd "$1" && go list -m -f '{{.Version}}' "$prom_module")"
	[[ $got == "$prom_module_version" ]] ||
		die "tools/prometheus/go.mod has $prom_module $got, tools/scripts/prometheus.sh pins $prom_module_version"
	(cd "$1" && go mod download "$prom_module") >&2
	mod_dir="$(cd "$1" && go list -m -f '{{.Dir}}' "$prom_module")"
	version="$(<"$mod_dir/VERSION")"
	ldflags="-X $pkg.Version=$version"
	ldflags+=" -X $pkg.BuildUser=$(id -un)@$(uname -n)"
	ldflags+=" -X $pkg.BuildDate=$(date -u +%Y%m%d-%H:%M:%S)"
}
