// SPDX-License-Identifier: GPL-2.0
#include "pass.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cdsm/cpu_list.hpp>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iterator>
#include <set>

namespace cdsm::cdsmd {

using control::Json;

namespace {

// Until an application has enough data to be mapped it is looked at every kWaitingInterval,
// and its interval starts adapting from the minimum at its first mapping.
constexpr std::chrono::milliseconds kWaitingInterval{250};

std::string not_enough_events(double events, std::uint64_t min_events) {
    return fmt::format("{:.0f} communication events so far, mapping.min_events is {}", events,
                       min_events);
}

// The affinity rules for one task: updates what cdsmd remembers of it from what /proc shows
// now and returns its role. `foreign_now`: it has just been found bound by another program.
TaskRole classify_task(TaskState& ts, const TaskReading& r, const std::string& process_comm,
                       const Config& config, std::uint64_t now, std::uint64_t tick_ns,
                       const std::string& label, bool& foreign_now) {
    const cdsm_task_info& t = r.task;
    TaskFacts f;
    f.affinity = r.affinity;
    f.process_comm = process_comm;
    const std::uint64_t start_ns = r.stat.start_ticks * tick_ns;
    f.runnable = ts.runnable.update(r.stat.runnable_ns, start_ns, now, r.stat.slices, r.stat.state);
    f.runnable_min = ts.runnable.steady();
    f.busy_before = ts.role == TaskRole::kPlace;
    f.age_s = now > start_ns ? double(now - start_ns) / 1e9 : 0;
    f.bound_cpu = ts.bound_cpu;
    f.foreign_before = ts.foreign;
    const bool differs = ts.bound_cpu && f.affinity != std::vector<std::uint32_t>{*ts.bound_cpu};
    if (!differs) {
        if (!ts.changed_mask.empty() && ts.bound_cpu && !ts.foreign) {
            spdlog::info(
                "{}: task {} ({}) is back on CPU {} after {:.0f} ms on {}: a transient "
                "change, not another program's binding",
                label, t.tid, t.comm, *ts.bound_cpu, double(now - ts.changed_ns) / 1e6,
                format_cpu_list(ts.changed_mask));
        }
        ts.changed_mask.clear();
    } else if (ts.changed_mask.empty()) {
        // The first pass that reads a mask other than cdsmd's: how long the task stays off
        // its CPU (whatever masks it goes through) decides between transient and binding.
        ts.changed_mask = f.affinity;
        ts.changed_ns = now;
    }
    f.changed_for_s = differs ? double(now - ts.changed_ns) / 1e9 : 0;
    auto& launch = ts.launch_masks;
    const bool known = std::find(launch.begin(), launch.end(), f.affinity) != launch.end();
    if (!ts.bound_cpu && !known && !f.affinity.empty() && launch.size() < 4) {
        launch.push_back(f.affinity);
    }
    f.launch_mask = ts.bound_cpu && known;
    ts.role = classify(f, config);
    if (ts.role != TaskRole::kForeign && ts.role != TaskRole::kChanging && differs) {
        spdlog::info(
            "{}: task {} ({}) was re-bound to {} during its start-up or back to its launch "
            "binding; placing it again",
            label, t.tid, t.comm, format_cpu_list(f.affinity));
        ts.bound_cpu.reset();
        ts.changed_mask.clear();
    }
    foreign_now = ts.role == TaskRole::kForeign && !ts.foreign;
    if (foreign_now) {
        ts.foreign = true;
        spdlog::warn(
            "{}: task {} ({}) has affinity {} but cdsmd bound it to CPU {}: "
            "another program changed it, leaving the task alone",
            label, t.tid, t.comm, format_cpu_list(f.affinity), ts.bound_cpu.value_or(0));
    }
    return ts.role;
}

void log_plan(const std::string& label, const CommMatrix& sub, const Classified& tasks,
              const Plan& plan) {
    if (!spdlog::should_log(spdlog::level::debug)) return;
    std::vector<std::string> partners;
    for (std::size_t i = 0; i < sub.size(); ++i) {
        std::size_t best = i;
        for (std::size_t j = 0; j < sub.size(); ++j) {
            if (sub.at(i, j) > (best == i ? 0 : sub.at(i, best))) best = j;
        }
        partners.push_back(fmt::format("{}>{}", tasks.tids[i], best == i ? 0 : tasks.tids[best]));
    }
    spdlog::debug("{}: strongest partners {}; cpus {} -> {}, cost {:.0f} -> {:.0f}", label,
                  fmt::join(partners, " "), fmt::join(tasks.current, ","),
                  fmt::join(plan.target_cpus, ","), plan.cost_before, plan.cost_after);
}

// record: the plan in the decision (the CPU of each task by matrix index, null for those not
// placed) and the application's costs.
void record_plan(AppState& app, Json& d, const Classified& tasks, const Plan& plan,
                 std::size_t task_count, const MapRequest& req, bool placing) {
    app.planned = true;
    d["cost_before"] = plan.cost_before;
    d["cost_after"] = plan.cost_after;
    d["time_before_s"] = plan.time_before_s;
    d["time_after_s"] = plan.time_after_s;
    d["changed"] = plan.changed;
    d["rule"] = plan.rule;
    if (req.baselines) d["baselines"] = plan.baselines;
    app.cost_current = plan.changed && placing ? plan.cost_after : plan.cost_before;
    app.cost_best = plan.cost_after;
    app.time_current_s = plan.changed && placing ? plan.time_after_s : plan.time_before_s;
    app.time_best_s = plan.time_after_s;
    Json placement = Json::array();
    for (std::size_t k = 0; k < task_count; ++k) placement.push_back(nullptr);
    for (std::size_t k = 0; k < tasks.tids.size(); ++k)
        placement[tasks.indices[k]] = plan.target_cpus[k];
    d["placement"] = placement;
}

}  // namespace

std::string app_label(const cdsm_app_info& info, const std::string& name) {
    return fmt::format("application {} ({})", info.app_id, name);
}

// ---- observe -------------------------------------------------------------------------------

const std::string& check_environment(AppState& app, pid_t tgid, ProcSource& proc,
                                     std::span<const std::string> launchers) {
    // An exec replaces the environment (a launcher's child becomes an MPI rank): read it again
    // when the process's command changed.
    const std::optional<std::string> now = proc.comm(tgid);
    if (auto it = app.env_by_tgid.find(tgid); it != app.env_by_tgid.end()) {
        // No command: the process is gone, or on its way out, before the module marked its
        // tasks exited. What was read of it stays: an ended run is still shown by rank. (Read
        // as an exec to no command, its rank was dropped for an empty environment: a GROMACS
        // rank stopped at the run's end lost its label, apps-gromacs.)
        if (!now || (it->second.comm == *now && it->second.read)) return it->second.comm;
        app.env_by_tgid.erase(it);
    }
    std::string comm = now.value_or("");
    auto env = proc.environ(tgid);
    const bool read = env.has_value();
    if (!env) {
        // Read again next pass: an MPI rank caught in its exec would otherwise never get a rank.
        spdlog::debug("{}: cannot read /proc/{}/environ yet (CDSM_DISABLE and ranks unknown)",
                      app_label(app.info, app.name), tgid);
        env.emplace();
    }
    EnvFacts facts = env_facts(*env);
    if (is_launcher(comm, launchers)) facts.rank.reset();
    if (facts.opts_out && !app.opted_out) {
        app.opted_out = true;
        spdlog::info("{}: opts out (CDSM_DISABLE in the environment of process {}); not placing it",
                     app_label(app.info, app.name), tgid);
    }
    return app.env_by_tgid.insert_or_assign(tgid, ProcessEnv{std::move(comm), facts, read})
        .first->second.comm;
}

Observation observe(AppState& app, KernelSource& kernel, ProcSource& proc,
                    std::span<const std::string> launchers) {
    Observation seen;
    seen.tasks = kernel.tasks(app.info.app_id);
    // The aged matrix: the mapping follows what the application does now.
    seen.matrix = kernel.matrix(app.info.app_id, kernel::MatrixView::aged).matrix;
    // Once per process and pass: its command (launchers are known by it) and, after an exec,
    // its environment.
    for (const cdsm_task_info& t : seen.tasks) {
        if (!(t.flags & CDSM_TASK_EXITED) && !seen.process_comm.count(t.tgid))
            seen.process_comm.emplace(t.tgid, check_environment(app, t.tgid, proc, launchers));
    }
    // Processes the module no longer lists: nothing of them is kept. Those whose tasks all
    // exited keep their facts while the module lists the tasks (at most max_tasks of them): an
    // ended run's matrix is still shown by rank (cdsmctl show --by rank --view whole).
    std::set<pid_t> listed, listed_tids;
    for (const cdsm_task_info& t : seen.tasks) listed.insert(t.tgid), listed_tids.insert(t.tid);
    std::erase_if(app.env_by_tgid, [&](const auto& kv) { return !listed.count(kv.first); });
    std::erase_if(app.last_cpu, [&](const auto& kv) { return !listed_tids.count(kv.first); });
    return seen;
}

void note_new_tasks_cpus(AppState& app, const Observation& seen, ProcSource& proc) {
    for (const cdsm_task_info& t : seen.tasks) {
        if ((t.flags & CDSM_TASK_EXITED) || app.last_cpu.contains(t.tid)) continue;
        if (const auto stat = proc.task_stat(t.tgid, t.tid); stat && stat->processor >= 0)
            app.last_cpu[t.tid] = static_cast<std::uint32_t>(stat->processor);
    }
}

std::vector<TaskReading> read_tasks(const Observation& seen, ProcSource& proc) {
    std::vector<TaskReading> live;
    const std::uint64_t tick_ns = 1000000000u / proc.ticks_per_second();
    for (const cdsm_task_info& t : seen.tasks) {
        if (t.flags & CDSM_TASK_EXITED) continue;
        auto stat = proc.task_stat(t.tgid, t.tid);
        // A task that started after the module's task joined is another with its number (the
        // module's exited and the id was reused): not the application's.
        if (stat && stat->start_ticks * tick_ns > t.arrival_ns) continue;
        auto mask = proc.affinity(t.tid);
        if (stat && mask) live.push_back({t, *stat, std::move(*mask)});
    }
    return live;
}

// ---- classify ------------------------------------------------------------------------------

Classified classify_tasks(AppState& app, const std::vector<TaskReading>& tasks,
                          const std::map<pid_t, std::string>& process_comm, PassContext& context,
                          std::uint64_t now) {
    const std::string label = app_label(app.info, app.name);
    const std::uint64_t tick_ns = 1000000000u / context.proc.ticks_per_second();
    Classified out;
    std::set<pid_t> present;
    for (const TaskReading& r : tasks) {
        const cdsm_task_info& t = r.task;
        present.insert(t.tid);
        if (r.stat.processor >= 0)
            app.last_cpu[t.tid] = static_cast<std::uint32_t>(r.stat.processor);
        TaskState& ts = app.tasks.try_emplace(t.tid).first->second;
        const auto comm = process_comm.find(t.tgid);
        bool foreign_now = false;
        const TaskRole role =
            classify_task(ts, r, comm == process_comm.end() ? std::string() : comm->second,
                          context.config, now, tick_ns, label, foreign_now);
        if (foreign_now) context.save_state();
        if (role == TaskRole::kChanging) {
            out.changing.push_back(fmt::format("{} ({})", t.tid, format_cpu_list(r.affinity)));
        }
        if (role == TaskRole::kForeign && r.affinity.size() == 1) {
            out.foreign_cpus.push_back(r.affinity[0]);
        }
        if (role != TaskRole::kPlace) continue;
        out.indices.push_back(t.index);
        out.tids.push_back(t.tid);
        out.tgids.push_back(t.tgid);
        out.start_ticks.push_back(r.stat.start_ticks);
        out.current.push_back(static_cast<std::uint32_t>(r.stat.processor));
        out.masks.push_back(r.affinity);
    }
    std::erase_if(app.tasks, [&](const auto& kv) { return !present.count(kv.first); });
    return out;
}

// ---- arbitrate -----------------------------------------------------------------------------

std::vector<std::uint32_t> allowed_cpus(const Planner& planner, ProcSource& proc, pid_t tid) {
    const std::vector<std::uint32_t> machine = planner.machine_cpus();
    const auto cgroup = proc.cpuset(tid);
    if (!cgroup) return machine;
    std::vector<std::uint32_t> allowed;
    for (std::uint32_t c : machine) {
        if (std::find(cgroup->begin(), cgroup->end(), c) != cgroup->end()) allowed.push_back(c);
    }
    return allowed.empty() ? machine : allowed;
}

Arbitration arbitrate(const std::vector<std::uint32_t>& allowed,
                      const std::set<std::uint32_t>& others,
                      const std::vector<std::uint32_t>& foreign, std::size_t tasks) {
    Arbitration out;
    for (std::uint32_t c : allowed) {
        if (!others.count(c) && std::find(foreign.begin(), foreign.end(), c) == foreign.end()) {
            out.available.push_back(c);
        }
    }
    if (out.available.size() < tasks) {
        // More runnable tasks than free PUs: over-subscribe only the application's own allowed
        // set, never PUs other applications' placed tasks run on.
        if (!others.empty()) {
            out.refused =
                fmt::format("{} runnable tasks but only {} free CPUs (other applications hold {})",
                            tasks, out.available.size(), others.size());
        } else if (out.available.empty()) {
            out.available = allowed;
        }
    }
    return out;
}

// ---- apply ---------------------------------------------------------------------------------

// One task as the settle wait sees it: its tid and mask.
static std::string task_item(pid_t tid, const std::vector<std::uint32_t>& mask) {
    return fmt::format("{}:{}", tid, fmt::join(mask, ","));
}

Applied apply_plan(AppState& app, const Classified& tasks, const Plan& plan, bool apply,
                   PassContext& context) {
    Applied out;
    out.applied = apply;
    if (!apply) return out;
    const Topology& machine = context.planner.machine();
    // A pass can be long: each task must still be the one planned for (its start time as read
    // then), not another that got its number since. (The window left is between this read and
    // the affinity call, microseconds, where it was the whole pass.)
    std::vector<pid_t> tids;
    std::vector<PuId> pus;
    std::vector<pid_t> replaced;
    std::vector<std::pair<std::size_t, std::vector<std::uint32_t>>> rebound;
    for (std::size_t k = 0; k < tasks.tids.size(); ++k) {
        const auto now = context.proc.task_stat(tasks.tgids[k], tasks.tids[k]);
        if (!now || (k < tasks.start_ticks.size() && now->start_ticks != tasks.start_ticks[k])) {
            replaced.push_back(tasks.tids[k]);
            continue;
        }
        // ... and still bound as this pass read it. A mask set since (a program binding its own
        // thread while cdsmd planned) is not cdsmd's to undo: the migration would have replaced
        // it unseen, and the task, back on the CPU cdsmd gave it, would never be known as bound
        // by another program (pass_test ABindingMadeWhileAPassPlannedIsNotUndone). The next
        // pass reads it.
        if (auto mask = context.proc.affinity(tasks.tids[k]);
            mask && k < tasks.masks.size() && *mask != tasks.masks[k]) {
            rebound.emplace_back(k, std::move(*mask));
            continue;
        }
        tids.push_back(tasks.tids[k]);
        pus.push_back(*machine.find_os_index(plan.target_cpus[k]));
    }
    MigrationReport r = context.applier.apply(tids, Placement(pus), machine);
    r.vanished.insert(r.vanished.end(), replaced.begin(), replaced.end());
    std::map<pid_t, std::size_t> slot;
    for (std::size_t k = 0; k < tasks.tids.size(); ++k) slot[tasks.tids[k]] = k;
    for (pid_t tid : r.moved) {
        const std::size_t k = slot[tid];
        out.moved.push_back({{"tid", tid}, {"from", tasks.masks[k]}, {"to", plan.target_cpus[k]}});
        app.tasks[tid].bound_cpu = plan.target_cpus[k];
        ++app.moves[tid];
        // cdsmd's own binding is no change of the application's: the settle wait does not
        // start again for it (on 6.1 under load it held a phase's second placement 5 s).
        if (app.task_set.erase(task_item(tid, tasks.masks[k])))
            app.task_set.insert(task_item(tid, {plan.target_cpus[k]}));
    }
    for (pid_t tid : r.unchanged) app.tasks[tid].bound_cpu = plan.target_cpus[slot[tid]];
    for (pid_t tid : r.vanished) app.tasks.erase(tid);  // exited mid-migration
    const auto fail = [&](pid_t tid, const std::string& why) {
        out.failed.push_back({{"tid", tid}, {"error", why}});
        spdlog::warn("{}: task {} not moved to CPU {}: {}", app_label(app.info, app.name), tid,
                     plan.target_cpus[slot[tid]], why);
    };
    for (const auto& [k, mask] : rebound) {
        const std::string why =
            fmt::format("its affinity became {} during the pass", format_cpu_list(mask));
        out.failed.push_back({{"tid", tasks.tids[k]}, {"error", why}});
        spdlog::info(
            "{}: task {} not moved to CPU {}: {} (another program's binding, looked at "
            "in the next pass)",
            app_label(app.info, app.name), tasks.tids[k], plan.target_cpus[k], why);
    }
    for (pid_t tid : r.denied) fail(tid, "not permitted (EPERM)");
    for (pid_t tid : r.outside_cpuset) fail(tid, "CPU outside the task's cgroup cpuset");
    for (const auto& [tid, err] : r.failed) fail(tid, std::strerror(err));
    return out;
}

// ---- record --------------------------------------------------------------------------------

void record_migration(AppState& app, const Classified& tasks, const Plan& plan, const Json& moved,
                      PassContext& context) {
    ++app.migrations;
    if (context.config.age_after_migration) {
        try {
            context.kernel.age(app.info.app_id);
        } catch (const SystemError& e) {
            if (e.err() != ENOENT) throw;
        }
    }
    spdlog::info("{}: migrated {} of {} tasks, cost {:.0f} -> {:.0f} ({:+.1f} %){}",
                 app_label(app.info, app.name), moved.size(), tasks.tids.size(), plan.cost_before,
                 plan.cost_after,
                 plan.cost_before > 0
                     ? 100.0 * (plan.cost_after - plan.cost_before) / plan.cost_before
                     : 0.0,
                 reason_note(plan.why));
    app.history.push_back({{"time_ns", context.proc.now_ns()},
                           {"moved", moved},
                           {"cost_before", plan.cost_before},
                           {"cost_after", plan.cost_after},
                           {"why", reason_name(plan.why)},
                           {"rule", plan.rule}});
    while (app.history.size() > kHistory) app.history.pop_front();
    context.save_state();
}

void record_claims(AppState& app, const Classified& tasks, const Plan& plan, bool adopt_bindings,
                   bool dry_run) {
    // A task already bound to the one CPU the plan keeps it on (by its launcher or runtime) is
    // managed by cdsmd from now on, as if cdsmd had bound it there: a later change is someone
    // else's.
    if (adopt_bindings) {
        for (std::size_t k = 0; k < tasks.tids.size(); ++k) {
            auto& b = app.tasks[tasks.tids[k]].bound_cpu;
            if (!b && tasks.masks[k] == std::vector<std::uint32_t>{plan.target_cpus[k]})
                b = plan.target_cpus[k];
        }
    }
    // PUs held: where cdsmd bound the tasks (or, in a dry run, where it would).
    app.claimed.clear();
    for (std::size_t k = 0; k < tasks.tids.size(); ++k) {
        const auto& b = app.tasks[tasks.tids[k]].bound_cpu;
        if (dry_run || (b && *b == plan.target_cpus[k])) app.claimed.push_back(plan.target_cpus[k]);
    }
}

// ---- settle and confirm --------------------------------------------------------------------

// What the tasks to place look like: one item per task (tid and mask) and per process (command).
std::set<std::string> task_set_of(const Classified& tasks,
                                  const std::map<pid_t, std::string>& process_comm) {
    std::set<std::string> items;
    for (std::size_t k = 0; k < tasks.tids.size(); ++k)
        items.insert(task_item(tasks.tids[k], tasks.masks[k]));
    for (const auto& [tgid, comm] : process_comm) items.insert(fmt::format("{}={}", tgid, comm));
    return items;
}

// A task item (task_item) of a task another program bound: it left the tasks to place, and the
// move that frees the CPU it took is due at once (vm-lifecycle).
static bool bound_by_another(const AppState& app, const std::string& item) {
    pid_t tid = 0;
    const char* end = item.data() + item.size();
    const auto [p, ec] = std::from_chars(item.data(), end, tid);
    if (ec != std::errc() || p == end || *p != ':') return false;  // a process's command
    const auto it = app.tasks.find(tid);
    return it != app.tasks.end() && it->second.role == TaskRole::kForeign;
}

// How much longer the tasks to place must stay as they are: half the time cdsmd has seen the
// application (since its first pass, events or not), within [settle_ms, settle_max_ms], since
// they last changed; settle_ms when `short_wait` (the threads OMP_NUM_THREADS announced have
// come: cdsmd waited for them, and they end the start-up). A task joining them, a mask or a
// command changing and a task leaving them (exited or idle) restart the clock: an ending job's
// ranks exit one by one, and the ones left for a moment are no placement to plan (the lab's soak:
// two ranks of an ending job were moved by the rules' repair 1.5 s after two others exited). A
// task another program bound leaves them without restarting it (bound_by_another).
std::uint64_t unsettled_ns(AppState& app, std::set<std::string> items, std::uint64_t now,
                           const Config& config, bool short_wait) {
    constexpr std::uint64_t kMs = 1000000;
    const std::uint64_t settle_ns =
        short_wait
            ? config.settle_ms * kMs
            : std::clamp((now - std::min(now, app.first_seen_ns)) / 2, config.settle_ms * kMs,
                         std::max(config.settle_ms, config.settle_max_ms) * kMs);
    std::vector<std::string> left;
    std::ranges::set_difference(app.task_set, items, std::back_inserter(left));
    if (!std::includes(app.task_set.begin(), app.task_set.end(), items.begin(), items.end()) ||
        !std::ranges::all_of(left, [&](const std::string& i) { return bound_by_another(app, i); }))
        app.task_set_since_ns = now;
    app.task_set = std::move(items);
    const std::uint64_t settled = now - std::min(now, app.task_set_since_ns);
    return settled >= settle_ns ? 0 : settle_ns - settled;
}

// Processes that said how many threads they will run (OMP_NUM_THREADS) and have fewer busy:
// "process P: k of N". A hybrid code's ranks spend their set-up in their main threads (GROMACS:
// 20 s in the lab); placed then, two ranks that talk share a core, and each rank's OpenMP
// workers, started later on their main thread's one-CPU mask, make cdsmd move the main threads
// again to give each rank a core. An MPI rank is waited for until its threads come, however
// long its set-up lasts (its input and the host's load decide that: on a host at load 15 the
// lab's GROMACS ranks were still setting up 80 s in, past any fixed limit, and were moved
// twice); other processes only while `within_limit` (mapping.threads_wait_ms).
std::vector<std::string> threads_to_come(const AppState& app, const Classified& tasks,
                                         bool within_limit) {
    std::map<pid_t, std::uint32_t> busy;
    for (pid_t tgid : tasks.tgids) ++busy[tgid];
    std::vector<std::string> out;
    for (const auto& [tgid, n] : busy) {
        const auto env = app.env_by_tgid.find(tgid);
        if (env == app.env_by_tgid.end()) continue;
        const EnvFacts& facts = env->second.facts;
        if (!facts.rank && !within_limit) continue;
        if (facts.threads && n < *facts.threads)
            out.push_back(fmt::format("{} {}: {} of {}",
                                      facts.rank ? "MPI rank process" : "process", tgid, n,
                                      *facts.threads));
    }
    return out;
}

// A placement that only lowers the cost is applied once the events counted after it was first
// proposed show the gain too. Consecutive passes read mostly the same events (the aged matrix
// is aged only after a migration, by default): on 6.1 under load, two passes 0.5 s apart
// "confirmed" a 7.5 % gain for an 8-rank ring already placed well, and two ranks moved a second
// time. So the first proposal notes the tasks' whole-run matrix; a later pass that proposes a
// placement for the same tasks measures it against the current one on the events since alone
// (an independent sample), by the same margins (min_gain, min_gain_sigma). Fewer than
// min_events since, or no gain beyond the margins yet: it waits, and the sample grows as long as
// every pass proposes a placement for those tasks (a pass that proposes none ends the wait).
enum class Confirmation { kApply, kWait };

// The margins a cheaper placement must beat (mapping.min_gain, min_gain_sigma): min_gain
// twice over (kRecentGainFactor, at most 0.5) within kRecentMoveNs of the application's last
// migration. When several threads talk about as much with one partner (GROMACS's OpenMP
// workers with their main thread, within 5 % of each other over the whole run), which of them
// talks most changes from one aged matrix to the next: in the lab cdsmd confirmed a gain of
// 7.7 % 9.5 s after placing them and moved two of them a second time. Counting noise does not
// cover it (the events are not independent), so right after a move cdsmd asks more of the next.
constexpr std::uint64_t kRecentMoveNs = 60'000'000'000;
constexpr double kRecentGainFactor = 2;
static RemapOptions remap_options(const Config& config, const AppState& app, bool recent) {
    const double gain =
        recent ? std::min(0.5, config.min_gain * kRecentGainFactor) : config.min_gain;
    return {.min_gain = std::max(gain, config.min_gain),
            .min_gain_sigma = config.min_gain_sigma,
            .rules = app.rules.value_or(config.placement_rules)};
}

// Whether the application's last migration was less than kRecentMoveNs before now.
static bool moved_recently(const AppState& app, std::uint64_t now) {
    if (app.history.empty()) return false;
    const std::uint64_t at = app.history.back().value("time_ns", std::uint64_t{0});
    return now >= at && now - at < kRecentMoveNs;
}

// A placement that breaks the rules (two busy tasks on one core while another is idle, say: an
// MPI rank bound by mpirun to one core with its OpenMP worker) is moved whatever the gain, but
// not on the matrix of the pass that first saw it: where its tasks go is decided again once
// min_events more events were counted, as for a cheaper placement. In the lab, a rank placed on
// a young matrix at once was moved a second time 10 s later (a 49 % gain) when its workers'
// partners showed.
// `read`: the tasks' whole-run matrix if the pass read it already (else it is read here).
Confirmation confirm_plan(AppState& app, const Classified& tasks, const Plan& plan,
                          const RemapOptions& options, PassContext& context,
                          std::optional<CommMatrix> read) {
    if (!plan.changed || (plan.why != MoveReason::kCheaper && plan.why != MoveReason::kRule)) {
        app.pending.reset();
        return Confirmation::kApply;
    }
    const Config& config = context.config;
    CommMatrix whole =
        read ? std::move(*read)
             : submatrix(context.kernel.matrix(app.info.app_id, kernel::MatrixView::whole).matrix,
                         tasks.indices);
    if (!app.pending || app.pending->tids != tasks.tids) {
        app.pending = AppState::Pending{tasks.tids, std::move(whole)};
        return Confirmation::kWait;
    }
    CommMatrix fresh(whole.size());
    whole.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value v) {
        const CommMatrix::Value before = app.pending->whole.at(i, j);
        if (v > before) fresh.set(i, j, v - before);
    });
    if (fresh.total() < config.min_events) return Confirmation::kWait;
    if (plan.why == MoveReason::kRule) {
        spdlog::debug("{}: the rules' repair, on {:.0f} events since the break was first seen",
                      app_label(app.info, app.name), fresh.total());
        app.pending.reset();
        return Confirmation::kApply;
    }
    const double now = context.planner.cost(fresh, tasks.current);
    const double then = context.planner.cost(fresh, plan.target_cpus);
    const double noise = context.planner.difference_noise(fresh, tasks.current, plan.target_cpus);
    const bool gain = worth_moving(now, then, noise, options);
    spdlog::debug(
        "{}: the proposal on the {:.0f} events since it was first made: cost {:.0f} -> "
        "{:.0f}, noise {:.1f}: {}",
        app_label(app.info, app.name), fresh.total(), now, then, noise,
        gain ? "confirmed" : "not confirmed yet");
    if (!gain) return Confirmation::kWait;  // the sample grows while proposals go on
    app.pending.reset();
    return Confirmation::kApply;
}

