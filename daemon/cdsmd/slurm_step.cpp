// SPDX-License-Identifier: GPL-2.0
#include "slurm_step.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

#include "app_state.hpp"
#include "sources.hpp"

namespace cdsm::cdsmd {

namespace {

bool digits(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A step's name: batch, extern, interactive, N or N.M (a component of a heterogeneous step).
bool step_name(std::string_view s) {
    if (s == "batch" || s == "extern" || s == "interactive") return true;
    const auto dot = s.find('.');
    if (dot == std::string_view::npos) return digits(s);
    return digits(s.substr(0, dot)) && digits(s.substr(dot + 1));
}

}  // namespace

std::optional<SlurmStep> slurm_step(std::string_view cgroup) {
    std::vector<std::string_view> parts;
    for (std::size_t at = 0; at <= cgroup.size();) {
        const std::size_t end = std::min(cgroup.find('/', at), cgroup.size());
        if (end > at) parts.push_back(cgroup.substr(at, end - at));
        at = end + 1;
    }
    // The innermost job_J/step_S pair: a step's directory or one below it.
    for (std::size_t i = parts.size(); i-- > 1;) {
        const std::string_view job = parts[i - 1], step = parts[i];
        if (!job.starts_with("job_") || !step.starts_with("step_")) continue;
        const std::string_view id = job.substr(4), name = step.substr(5);
        std::uint64_t job_id = 0;
        if (!digits(id) || !step_name(name)) continue;
        if (std::from_chars(id.data(), id.data() + id.size(), job_id).ec != std::errc()) continue;
        return SlurmStep{job_id, std::string(name)};
    }
    return std::nullopt;
}

std::optional<SlurmStep> slurm_step(const AppState& app) {
    return slurm_step(app.cgroup.empty() ? app.task_cgroup : app.cgroup);
}

void read_task_cgroup(AppState& app, ProcSource& proc) {
    if (app.info.kind == CDSM_TRACK_CGROUP || app.info.root_pid <= 0) return;
    app.task_cgroup = proc.cgroup(app.info.root_pid).value_or("");
}

}  // namespace cdsm::cdsmd
