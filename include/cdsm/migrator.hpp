// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <optional>
#include <span>
#include <vector>

#include "cdsm/cpu_list.hpp"
#include "cdsm/placement.hpp"
#include "cdsm/topology.hpp"

namespace cdsm {

/// What Migrator::apply did to each task.
struct MigrationReport {
    std::vector<pid_t> moved;           ///< now bound to their PU
    std::vector<pid_t> unchanged;       ///< were already bound to exactly that PU
    std::vector<pid_t> vanished;        ///< no such task any more (ESRCH)
    std::vector<pid_t> denied;          ///< may not be moved by us (EPERM)
    std::vector<pid_t> outside_cpuset;  ///< their PU is outside their cgroup cpuset: left alone
    std::vector<std::pair<pid_t, int>> failed;  ///< any other error, with its errno
};

/// Binds tasks to PUs with sched_setaffinity(), one thread id at a time, using the PUs' OS
/// indices. Tasks that vanished or may not be moved are reported, never fatal.
class Migrator {
  public:
    /// Task i (thread id tids[i]) goes to PU placement[i] of `topology`. Throws Error if the
    /// sizes differ or a PU is not in the topology.
    MigrationReport apply(std::span<const pid_t> tids, const Placement& placement,
                          const Topology& topology) const;
};

/// The CPUs the cgroup cpuset of a task allows (cgroup v2 cpuset.cpus.effective, or v1
/// cpuset.effective_cpus), or nothing if the task has no cpuset controller or is gone.
std::optional<std::vector<std::uint32_t>> cgroup_allowed_cpus(pid_t tid);

}  // namespace cdsm