// ---- the window ----------------------------------------------------------------------------

void note_whole(AppState& app, const std::vector<pid_t>& tids, const CommMatrix& whole,
                std::uint64_t now_ns) {
    if (!app.wholes.empty() && now_ns < app.wholes.back().ns + kWindowStepNs) return;
    app.wholes.push_back({now_ns, tids, whole});
    // The window's start needs the last note at or before it; older ones are forgotten.
    const std::uint64_t start = now_ns - std::min(now_ns, kWindowNs);
    while (app.wholes.size() > 1 && app.wholes[1].ns <= start) app.wholes.pop_front();
}

// Each tid's row in a note's matrix.
static std::map<pid_t, std::size_t> rows_of(const std::vector<pid_t>& tids) {
    std::map<pid_t, std::size_t> rows;
    for (std::size_t i = 0; i < tids.size(); ++i) rows[tids[i]] = i;
    return rows;
}

CommMatrix window_matrix(const AppState& app, const std::vector<pid_t>& tids,
                         const CommMatrix& whole, std::uint64_t now_ns) {
    const std::uint64_t start = now_ns - std::min(now_ns, kWindowNs);
    std::vector<std::map<pid_t, std::size_t>> index;
    for (const AppState::Whole& w : app.wholes) index.push_back(rows_of(w.tids));
    CommMatrix out(whole.size());
    whole.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value v) {
        CommMatrix::Value base = 0;
        bool found = false;
        for (std::size_t k = 0; k < app.wholes.size(); ++k) {
            const AppState::Whole& w = app.wholes[k];
            if (w.ns > start && found) break;
            const auto a = index[k].find(tids[i]), b = index[k].find(tids[j]);
            if (a == index[k].end() || b == index[k].end()) continue;
            base = w.matrix.at(a->second, b->second);
            found = true;
            if (w.ns > start) break;
        }
        if (v > base) out.set(i, j, v - base);
    });
    return out;
}

