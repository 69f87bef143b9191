// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "config.hpp"
#include "planner.hpp"
#include "sources.hpp"

/// One mapping pass over one application, as a pipeline of steps with plain data between them:
///
///   observe        the module's tasks and matrix, each process's command and environment
///   read_tasks     each live task's /proc facts (CPU, mask, run time)
///   classify_tasks the affinity rules (policy.hpp, classify) over the tasks' remembered state
///   arbitrate      the CPUs this application may use beside the others' placed tasks
///   plan           libcdsm through Planner
///   apply          the Applier; the tasks' bindings
///   record         migrations, history, the state file, the log; the CPUs the application holds
///
/// The system is reached only through PassContext's interfaces (sources.hpp), so that a whole pass
/// runs in host tests from recorded inputs (tests/cdsmd/pass_test.cpp).
namespace cdsm::cdsmd {

/// Why and how a pass runs.
struct MapRequest {
    bool apply = true;
    std::string algorithm;  ///< "" for the configuration's
    bool baselines = false;
    bool from_timer = true;  ///< a timer's pass adapts the interval; a request's does not
};

/// What a pass uses besides the application.
struct PassContext {
    const Config& config;
    const Planner& planner;
    KernelSource& kernel;
    ProcSource& proc;
    Applier& applier;
    bool dry_run = false;
    /// The CPUs other applications' placed tasks hold.
    std::set<std::uint32_t> claimed_by_others;
    /// Saves what must survive a restart (a binding left alone, a migration).
    std::function<void()> save_state = [] {};
};

/// The decision (the JSON of cdsmd --once, "map" and "show"'s "last") and the tasks it moved.
struct PassResult {
    control::Json decision;
    std::size_t moved = 0;
};

/// Runs one pass; the decision is also app.last. Throws what the sources throw (SystemError
/// ENOENT when the module dropped the application).
PassResult map_pass(AppState& app, const MapRequest& request, PassContext& context);

// ---- the steps --------------------------------------------------------------------------------

/// observe: what the module and each live process say.
struct Observation {
    std::vector<cdsm_task_info> tasks;
    CommMatrix matrix;                          ///< the module's snapshot
    std::map<pid_t, std::string> process_comm;  ///< command of each live task's process
};
/// `launchers`: the commands of [mapping] launchers, whose processes have no MPI rank.
Observation observe(AppState& app, KernelSource& kernel, ProcSource& proc,
                    std::span<const std::string> launchers = {});

/// Reads process tgid's environment when its command changed (an exec: a launcher's child
/// became an MPI rank), notes an opt-out; returns its command. A launcher (its command in
/// `launchers`) gets no rank, whatever its environment says: Open MPI's orted, started by srun
/// in a multi-node job, has SLURM_PROCID 0, and mpirun in a batch script has the script's.
const std::string& check_environment(AppState& app, pid_t tgid, ProcSource& proc,
                                     std::span<const std::string> launchers = {});

/// read_tasks: one live task as /proc shows it.
struct TaskReading {
    cdsm_task_info task{};
    procfs::TaskStat stat;
    std::vector<std::uint32_t> affinity;
};
/// The live tasks (those exited, or whose files are gone, left out).
std::vector<TaskReading> read_tasks(const Observation& observation, ProcSource& proc);
/// A pass that does not read the tasks (too few events): the CPU of each live task cdsmd has
/// not seen run yet, once (app.last_cpu), so that an ended step's report says where its ranks
/// ran however little they shared; a pass that reads the tasks updates them all.
void note_new_tasks_cpus(AppState& app, const Observation& seen, ProcSource& proc);

/// classify_tasks: the tasks to place, and why others are not.
struct Classified {
    std::vector<std::uint32_t> indices;  ///< matrix index of each task to place
    std::vector<pid_t> tids;
    std::vector<pid_t> tgids;                       ///< each one's process
    std::vector<std::uint64_t> start_ticks;         ///< each one's start time (TaskStat)
    std::vector<std::uint32_t> current;             ///< the CPU each runs on now
    std::vector<std::vector<std::uint32_t>> masks;  ///< each one's affinity now
    std::vector<std::uint32_t> foreign_cpus;        ///< single CPUs other programs bound to
    std::vector<std::string> changing;              ///< "tid (cpus)" of tasks off their CPU
};
/// Updates app.tasks (roles, bindings seen changing or back, tasks gone) at time now_ns.
Classified classify_tasks(AppState& app, const std::vector<TaskReading>& tasks,
                          const std::map<pid_t, std::string>& process_comm, PassContext& context,
                          std::uint64_t now_ns);

/// arbitrate: the CPUs an application may be placed on. `allowed`: its cpuset within the
/// machine; `others`: held by other applications' placed tasks; `foreign`: bound by other
/// programs. With fewer free CPUs than tasks it over-subscribes its own allowed set, unless
/// other applications hold CPUs: then `refused` says why it is not mapped.
struct Arbitration {
    std::vector<std::uint32_t> available;
    std::string refused;
};
Arbitration arbitrate(const std::vector<std::uint32_t>& allowed,
                      const std::set<std::uint32_t>& others,
                      const std::vector<std::uint32_t>& foreign, std::size_t tasks);

/// window: how long the events a placement cdsmd made is planned again on span (the whole-run
/// matrices a timer pass notes, every kWindowStepNs at most).
constexpr std::uint64_t kWindowNs = 60'000'000'000;
constexpr std::uint64_t kWindowStepNs = 5'000'000'000;
/// Notes `whole` (the whole-run matrix of the tasks `tids`) at now_ns if the last note is
/// kWindowStepNs old, and forgets the notes older than the window needs.
void note_whole(AppState& app, const std::vector<pid_t>& tids, const CommMatrix& whole,
                std::uint64_t now_ns);
/// The events among `tids` in the last kWindowNs: `whole` (their whole-run matrix now) less the
/// one noted at the window's start, per pair: the last note at or before it that holds both
/// tasks, else the first after it that does (the application is younger than the window), else
/// nothing (the pair's whole run: the tasks came after the notes).
CommMatrix window_matrix(const AppState& app, const std::vector<pid_t>& tids,
                         const CommMatrix& whole, std::uint64_t now_ns);

/// Whether a placement's gain over the current one lasts: its gain on each slice of the window
/// (the events between consecutive notes, and since the last one), their mean and the mean's
/// standard error. `lasts`: a full window (its first note at or before the window's start: the
/// application's minute, not its first seconds), at least kMinSlices slices, and a mean above
/// zero by kLastingSigma standard errors: a pattern every slice shows, not the sum of a few that
/// changed (HPCC's b_eff: a random ring every few seconds). In pass_test's rings of 4 tasks, a
/// new random ring every 2, 5 or 10 s for 300 s (200 seeds each), 5 standard errors moved tasks
/// a second time in 6 of 40 seeds, 8 in none of 400 runs with 2- or 5-s rings and in 7 of 200
/// with 10-s rings (6 rings in a row that all suit another placement: a minute's pattern); a
/// second ring that lasts is followed about 50 s after it began. With a pass every 2 s (the
/// adaptive interval's longest), a note comes every 6 s and the minute has 10 or 11 slices.
constexpr std::size_t kMinSlices = 8;
constexpr double kLastingSigma = 8;
struct Lasting {
    bool full = false;  ///< the notes span the whole window
    std::size_t slices = 0;
    double mean = 0;
    double error = 0;
    bool lasts = false;
};
Lasting lasting_gain(const AppState& app, const std::vector<pid_t>& tids, const CommMatrix& whole,
                     std::uint64_t now_ns, const Planner& planner,
                     const std::vector<std::uint32_t>& current,
                     const std::vector<std::uint32_t>& target);

/// The machine's CPUs within task tid's cgroup cpuset (all of them when it has none, or none of
/// them is in the machine).
std::vector<std::uint32_t> allowed_cpus(const Planner& planner, ProcSource& proc, pid_t tid);

/// apply: what the Applier did to each task to place.
struct Applied {
    bool applied = false;
    control::Json moved = control::Json::array();   ///< {tid, from, to}
    control::Json failed = control::Json::array();  ///< {tid, error}
};
Applied apply_plan(AppState& app, const Classified& tasks, const Plan& plan, bool apply,
                   PassContext& context);

/// record: a migration in the application's counters, history, log and the state file (and
/// ages its matrix when mapping.age_after_migration).
void record_migration(AppState& app, const Classified& tasks, const Plan& plan,
                      const control::Json& moved, PassContext& context);
/// record: the bindings cdsmd manages from now on and the CPUs the application holds.
void record_claims(AppState& app, const Classified& tasks, const Plan& plan, bool adopt_bindings,
                   bool dry_run);

}  // namespace cdsm::cdsmd
