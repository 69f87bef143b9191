// SPDX-License-Identifier: GPL-2.0
#include "sources.hpp"

#include <sys/resource.h>

#include "policy.hpp"

namespace cdsm::cdsmd {

std::vector<cdsm_task_info> DeviceKernel::tasks(std::uint32_t app_id) {
    return device_().tasks(app_id);
}

kernel::MatrixSnapshot DeviceKernel::matrix(std::uint32_t app_id, kernel::MatrixView view) {
    return device_().matrix(app_id, view);
}

void DeviceKernel::age(std::uint32_t app_id) {
    device_().age(app_id);
}

int DeviceKernel::abi_version() {
    return device_().abi_version();
}

std::vector<cdsm_app_info> DeviceKernel::list_apps() {
    return device_().list_apps();
}

std::uint32_t DeviceKernel::track_pid(pid_t pid) {
    return device_().track_pid(pid);
}

std::uint32_t DeviceKernel::track_cgroup(std::string_view path) {
    return device_().track_cgroup(path);
}

void DeviceKernel::untrack(std::uint32_t app_id) {
    device_().untrack(app_id);
}

void DeviceKernel::reset(std::uint32_t app_id) {
    device_().reset(app_id);
}

void DeviceKernel::release(std::uint32_t app_id) {
    device_().release(app_id);
}

cdsm_counters DeviceKernel::counters() {
    return device_().counters();
}

std::optional<std::string> SystemProc::comm(pid_t pid) {
    return procfs::comm(pid);
}

std::optional<std::map<std::string, std::string>> SystemProc::environ(pid_t pid) {
    return procfs::environ(pid, environment_names());
}

std::optional<procfs::TaskStat> SystemProc::task_stat(pid_t tgid, pid_t tid) {
    if (!task_files_) {
        rlimit files{};
        const rlim_t limit = ::getrlimit(RLIMIT_NOFILE, &files) == 0 ? files.rlim_cur : 1024;
        task_files_.emplace(limit > 512 ? (limit - 512) / 2 : 0);
    }
    return task_files_->read(tgid, tid,
                             procfs::affinity(tid).value_or(std::vector<std::uint32_t>{}));
}

std::optional<std::vector<std::uint32_t>> SystemProc::affinity(pid_t tid) {
    return procfs::affinity(tid);
}

std::optional<std::vector<std::uint32_t>> SystemProc::cpuset(pid_t tid) {
    return cgroup_allowed_cpus(tid);
}

std::optional<std::string> SystemProc::cgroup(pid_t pid) {
    return procfs::cgroup(pid);
}

std::uint64_t SystemProc::now_ns() {
    return procfs::now_ns();
}

std::uint64_t SystemProc::ticks_per_second() {
    return procfs::ticks_per_second();
}

MigrationReport SystemApplier::apply(std::span<const pid_t> tids, const Placement& placement,
                                     const Topology& topology) {
    return Migrator().apply(tids, placement, topology);
}

}  // namespace cdsm::cdsmd
