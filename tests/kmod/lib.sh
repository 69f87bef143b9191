# SPDX-License-Identifier: GPL-2.0
# Helpers for the module's VM tests (sourced; runs inside tests/vm/run).
. "$(dirname "${BASH_SOURCE[0]}")/../vm/lib.sh"
# The test itself runs at real-time priority: its workloads keep every vCPU busy, and under
# TCG all vCPUs share one host core, so a starved script would act and look seconds later than
# it says. Workloads run at normal priority (run_tracked, or "chrt -o 0 CMD").
if [[ $(chrt -p $$) != *SCHED_FIFO* ]]; then
	exec chrt -f 10 "$0" "$@"
fi
fail_details() { "$q" counters 2>/dev/null; }

# Starts "cdsm-query check @FILE TRUTH ..." in the background for the application that the
# next run_tracked creates; sets $checker (wait for it: the check's status). The check runs at
# real-time priority and starts before the workload: the workloads keep every vCPU busy, and
# a starved observer (or a shell that must fork one) would look at the matrix seconds later
# than it says (under TCG all vCPUs share one host core). It waits for the truth file and
# counts seconds from its writing.
next_app_file=
check_next() {
	next_app_file=$(mktemp -u)
	chrt -f 10 "$q" check "@$next_app_file" "$@" &
	checker=$!
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
	local f=${next_app_file:-$(mktemp -u)}
	next_app_file=
	"$q" exec --app-file "$f" -- "$@" &
	pid=$!
	wait_file "$f"
	app=$(cat "$f")
	child=$(app_field "$app" root)
}

# Re-arming needs kernel.numa_balancing bit 0 (see docs/kmod.md).
sysctl -qw kernel.numa_balancing=1
