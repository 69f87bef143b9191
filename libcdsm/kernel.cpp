// SPDX-License-Identifier: GPL-2.0
#include "cdsm/kernel.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/ioctl.h>

namespace cdsm::kernel {

namespace {

template <typename T>
T sized() {
    T t{};
    t.size = sizeof(T);
    return t;
}

std::uint64_t user_ptr(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p);
}

std::string app_call(const char* name, std::uint32_t app_id) {
    return fmt::format("{} (application {})", name, app_id);
}

}  // namespace

Device::Device(std::string_view path) {
    const std::string p(path);
    fd_.reset(::open(p.c_str(), O_RDWR | O_CLOEXEC));
    if (!fd_) {
        const int err = errno;
        throw SystemError(
            err, fmt::format("open {}{}", p, err == ENOENT ? " (is cdsm.ko loaded?)" : ""));
    }
    const int abi = abi_version();
    if (abi != CDSM_ABI_VERSION) {
        throw SystemError(EPROTO, fmt::format("{}: module ABI version {}, this program needs {}", p,
                                              abi, CDSM_ABI_VERSION));
    }
}

void Device::call(unsigned long request, void* arg, const std::string& what) const {
    if (::ioctl(fd_.get(), request, arg) < 0) throw_errno(what);
}

int Device::abi_version() const {
    const int v = ::ioctl(fd_.get(), CDSM_IOC_ABI_VERSION);
    if (v < 0) throw_errno("CDSM_IOC_ABI_VERSION");
    return v;
}

std::vector<cdsm_app_info> Device::list_apps() const {
    // The count can grow between two calls: retry with the size the kernel reported.
    std::vector<cdsm_app_info> apps(64);
    for (;;) {
        auto a = sized<cdsm_list_apps>();
        a.capacity = static_cast<std::uint32_t>(apps.size());
        a.apps_ptr = user_ptr(apps.data());
        call(CDSM_IOC_LIST_APPS, &a, "CDSM_IOC_LIST_APPS");
        if (a.count <= apps.size()) {
            apps.resize(a.count);
            return apps;
        }
        apps.resize(a.count + 16);
    }
}

std::vector<cdsm_task_info> Device::tasks(std::uint32_t app_id) const {
    std::vector<cdsm_task_info> tasks(64);
    for (;;) {
        auto a = sized<cdsm_get_tasks>();
        a.app_id = app_id;
        a.capacity = static_cast<std::uint32_t>(tasks.size());
        a.tasks_ptr = user_ptr(tasks.data());
        call(CDSM_IOC_GET_TASKS, &a, app_call("CDSM_IOC_GET_TASKS", app_id));
        if (a.count <= tasks.size()) {
            tasks.resize(a.count);
            return tasks;
        }
        tasks.resize(a.count + 16);
    }
}

std::string_view to_string(MatrixView view) {
    return view == MatrixView::whole ? "whole" : "aged";
}

MatrixView parse_matrix_view(std::string_view text) {
    if (text == "aged") return MatrixView::aged;
    if (text == "whole") return MatrixView::whole;
    throw Error(fmt::format("unknown matrix view '{}' (aged or whole)", text));
}

MatrixSnapshot Device::matrix(std::uint32_t app_id, MatrixView view) const {
    std::vector<std::uint32_t> cells;
    std::uint32_t capacity = 64;
    for (;;) {
        cells.assign(std::size_t(capacity) * capacity, 0);
        auto a = sized<cdsm_get_matrix>();
        a.app_id = app_id;
        a.capacity = capacity;
        a.cells_ptr = user_ptr(cells.data());
        a.view = static_cast<std::uint32_t>(view);
        if (::ioctl(fd_.get(), CDSM_IOC_GET_MATRIX, &a) == 0) {
            // The module's matrix is symmetric: its upper triangle says it all.
            MatrixSnapshot m{CommMatrix(a.dim), a.events, a.snapshot_ns};
            for (std::size_t i = 0; i < a.dim; ++i) {
                for (std::size_t j = i + 1; j < a.dim; ++j) {
                    if (const std::uint32_t v = cells[i * a.dim + j]) m.matrix.set(i, j, v);
                }
            }
            return m;
        }
        if (errno == E2BIG && view == MatrixView::whole) {
            throw_errno(app_call("CDSM_IOC_GET_MATRIX", app_id) +
                        " (the loaded cdsm.ko has no whole-run matrix: load this version's)");
        }
        if (errno != ENOSPC || a.dim <= capacity) {
            throw_errno(app_call("CDSM_IOC_GET_MATRIX", app_id));
        }
        capacity = a.dim + 8;  // tasks may join before the next call
    }
}

void Device::app_op(unsigned long request, const char* name, std::uint32_t app_id) const {
    auto a = sized<cdsm_app_op>();
    a.app_id = app_id;
    call(request, &a, app_call(name, app_id));
}

void Device::age(std::uint32_t app_id) const {
    app_op(CDSM_IOC_AGE, "CDSM_IOC_AGE", app_id);
}
void Device::reset(std::uint32_t app_id) const {
    app_op(CDSM_IOC_RESET, "CDSM_IOC_RESET", app_id);
}
void Device::release(std::uint32_t app_id) const {
    app_op(CDSM_IOC_RELEASE, "CDSM_IOC_RELEASE", app_id);
}
void Device::untrack(std::uint32_t app_id) const {
    app_op(CDSM_IOC_UNTRACK, "CDSM_IOC_UNTRACK", app_id);
}

std::uint32_t Device::track_pid(pid_t pid) const {
    auto a = sized<cdsm_track>();
    a.kind = CDSM_TRACK_PID;
    a.pid = pid;
    call(CDSM_IOC_TRACK, &a, fmt::format("CDSM_IOC_TRACK (pid {})", pid));
    return a.app_id;
}

std::uint32_t Device::track_cgroup(std::string_view path) const {
    auto a = sized<cdsm_track>();
    a.kind = CDSM_TRACK_CGROUP;
    a.path_len = static_cast<std::uint32_t>(path.size());
    a.path_ptr = user_ptr(path.data());
    call(CDSM_IOC_TRACK, &a, fmt::format("CDSM_IOC_TRACK (cgroup {})", path));
    return a.app_id;
}

cdsm_params Device::params() const {
    auto p = sized<cdsm_params>();
    call(CDSM_IOC_GET_PARAMS, &p, "CDSM_IOC_GET_PARAMS");
    return p;
}

void Device::set_params(const cdsm_params& params) const {
    auto p = params;
    p.size = sizeof(p);
    call(CDSM_IOC_SET_PARAMS, &p, "CDSM_IOC_SET_PARAMS");
}

cdsm_counters Device::counters() const {
    auto c = sized<cdsm_counters>();
    call(CDSM_IOC_GET_COUNTERS, &c, "CDSM_IOC_GET_COUNTERS");
    return c;
}

std::string_view track_kind_name(std::uint32_t kind) noexcept {
    switch (kind) {
        case CDSM_TRACK_PID:
            return "pid";
        case CDSM_TRACK_CGROUP:
            return "cgroup";
        case CDSM_TRACK_AUTO:
            return "auto";
        default:
            return "unknown";
    }
}

}  // namespace cdsm::kernel
