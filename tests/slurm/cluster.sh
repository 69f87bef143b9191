# SPDX-License-Identifier: GPL-2.0
# A multi-node Slurm cluster inside one VM-lab guest (sourced by a test running in tests/vm/run):
# slurmctld and munged on the guest itself (10.77.0.1 on the bridge cdsmbr0), and each node
# n1..nN a slurmd in namespaces of its own, as a compute node is a machine of its own:
#
# - network: a network namespace with its own interface eth0 (one end of a veth pair whose other
#   end is a port of cdsmbr0) and address 10.77.0.(10+i); traffic between nodes crosses the
#   bridge over TCP, as on a cluster's network, and a node's ranks see only their node's address;
# - name: a UTS namespace with the hostname n<i> (slurmd finds its NodeName by it; Open MPI and
#   the plugin's report name the node by it);
# - files: a mount namespace with its own /tmp, /var/tmp and /dev/shm (node-local: Open MPI's
#   session directory and its shared-memory segments, PMIx's rendezvous files); /run, where
#   munged's socket and $slurm_dir are, stays shared, as a cluster shares its file systems. Each
#   slurmd has its own spool, pid and log file ($slurm_dir/{spool,slurmd}-n<i>: Slurm's %n);
# - CPUs: node i owns the guest's CPUs (i-1)*C .. i*C-1 (C = the guest's CPUs / nodes; with the
#   lab's --threads 1, node i is socket i-1 and NUMA node i-1). Each slurmd sees the whole guest
#   (Slurm reads the machine with hwloc's whole-system flag, and its abstract-to-machine CPU map
#   keeps only machine ids below the CPU count, so a node cannot be given CPUs 4-7 as a machine
#   of its own through HWLOC_XMLFILE), and the other nodes' CPUs are reserved on it with Slurm's
#   CpuSpecList (CPUs for the system, never a job's): the node's jobs get only its own CPUs,
#   and slurmd itself is bound to the reserved ones;
# - cgroups: one cgroup v2 tree for all, as one kernel has only one. Debian's Slurm is built with
#   --enable-multiple-slurmd (several slurmd on one host; the cgroup/v2 plugin then makes one
#   scope per node, system.slice/n<i>_slurmstepd.scope, not one slurmstepd.scope they would
#   share), so proctrack/cgroup and task/cgroup keep each node's jobs in that node's scope,
#   with the job's cpuset among the node's CPUs.
#
# Why one guest and not several: under TCG all the vCPUs of a guest run on one host thread each
# (MTTCG) or one in all, a guest's boot costs 7-10 s and its memory, and guests would need a
# network between them on the host (a bridge or a socket netdev); namespaces give the nodes what
# Slurm and Open MPI look at (hostname, address, CPUs, node-local files) in one boot.
#
# cluster_start N [PLUGSTACK_LINE...]  starts munged, slurmctld and N slurmd, waits until all
#                                      nodes are idle (call slurm_user before: the nodes' mount
#                                      namespaces copy the guest's /etc at their start)
# cluster_stop                         stops them, removes the namespaces
# on_node NODE CMD...                  runs CMD in NODE's namespaces
# node_cpus NODE                       NODE's CPU list (e.g. 4-7)
# Sets SLURM_CONF (lab.sh) and $cluster_shared, a directory every user may write and every node
# sees (the jobs' reports).
. "$(dirname "${BASH_SOURCE[0]}")/lab.sh"
cluster_nodes=()
cluster_shared=$slurm_dir/shared

