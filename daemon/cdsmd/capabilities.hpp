// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <string>
#include <vector>

namespace cdsm::cdsmd {

/// Keeps only the capabilities cdsmd needs, of those it has, and drops every other one from its
/// effective, permitted, inheritable, ambient and bounding sets, so that a root cdsmd started by
/// hand is as limited as under the systemd unit's CapabilityBoundingSet. Needed:
///  - CAP_SYS_ADMIN: /dev/cdsm's control ioctls (track, age, release, set parameters);
///  - CAP_SYS_NICE: sched_setaffinity() of other users' tasks;
///  - CAP_SYS_PTRACE: /proc/PID/environ of other users' processes (CDSM_DISABLE, MPI ranks);
///  - CAP_DAC_READ_SEARCH: other users' /proc files and the cgroup tree ([[track]] rules).
/// Returns the names of those kept ("cap_sys_admin"...), in that order.
std::vector<std::string> drop_capabilities();

}  // namespace cdsm::cdsmd
