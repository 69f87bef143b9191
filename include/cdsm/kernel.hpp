// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <linux/cdsm.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cdsm/comm_matrix.hpp"
#include "cdsm/error.hpp"
#include "cdsm/fd.hpp"

/// The client of the kernel module cdsm.ko: its character device (this header) and its netlink
/// events (kernel_events.hpp). The ABI is include/uapi/linux/cdsm.h, installed as
/// <linux/cdsm.h> under cdsm/uapi/.
namespace cdsm::kernel {

/// Default path of the module's character device.
inline constexpr std::string_view kDevicePath = "/dev/cdsm";

/// Which of an application's two matrices to read (enum cdsm_matrix_view).
enum class MatrixView : std::uint32_t {
    /// What the mapper follows: aged by a quarter every age_ms and after each migration.
    aged = CDSM_MATRIX_AGED,
    /// The same events, never aged: the whole run since tracking began (or a reset).
    whole = CDSM_MATRIX_WHOLE,
};

/// "aged" or "whole".
std::string_view to_string(MatrixView view);
/// Parses "aged" or "whole"; throws Error naming the accepted values otherwise.
MatrixView parse_matrix_view(std::string_view text);

/// One application's communication matrix as the module had it at snapshot_ns
/// (CDSM_IOC_GET_MATRIX). Rows and columns are the module's task indices
/// (cdsm_task_info::index), including tasks that have exited.
struct MatrixSnapshot {
    CommMatrix matrix;
    std::uint64_t events = 0;       ///< communication events counted, before aging
    std::uint64_t snapshot_ns = 0;  ///< CLOCK_BOOTTIME
};

/// The module's ioctl interface, one method per ioctl. Every failure throws SystemError naming
/// the ioctl and its argument, e.g. "CDSM_IOC_AGE (application 7): Operation not permitted";
/// errno is in code().
class Device {
  public:
    /// Opens the device read-write. Throws SystemError; ENOENT says "is cdsm.ko loaded?".
    explicit Device(std::string_view path = kDevicePath);

    /// CDSM_IOC_ABI_VERSION. The constructor already checks it against CDSM_ABI_VERSION.
    int abi_version() const;

    std::vector<cdsm_app_info> list_apps() const;
    std::vector<cdsm_task_info> tasks(std::uint32_t app_id) const;
    /// CDSM_IOC_GET_MATRIX. A module built before the whole-run view refuses `whole` with
    /// E2BIG; the error then says so.
    MatrixSnapshot matrix(std::uint32_t app_id, MatrixView view = MatrixView::aged) const;

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

}  // namespace cdsm::kernel