node_cpus() {
	local i=${1#n} per=$(($(nproc --all) / ${#cluster_nodes[@]}))
	echo "$(((i - 1) * per))-$((i * per - 1))"
}

# The CPUs of the nodes other than $1 (its CpuSpecList), e.g. 4-7 for n1 of two.
others() {
	local node list=
	for node in "${cluster_nodes[@]}"; do
		[[ $node == "$1" ]] || list+=${list:+,}$(node_cpus "$node")
	done
	echo "$list"
}

on_node() {
	local node=$1
	shift
	nsenter -t "$(<"$slurm_dir/slurmd-$node.pid")" -n -u -m -- "$@"
}

cluster_start() {
	local n=$1 i node mem hosts cpus sockets cores
	shift
	((n >= 2)) || return 1
	cpus=$(nproc --all)
	sockets=$(lscpu -p=SOCKET | grep -v '^#' | sort -u | wc -l)
	cores=$(($(lscpu -p=CORE | grep -v '^#' | sort -u | wc -l) / sockets))
	((cpus == sockets * cores)) || return 1 # one thread per core (tests/vm/run --threads 1)
	cluster_nodes=()
	for ((i = 1; i <= n; i++)); do cluster_nodes+=("n$i"); done
	modprobe bridge && modprobe veth
	ip link add cdsmbr0 type bridge
	ip addr add "$slurm_addr/24" dev cdsmbr0
	ip link set cdsmbr0 up
	slurm_base
	mkdir -p "$cluster_shared" && chmod 1777 "$cluster_shared"
	# Names for every node (the guest's /etc is the host's, read-only: a copy bound over it).
	hosts=$slurm_dir/etc/hosts
	mkdir -p "$slurm_dir/etc"
	{
		cat /etc/hosts
		echo "$slurm_addr $(hostname)"
		for node in "${cluster_nodes[@]}"; do echo "10.77.0.$((10 + ${node#n})) $node"; done
	} >"$hosts"
	mount --bind "$hosts" /etc/hosts
	mem=$((($(awk '$1 == "MemTotal:" { print int($2 / 1024) }' /proc/meminfo) - 512) / n))
	{
		slurm_conf_common
		cat <<-EOT
			SlurmdSpoolDir=$slurm_dir/spool-%n
			SlurmdPidFile=$slurm_dir/slurmd-%n.pid
			SlurmdLogFile=$slurm_dir/slurmd-%n.log
			ProctrackType=proctrack/cgroup
			TaskPlugin=task/cgroup,task/affinity
		EOT
		for node in "${cluster_nodes[@]}"; do
			echo "NodeName=$node NodeAddr=10.77.0.$((10 + ${node#n})) CPUs=$cpus Sockets=$sockets" \
				"CoresPerSocket=$cores ThreadsPerCore=1 RealMemory=$mem" \
				"CpuSpecList=$(others "$node") State=UNKNOWN"
		done
		echo "PartitionName=lab Nodes=n[1-$n] Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
	} >"$slurm_dir/slurm.conf"
	# Every PMIx fence of a step on the ring algorithm. Slurm 22.05's default ("mixed") runs a
	# fence without data on its tree algorithm, and the tree is empty when TreeWidth (default 50)
	# exceeds the step's nodes (reverse_tree_info: "there isn't a tree"): each node's slurmstepd
	# then ends such a fence alone. Open MPI's barrier at the end of MPI_Init is one: one node's
	# ranks left MPI_Init and sent their first messages while the other's were still in the modex
	# fence, whose TCP BTL had no receive callback yet and called address 0 (about one ring
	# job in 20; slurmstepd's debug log: "COLL_FENCE_TREE seq=0 ... child_cntr=0 ... local
	# delivery ... DONE" on each node, session 34). docs/cluster.md tells admins the same.
	echo "PMIxCollFence=ring" >"$slurm_dir/mpi.conf"
	printf '%s\n' "$@" >"$slurm_dir/plugstack.conf"
	chrt -o 0 slurmctld -i
	for node in "${cluster_nodes[@]}"; do
		i=${node#n}
		ip netns add "cdsm-$node"
		ip link add "cdsm-v$i" type veth peer name eth0 netns "cdsm-$node"
		ip link set "cdsm-v$i" master cdsmbr0 up
		ip -n "cdsm-$node" addr add "10.77.0.$((10 + i))/24" dev eth0
		ip -n "cdsm-$node" link set eth0 up
		ip -n "cdsm-$node" link set lo up
		# The node's own hierarchy, for cdsmctl cluster-map --node-topology.
		lstopo-no-graphics --restrict "$(hwloc-calc -p "pu:$(node_cpus "$node")")" --of xml \
			"$slurm_dir/$node.xml"
		mkdir -p "$slurm_dir/spool-$node"
		# slurmd daemonizes inside the namespaces, which live as long as it does.
		nsenter --net="/run/netns/cdsm-$node" unshare --uts --mount --propagation private \
			sh -c "hostname $node && mount -t tmpfs -o mode=1777 tmpfs /tmp &&
				mount -t tmpfs -o mode=1777 tmpfs /var/tmp &&
				mount -t tmpfs -o mode=1777 tmpfs /dev/shm &&
				exec chrt -o 0 slurmd -N $node"
	done
	slurm_wait_idle "$n"
}

cluster_stop() {
	local node
	scontrol shutdown 2>/dev/null || true
	for node in "${cluster_nodes[@]}"; do
		if [[ -e $slurm_dir/slurmd-$node.pid ]]; then
			kill "$(<"$slurm_dir/slurmd-$node.pid")" 2>/dev/null || true
		fi
		ip netns del "cdsm-$node" 2>/dev/null || true
	done
	munged --stop 2>/dev/null || true
	ip link del cdsmbr0 2>/dev/null || true
}
