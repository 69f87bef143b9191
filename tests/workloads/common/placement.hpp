// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pairing.hpp"

namespace cdsm::workloads {

/// A CPU this process may run on, with its OS index (what sched_setaffinity takes) and the ids of
/// its package and core from /sys/devices/system/cpu/cpuN/topology.
struct Cpu {
    int os_index;
    int package;
    int core;
};

/// Parses a Linux CPU list such as "0-3,8,10-11". Throws UsageError.
std::vector<int> parse_cpu_list(std::string_view list);

/// The CPUs in this process's affinity mask, in OS order.
std::vector<Cpu> allowed_cpus();

/// A deliberately bad start: one OS CPU per task such that partners sit on different packages
/// (on different cores when all CPUs share one package), tasks spread evenly over the CPUs.
/// Partner graphs that are 2-colourable (pairings, even rings, grids) get no partners together.
std::vector<int> bad_placement(const PartnerGraph& partners, std::span<const Cpu> cpus);

/// Binds task `tid` (0: the caller) to the one OS CPU `cpu`.
void pin_task(pid_t tid, int cpu);

/// Where the tasks start: --pin-bad or --start-cpus LIST, or wherever the OS puts them.
struct StartPlacement {
    bool pin_bad = false;
    std::string start_cpus;

    void add_options(CLI::App& app);
    /// One OS CPU per task, or empty when neither option was given. Throws UsageError when a
    /// listed CPU is not in the allowed set.
    std::vector<int> resolve(const PartnerGraph& partners) const;
};

}  // namespace cdsm::workloads
