// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <linux/cdsm.h>
#include <sys/types.h>

#include <cdsm/migrator.hpp>
#include <cdsm/placement.hpp>
#include <cdsm/topology.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cdsm/kernel.hpp"
#include "procfs.hpp"

/// The narrow interfaces a mapping pass reads and changes the system through: the module
/// (KernelSource), /proc and the tasks' masks (ProcSource) and sched_setaffinity (Applier). cdsmd
/// runs the System* ones; the host tests (tests/cdsmd/pass_test.cpp) replay recorded inputs.
namespace cdsm::cdsmd {

/// The module, as a pass uses it. Errors throw as kernel::Device's do (SystemError; ENOENT when
/// the application is gone).
class KernelSource {
  public:
    virtual ~KernelSource() = default;
    virtual std::vector<cdsm_task_info> tasks(std::uint32_t app_id) = 0;
    virtual kernel::MatrixSnapshot matrix(std::uint32_t app_id, kernel::MatrixView view) = 0;
    virtual void age(std::uint32_t app_id) = 0;
};

/// The whole module as cdsmd uses it: a pass's reads, and what the control commands, the
/// tracking rules and the loop do.
class Kernel : public KernelSource {
  public:
    virtual int abi_version() = 0;
    virtual std::vector<cdsm_app_info> list_apps() = 0;
    /// Tracks a process tree or a cgroup v2 directory; returns the new application's id.
    virtual std::uint32_t track_pid(pid_t pid) = 0;
    virtual std::uint32_t track_cgroup(std::string_view path) = 0;
    virtual void untrack(std::uint32_t app_id) = 0;
    virtual void reset(std::uint32_t app_id) = 0;
    virtual void release(std::uint32_t app_id) = 0;
    virtual cdsm_counters counters() = 0;
};

/// Per-task and per-process facts; each returns nothing when the task is gone or unreadable.
class ProcSource {
  public:
    virtual ~ProcSource() = default;
    virtual std::optional<std::string> comm(pid_t pid) = 0;
    /// The variables of environment_names() (policy.hpp) in the process's environment.
    virtual std::optional<std::map<std::string, std::string>> environ(pid_t pid) = 0;
    virtual std::optional<procfs::TaskStat> task_stat(pid_t tgid, pid_t tid) = 0;
    virtual std::optional<std::vector<std::uint32_t>> affinity(pid_t tid) = 0;
    /// The CPUs the task's cgroup cpuset allows, nothing without a cpuset.
    virtual std::optional<std::vector<std::uint32_t>> cpuset(pid_t tid) = 0;
    /// The process's cgroup v2 directory, relative to the cgroup2 root ("/a/b").
    virtual std::optional<std::string> cgroup(pid_t pid) = 0;
    /// Nanoseconds since boot, and clock ticks per second (TaskStat::start_ticks).
    virtual std::uint64_t now_ns() = 0;
    virtual std::uint64_t ticks_per_second() = 0;
};

/// Binds tasks to PUs (as cdsm::Migrator: task i to placement[i] of the topology).
class Applier {
  public:
    virtual ~Applier() = default;
    virtual MigrationReport apply(std::span<const pid_t> tids, const Placement& placement,
                                  const Topology& topology) = 0;
};

/// The module through the device cdsmd opened (`device` is asked at each call: it throws until
/// the device is open).
class DeviceKernel final : public Kernel {
  public:
    explicit DeviceKernel(std::function<kernel::Device&()> device) : device_(std::move(device)) {}
    std::vector<cdsm_task_info> tasks(std::uint32_t app_id) override;
    kernel::MatrixSnapshot matrix(std::uint32_t app_id, kernel::MatrixView view) override;
    void age(std::uint32_t app_id) override;
    int abi_version() override;
    std::vector<cdsm_app_info> list_apps() override;
    std::uint32_t track_pid(pid_t pid) override;
    std::uint32_t track_cgroup(std::string_view path) override;
    void untrack(std::uint32_t app_id) override;
    void reset(std::uint32_t app_id) override;
    void release(std::uint32_t app_id) override;
    cdsm_counters counters() override;

  private:
    std::function<kernel::Device&()> device_;
};

/// /proc of this machine (procfs.hpp) and cgroup_allowed_cpus. task_stat() keeps the tasks'
/// files open (procfs::TaskFiles) for up to half the descriptors cdsmd may open, less 512 for
/// everything else, as the limit is at the first call.
class SystemProc final : public ProcSource {
  public:
    /// Closes the files task_stat() keeps open for `tid` (it exited).
    void forget_task(pid_t tid) {
        if (task_files_) task_files_->forget(tid);
    }

    std::optional<std::string> comm(pid_t pid) override;
    std::optional<std::map<std::string, std::string>> environ(pid_t pid) override;
    std::optional<procfs::TaskStat> task_stat(pid_t tgid, pid_t tid) override;
    std::optional<std::vector<std::uint32_t>> affinity(pid_t tid) override;
    std::optional<std::vector<std::uint32_t>> cpuset(pid_t tid) override;
    std::optional<std::string> cgroup(pid_t pid) override;
    std::uint64_t now_ns() override;
    std::uint64_t ticks_per_second() override;

  private:
    std::optional<procfs::TaskFiles> task_files_;
};

/// cdsm::Migrator.
class SystemApplier final : public Applier {
  public:
    MigrationReport apply(std::span<const pid_t> tids, const Placement& placement,
                          const Topology& topology) override;
};

}  // namespace cdsm::cdsmd
