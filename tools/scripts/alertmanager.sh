#!/usr/bin/env bash
# Prints the path of an Alertmanager binary for end-to-end tests (the
# ruler's notifications; test/testkit/testproc's StartAlertmanager).
#
# The binary is built from the Go module github.com/prometheus/alertmanager,
# pinned in the tools module tools/alertmanager, and cached at
#   ${PROMHBASE_CACHE:-$HOME/.cache/promhbase}/alertmanager-<module version>/alertmanager
# It is built only when that file is missing; the build takes a few minutes
# on 2 cores and needs only the Go module proxy.
#
# The module's zip has no web UI (ui/app/dist, built by npm in a release,
# is not in it, and ui/web.go embeds it), so the module is copied into the
# build directory with a placeholder page there and the tools module
# replaced onto that copy; the HTTP API works, the UI pages are blank.
#
# Only the path goes to stdout; build output goes to stderr.
set -euo pipefail

# Keep in step with tools/alertmanager/go.mod; the build checks that they agree.
readonly am_module=github.com/prometheus/alertmanager
readonly am_module_version=v0.34.0

SCRIPT=alertmanager.sh
# shellcheck source=tools/scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

pinned_tool alertmanager "$am_module_version"

got="$(cd "$tools_dir" && go list -m -f '{{.Version}}' "$am_module")"
[[ $got == "$am_module_version" ]] ||
	die "tools/alertmanager/go.mod has $am_module $got, tools/scripts/alertmanager.sh pins $am_module_version"
(cd "$tools_dir" && go mod download "$am_module") >&2
mod_dir="$(cd "$tools_dir" && go list -m -f '{{.Dir}}' "$am_module")"
version="$(<"$mod_dir/VERSION")"

# What a release build (promu) sets: the module zip carries no VCS data.
pkg=github.com/prometheus/common/version
ldflags="-X $pkg.Version=$version"
ldflags+=" -X $pkg.BuildUser=$(id -un)@$(uname -n)"
ldflags+=" -X $pkg.BuildDate=$(date -u +%Y%m%d-%H:%M:%S)"

# Build into a temporary directory next to the cache entry and rename, so a
# killed build never leaves a partial binary at $bin.
build_dir="$(mktemp -d "$cache_dir/.build.XXXXXX")"
trap 'chmod -R u+w "$build_dir" 2>/dev/null; rm -rf "$build_dir"' EXIT

cp -R "$mod_dir" "$build_dir/src"
chmod -R u+w "$build_dir/src"
mkdir -p "$build_dir/src/ui/app/dist"
printf '<!DOCTYPE html><title>Alertmanager</title><p>No web UI in this build (tools/scripts/alertmanager.sh).</p>\n' \
	>"$build_dir/src/ui/app/dist/index.html"
mkdir "$build_dir/tools"
cp "$tools_dir/go.mod" "$tools_dir/go.sum" "$build_dir/tools/"
(cd "$build_dir/tools" && go mod edit -replace "$am_module=$build_dir/src")

log "building Alertmanager $version ($am_module@$am_module_version) into $bin; takes a few minutes on 2 cores"
start=$SECONDS
(cd "$build_dir/tools" && GOFLAGS=-mod=mod go build -trimpath -tags netgo -ldflags "$ldflags" \
	-o "$build_dir/alertmanager" "$am_module/cmd/alertmanager") >&2

out="$("$build_dir/alertmanager" --version 2>&1)" || die "built binary does not run: $out"
[[ $out == "alertmanager, version $version "* ]] ||
	die "built binary reports an unexpected version: $out"
printf '%s\n' "$out" >&2

mv -f "$build_dir/alertmanager" "$bin"
log "built in $((SECONDS - start))s"
printf '%s\n' "$bin"
