#!/usr/bin/env bash
# Prints the path of a VictoriaMetrics single-node binary, the peer that
# make bench-disk compares promhbase's disk use and long-range reads with.
#
# Installed with
#   GOBIN=DIR go install github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics@$VM_VERSION
# (v1.151.0 by default: the last release whose module builds with Go
# 1.26; cgo, so a C compiler is needed; zstd is bundled) and cached at
#   ${PROMHBASE_CACHE:-$HOME/.cache/promhbase}/victoriametrics-<version>/victoria-metrics
# It is built only when that file is missing; it needs only the Go module
# proxy and takes a few minutes on 2 cores.
#
# Only the path goes to stdout; build output goes to stderr.
set -euo pipefail

SCRIPT=victoriametrics.sh
# shellcheck source=tools/scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VM_VERSION=${VM_VERSION:-v1.151.0}
readonly pkg=github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics
cache_dir="${PROMHBASE_CACHE:-$HOME/.cache/promhbase}/victoriametrics-$VM_VERSION"
bin="$cache_dir/victoria-metrics"

cached_bin "$bin"

command -v "${CC:-cc}" >/dev/null || die "VictoriaMetrics builds with cgo: install a C compiler (gcc)"
build_dir="$(mktemp -d "$cache_dir/.build.XXXXXX")"
trap 'rm -rf "$build_dir"' EXIT
log "building VictoriaMetrics $VM_VERSION into $bin; takes a few minutes on 2 cores"
start=$SECONDS
# Outside any module, so that only the pinned release's go.mod counts.
(cd "$build_dir" && GOWORK=off GOFLAGS= CGO_ENABLED=1 GOBIN="$build_dir" go install "$pkg@$VM_VERSION") >&2
out="$("$build_dir/victoria-metrics" -version 2>&1)" || die "built binary does not run: $out"
log "$out"
mv -f "$build_dir/victoria-metrics" "$bin"
log "built in $((SECONDS - start))s"
printf '%s\n' "$bin"