Lasting lasting_gain(const AppState& app, const std::vector<pid_t>& tids, const CommMatrix& whole,
                     std::uint64_t now_ns, const Planner& planner,
                     const std::vector<std::uint32_t>& current,
                     const std::vector<std::uint32_t>& target) {
    const std::uint64_t start = now_ns - std::min(now_ns, kWindowNs);
    // The notes the window spans: from the last at or before its start (or the first).
    std::vector<const AppState::Whole*> notes;
    for (const AppState::Whole& w : app.wholes) {
        if (w.ns <= start) notes.clear();
        notes.push_back(&w);
    }
    std::vector<double> gains;
    const auto slice = [&](const AppState::Whole& a, const CommMatrix& b,
                           const std::map<pid_t, std::size_t>& b_index) {
        const auto a_index = rows_of(a.tids);
        CommMatrix s(tids.size());
        for (std::size_t i = 0; i < tids.size(); ++i) {
            for (std::size_t j = i + 1; j < tids.size(); ++j) {
                const auto ai = a_index.find(tids[i]), aj = a_index.find(tids[j]);
                const auto bi = b_index.find(tids[i]), bj = b_index.find(tids[j]);
                if (ai == a_index.end() || aj == a_index.end() || bi == b_index.end() ||
                    bj == b_index.end())
                    continue;
                const CommMatrix::Value va = a.matrix.at(ai->second, aj->second),
                                        vb = b.at(bi->second, bj->second);
                if (vb > va) s.set(i, j, vb - va);
            }
        }
        gains.push_back(planner.cost(s, current) - planner.cost(s, target));
    };
    for (std::size_t k = 0; k + 1 < notes.size(); ++k)
        slice(*notes[k], notes[k + 1]->matrix, rows_of(notes[k + 1]->tids));
    if (!notes.empty() && now_ns >= notes.back()->ns + kWindowStepNs / 2)
        slice(*notes.back(), whole, rows_of(tids));
    Lasting l;
    l.full = !notes.empty() && notes.front()->ns <= start;
    l.slices = gains.size();
    if (l.slices < 2) return l;
    for (double g : gains) l.mean += g;
    l.mean /= double(l.slices);
    double var = 0;
    for (double g : gains) var += (g - l.mean) * (g - l.mean);
    l.error = std::sqrt(var / double(l.slices - 1) / double(l.slices));
    l.lasts = l.full && l.slices >= kMinSlices && l.mean > 0 && l.mean >= kLastingSigma * l.error;
    return l;
}

