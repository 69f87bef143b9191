# SPDX-License-Identifier: GPL-2.0
# What the tests of cdsm.so (vm-spank, vm-spank-mpi) share (sourced; runs inside tests/vm/run):
# the module, cdsmd and the single-node cluster of lab.sh with the plugin in its plugstack.conf
# (default=map), the users alice (2001) and bob (2002), and checks of a step's application.
#
# spank_start [ARG...]          loads the module, starts cdsmd and the cluster (ARGs: more
#                               plugstack.conf arguments of the plugin), adds the users
# as USER CMD...                runs CMD as USER (a login's groups)
# app_of_job J                  job J's application in cdsmd's list, as root (empty if none)
# job_named NAME                the id of the job named NAME in squeue (empty if none)
# expand CPULIST                the CPU list expanded into the array cpu_set
# report_of DIR STEP APP [N]    checks the report of step STEP in DIR (see below)
# Sets $shared, a directory every user may write (the jobs' truth files, the reports).
. "$(dirname "${BASH_SOURCE[0]}")/../cdsmd/vm-lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lab.sh"
plugin=$bin/slurm/cdsm.so
ctl=$bin/daemon/cdsmctl/cdsmctl

# On failure, Slurm's view too: the jobs, slurmd's complaints and the plugin's lines, the jobs'
# processes.
eval "$(declare -f fail_details | sed '1s/fail_details/cdsmd_details/')"
fail_details() {
	cdsmd_details
	echo "--- squeue"
	squeue -o '%i %j %u %T %R' 2>&1 || true
	echo "--- slurmd log, the plugin's lines"
	grep -a "cdsm" "$slurm_dir/slurmd.log" | tail -30 || true
	echo "--- slurmd log (no debug lines)"
	grep -av "debug" "$slurm_dir/slurmd.log" | tail -n 30 || true
	echo "--- the jobs' threads (policy, priority, CPU, state, where they wait)"
	ps -eLo pid,tid,ppid,user,cls,rtprio,psr,stat,wchan:24,comm |
		awk 'NR == 1 || $4 ~ /alice|bob/ || $10 == "slurmstepd"' || true
}
# A command that fails outside a check (set -e) says where, instead of ending the test silently.
set -E
trap 'echo "$test_name: line $LINENO: $BASH_COMMAND: status $?" >&2' ERR

spank_start() {
	setup 'scan_interval_ms = 200'
	# The report is taken when the step has ended, from cdsmd, which keeps an ended application
	# for release_ended_after_ms (10 s by default; vm-lib.sh sets 1 s).
	sed -i 's/^release_ended_after_ms = .*/release_ended_after_ms = 10000/' "$config"
	[[ -r $plugin ]] || fail "no $plugin (is libslurm-dev installed? scripts/install-deps)"
	start_cdsmd
	echo "$slurm_dir/slurmd.log" >>/run/cdsm-vm-show
	slurm_start "required $plugin default=map socket=$CDSM_SOCKET cdsmctl=$ctl $*" ||
		fail "the Slurm cluster did not start"
	note "Slurm up: $(sinfo -h -o '%n %T %c CPUs')"
	slurm_user alice 2001
	slurm_user bob 2002
	shared=$(mktemp -d)
	chmod 0777 "$shared"
}

as() {
	local u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --init-groups "$@"
}

app_of_job() { req '{"cmd":"list"}' | jq -c ".apps[] | select(.cgroup // \"\" | test(\"/job_$1/step_\"))"; }

job_named() { squeue -h -n "$1" -o %i | head -n 1; }

# Builtins only: in the lab a program takes 0.3-1.5 s to start on an idle guest.
expand() {
	local range
	cpu_set=()
	for range in ${1//,/ }; do
		for ((c = ${range%-*}; c <= ${range#*-}; c++)); do cpu_set+=("$c"); done
	done
}

# Checks the report of step $2 in directory $1: each file there, owned by alice and 0600 (the
# plugin's default report_mode), none left half
# written, placements.json naming application $3 and (with $4) at least $4 migrations. The plugin
# writes the report once the step has ended, after srun returned (or the batch job left squeue);
# each file appears when complete. The heatmaps come last (cairo and fontconfig take seconds
# under emulation).
report_of() {
	local dir=$1 step=$2 app=$3 f file deadline=$((SECONDS + 60))
	local reports="matrix.csv matrix.json heatmap.png heatmap.svg tasks.json placements.json"
	for f in $reports; do
		until [[ -e $dir/cdsm-$step-$f ]] || ((SECONDS >= deadline)); do sleep 0.5; done
	done
	ls -la "$dir"
	for f in $reports; do
		file=$dir/cdsm-$step-$f
		[[ -s $file ]] || fail "no report file $file after 60 s: $(ls -la "$dir")"
		[[ $(stat -c %U:%a "$file") == alice:600 ]] ||
			fail "$file is not alice's, 0600: $(stat -c %U:%a "$file")"
	done
	[[ -z $(find "$dir" -name '*.part') ]] || fail "files left half written: $(ls -la "$dir")"
	[[ $(stat -c %U "$dir") == alice ]] || fail "the report directory $dir is not alice's"
	jq -e ".app_id == $app and .migrations >= ${4:-0}" "$dir/cdsm-$step-placements.json" \
		>/dev/null || fail "step $step's placements.json: $(cat "$dir/cdsm-$step-placements.json")"
}
