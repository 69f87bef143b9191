# SPDX-License-Identifier: GPL-2.0
# Helpers for the real applications mapped by cdsmd (tests/apps; sourced, runs inside
# tests/vm/run): cdsm.ko and cdsmd as a user runs them, the aged matrix in snapshots while the
# application runs, cdsmd's migrations of each task, and the whole-run matrix by rank.
. "$(dirname "${BASH_SOURCE[0]}")/../cdsmd/vm-lib.sh"
apps=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ctl=$bin/daemon/cdsmctl/cdsmctl

# Loads cdsm.ko and starts cdsmd with its defaults (Scotch, min_gain 5 %, the matrix aged every
# second and after each migration), except: log level debug, re-arming at APPS_REARM_BP (default
# 10 %/s: the lab's clock is slow, but at 100 %/s, as apps-lammps, the TLB shootdowns of re-arming
# made GROMACS's threads 7-10 times slower and HPCC's b_eff section 4.6 times), and ended
# applications kept for 10 minutes so that the whole run can be read after the end.
apps_start() {
	sysctl -qw kernel.numa_balancing=1
	insmod "$CDSM_KO" rearm_rate_bp="${APPS_REARM_BP:-1000}"
	cat >"$config" <<-EOT
		[daemon]
		state_file = "/run/cdsm/state.json"
		log_level = "debug"
		[mapping]
		release_ended_after_ms = 600000
	EOT
	start_cdsmd
}

# Stops cdsmd and unloads the module; cdsmd must have logged no error.
apps_stop() {
	kill -TERM "$daemon"
	wait "$daemon" || fail "cdsmd did not exit cleanly on SIGTERM"
	rmmod cdsm
	if grep -E " (error|critical): " "$log"; then fail "cdsmd logged errors"; fi
}

# Starts, for the application $app, snapshots of the aged matrix every 2 s to $1.K while the
# file $2 holds "on", and a collector of cdsmd's migration history to $1.history until the
# application ends (see tests/apps/history); both at real-time priority (in the busy guest a starved observer looks
# seconds late) and in one process each (a program start takes seconds). Sets $snapper and
# $historian: wait for them.
observe_app() {
	local prefix=$1 gate=$2
	[[ -e $gate ]] || echo wait >"$gate"
	chrt -f 10 "$q" snapshots "$app" --every 2 --gate "$gate" --prefix "$prefix" >/dev/null &
	snapper=$!
	chrt -f 10 python3 "$apps/history" --app "$app" >"$prefix.history" &
	historian=$!
}

# Waits for the observers of observe_app once the gate says "off" and the application ended.
observed() {
	wait "$snapper" || fail "cdsm-query snapshots failed"
	wait "$historian" || fail "tests/apps/history failed"
}

# cdsmd's verdict so far in history file $1 (observe_app's PREFIX.history): the most tasks placed
# in a sample that counts ({"sample": {"count": N, ...}}: a placement kept by cdsmd's next pass).
verdict_placed() {
	awk -F'"count": ' '/^\{"sample": / { split($2, f, ",")
		if (f[1] > m) m = f[1] } END { print m + 0 }' "$1"
}

# Sets the gate file $1 to "on" while file $2 has a line matching $3 and none matching $4
# (extended regular expressions), then "off"; also "off" when process $pid ends. Shell
# builtins only (no fork per look). Runs in the background; sets $gater.
gate_on_lines() {
	local gate=$1 file=$2 from=$3 to=$4
	(
		until [[ -e $file ]] && grep -qE "$from" "$file"; do
			kill -0 "$pid" 2>/dev/null || { echo off >"$gate" && exit 0; }
			read -rt 0.5 <> <(:) || true
		done
		echo on >"$gate"
		until grep -qE "$to" "$file"; do
			kill -0 "$pid" 2>/dev/null || break
			read -rt 0.5 <> <(:) || true
		done
		echo off >"$gate"
	) &
	gater=$!
}

