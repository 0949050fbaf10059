#!/usr/bin/env bash
# Runs golangci-lint, the version this repository pins, with the given
# arguments (make lint: run --build-tags faults ./...).
#
# The binary is cached per version in ${PROMHBASE_CACHE:-$HOME/.cache/promhbase}
# (as the other tools the tests run), so that a fresh clone does not build
# it again. When it is missing, or of another version, it is built from
# source through the Go module proxy with go install, so a clean machine
# needs only Go.
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
version=v2.15.0
bindir=${PROMHBASE_CACHE:-$HOME/.cache/promhbase}/golangci-lint-$version
bin=$bindir/golangci-lint

installed() {
	[ -x "$bin" ] && "$bin" version --short 2>/dev/null | grep -qx "${version#v}"
}

if ! installed; then
	echo "golangci-lint: installing $version into $bindir" >&2
	mkdir -p "$bindir"
	# Outside the module, so that its go.mod and GOFLAGS do not apply.
	(cd / && GOBIN=$bindir GOFLAGS= $GO install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$version")
	if ! installed; then
		echo "golangci-lint: $bin is not $version after go install" >&2
		exit 1
	fi
fi

exec "$bin" "$@"
