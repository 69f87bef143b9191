# SPDX-License-Identifier: GPL-2.0
# What every VM-lab test script shares (sourced, through tests/kmod/lib.sh or
# tests/cdsmd/vm-lib.sh; runs inside tests/vm/run): strict mode, the build's programs, and how a
# test speaks, fails and waits. A script may define fail_details, which fail runs (stderr) to
# say more, e.g. the module's counters or cdsmd's log.
set -euo pipefail
: "${CDSM_KO:?run inside tests/vm/run}"
bin=${CDSM_BUILD_DIR:?}
q=$bin/tests/kmod/cdsm-query
wl=$bin/tests/workloads
test_name=$(basename "$0")

fail() {
	echo "$test_name: FAIL: $*" >&2
	if declare -F fail_details >/dev/null; then fail_details >&2 2>&1 || true; fi
	exit 1
}
note() { echo "$test_name: [${SECONDS}s] $*"; }

# Waits up to $2 seconds (default 20) for file $1 to be non-empty.
wait_file() {
	local deadline=$((SECONDS + ${2:-20}))
	until [[ -s $1 ]]; do
		((SECONDS < deadline)) || fail "timed out waiting for $1"
		sleep 0.1
	done
}

# Ends the run of the workload whose truth file is $1 early, as at its deadline: SIGUSR1 to each
# task it lists (tests/workloads/README.md); the processes still run their own checks. Tasks
# that already ended (the run reached its deadline first on a loaded host) are no failure: the
# caller waits for the workload's own status.
end_run() { kill -USR1 $(awk '{ print $1 }' "$1") 2>/dev/null || true; }

# Switches the workload whose truth file is $1 (run with --switch-on-signal) to its second
# pairing: SIGUSR2 to its tasks (not to cdsm-query exec's pid, which SIGUSR2 would end).
switch_phase() { kill -USR2 $(awk '{ print $1 }' "$1") || fail "cannot signal the tasks of $1"; }
