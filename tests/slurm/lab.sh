# SPDX-License-Identifier: GPL-2.0
# A single-node Slurm cluster inside the VM lab (sourced by a test running in tests/vm/run):
# munged, slurmctld and slurmd from Debian's packages, cgroup v2 with proctrack/cgroup and
# task/cgroup,task/affinity, so that jobs run as on a compute node. The host's root is read-only
# in the guest: configuration, state, spool and logs live under $slurm_dir (a tmpfs).
#
# slurm_start [PLUGSTACK_LINE...]   starts the three daemons and waits until the node is idle;
#                                   each argument is a line of plugstack.conf
# slurm_stop                        stops them and removes what slurm_start and slurm_user
#                                   made (another cluster can start in the same guest)
# slurm_user NAME UID               adds a user (in the guest only) for jobs of two users
# Sets SLURM_CONF for the test's own srun/sbatch/squeue.
slurm_dir=/run/cdsm-slurm
export SLURM_CONF=$slurm_dir/slurm.conf

slurm_user() {
	# /etc is the host's, read-only: the guest gets its own copies of passwd and group.
	local name=$1 uid=$2 f
	for f in passwd group; do
		if [[ ! -e $slurm_dir/etc/$f ]]; then
			mkdir -p "$slurm_dir/etc"
			cp "/etc/$f" "$slurm_dir/etc/$f"
			mount --bind "$slurm_dir/etc/$f" "/etc/$f"
		fi
	done
	echo "$name:x:$uid:$uid:cdsm lab user:/tmp:/bin/bash" >>"$slurm_dir/etc/passwd"
	echo "$name:x:$uid:" >>"$slurm_dir/etc/group"
}

# The guest has only the loopback interface: glibc's getaddrinfo() with AI_ADDRCONFIG (as Slurm
# asks) finds no IPv4 address then, and Open MPI's mpirun in a Slurm allocation leaves loopback
# out of its out-of-band channel ("No network interfaces were found for out-of-band
# communications"). The node gets an address on an interface of its own, a dummy one as a
# compute node has its NIC (on lo if the dummy module cannot be loaded).
slurm_addr=10.77.0.1

slurm_start() {
	if [[ -e $slurm_dir || -n $(slurm_procs) ]]; then
		echo "slurm_start: a cluster before this one was not stopped (slurm_stop):" \
			"$(cd "$slurm_dir" 2>/dev/null && echo * '')$(slurm_procs | tr '\n' ';')" >&2
		return 1
	fi
	if modprobe dummy 2>/dev/null && ip link add cdsm0 type dummy 2>/dev/null; then
		ip addr add "$slurm_addr/24" dev cdsm0
		ip link set cdsm0 up
	else
		ip addr add "$slurm_addr/32" dev lo 2>/dev/null || true
	fi
	slurm_base
	local cpus sockets cores threads mem
	cpus=$(nproc --all)
	sockets=$(lscpu -p=SOCKET | grep -v '^#' | sort -u | wc -l)
	cores=$(($(lscpu -p=CORE | grep -v '^#' | sort -u | wc -l) / sockets))
	threads=$((cpus / sockets / cores))
	mem=$(($(awk '$1 == "MemTotal:" { print int($2 / 1024) }' /proc/meminfo) - 256))
	{
		slurm_conf_common
		cat <<-EOT
			SlurmdSpoolDir=$slurm_dir/spool
			SlurmdPidFile=$slurm_dir/slurmd.pid
			SlurmdLogFile=$slurm_dir/slurmd.log
			ProctrackType=proctrack/cgroup
			TaskPlugin=task/cgroup,task/affinity
			NodeName=$(hostname) NodeAddr=$slurm_addr CPUs=$cpus Sockets=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads RealMemory=$mem State=UNKNOWN
			PartitionName=lab Nodes=$(hostname) Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
		EOT
	} >"$slurm_dir/slurm.conf"
	printf '%s\n' "$@" >"$slurm_dir/plugstack.conf"
	chrt -o 0 slurmctld -i
	chrt -o 0 slurmd
	slurm_wait_idle 1
}

