#!/usr/bin/env bash
# Prints the path of a promtool binary of the same Prometheus as
# tools/scripts/prometheus.sh (make bench-disk writes Prometheus's blocks with
# `promtool tsdb create-blocks-from openmetrics`).
#
# Built from github.com/prometheus/prometheus/cmd/promtool at the module
# version pinned in tools/prometheus (the version tools/scripts/prometheus.sh
# builds), with that module's go.mod and go.sum copied into a scratch
# module (tools/prometheus itself is left as it is; go.sum lines promtool
# needs beyond the server's are added there), and cached at
#   ${PROMHBASE_CACHE:-$HOME/.cache/promhbase}/prometheus-<module version>/promtool
# It is built only when that file is missing; it needs only the Go module
# proxy and takes a few minutes on 2 cores (less after tools/scripts/prometheus.sh
# filled Go's build cache).
#
# Only the path goes to stdout; build output goes to stderr.
set -euo pipefail

SCRIPT=promtool.sh
# shellcheck source=tools/scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tools_dir="$root/tools/prometheus"
readonly prom_module=github.com/prometheus/prometheus
# The version tools/scripts/prometheus.sh pins (it checks it against tools/prometheus).
prom_module_version="$(sed -n 's/^readonly prom_module_version=//p' "$root/tools/scripts/prometheus.sh")"
[[ -n $prom_module_version ]] || die "cannot read prom_module_version from tools/scripts/prometheus.sh"
cache_dir="${PROMHBASE_CACHE:-$HOME/.cache/promhbase}/prometheus-${prom_module_version}"
bin="$cache_dir/promtool"

# Serialise concurrent callers (the same lock as tools/scripts/prometheus.sh, so
# that the two builds do not share the cores).
cached_bin "$bin"

export GOWORK=off CGO_ENABLED=0
build_dir="$(mktemp -d "$cache_dir/.promtool.XXXXXX")"
trap 'rm -rf "$build_dir"' EXIT
cp "$tools_dir/go.mod" "$tools_dir/go.sum" "$build_dir/"

prom_build_flags "$build_dir"

log "building promtool $version ($prom_module@$prom_module_version) into $bin"
start=$SECONDS
(cd "$build_dir" && GOFLAGS=-mod=mod go build -trimpath -tags netgo,remove_all_sd -ldflags "$ldflags" \
	-o "$build_dir/promtool" "$prom_module/cmd/promtool") >&2

out="$("$build_dir/promtool" --version 2>&1)" || die "built binary does not run: $out"
[[ $out == "promtool, version $version "* ]] || die "built binary reports an unexpected version: $out"
mv -f "$build_dir/promtool" "$bin"
log "built in $((SECONDS - start))s"
printf '%s\n' "$bin"
