#!/usr/bin/env bash
# Prints the path of a vmctl binary (VictoriaMetrics's migration tool), for
# the test that migrates a Prometheus snapshot into promhbase with
# `vmctl prometheus` (cmd/promhbase's TestVmctlImport).
#
# Built from github.com/VictoriaMetrics/VictoriaMetrics/app/vmctl at
# $VM_VERSION (v1.151.0, as tools/scripts/victoriametrics.sh) in a scratch
# module: the github.com/prometheus/client_golang/exp version that module
# pins is not served by the Go module proxy, so a replace points it at one
# that is. Cached at
#   ${PROMHBASE_CACHE:-$HOME/.cache/promhbase}/vmctl-<version>/vmctl
# and built only when that file is missing (a few minutes on 2 cores).
#
# Only the path goes to stdout; build output goes to stderr.
set -euo pipefail

SCRIPT=vmctl.sh
# shellcheck source=tools/scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VM_VERSION=${VM_VERSION:-v1.151.0}
readonly exp_version=v0.0.0-20260325093428-d8591d0db856
cache_dir="${PROMHBASE_CACHE:-$HOME/.cache/promhbase}/vmctl-$VM_VERSION"
bin="$cache_dir/vmctl"

cached_bin "$bin"

build_dir="$(mktemp -d "$cache_dir/.build.XXXXXX")"
trap 'rm -rf "$build_dir"' EXIT
log "building vmctl $VM_VERSION into $bin; takes a few minutes on 2 cores"
start=$SECONDS
cat >"$build_dir/go.mod" <<MOD
module vmctlbuild

go 1.26

require github.com/VictoriaMetrics/VictoriaMetrics $VM_VERSION

replace github.com/prometheus/client_golang/exp => github.com/prometheus/client_golang/exp $exp_version
MOD
cat >"$build_dir/tools.go" <<'GO'
//go:build tools

package tools

import _ "github.com/VictoriaMetrics/VictoriaMetrics/app/vmctl"
GO
(cd "$build_dir" && GOWORK=off GOFLAGS=-mod=mod go mod tidy && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 \
	go build -o "$build_dir/vmctl" github.com/VictoriaMetrics/VictoriaMetrics/app/vmctl) >&2
"$build_dir/vmctl" --help >/dev/null 2>&1 || die "built binary does not run"
mv -f "$build_dir/vmctl" "$bin"
log "built in $((SECONDS - start))s"
printf '%s\n' "$bin"
