# SPDX-License-Identifier: GPL-2.0
# Helpers for the module's VM tests (sourced; runs inside tests/vm/run).
set -euo pipefail
: "${CDSM_KO:?run inside tests/vm/run}"
bin=${CDSM_BUILD_DIR:?}
q=$bin/tests/kmod/cdsm-query
wl=$bin/tests/workloads
test_name=$(basename "$0")

fail() {
	echo "$test_name: FAIL: $*" >&2
	"$q" counters >&2 2>/dev/null || true
	exit 1
}
note() { echo "$test_name: $*"; }

# Waits up to $2 seconds (default 20) for file $1 to be non-empty.
wait_file() {
	local deadline=$((SECONDS + ${2:-20}))
	until [[ -s $1 ]]; do
		((SECONDS < deadline)) || fail "timed out waiting for $1"
		sleep 0.1
	done
}

# Value of counter $1.
counter() { "$q" counters | awk -v k="$1" '$1 == k { print $2 }'; }

# Field $2 of application $1 in "cdsm-query list".
app_field() {
	"$q" list | awk -v id="$1" -v k="$2" '$1 == "app" && $2 == id {
		for (i = 3; i < NF; i += 2) if ($i == k) print $(i + 1) }'
}

# Runs "$@" tracked from its start, in the background; sets $app, $pid (to wait for) and
# $child (the program's own pid).
run_tracked() {
	local f
	f=$(mktemp)
	rm -f "$f"
	"$q" exec --app-file "$f" -- "$@" &
	pid=$!
	wait_file "$f"
	app=$(cat "$f")
	child=$(app_field "$app" root)
}

# Re-arming needs kernel.numa_balancing bit 0 (see docs/kmod.md).
sysctl -qw kernel.numa_balancing=1
