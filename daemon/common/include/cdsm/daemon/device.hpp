// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <linux/cdsm.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cdsm/daemon/fd.hpp"

namespace cdsm::daemon {

/// Default path of the module's character device.
inline constexpr std::string_view kDevicePath = "/dev/cdsm";

/// A snapshot of one application's communication matrix (CDSM_IOC_GET_MATRIX).
struct KernelMatrix {
    std::uint32_t dim = 0;
    std::vector<std::uint32_t> cells;  ///< dim * dim, row-major, symmetric, zero diagonal
    std::uint64_t events = 0;          ///< communication events counted, before aging
    std::uint64_t snapshot_ns = 0;     ///< CLOCK_BOOTTIME

    std::uint32_t at(std::uint32_t i, std::uint32_t j) const {
        return cells[std::size_t(i) * dim + j];
    }
};

/// The module's ioctl interface (include/uapi/linux/cdsm.h), one method per ioctl. Every
/// failure throws SystemError naming the ioctl and its argument, e.g.
/// "CDSM_IOC_AGE (application 7): Operation not permitted"; errno is in code().
class Device {
  public:
    /// Opens the device read-write. Throws SystemError; ENOENT says "is cdsm.ko loaded?".
    explicit Device(std::string_view path = kDevicePath);

    /// CDSM_IOC_ABI_VERSION. The constructor already checks it against CDSM_ABI_VERSION.
    int abi_version() const;

    std::vector<cdsm_app_info> list_apps() const;
    std::vector<cdsm_task_info> tasks(std::uint32_t app_id) const;
    KernelMatrix matrix(std::uint32_t app_id) const;

    void age(std::uint32_t app_id) const;
    void reset(std::uint32_t app_id) const;
    void release(std::uint32_t app_id) const;
    void untrack(std::uint32_t app_id) const;
    /// Tracks a process tree; returns the new application's id.
    std::uint32_t track_pid(pid_t pid) const;
    /// Tracks a cgroup v2 directory given relative to the cgroup2 root ("/system.slice/x").
    std::uint32_t track_cgroup(std::string_view path) const;

    cdsm_params params() const;
    void set_params(const cdsm_params& params) const;
    cdsm_counters counters() const;

    int fd() const noexcept { return fd_.get(); }

  private:
    void call(unsigned long request, void* arg, const std::string& what) const;
    void app_op(unsigned long request, const char* name, std::uint32_t app_id) const;

    Fd fd_;
};

/// "pid", "cgroup", "auto" or "unknown" for an enum cdsm_track_kind value.
std::string_view track_kind_name(std::uint32_t kind) noexcept;

}  // namespace cdsm::daemon
