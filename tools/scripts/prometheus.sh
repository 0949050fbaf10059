#!/usr/bin/env bash
# Prints the path of a Prometheus server binary for end-to-end tests.
#
# The binary is built from the Go module github.com/prometheus/prometheus,
# pinned in the tools module tools/prometheus, and cached at
#   ${PROMHBASE_CACHE:-$HOME/.cache/promhbase}/prometheus-<module version>/prometheus
# It is built only when that file is missing; the build takes about 7 minutes
# on 2 cores and needs only the Go module proxy. `go install ...@version` cannot
# be used: Prometheus's go.mod has replace and exclude directives.
#
# The binary has no web UI (no builtinassets tag, no npm step); the HTTP API
# works. It has no service discovery but static, file and HTTP (the tag
# remove_all_sd: the tests scrape static targets), which leaves the cloud
# and Kubernetes clients out of the build.
#
# Only the path goes to stdout; build output goes to stderr.
set -euo pipefail

# Keep in step with tools/prometheus/go.mod; the build checks that they agree.
readonly prom_module=github.com/prometheus/prometheus
readonly prom_module_version=v0.315.0

SCRIPT=prometheus.sh
# shellcheck source=tools/scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

pinned_tool prometheus "$prom_module_version"

prom_build_flags "$tools_dir"

# Build into a temporary directory next to the cache entry and rename, so a
# killed build never leaves a partial binary at $bin.
build_dir="$(mktemp -d "$cache_dir/.build.XXXXXX")"
trap 'rm -rf "$build_dir"' EXIT

log "building Prometheus $version ($prom_module@$prom_module_version) into $bin; takes about 7 minutes on 2 cores"
start=$SECONDS
(cd "$tools_dir" && go build -trimpath -tags netgo,remove_all_sd -ldflags "$ldflags" \
	-o "$build_dir/prometheus" "$prom_module/cmd/prometheus") >&2

out="$("$build_dir/prometheus" --version 2>&1)" || die "built binary does not run: $out"
[[ "$out" == "prometheus, version $version "* ]] ||
	die "built binary reports an unexpected version: $out"
printf '%s\n' "$out" >&2

mv -f "$build_dir/prometheus" "$bin"
log "built in $((SECONDS - start))s"
printf '%s\n' "$bin"
