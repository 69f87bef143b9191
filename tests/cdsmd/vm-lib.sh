# SPDX-License-Identifier: GPL-2.0
# Helpers for cdsmd's VM tests (sourced; runs inside tests/vm/run).
. "$(dirname "${BASH_SOURCE[0]}")/../vm/lib.sh"
cdsmd=${CDSMD_BINARY:-$bin/daemon/cdsmd/cdsmd}
tool=$bin/tests/cdsmd/cdsmd-testtool
work=$(mktemp -d)
log=$work/cdsmd.log
config=$work/cdsmd.toml
export CDSM_SOCKET=/run/cdsm/cdsmd.sock
# Every test starts from no cdsmd state, as in a guest of its own (tests/vm/each runs several in
# one): a state file left by an earlier test would be restored by this one's cdsmd.
rm -rf /run/cdsm
# Shown by the guest when a test hangs (tests/vm/hung).
echo "$log" >>/run/cdsm-vm-show

fail_details() {
	echo "--- cdsmd log"
	grep -v "debug: event" "$log" | cut -c12-300 | tail -"${CDSM_LOG_LINES:-60}"
}

# The test's own commands run at real-time priority, the workloads (run_tracked) and cdsmd's
# children at normal priority: under TCG all vCPUs share one host core, and a shell competing
# with busy workloads starts programs tens of seconds late.
chrt -f -p 10 $$ >/dev/null

# Loads the module (re-arming fast enough for the VM's slow clock: 50 %/s, so that within a
# second or two the pairs' own events outweigh the noise of their start, when one thread first
# touches every page; on 6.1 at 20 %/s the first mapping was once made on that noise) and writes
# the test configuration; extra lines for [mapping] in $1.
setup() {
	sysctl -qw kernel.numa_balancing=1
	insmod "$CDSM_KO" rearm_rate_bp=5000
	cat >"$config" <<-EOT
		[daemon]
		state_file = "/run/cdsm/state.json"
		log_level = "debug"
		[mapping]
		release_ended_after_ms = ${CDSM_RELEASE_MS:-1000}
		${1:-}
	EOT
}

# Starts cdsmd in the foreground at real-time priority (under TCG all vCPUs share one host core
# and the workloads keep every vCPU busy; a starved daemon would look seconds late) and waits
# for its socket. Sets $daemon. Not a timed check: with busy workloads every program start
# (libraries read over 9p) can take seconds, so the limit is generous and the time is shown.
start_cdsmd() {
	local t0=$SECONDS
	chrt -f 20 "$cdsmd" --foreground --config "$config" "$@" 2>>"$log" &
	daemon=$!
	local deadline=$((SECONDS + 90))
	until chrt -f 20 "$tool" request '{"cmd":"ping"}' >/dev/null 2>&1; do
		kill -0 "$daemon" 2>/dev/null || fail "cdsmd died at start"
		((SECONDS < deadline)) || fail "cdsmd did not answer on its socket in 90 s"
		sleep 0.1
	done
	note "cdsmd answers (after $((SECONDS - t0)) s)"
}

# Starts "cdsmd-testtool placement --truth $1 --within $2 [more]" in the background before the
# workload (it waits for the truth file), at real-time priority; sets $checker.
check_placement() {
	local truth=$1 within=$2
	shift 2
	chrt -f 30 "$tool" placement --truth "$truth" --within "$within" "$@" &
	checker=$!
}

# One control request as root; prints the response.
req() { "$tool" request "$1"; }
# A field of a JSON document on stdin, by jq filter.
field() { jq -r "$1"; }

# Runs "$@" tracked from its first instruction in the background; sets $app and $pid.
run_tracked() {
	local f
	f=$(mktemp -u)
	chrt -o 0 "$q" exec --app-file "$f" -- "$@" &
	pid=$!
	wait_file "$f"
	app=$(cat "$f")
}


# The OS CPU list of task $1's affinity.
affinity() { awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$1/status"; }

# Checks the log has a line matching $1.
logged() { grep -qE "$1" "$log" || fail "the log has no line matching '$1'"; }

# Checks the kernel kept nothing: the module's list is empty within $1 seconds.
module_empty_within() {
	local deadline=$((SECONDS + $1))
	until [[ -z $("$q" list) ]]; do
		((SECONDS < deadline)) || fail "the module still lists: $("$q" list)"
		sleep 0.2
	done
}

# Stops cdsmd and checks it ended cleanly and logged no errors (but those matching $1).
finish() {
	kill -TERM "$daemon"
	wait "$daemon" || fail "cdsmd did not exit cleanly on SIGTERM"
	logged "signal Terminated: stopping"
	[[ ! -e $CDSM_SOCKET ]] || fail "the socket was left behind"
	rmmod cdsm
	grep -E " (info|warning|error|critical): " "$log" || true
	if grep -E " (error|critical): " "$log" | grep -qvE "${1:-^$}"; then
		fail "cdsmd logged errors"
	fi
	note "ok"
}
