#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 20s).
#
#   tools/scripts/fuzz.sh [package pattern...]    default ./...
#
# The targets are found, not listed: go list names each package's test
# files, the packages whose test files declare a func Fuzz... are asked
# for their targets with go test -list (which also honours build tags),
# and each target then runs on its own, since go test -fuzz takes one
# target at a time. FUZZ narrows the targets by a regular expression.
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}
FUZZ=${FUZZ:-.}
patterns=("$@")
[ ${#patterns[@]} -gt 0 ] || patterns=(./...)

# Packages with a test file declaring a fuzz target.
pkgs=()
while read -r pkg dir files; do
	[ -n "$files" ] || continue
	if (cd "$dir" && grep -l -E '^func Fuzz[A-Z0-9_]' $files >/dev/null 2>&1); then
		pkgs+=("$pkg")
	fi
done < <($GO list -f '{{.ImportPath}} {{.Dir}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}' "${patterns[@]}")

if [ ${#pkgs[@]} -eq 0 ]; then
	echo "fuzz: no fuzz targets in ${patterns[*]}" >&2
	exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
total=0
failed=()
flaked=()
for pkg in "${pkgs[@]}"; do
	targets=$($GO test -list '^Fuzz' "$pkg" | grep -E '^Fuzz' | grep -E -- "$FUZZ" || true)
	for target in $targets; do
		total=$((total + 1))
		echo "== $pkg $target ($FUZZTIME)"
		if $GO test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1 | tee "$log"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
			continue
		fi
		# Go's fuzz coordinator (before Go 1.27, go.dev/issue/75804) may
		# fail a target with a bare "context deadline exceeded" when
		# -fuzztime ends: no input failed, none was written.
		if grep -q 'context deadline exceeded' "$log" && ! grep -q -e 'Failing input written' -e '^panic:' "$log"; then
			flaked+=("$pkg $target")
		else
			failed+=("$pkg $target")
		fi
	done
done

echo "fuzz: $total targets, ${#failed[@]} failed, ${#flaked[@]} stopped by the fuzztime race (not failures)"
if [ ${#flaked[@]} -gt 0 ]; then
	printf '  race: %s\n' "${flaked[@]}" >&2
fi
if [ ${#failed[@]} -gt 0 ]; then
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
