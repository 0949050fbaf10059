#!/usr/bin/env bash
# Prints the path of a Chromium for the web UI's browser tests (test/e2e/ui,
# test/testkit/testbrowser's Chromium): Debian's package chromium, driven
# headless over the DevTools protocol by chromedp.
#
# When no Chromium is installed it installs Debian's (apt-get install
# chromium, with a font for the screenshots; apt-get update first when the
# package lists do not know it): as root, or through sudo without a
# password. It needs only the machine's Debian mirror. A lock serialises
# concurrent callers, so that only one of them installs.
#
#   CHROMIUM  a Chromium (or Chrome) binary to use instead; not installed
#
# Only the path goes to stdout; apt's output goes to stderr.
set -euo pipefail

SCRIPT=chromium.sh
# shellcheck source=tools/scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# found prints the first Chromium on PATH or at Debian's path and exits 0.
found() {
	local c
	for c in chromium chromium-browser /usr/bin/chromium google-chrome; do
		if command -v "$c" >/dev/null 2>&1; then
			command -v "$c"
			exit 0
		fi
	done
}

if [[ -n ${CHROMIUM:-} ]]; then
	command -v "$CHROMIUM" 2>/dev/null || die "CHROMIUM=$CHROMIUM is not an executable"
	exit 0
fi
found

command -v apt-get >/dev/null 2>&1 || die "no Chromium, and no apt-get to install Debian's: install chromium, or set CHROMIUM"
sudo=()
if [[ $(id -u) -ne 0 ]]; then
	sudo -n true 2>/dev/null || die "no Chromium; installing Debian's needs root (or sudo without a password): apt-get install chromium"
	sudo=(sudo -n)
fi

lock_dir="${PROMHBASE_CACHE:-$HOME/.cache/promhbase}"
mkdir -p "$lock_dir"
if command -v flock >/dev/null 2>&1; then
	exec 9>"$lock_dir/.chromium.lock"
	flock 9
	found # another caller installed it meanwhile
fi

packages=(chromium fonts-dejavu-core)
export DEBIAN_FRONTEND=noninteractive
log "installing Debian's ${packages[*]} (apt-get)"
start=$SECONDS
if ! apt-cache show chromium >/dev/null 2>&1; then
	"${sudo[@]}" apt-get update >&2
fi
"${sudo[@]}" apt-get install -y --no-install-recommends "${packages[@]}" >&2 ||
	{ "${sudo[@]}" apt-get update >&2 && "${sudo[@]}" apt-get install -y --no-install-recommends "${packages[@]}" >&2; } ||
	die "apt-get install ${packages[*]} failed"
log "installed in $((SECONDS - start))s: $(chromium --version 2>&1 || true)"
found
die "apt-get installed chromium, but no chromium is on PATH"