# The threads of every process named $1 (one line each: pid tid rank cpu_ticks; rank "-" when
# its environment names none) to file $2, rewritten every 3 s while $pid runs: each thread seen,
# with the CPU time (utime + stime, clock ticks) it had used when last seen. Shell builtins but
# for one look at each process's environment (it runs at real-time priority: a fork per look
# would take CPU time from the application). Background; sets $sampler.
sample_threads() {
	local comm=$1 out=$2
	(
		set +e
		declare -A rank_of=() line_of=()
		local d p t c stat f
		while kill -0 "$pid" 2>/dev/null; do
			for d in /proc/[0-9]*; do
				{ read -r c <"$d/comm"; } 2>/dev/null && [[ $c == "$comm" ]] || continue
				p=${d#/proc/}
				[[ -n ${rank_of[$p]:-} ]] || rank_of[$p]=$({ tr '\0' '\n' <"$d/environ" |
					sed -n 's/^OMPI_COMM_WORLD_RANK=//p'; } 2>/dev/null)
				: "${rank_of[$p]:=-}"
				for t in "$d"/task/*; do
					{ read -r stat <"$t/stat"; } 2>/dev/null || continue
					read -r -a f <<<"${stat##*) }"
					line_of[${t##*/}]="$p ${t##*/} ${rank_of[$p]} $((f[11] + f[12]))"
				done
			done
			((${#line_of[@]})) && printf '%s\n' "${line_of[@]}" >"$out.new" && mv "$out.new" "$out"
			read -rt 3 <> <(:)
		done
		exit 0
	) &
	sampler=$!
}

# The kernel's NUMA-balancing counters (hinting faults, PTEs made PROT_NONE, pages migrated) and
# the module's (tracked faults, events, re-armed pages, ...) to file $1; when $1 exists already,
# first prints what they grew by since.
numa_counters() {
	{
		awk '$1 ~ /^numa_(hint_faults|pte_updates|pages_migrated)$/ { print $1, $2 }' /proc/vmstat
		"$q" counters | awk '$1 ~ /^(tracked_faults|comm_events|rearm_armed|dropped)$/ {
			print "cdsm_" $1, $2 }'
	} >"$1.now"
	if [[ -e $1 ]]; then
		awk 'NR == FNR { was[$1] = $2; next } { printf "%s +%d  ", $1, $2 - was[$1] }
			END { print "" }' "$1" "$1.now"
	fi
	mv "$1.now" "$1"
}

# cdsmctl show APP --by rank in JSON for view $1 (whole or aged) to file $2.
show_by_rank() {
	"$ctl" show "$app" --by rank --view "$1" --format json >"$2" ||
		fail "cdsmctl show $app --by rank --view $1 failed"
}

# cdsmd's migrations of the application: per task from the history collected by observe_app
# ($1.history) and the "migrated" lines of cdsmd's log. Then the checks of issue 12 ("places
# them well and calmly", tests/apps/history): no task moved more than APPS_MAX_MOVES (default 1)
# times from launch to end; in the placement judged (tests/apps/history: the last sample with
# the most tasks placed that cdsmd's next pass kept), no two tasks on one CPU, each inside its
# affinity, and a cost on that moment's aged matrix within APPS_COST_WITHIN
# (default 0.02) of Scotch's offline mapping of the same matrix on this machine, or, for a
# placement cdsmd kept rather than just chose, within APPS_KEEP_MARGIN (default 0.05, cdsmd's
# mapping.min_gain: as the matrix drifts, it does not migrate for less; a CI run saw GROMACS's
# 4 threads kept at 1122 where Scotch found 1080 on the final matrix, +3.9 %; or the margin
# cdsmd applied, when larger: twice min_gain within a minute of a migration) or within
# APPS_KEEP_SIGMA (default 3, its mapping.min_gain_sigma) standard deviations of the
# difference's counting noise (cdsmd does not migrate for less either: LAMMPS's 4 ranks on 6.1
# were kept at 179 where Scotch found 167, +7.2 %, on an aged matrix of 79 events). After $1:
# "--phases FILE" counts the moves per phase (FILE: lines "EPOCH_SECONDS NAME", when each began);
# "--judge-phase NAME" (with --phases) judges a placement sampled in phase NAME;
# "--max-moves N" allows N moves per task (per phase) instead of APPS_MAX_MOVES;
# "--report-only WHY": the checks are printed but do not fail the test.
report_migrations() {
	local prefix=$1 phases=() why= max=${APPS_MAX_MOVES:-1}
	shift
	while (($#)); do
		case $1 in
		--phases) phases+=(--phases "$2") ;;
		--judge-phase) phases+=(--judge-phase "$2") ;;
		--max-moves) max=$2 ;;
		--report-only) why=$2 ;;
		*) fail "report_migrations: unknown option $1" ;;
		esac
		shift 2
	done
	note "cdsmd's log: $(grep -c "application $app (.*): migrated" "$log" || true) migrating passes:"
	grep "application $app (.*): migrated" "$log" | cut -c12-200 || true
	note "cdsmd's migrations of application $app, per task (history of cdsmd's show):"
	[[ -e $work/machine.xml ]] || lstopo-no-graphics --of xml "$work/machine.xml" ||
		fail "lstopo-no-graphics could not describe the machine (Debian package hwloc)"
	CDSMCTL=$ctl python3 "$apps/history" --summarize "$prefix.history" \
		--max-moves "$max" --cost-within "${APPS_COST_WITHIN:-0.02}" \
		--keep-margin "${APPS_KEEP_MARGIN:-0.05}" --keep-sigma "${APPS_KEEP_SIGMA:-3}" \
		"${phases[@]}" \
		--topology "$work/machine.xml" && return 0
	[[ -n $why ]] || fail "cdsmd did not place application $app well and calmly (see above)"
	note "(reported, not checked: $why)"
}
