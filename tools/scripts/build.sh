#!/usr/bin/env bash
# Builds a stamped promhbase binary: the version, revision, branch, build
# user and build date go into Prometheus's version package
# (github.com/prometheus/common/version) as promu stamps Prometheus, and
# show in `promhbase --version`, promhbase_build_info,
# /api/v1/status/buildinfo and the web UI's status page.
#
#   tools/scripts/build.sh [OUTPUT] [go build flags...]   (OUTPUT: bin/promhbase)
#
# The flags are go build's (the image adds -trimpath); the stamps change
# only the link, so a build after `go build` or `go test` reuses their
# compiled packages.
#
# Each stamp comes from the environment when set, else from the checkout:
#   VERSION     the version (unset: cmd/promhbase's defaultVersion)
#   REVISION    git rev-parse HEAD, "-modified" added for a changed tree
#   BRANCH      git rev-parse --abbrev-ref HEAD
#   BUILD_USER  $USER@hostname
#   BUILD_DATE  now, or SOURCE_DATE_EPOCH's time for a reproducible build,
#               in promu's form (20060102-15:04:05, UTC)
# Outside a git checkout (a container build without .git) an unset
# REVISION or BRANCH is left unstamped: go build's own record, or
# "unknown", shows instead.
# GO (default go), CGO_ENABLED, GOOS and GOARCH are go build's as usual.
set -euo pipefail
SCRIPT=build.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

out=${1:-bin/promhbase}
shift || true

in_git() { git rev-parse --is-inside-work-tree >/dev/null 2>&1; }

revision=${REVISION:-}
branch=${BRANCH:-}
if in_git; then
	if [[ -z $revision ]]; then
		revision=$(git rev-parse HEAD)
		# Untracked files the build ignores do not count, as in go build's vcs.modified.
		git diff --quiet HEAD -- 2>/dev/null || revision+=-modified
	fi
	[[ -n $branch ]] || branch=$(git rev-parse --abbrev-ref HEAD)
fi
user=${BUILD_USER:-${USER:-$(id -un)}@$(hostname)}
if [[ -n ${BUILD_DATE:-} ]]; then
	date=$BUILD_DATE
elif [[ -n ${SOURCE_DATE_EPOCH:-} ]]; then
	date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d-%H:%M:%S)
else
	date=$(date -u +%Y%m%d-%H:%M:%S)
fi

# Each -X quoted for go build's own splitting of -ldflags: a value may hold
# spaces (not single quotes).
pkg=github.com/prometheus/common/version
ldflags=""
stamp() { [[ -z $2 ]] || ldflags+="-X '$pkg.$1=$2' "; }
stamp BuildUser "$user"
stamp BuildDate "$date"
stamp Version "${VERSION:-}"
stamp Revision "$revision"
stamp Branch "$branch"

log "building $out (revision ${revision:-unstamped}, branch ${branch:-unstamped}, date $date)"
"${GO:-go}" build -ldflags "$ldflags${EXTRA_LDFLAGS:-}" "$@" -o "$out" ./cmd/promhbase
