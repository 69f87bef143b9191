// SPDX-License-Identifier: GPL-2.0
#include "cdsm/migrator.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <string>

#include "cdsm/error.hpp"

namespace cdsm {
namespace {

std::optional<std::string> read_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    if (!in || !std::getline(in, line)) return std::nullopt;
    return line;
}

// The cpuset file of a cgroup, walking up to the root when a level has none.
std::optional<std::vector<std::uint32_t>> cpuset_of(std::string base, std::string path,
                                                    const char* file) {
    for (;;) {
        if (auto line = read_line(base + path + "/" + file); line && !line->empty())
            return parse_cpu_list(*line);
        if (path.empty() || path == "/") return std::nullopt;
        path = path.substr(0, path.find_last_of('/'));
    }
}

}  // namespace

std::optional<std::vector<std::uint32_t>> cgroup_allowed_cpus(pid_t tid) {
    std::ifstream in("/proc/" + std::to_string(tid) + "/cgroup");
    std::string line;
    while (std::getline(in, line)) {
        // "0::/path" (v2) or "N:controllers:/path" (v1).
        const auto first = line.find(':'), second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) continue;
        const std::string controllers = line.substr(first + 1, second - first - 1);
        const std::string path = line.substr(second + 1);
        if (controllers.empty()) {
            if (auto cpus = cpuset_of("/sys/fs/cgroup", path, "cpuset.cpus.effective")) return cpus;
        } else if (controllers.find("cpuset") != std::string::npos) {
            return cpuset_of("/sys/fs/cgroup/cpuset", path, "cpuset.effective_cpus");
        }
    }
    return std::nullopt;
}

MigrationReport Migrator::apply(std::span<const pid_t> tids, const Placement& placement,
                                const Topology& topology) const {
    if (tids.size() != placement.size())
        throw Error("migration of " + std::to_string(tids.size()) + " tasks",
                    "the placement has " + std::to_string(placement.size()) + " tasks");
    placement.check(topology.pu_count(), "placement to migrate");
    MigrationReport report;
    for (std::size_t t = 0; t < tids.size(); ++t) {
        const pid_t tid = tids[t];
        const std::uint32_t cpu = topology.pu(placement[t]).os_index;
        const auto allowed = cgroup_allowed_cpus(tid);
        if (allowed && std::find(allowed->begin(), allowed->end(), cpu) == allowed->end()) {
            report.outside_cpuset.push_back(tid);
            continue;
        }
        cpu_set_t now, want;
        CPU_ZERO(&want);
        CPU_SET(cpu, &want);
        if (sched_getaffinity(tid, sizeof now, &now) == 0 && CPU_EQUAL(&now, &want)) {
            report.unchanged.push_back(tid);
            continue;
        }
        if (sched_setaffinity(tid, sizeof want, &want) == 0)
            report.moved.push_back(tid);
        else if (errno == ESRCH)
            report.vanished.push_back(tid);
        else if (errno == EPERM)
            report.denied.push_back(tid);
        else
            report.failed.emplace_back(tid, errno);
    }
    return report;
}

}  // namespace cdsm