// ---- the pass ------------------------------------------------------------------------------

// Tasks seen sharing a CPU while another was free in this many passes in a row, over at least
// this long, wait for each other, whatever their masks allow.
constexpr std::uint32_t kStuckPasses = 3;
constexpr std::uint64_t kStuckNs = 2'000'000'000;

PassResult map_pass(AppState& app, const MapRequest& req, PassContext& context) {
    const Config& config = context.config;
    // A process tree tracked from before its exec is named after what it runs now.
    if (!app.named && app.info.root_pid > 0) {
        if (auto comm = context.proc.comm(app.info.root_pid)) app.name = *comm;
    }
    const std::string label = app_label(app.info, app.name);
    const std::string algorithm = req.algorithm.empty() ? config.algorithm : req.algorithm;
    ++app.passes;
    PassResult result;
    Json& d = result.decision;
    d = {{"app_id", app.info.app_id},   {"name", app.name}, {"algorithm", algorithm},
         {"mode", mode_name(app.mode)}, {"applied", false}, {"changed", false}};
    bool waiting = false;
    std::optional<std::chrono::milliseconds> next_in;  // sooner than the interval says
    const auto finish = [&](bool changed) {
        if (req.from_timer && !waiting) app.interval.update(changed);
        app.due = Clock::now() + (waiting ? kWaitingInterval : app.interval.current());
        if (next_in) app.due = std::min(app.due, Clock::now() + *next_in);
        app.last_mapped_ns = context.proc.now_ns();
        d["interval_ms"] = app.interval.current().count();
        app.last = d;
        return result;
    };
    const auto skip = [&](const std::string& reason, bool keep_claims = false) {
        d["skipped"] = reason;
        if (!keep_claims) app.claimed.clear();
        spdlog::debug("{}: not mapped: {}", label, reason);
        return finish(false);
    };

    // The application's age, for the settle wait, counts from the first pass: an MPI job spends
    // seconds creating tasks with too few events to map before its tasks first look placeable.
    if (!app.first_seen_ns) app.first_seen_ns = context.proc.now_ns();
    const Observation seen = observe(app, context.kernel, context.proc, context.config.launchers);
    if (app.opted_out) return skip("opted out (CDSM_DISABLE=1)");
    // Too few events among all its tasks: no need to read every task's /proc files (hundreds
    // of reads per pass for a 64-task application).
    waiting = !app.planned;
    if (const double total = seen.matrix.total(); total < config.min_events) {
        note_new_tasks_cpus(app, seen, context.proc);
        return skip(not_enough_events(total, config.min_events));
    }
    const std::uint64_t now = context.proc.now_ns();
    const Classified tasks =
        classify_tasks(app, read_tasks(seen, context.proc), seen.process_comm, context, now);
    if (!tasks.changing.empty()) {
        // Not mapped until each changed mask is confirmed or gone. The application keeps the
        // CPUs it claimed: its tasks are expected back on them.
        return skip(
            fmt::format("affinity changed, confirming: {}", fmt::join(tasks.changing, ", ")), true);
    }
    if (tasks.tids.size() < 2)
        return skip(fmt::format("{} runnable task(s), nothing to map", tasks.tids.size()));
    const CommMatrix sub = submatrix(seen.matrix, tasks.indices);
    if (sub.total() < config.min_events)
        return skip(not_enough_events(sub.total(), config.min_events));

    // Processes still short of the threads OMP_NUM_THREADS announces: MPI ranks until they come,
    // others until the application is threads_wait_ms old (0: none waits).
    const std::uint64_t age = now - std::min(now, app.first_seen_ns),
                        threads_limit = std::uint64_t(config.threads_wait_ms) * 1000000;
    const std::vector<std::string> coming = config.threads_wait_ms
                                                ? threads_to_come(app, tasks, age < threads_limit)
                                                : std::vector<std::string>{};
    if (!coming.empty()) app.awaited_threads = true;

    // A timer's pass waits until the tasks to place stopped changing: each change while an MPI
    // job starts (threads created, ranks exec'd, masks set by mpirun and libpsm2) would be a
    // migration of its own. (A request's pass maps what it sees.)
    if (const std::uint64_t wait_ns =
            req.from_timer ? unsettled_ns(app, task_set_of(tasks, seen.process_comm), now, config,
                                          app.awaited_threads && coming.empty())
                           : 0) {
        next_in = std::chrono::milliseconds(wait_ns / 1000000 + 1);
        return skip(
            fmt::format("the tasks to place changed {:.0f} ms ago; waiting {:.0f} ms more for "
                        "them to settle (mapping.settle_ms, settle_max_ms)",
                        double(now - app.task_set_since_ns) / 1e6, double(wait_ns) / 1e6),
            true);
    }

    // ... and until each process that said how many threads it runs has that many busy.
    if (req.from_timer && !coming.empty()) {
        if (age < threads_limit) {
            next_in = std::chrono::milliseconds((threads_limit - age) / 1000000 + 1);
            return skip(fmt::format("waiting for the threads OMP_NUM_THREADS announces ({}), "
                                    "{:.0f} ms more at most for processes that are not MPI ranks "
                                    "(mapping.threads_wait_ms), MPI ranks until they come",
                                    fmt::join(coming, ", "), double(threads_limit - age) / 1e6),
                        true);
        }
        return skip(fmt::format("waiting for the threads OMP_NUM_THREADS announces ({}): MPI "
                                "ranks are placed once their threads came",
                                fmt::join(coming, ", ")),
                    true);
    }
    app.awaited_threads = false;  // they came (or the wait ended): settle waits as usual again

    const Arbitration cpus =
        arbitrate(allowed_cpus(context.planner, context.proc, tasks.tids.front()),
                  context.claimed_by_others, tasks.foreign_cpus, tasks.tids.size());
    if (!cpus.refused.empty()) return skip(cpus.refused);

    // Tasks whose masks let them run elsewhere but that the scheduler keeps on one CPU, pass
    // after pass, wait for each other as surely as tasks bound there (in the lab under load,
    // 4 ranks ran two per CPU for 120 s while 2 CPUs of their job idled). One pass's view is
    // not enough: the scheduler spreads such tasks within moments, mostly.
    if (shares_a_cpu(tasks.current, cpus.available)) {
        if (app.stacked_passes++ == 0) app.stacked_since_ns = now;
    } else {
        app.stacked_passes = 0;
    }
    const bool stuck =
        app.stacked_passes >= kStuckPasses && now - std::min(now, app.stacked_since_ns) >= kStuckNs;
    // Tasks cdsmd bound to the CPU they run on: spreading moves the others first (threads
    // created since, which inherit a placed thread's one-CPU mask), not them a second time.
    std::vector<bool> placed;
    for (std::size_t k = 0; k < tasks.tids.size(); ++k) {
        const auto& bound = app.tasks[tasks.tids[k]].bound_cpu;
        placed.push_back(bound && *bound == tasks.current[k]);
    }
    const RemapOptions options = remap_options(config, app, moved_recently(app, now));
    d["min_gain"] = options.min_gain;
    // Tasks cdsmd placed, all of them, are planned again on the last minute of events
    // (kWindowNs), not on the aged matrix (about 2 s of events: the module ages it every
    // second): cdsmd follows a pattern that lasts, not each one the aged matrix shows for a
    // moment. HPCC's b_eff runs rings of randomly ordered ranks, a new one every few seconds: in
    // the lab on 6.1 cdsmd followed them on the aged matrix, 5 migrations in 48 s; over a
    // minute, its rings add up to the structure that lasts. A first placement (tasks the
    // scheduler or a launcher placed, threads that came since) is planned on the aged matrix.
    const CommMatrix* planned_on = &sub;
    CommMatrix window;
    std::optional<CommMatrix> whole_now;  // read by this pass
    const bool replan = std::ranges::all_of(placed, [](bool p) { return p; });
    if (req.from_timer &&
        (replan || app.wholes.empty() || now >= app.wholes.back().ns + kWindowStepNs)) {
        const CommMatrix whole =
            submatrix(context.kernel.matrix(app.info.app_id, kernel::MatrixView::whole).matrix,
                      tasks.indices);
        note_whole(app, tasks.tids, whole, now);
        if (replan) {
            window = window_matrix(app, tasks.tids, whole, now);
            if (window.total() >= config.min_events) {
                planned_on = &window;
                d["planned_on"] = "window";
                spdlog::debug("{}: tasks it placed, planned on the last {:.0f} s: {:.0f} events",
                              label, double(kWindowNs) / 1e9, window.total());
            }
        }
        whole_now = std::move(whole);
    }
    Plan plan = context.planner.plan(*planned_on, tasks.current, tasks.masks, cpus.available,
                                     algorithm, options, req.baselines, stuck, placed);
    log_plan(label, *planned_on, tasks, plan);
    // ... and only for a gain each slice of the window shows (lasting_gain).
    if (planned_on == &window && plan.changed && plan.why == MoveReason::kCheaper) {
        const Lasting l = lasting_gain(app, tasks.tids, *whole_now, now, context.planner,
                                       tasks.current, plan.target_cpus);
        d["lasting"] = {{"full", l.full},
                        {"slices", l.slices},
                        {"mean", l.mean},
                        {"error", l.error},
                        {"lasts", l.lasts}};
        if (!l.lasts) {
            spdlog::debug(
                "{}: the gain does not last: {:.1f} +- {:.1f} a slice over {} "
                "slices of {:.0f} s{} (a mean {:.0f} standard errors above 0 is needed)",
                label, l.mean, l.error, l.slices, double(kWindowStepNs) / 1e9,
                l.full ? "" : ", fewer than the window's", kLastingSigma);
            plan.target_cpus = tasks.current;
            plan.changed = false;
            plan.cost_after = plan.cost_before;
            plan.time_after_s = plan.time_before_s;
            plan.moved = 0;
            plan.why = MoveReason::kNone;
        }
    }

    // A detect application is planned and recorded, never placed. A placement that only lowers
    // the cost waits until events counted after it was proposed show the gain too: one pass's
    // matrix may be noise.
    const bool confirm =
        !req.from_timer || confirm_plan(app, tasks, plan, options, context, std::move(whole_now)) ==
                               Confirmation::kApply;
    const bool place = req.apply && !context.dry_run && app.mode == AppMode::kMap && confirm;
    record_plan(app, d, tasks, plan, seen.tasks.size(), req,
                req.apply && app.mode == AppMode::kMap && confirm);
    if (!confirm) d["pending"] = true;
    const Applied applied = apply_plan(app, tasks, plan, place && plan.changed, context);
    if (!applied.moved.empty()) {
        record_migration(app, tasks, plan, applied.moved, context);
        app.stacked_passes = 0;
    }
    result.moved = applied.moved.size();
    d["applied"] = applied.applied;
    d["moved"] = applied.moved;
    d["failed"] = applied.failed;
    if (app.mode == AppMode::kDetect)
        app.claimed.clear();  // it holds no CPU: other applications may place tasks there
    else if (confirm)
        record_claims(app, tasks, plan, place && !plan.changed, context.dry_run);
    else {
        Plan kept;  // the placement now: a proposal not confirmed yet claims nothing more
        kept.target_cpus = tasks.current;
        record_claims(app, tasks, kept, false, context.dry_run);
    }
    // A detect application's plan differs from its placement at every pass: its interval grows
    // as a settled application's does.
    return finish(plan.changed && app.mode == AppMode::kMap);
}

}  // namespace cdsm::cdsmd