# What a single-node and the multi-node cluster (cluster.sh) share: cgroup v2 as on a node booted
# with systemd (the controllers slurmd needs enabled down to system.slice, where it makes its
# slurmstepd.scope itself: IgnoreSystemd=yes), the directories, cgroup.conf and munged.
slurm_base() {
	echo "+cpuset +cpu +memory +pids" >/sys/fs/cgroup/cgroup.subtree_control
	mkdir -p /sys/fs/cgroup/system.slice
	echo "+cpuset +cpu +memory +pids" >/sys/fs/cgroup/system.slice/cgroup.subtree_control
	mkdir -p "$slurm_dir"/{state,spool,munge}
	chown munge:munge "$slurm_dir/munge"
	chmod 0700 "$slurm_dir/munge"
	mkdir -p /run/munge && chown munge:munge /run/munge && chmod 0755 /run/munge
	cat >"$slurm_dir/cgroup.conf" <<-EOT
		CgroupPlugin=cgroup/v2
		IgnoreSystemd=yes
		ConstrainCores=yes
	EOT
	# The daemons run with the normal policy, as on a node, whatever the caller's: slurmstepd and
	# the job's tasks inherit slurmd's, and a VM-lab test runs at SCHED_FIFO 10 (vm-lib.sh), so
	# the jobs ran at SCHED_FIFO 10 too, where busy tasks are never preempted by their equals (no
	# time slice). Open MPI's ranks poll: srun --mpi=pmix's 4 ranks did not start in 300 s
	# (their PMIx server is a thread of slurmstepd, on the job's CPUs), and with 8 ranks on the 8
	# CPUs the guest stalled whole, the test's shell with it (vm-spank-mpi before this).
	chrt -o 0 setpriv --reuid=munge --regid=munge --clear-groups munged --force \
		--log-file="$slurm_dir/munge/munged.log" --seed-file="$slurm_dir/munge/seed" \
		--pid-file=/run/munge/munged.pid
}

# The lines of slurm.conf both clusters share (the controller on this guest at $slurm_addr).
slurm_conf_common() {
	cat <<-EOT
		ClusterName=cdsmlab
		SlurmctldHost=$(hostname)($slurm_addr)
		SlurmUser=root
		SlurmdUser=root
		AuthType=auth/munge
		CryptoType=crypto/munge
		StateSaveLocation=$slurm_dir/state
		SlurmctldPidFile=$slurm_dir/slurmctld.pid
		SlurmctldLogFile=$slurm_dir/slurmctld.log
		SlurmdDebug=debug
		SelectType=select/cons_tres
		SelectTypeParameters=CR_Core
		SchedulerType=sched/builtin
		ReturnToService=2
		MpiDefault=none
		JobAcctGatherType=jobacct_gather/none
		PlugStackConfig=$slurm_dir/plugstack.conf
	EOT
}

# Waits up to 120 s until $1 nodes are idle; on failure shows the daemons' logs.
slurm_wait_idle() {
	local deadline=$((SECONDS + 120))
	until (($(sinfo -h -N -o %T 2>/dev/null | grep -cx idle) >= $1)); do
		((SECONDS < deadline)) || {
			sinfo -N >&2 || true
			tail -n 30 "$slurm_dir"/*.log "$slurm_dir/munge/munged.log" >&2
			return 1
		}
		sleep 0.5
	done
}

# The live processes of Slurm and munged (a zombie, reaped soon by the guest's init, is none).
slurm_procs() {
	ps -eo pid=,stat=,comm= | awk '$2 !~ /^Z/ && $3 ~ /^(slurmctld|slurmd|slurmstepd|munged)$/'
}

# Leaves the guest as slurm_start found it, so that the next test in the same guest
# (tests/vm/each) starts a cluster of its own from nothing: waits up to 120 s for the jobs to
# leave squeue (a cancelled job's steps end, their reports written), stops the daemons and waits
# up to 120 s for them and any slurmstepd to exit (what is left then is killed, with its jobs'
# processes, and named), unbinds the guest's passwd and group (slurm_user), removes the node's
# address, the jobs' empty cgroups and $slurm_dir (no job ids, saved state or logs carried over).
slurm_stop() {
	local deadline=$((SECONDS + 120)) f
	while [[ -n $(squeue -h -o %i 2>/dev/null) ]] && ((SECONDS < deadline)); do sleep 0.5; done
	scontrol shutdown 2>/dev/null || true
	pkill -x slurmd || true
	deadline=$((SECONDS + 120))
	while slurm_procs | grep -qv ' munged$' && ((SECONDS < deadline)); do sleep 0.2; done
	munged --stop 2>/dev/null || pkill -x munged || true
	while [[ -n $(slurm_procs) ]] && ((SECONDS < deadline)); do sleep 0.2; done
	if [[ -n $(slurm_procs) ]]; then
		echo "slurm_stop: still running after 120 s, killed: $(slurm_procs | tr '\n' ';')" >&2
		for f in /sys/fs/cgroup/system.slice/*slurmstepd.scope/cgroup.kill; do
			[[ -e $f ]] && echo 1 >"$f"
		done
		pkill -KILL -x 'slurmctld|slurmd|slurmstepd|munged' || true
		while [[ -n $(slurm_procs) ]]; do sleep 0.2; done
	fi
	for f in passwd group; do
		[[ ! -e $slurm_dir/etc/$f ]] || umount "/etc/$f"
	done
	ip link del cdsm0 2>/dev/null || ip addr del "$slurm_addr/32" dev lo 2>/dev/null || true
	find /sys/fs/cgroup/system.slice -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
	rm -rf "$slurm_dir"
}
