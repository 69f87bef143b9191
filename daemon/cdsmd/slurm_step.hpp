// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cdsm::cdsmd {

struct AppState;
class ProcSource;

/// The Slurm job step a cgroup v2 directory belongs to.
struct SlurmStep {
    std::uint64_t job_id = 0;
    std::string step;  ///< "batch", "extern", "interactive", or the step number ("0", "3.1")
    bool operator==(const SlurmStep&) const = default;
};

/// The job step of a cgroup path (relative to the cgroup2 root) as Slurm's cgroup/v2 plugin makes
/// it: ".../job_J/step_S[/user[/task_T]]" (e.g. /system.slice/slurmstepd.scope/job_7/step_0/user).
/// nullopt for a path of no step (a job's own directory, anything not Slurm's).
std::optional<SlurmStep> slurm_step(std::string_view cgroup);

/// The job step of an application: of the cgroup cdsmd tracked it for, else of its first task's
/// cgroup (AppState::task_cgroup: a process tracked by pid or by auto mode inside a step).
std::optional<SlurmStep> slurm_step(const AppState& app);

/// Reads a pid or auto application's first task's (its root process's) cgroup into
/// app.task_cgroup, once: when cdsmd adopts it. Nothing for a cgroup application or a root
/// process that is gone.
void read_task_cgroup(AppState& app, ProcSource& proc);

}  // namespace cdsm::cdsmd
