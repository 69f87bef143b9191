// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <linux/cdsm.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cdsm/control.hpp"
#include "cdsm/placement_rules.hpp"
#include "interval.hpp"
#include "policy.hpp"

/// What cdsmd remembers of each application between passes: plain data, changed by the steps of
/// a pass (pass.hpp), the module's events and the control socket.
namespace cdsm::cdsmd {

using Clock = std::chrono::steady_clock;

/// Runnable shares are measured over at least this window.
inline constexpr std::uint64_t kShareWindowNs = 200'000'000;
/// Migrations kept in an application's history.
inline constexpr std::size_t kHistory = 32;

/// One task of an application, across passes: the affinity rules' memory (policy.hpp, classify).
struct TaskState {
    RunnableShare runnable{kShareWindowNs};
    std::optional<std::uint32_t> bound_cpu;  ///< the CPU cdsmd bound it to
    bool foreign = false;
    TaskRole role = TaskRole::kIdle;
    std::vector<std::uint32_t> changed_mask;  ///< a mask not cdsmd's, read since changed_ns
    std::uint64_t changed_ns = 0;
    /// The masks it had before cdsmd first bound it (a launcher's binding; a few at most).
    std::vector<std::vector<std::uint32_t>> launch_masks;
};
/// Where cdsmd placed the task, if it places it now (an idle task keeps the CPU it was bound to
/// while busy, but is not placed).
inline std::optional<std::uint32_t> placed_on(const TaskState& t) {
    return t.role == TaskRole::kPlace ? t.bound_cpu : std::nullopt;
}

/// What cdsmd read from a process's environment (the facts, not the values), and the command it
/// ran then. Kept while the process is one of the application's live tasks' (observe()).
struct ProcessEnv {
    std::string comm;
    EnvFacts facts;
    bool read = true;  ///< false: /proc/PID/environ was unreadable or empty, read it again
};

/// What cdsmd does with an application: map places its tasks (the node's policy); detect
/// plans and records (costs, decisions) but never changes an affinity.
enum class AppMode { kMap, kDetect };
inline const char* mode_name(AppMode m) {
    return m == AppMode::kDetect ? "detect" : "map";
}
/// "map" or "detect"; nullopt for anything else.
inline std::optional<AppMode> parse_mode(std::string_view s) {
    if (s == "map") return AppMode::kMap;
    if (s == "detect") return AppMode::kDetect;
    return std::nullopt;
}

struct AppState {
    cdsm_app_info info{};
    std::string name;
    bool named = false;  ///< given by track/a rule; else the root process's command
    AppMode mode = AppMode::kMap;
    /// The placement rules asked for it at track ("smt", "spread": the Slurm plugin's
    /// --cdsm-smt, --cdsm-spread); unset: [mapping] smt and spread.
    std::optional<PlacementRules> rules;
    AdaptiveInterval interval;
    Clock::time_point due;
    std::map<pid_t, TaskState> tasks;
    std::map<pid_t, ProcessEnv> env_by_tgid;
    bool opted_out = false;
    bool planned = false;                ///< had enough data for a placement once
    std::vector<std::uint32_t> claimed;  ///< OS CPUs its placed tasks hold
    std::optional<Clock::time_point> ended_at;
    bool kept_ended = false;  ///< a dry run released nothing and said so once
    std::string cgroup;       ///< the cgroup v2 directory it was tracked for, if cdsmd tracked it
    /// A pid or auto application's: its first task's cgroup v2 directory when cdsmd adopted it
    /// (slurm_step.hpp: its job step, if any).
    std::string task_cgroup;
    /// The tasks to place as the last timer pass saw them (tids, masks, commands), and since
    /// when they have looked so: placements wait until they settled (mapping.settle_ms).
    std::set<std::string> task_set;
    std::uint64_t task_set_since_ns = 0;
    std::uint64_t first_seen_ns = 0;  ///< when a pass first looked at it (its age)
    /// A pass found a process with fewer busy tasks than its OMP_NUM_THREADS, and no pass has
    /// mapped the application since: the threads' arrival ends its start-up (settle_ms).
    bool awaited_threads = false;
    /// Passes in a row that found its tasks sharing a CPU while another was free, since when.
    std::uint32_t stacked_passes = 0;
    std::uint64_t stacked_since_ns = 0;
    /// A placement that only lowers the cost, proposed for these tasks and not applied yet, and
    /// their whole-run matrix then: a later pass applies its own proposal for the same tasks
    /// once the events counted since show the gain too (pass.cpp, confirmed).
    struct Pending {
        std::vector<pid_t> tids;
        CommMatrix whole;
    };
    std::optional<Pending> pending;
    /// The whole-run matrix of its tasks to place (by tid), noted by timer passes every
    /// kWindowStepNs at most and kept for the last kWindowNs (pass.cpp, window_matrix): a
    /// placement cdsmd made is planned again on that minute's events, not on the aged matrix.
    struct Whole {
        std::uint64_t ns = 0;  ///< when (CLOCK_BOOTTIME)
        std::vector<pid_t> tids;
        CommMatrix matrix;
    };
    std::deque<Whole> wholes;
    std::uint64_t passes = 0;
    std::uint64_t migrations = 0;
    /// Times cdsmd migrated each task, kept after the task exited (tasks: moves).
    std::map<pid_t, std::uint32_t> moves;
    /// The CPU each task last ran on as cdsmd read it (a pass that read the tasks, a tasks or
    /// matrix answer), kept after it exited while the module lists it (tasks: last_cpu): where
    /// the ranks of an ended Slurm step ran, for its report.
    std::map<pid_t, std::uint32_t> last_cpu;
    double cost_current = 0;
    double cost_best = 0;
    /// The time model's predictions beside the costs (Planner::time_s), in seconds.
    double time_current_s = 0;
    double time_best_s = 0;
    std::uint64_t last_mapped_ns = 0;
    control::Json last = nullptr;       ///< last decision
    std::deque<control::Json> history;  ///< recent migrations
};

/// "application 7 (lmp)", how the log names an application.
std::string app_label(const cdsm_app_info& info, const std::string& name);

}  // namespace cdsm::cdsmd
