// SPDX-License-Identifier: GPL-2.0
#include "daemon.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cdsm/cpu_list.hpp>
#include <cdsm/error.hpp>
#include <cdsm/migrator.hpp>
#include <cdsm/version.hpp>
#include <fstream>
#include <iostream>
#include <numeric>

#include "capabilities.hpp"

namespace cdsm::cdsmd {

using control::Json;
using control::ProtocolError;

namespace {

constexpr std::size_t kHistory = 32;
// Runnable shares are measured over at least this window.
constexpr std::uint64_t kShareWindowNs = 200'000'000;
constexpr std::chrono::milliseconds kWaitingInterval{250};

std::string app_label(const cdsm_app_info& info, const std::string& name) {
    return fmt::format("application {} ({})", info.app_id, name);
}

bool is_enoent(const SystemError& e) {
    return e.err() == ENOENT;
}

}  // namespace

Daemon::TaskState Daemon::new_task() {
    TaskState t;
    t.runnable = RunnableShare(kShareWindowNs);
    return t;
}

Daemon::Daemon(Options options, Config config)
    : options_(std::move(options)), config_(std::move(config)), started_(Clock::now()) {}

Daemon::~Daemon() = default;

// ---- set-up -------------------------------------------------------------------------------

void Daemon::open_kernel() {
    device_ = std::make_unique<kernel::Device>(config_.device);
    events_ = std::make_unique<kernel::EventListener>();
    planner_ = std::make_unique<Planner>(Topology::from_system(), config_.costs);
    spdlog::info("machine: {} ({} PUs: {})", planner_->machine().describe(),
                 planner_->machine().pu_count(), format_cpu_list(planner_->machine_cpus()));
}

kernel::Device& Daemon::device() const {
    if (!device_) throw control::ProtocolError("ENODEV", "cdsmd has not opened the cdsm device");
    return *device_;
}

void Daemon::apply_kernel_params() {
    if (config_.kernel.empty()) return;
    cdsm_params p = device().params();
    for (const auto& [name, value] : config_.kernel) {
        if (name == "block_shift") p.block_shift = value;
        if (name == "rearm_rate_bp") p.rearm_rate_bp = value;
        if (name == "rearm_period_ms") p.rearm_period_ms = value;
        if (name == "max_tasks") p.max_tasks = value;
        if (name == "auto_threads") p.auto_threads = value;
        if (name == "retention_s") p.retention_s = value;
        if (name == "age_period_ms") p.age_period_ms = value;
    }
    device().set_params(p);
    spdlog::info("module parameters set: {}", fmt::join(config_.kernel, ", "));
}

namespace {

ServerLimits server_limits(const Config& c) {
    ServerLimits l;
    l.max_clients = c.max_clients;
    l.max_clients_per_user = c.max_clients_per_user;
    l.client_timeout = std::chrono::milliseconds(c.client_timeout_ms);
    return l;
}

}  // namespace

void Daemon::reload() {
    reload_ = false;
    try {
        reload_config();
    } catch (const std::exception& e) {
        spdlog::error("reload failed, keeping the previous configuration: {}", e.what());
    }
}

void Daemon::reload_config() {
    ::sd_notify(0, "RELOADING=1");
    try {
        Config fresh = load_config(options_.config_path, options_.config_explicit);
        if (fresh.socket != config_.socket || fresh.device != config_.device) {
            spdlog::warn("reload: daemon.socket and daemon.device change only on restart");
        }
        const bool costs_changed =
            fresh.costs.core != config_.costs.core || fresh.costs.l2 != config_.costs.l2 ||
            fresh.costs.l3 != config_.costs.l3 || fresh.costs.numa != config_.costs.numa ||
            fresh.costs.package != config_.costs.package ||
            fresh.costs.machine != config_.costs.machine;
        fresh.socket = config_.socket;
        fresh.device = config_.device;
        config_ = std::move(fresh);
        spdlog::set_level(config_.log_level);
        if (costs_changed) {
            planner_ = std::make_unique<Planner>(planner_->machine(), config_.costs);
        }
        for (auto& [id, app] : apps_) app.interval.reconfigure(config_.interval);
        apply_kernel_params();
        rejected_pids_.clear();
        if (server_) server_->set_limits(server_limits(config_));
        spdlog::info("configuration reloaded from {}", options_.config_path.string());
    } catch (...) {
        ::sd_notify(0, "READY=1");
        throw;
    }
    ::sd_notify(0, "READY=1");
}

// ---- state file: what must survive a restart ------------------------------------------------

void Daemon::save_state() const {
    if (config_.state_file.empty() || options_.dry_run) return;
    Json apps = Json::array();
    for (const auto& [id, app] : apps_) {
        Json bound = Json::object(), foreign = Json::array();
        for (const auto& [tid, t] : app.tasks) {
            if (t.bound_cpu) bound[std::to_string(tid)] = *t.bound_cpu;
            if (t.foreign) foreign.push_back(tid);
        }
        apps.push_back({{"app_id", id},
                        {"start_ns", app.info.start_ns},
                        {"name", app.name},
                        {"named", app.named},
                        {"cgroup", app.cgroup},
                        {"migrations", app.migrations},
                        {"bound", bound},
                        {"foreign", foreign},
                        {"history", Json(app.history)}});
    }
    const std::filesystem::path path(config_.state_file);
    const std::filesystem::path tmp = path.string() + ".tmp";
    try {
        // Its directory may also hold the socket, which users must reach: 0755 when created.
        const auto dir = path.parent_path();
        if (!dir.empty() && !std::filesystem::exists(dir)) {
            std::filesystem::create_directories(dir);
            ::chmod(dir.c_str(), 0755);
        }
        const std::string text = Json{{"version", 1},
                                      {"apps", apps},
                                      {"untracked_pids", untracked_pids_},
                                      {"untracked_cgroups", untracked_cgroups_}}
                                     .dump() +
                                 "\n";
        // Private whatever the umask: it names every user's applications. fchmod also fixes a
        // temporary file left with another mode.
        Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (!fd || ::fchmod(fd.get(), 0600) < 0) throw_errno("open " + tmp.string());
        for (std::size_t done = 0; done < text.size();) {
            const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw_errno("write " + tmp.string());
            done += std::size_t(n);
        }
        fd.reset();
        std::filesystem::rename(tmp, path);
    } catch (const std::exception& e) {
        spdlog::warn("cannot save state to {}: {}", path.string(), e.what());
    }
}

void Daemon::load_state() {
    std::ifstream in(config_.state_file);
    if (!in) return;
    const Json state = Json::parse(in, nullptr, false);
    if (state.is_discarded() || !state.contains("apps")) {
        spdlog::warn("state file {} is not valid, ignoring it", config_.state_file);
        return;
    }
    try {
        for (const Json& a : state["apps"]) saved_[a.value("app_id", 0u)] = a;
        // Untracked on request before the restart: the rules still leave them alone (a pid or
        // a directory that is gone by now is dropped at the next scan).
        untracked_pids_ = state.value("untracked_pids", std::set<pid_t>{});
        untracked_cgroups_ = state.value("untracked_cgroups", std::set<std::string>{});
    } catch (const Json::exception& e) {
        spdlog::warn("state file {} is not valid ({}), ignoring it", config_.state_file, e.what());
        saved_.clear();
        untracked_pids_.clear();
        untracked_cgroups_.clear();
        return;
    }
    spdlog::info("state file {}: {} application(s) from a previous run", config_.state_file,
                 saved_.size());
}

// ---- applications ---------------------------------------------------------------------------

Daemon::AppState& Daemon::adopt(const cdsm_app_info& info, const std::string& name) {
    auto [it, added] = apps_.try_emplace(info.app_id);
    AppState& app = it->second;
    app.info = info;
    if (!added) {
        if (!name.empty()) {
            app.name = name;
            app.named = true;
        }
        return app;
    }
    app.named = !name.empty();
    app.interval = AdaptiveInterval(config_.interval);
    app.due = Clock::now();
    app.name = name.empty() ? std::string(info.comm, strnlen(info.comm, sizeof(info.comm))) : name;
    // An application of a previous run (same id, same start time): what cdsmd did to it then
    // still holds, so its bindings and the tasks it left alone carry over.
    if (auto s = saved_.find(info.app_id);
        s != saved_.end() && s->second.value("start_ns", 0ull) == info.start_ns) {
        const Json& j = s->second;
        if (name.empty()) {
            app.name = j.value("name", app.name);
            app.named = j.value("named", false);
        }
        app.migrations = j.value("migrations", 0ull);
        app.cgroup = j.value("cgroup", "");
        for (const auto& [tid, cpu] : j["bound"].items()) {
            app.tasks.try_emplace(std::stoi(tid), new_task()).first->second.bound_cpu =
                cpu.get<std::uint32_t>();
        }
        for (const Json& tid : j["foreign"]) {
            TaskState& t = app.tasks.try_emplace(tid.get<pid_t>(), new_task()).first->second;
            t.foreign = true;
            t.role = TaskRole::kForeign;
        }
        for (const Json& h : j["history"]) app.history.push_back(h);
        spdlog::info("{}: picked up from the previous run ({} task bindings)",
                     app_label(info, app.name), j["bound"].size());
        saved_.erase(s);
    } else {
        spdlog::info("{}: tracked ({}, root pid {}, uid {}, {} tasks)", app_label(info, app.name),
                     kernel::track_kind_name(info.kind), info.root_pid, info.uid, info.nr_tasks);
    }
    if (info.flags & CDSM_APP_ENDED) app.ended_at = Clock::now();
    return app;
}

void Daemon::forget(std::uint32_t app_id) {
    if (apps_.erase(app_id)) save_state();
}

void Daemon::resync() {
    std::set<std::uint32_t> live;
    for (const cdsm_app_info& info : device().list_apps()) {
        live.insert(info.app_id);
        AppState& app = adopt(info);
        if ((info.flags & CDSM_APP_ENDED) && !app.ended_at) {
            app.ended_at = Clock::now();
            app.claimed.clear();
        }
    }
    for (auto it = apps_.begin(); it != apps_.end();) {
        if (live.count(it->first)) {
            ++it;
            continue;
        }
        spdlog::info("{}: no longer in the module, forgotten",
                     app_label(it->second.info, it->second.name));
        it = apps_.erase(it);
    }
    saved_.clear();  // entries not matched now belong to applications that are gone
}

void Daemon::on_events() {
    const auto batch = events_->receive();
    bool apps_changed = batch.lost;
    if (batch.lost) spdlog::warn("netlink events were lost; re-reading the module's state");
    for (const kernel::Event& e : batch.events) {
        spdlog::debug("event {} application {} task {} ({})", kernel::to_string(e.kind), e.app_id,
                      e.tid, e.comm);
        const auto it = apps_.find(e.app_id);
        switch (e.kind) {
            case kernel::Event::Kind::kAppStarted:
                apps_changed = true;
                break;
            case kernel::Event::Kind::kAppEnded:
                apps_changed = true;
                if (it != apps_.end()) {
                    spdlog::info("{}: ended", app_label(it->second.info, it->second.name));
                    it->second.ended_at = Clock::now();
                    it->second.claimed.clear();
                }
                break;
            case kernel::Event::Kind::kTaskJoined:
                // A new thread inherits its creator's mask: place it soon, not at the next
                // tick (within the minimum interval, so that a burst of threads is one pass).
                if (it != apps_.end())
                    it->second.due =
                        std::min(it->second.due,
                                 Clock::now() + std::chrono::milliseconds(config_.interval.min_ms));
                else
                    apps_changed = true;
                break;
            case kernel::Event::Kind::kTaskExited:
                if (it != apps_.end()) it->second.tasks.erase(e.tid);
                break;
        }
    }
    if (apps_changed) resync();
}

void Daemon::release_ended() {
    const auto now = Clock::now();
    const auto after = std::chrono::milliseconds(config_.release_ended_after_ms);
    std::vector<std::uint32_t> done;
    for (const auto& [id, app] : apps_) {
        if (app.ended_at && now >= *app.ended_at + after) done.push_back(id);
    }
    for (std::uint32_t id : done) {
        try {
            if (!options_.dry_run) device().release(id);
            spdlog::info("{}: ended, released", app_label(apps_[id].info, apps_[id].name));
        } catch (const SystemError& e) {
            if (!is_enoent(e)) spdlog::warn("{}", e.what());
        }
        forget(id);
    }
}

// ---- mapping --------------------------------------------------------------------------------

const std::string& Daemon::check_environment(AppState& app, pid_t tgid) {
    // An exec replaces the environment (a launcher's child becomes an MPI rank): read it again
    // when the process's command changed.
    std::string comm = procfs::comm(tgid).value_or("");
    if (auto it = app.env_by_tgid.find(tgid); it != app.env_by_tgid.end()) {
        if (it->second.comm == comm && it->second.read) return it->second.comm;
        app.env_by_tgid.erase(it);
    }
    auto env = procfs::environ(tgid, environment_names());
    const bool read = env.has_value();
    if (!env) {
        // Read again next pass: an MPI rank caught in its exec would otherwise never get a rank.
        spdlog::debug("{}: cannot read /proc/{}/environ yet (CDSM_DISABLE and ranks unknown)",
                      app_label(app.info, app.name), tgid);
        env.emplace();
    }
    if (opts_out(*env) && !app.opted_out) {
        app.opted_out = true;
        spdlog::info("{}: opts out (CDSM_DISABLE in the environment of process {}); not placing it",
                     app_label(app.info, app.name), tgid);
    }
    return app.env_by_tgid
        .insert_or_assign(tgid, ProcessEnv{std::move(comm), std::move(*env), read})
        .first->second.comm;
}

std::vector<std::uint32_t> Daemon::allowed_cpus(pid_t tid) const {
    const std::vector<std::uint32_t> machine = planner_->machine_cpus();
    const auto cgroup = cgroup_allowed_cpus(tid);
    if (!cgroup) return machine;
    std::vector<std::uint32_t> allowed;
    for (std::uint32_t c : machine) {
        if (std::find(cgroup->begin(), cgroup->end(), c) != cgroup->end()) allowed.push_back(c);
    }
    return allowed.empty() ? machine : allowed;
}

std::set<std::uint32_t> Daemon::claimed_by_others(std::uint32_t app_id) const {
    std::set<std::uint32_t> claimed;
    for (const auto& [id, app] : apps_) {
        if (id != app_id) claimed.insert(app.claimed.begin(), app.claimed.end());
    }
    return claimed;
}

Json Daemon::map_app(AppState& app, const MapRequest& req) {
    const std::uint32_t id = app.info.app_id;
    // A process tree tracked from before its exec is named after what it runs now.
    if (!app.named && app.info.root_pid > 0) {
        if (auto comm = procfs::comm(app.info.root_pid)) app.name = *comm;
    }
    const std::string label = app_label(app.info, app.name);
    const std::string algorithm = req.algorithm.empty() ? config_.algorithm : req.algorithm;
    ++app.passes;
    ++mappings_;
    Json d = {{"app_id", id},
              {"name", app.name},
              {"algorithm", algorithm},
              {"applied", false},
              {"changed", false}};
    // Until an application has enough data to be mapped it is looked at every kWaitingInterval,
    // and its interval starts adapting from the minimum at its first mapping.
    bool waiting = false;
    const auto finish = [&](bool changed) {
        if (req.from_timer && !waiting) app.interval.update(changed);
        app.due = Clock::now() + (waiting ? kWaitingInterval : app.interval.current());
        app.last_mapped_ns = procfs::now_ns();
        d["interval_ms"] = app.interval.current().count();
        app.last = d;
        return d;
    };
    const auto skip = [&](const std::string& reason) {
        d["skipped"] = reason;
        app.claimed.clear();
        spdlog::debug("{}: not mapped: {}", label, reason);
        return finish(false);
    };

    const auto tasks = device().tasks(id);
    const CommMatrix matrix = device().matrix(id).matrix;
    // Once per process and pass: its command (launchers are known by it) and, after an exec,
    // its environment.
    std::map<pid_t, std::string> process_comm;
    for (const cdsm_task_info& t : tasks) {
        if (!(t.flags & CDSM_TASK_EXITED) && !process_comm.count(t.tgid))
            process_comm.emplace(t.tgid, check_environment(app, t.tgid));
    }
    if (app.opted_out) return skip("opted out (CDSM_DISABLE=1)");
    // Too few events among all its tasks: no need to read every task's /proc files (hundreds
    // of reads per pass for a 64-task application).
    waiting = !app.planned;
    if (const double total = matrix.total(); total < config_.min_events) {
        return skip(fmt::format("{:.0f} communication events so far, mapping.min_events is {}",
                                total, config_.min_events));
    }
    const std::uint64_t now = procfs::now_ns();

    std::vector<std::uint32_t> indices, current, foreign_cpus;
    std::vector<std::string> changing;
    std::vector<pid_t> tids;
    std::vector<std::vector<std::uint32_t>> masks;
    std::set<pid_t> present;
    Json placement = Json::array();
    for (const cdsm_task_info& t : tasks) {
        placement.push_back(nullptr);
        TaskFacts f;
        f.exited = t.flags & CDSM_TASK_EXITED;
        std::optional<procfs::TaskStat> stat;
        if (!f.exited) {
            stat = procfs::task_stat(t.tgid, t.tid);
            auto mask = procfs::affinity(t.tid);
            f.exited = !stat || !mask;
            if (mask) f.affinity = std::move(*mask);
        }
        if (f.exited) continue;
        present.insert(t.tid);
        TaskState& ts = app.tasks.try_emplace(t.tid, new_task()).first->second;
        f.process_comm = process_comm[t.tgid];
        const std::uint64_t start_ns =
            stat->start_ticks * (1000000000u / procfs::ticks_per_second());
        f.runnable = ts.runnable.update(stat->runnable_ns, start_ns, now);
        f.age_s = now > start_ns ? double(now - start_ns) / 1e9 : 0;
        f.bound_cpu = ts.bound_cpu;
        f.foreign_before = ts.foreign;
        const bool differs =
            ts.bound_cpu && f.affinity != std::vector<std::uint32_t>{*ts.bound_cpu};
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
        ts.role = classify(f, config_);
        if (ts.role == TaskRole::kChanging) {
            changing.push_back(fmt::format("{} ({})", t.tid, format_cpu_list(f.affinity)));
        }
        if (ts.role != TaskRole::kForeign && ts.role != TaskRole::kChanging && differs) {
            spdlog::info(
                "{}: task {} ({}) was re-bound to {} during its start-up or back to its launch "
                "binding; placing it again",
                label, t.tid, t.comm, format_cpu_list(f.affinity));
            ts.bound_cpu.reset();
            ts.changed_mask.clear();
        }
        if (ts.role == TaskRole::kForeign && !ts.foreign) {
            ts.foreign = true;
            spdlog::warn(
                "{}: task {} ({}) has affinity {} but cdsmd bound it to CPU {}: "
                "another program changed it, leaving the task alone",
                label, t.tid, t.comm, format_cpu_list(f.affinity), ts.bound_cpu.value_or(0));
            save_state();
        }
        if (ts.role == TaskRole::kForeign && f.affinity.size() == 1) {
            foreign_cpus.push_back(f.affinity[0]);
        }
        if (ts.role != TaskRole::kPlace) continue;
        indices.push_back(t.index);
        tids.push_back(t.tid);
        current.push_back(static_cast<std::uint32_t>(stat->processor));
        masks.push_back(f.affinity);
    }
    std::erase_if(app.tasks, [&](const auto& kv) { return !present.count(kv.first); });
    if (!changing.empty()) {
        // Not mapped until each changed mask is confirmed or gone. Unlike skip(), the application
        // keeps the CPUs it claimed: its tasks are expected back on them.
        const std::string reason =
            fmt::format("affinity changed, confirming: {}", fmt::join(changing, ", "));
        d["skipped"] = reason;
        spdlog::debug("{}: not mapped: {}", label, reason);
        return finish(false);
    }

    if (tids.size() < 2)
        return skip(fmt::format("{} runnable task(s), nothing to map", tids.size()));
    const CommMatrix sub = submatrix(matrix, indices);
    if (sub.total() < config_.min_events) {
        return skip(fmt::format("{:.0f} communication events so far, mapping.min_events is {}",
                                sub.total(), config_.min_events));
    }

    const std::vector<std::uint32_t> allowed = allowed_cpus(tids.front());
    const std::set<std::uint32_t> others = claimed_by_others(id);
    std::vector<std::uint32_t> available;
    for (std::uint32_t c : allowed) {
        if (!others.count(c) &&
            std::find(foreign_cpus.begin(), foreign_cpus.end(), c) == foreign_cpus.end()) {
            available.push_back(c);
        }
    }
    if (available.size() < tids.size()) {
        // More runnable tasks than free PUs: over-subscribe only the application's own allowed
        // set, never PUs other applications' placed tasks run on.
        if (!others.empty()) {
            return skip(
                fmt::format("{} runnable tasks but only {} free CPUs (other applications "
                            "hold {})",
                            tids.size(), available.size(), others.size()));
        }
        if (available.empty()) available = allowed;
    }

    const Plan plan =
        planner_->plan(sub, current, available, algorithm, config_.min_gain, req.baselines);
    if (spdlog::should_log(spdlog::level::debug)) {
        std::vector<std::string> partners;
        for (std::size_t i = 0; i < sub.size(); ++i) {
            std::size_t best = i;
            for (std::size_t j = 0; j < sub.size(); ++j) {
                if (sub.at(i, j) > (best == i ? 0 : sub.at(i, best))) best = j;
            }
            partners.push_back(fmt::format("{}>{}", tids[i], best == i ? 0 : tids[best]));
        }
        spdlog::debug("{}: strongest partners {}; cpus {} -> {}, cost {:.0f} -> {:.0f}", label,
                      fmt::join(partners, " "), fmt::join(current, ","),
                      fmt::join(plan.target_cpus, ","), plan.cost_before, plan.cost_after);
    }
    app.planned = true;
    d["cost_before"] = plan.cost_before;
    d["cost_after"] = plan.cost_after;
    d["changed"] = plan.changed;
    if (req.baselines) d["baselines"] = plan.baselines;
    app.cost_current = plan.changed && req.apply ? plan.cost_after : plan.cost_before;
    app.cost_best = plan.cost_after;
    for (std::size_t k = 0; k < tids.size(); ++k) placement[indices[k]] = plan.target_cpus[k];
    d["placement"] = placement;

    Json moved = Json::array(), failed = Json::array();
    const bool apply = req.apply && !options_.dry_run && plan.changed;
    if (apply) {
        std::vector<PuId> pus;
        for (std::uint32_t c : plan.target_cpus)
            pus.push_back(*planner_->machine().find_os_index(c));
        const MigrationReport r = Migrator().apply(tids, Placement(pus), planner_->machine());
        std::map<pid_t, std::size_t> slot;
        for (std::size_t k = 0; k < tids.size(); ++k) slot[tids[k]] = k;
        for (pid_t tid : r.moved) {
            const std::size_t k = slot[tid];
            moved.push_back({{"tid", tid}, {"from", masks[k]}, {"to", plan.target_cpus[k]}});
            app.tasks[tid].bound_cpu = plan.target_cpus[k];
        }
        for (pid_t tid : r.unchanged) app.tasks[tid].bound_cpu = plan.target_cpus[slot[tid]];
        for (pid_t tid : r.vanished) app.tasks.erase(tid);  // exited mid-migration
        const auto fail = [&](pid_t tid, const std::string& why) {
            failed.push_back({{"tid", tid}, {"error", why}});
            spdlog::warn("{}: task {} not moved to CPU {}: {}", label, tid,
                         plan.target_cpus[slot[tid]], why);
        };
        for (pid_t tid : r.denied) fail(tid, "not permitted (EPERM)");
        for (pid_t tid : r.outside_cpuset) fail(tid, "CPU outside the task's cgroup cpuset");
        for (const auto& [tid, err] : r.failed) fail(tid, std::strerror(err));
        if (!moved.empty()) {
            ++app.migrations;
            migrations_ += moved.size();
            if (config_.age_after_migration) {
                try {
                    device().age(id);
                } catch (const SystemError& e) {
                    if (!is_enoent(e)) throw;
                }
            }
            spdlog::info("{}: migrated {} of {} tasks, cost {:.0f} -> {:.0f} ({:+.1f} %){}", label,
                         moved.size(), tids.size(), plan.cost_before, plan.cost_after,
                         plan.cost_before > 0
                             ? 100.0 * (plan.cost_after - plan.cost_before) / plan.cost_before
                             : 0.0,
                         reason_note(plan.why));
            app.history.push_back({{"time_ns", procfs::now_ns()},
                                   {"moved", moved},
                                   {"cost_before", plan.cost_before},
                                   {"cost_after", plan.cost_after},
                                   {"why", reason_name(plan.why)}});
            while (app.history.size() > kHistory) app.history.pop_front();
            save_state();
        }
    }
    d["applied"] = apply;
    d["moved"] = moved;
    d["failed"] = failed;
    // A task already bound to the one CPU the plan keeps it on (by its launcher or runtime) is
    // managed by cdsmd from now on, as if cdsmd had bound it there: a later change is someone
    // else's.
    if (req.apply && !options_.dry_run && !plan.changed) {
        for (std::size_t k = 0; k < tids.size(); ++k) {
            auto& b = app.tasks[tids[k]].bound_cpu;
            if (!b && masks[k] == std::vector<std::uint32_t>{plan.target_cpus[k]})
                b = plan.target_cpus[k];
        }
    }
    // PUs held: where cdsmd bound the tasks (or, in a dry run, where it would).
    app.claimed.clear();
    for (std::size_t k = 0; k < tids.size(); ++k) {
        const auto& b = app.tasks[tids[k]].bound_cpu;
        if (options_.dry_run || (b && *b == plan.target_cpus[k])) {
            app.claimed.push_back(plan.target_cpus[k]);
        }
    }
    return finish(plan.changed);
}

void Daemon::run_due() {
    const auto now = Clock::now();
    std::vector<std::uint32_t> due;
    for (const auto& [id, app] : apps_) {
        if (!app.ended_at && app.due <= now) due.push_back(id);
    }
    for (std::uint32_t id : due) {
        const auto it = apps_.find(id);
        if (it == apps_.end()) continue;
        AppState& app = it->second;
        try {
            map_app(app, MapRequest{});
        } catch (const SystemError& e) {
            if (is_enoent(e)) {
                spdlog::info("{}: gone from the module", app_label(app.info, app.name));
                forget(id);
                continue;
            }
            spdlog::error("{}: mapping failed: {}", app_label(app.info, app.name), e.what());
            app.due = now + app.interval.current();
        } catch (const std::exception& e) {
            spdlog::error("{}: mapping failed: {}", app_label(app.info, app.name), e.what());
            app.due = now + app.interval.current();
        }
    }
}

// ---- automatic tracking ---------------------------------------------------------------------

void Daemon::track_pid(pid_t pid, const std::string& name) {
    try {
        const std::uint32_t id = device().track_pid(pid);
        for (const cdsm_app_info& info : device().list_apps()) {
            if (info.app_id == id) adopt(info, name);
        }
    } catch (const SystemError& e) {
        rejected_pids_.insert(pid);
        if (e.err() != EEXIST) spdlog::warn("cannot track process {}: {}", pid, e.what());
    }
}

void Daemon::scan_rules() {
    next_scan_ = Clock::now() + std::chrono::milliseconds(std::max(config_.scan_interval_ms, 100u));
    if (config_.rules.empty()) {
        untracked_pids_.clear();
        untracked_cgroups_.clear();
        return;
    }
    bool process_rules = false;
    std::optional<std::vector<std::string>> walked;  // the cgroup v2 tree, read once, sorted
    if (std::any_of(config_.rules.begin(), config_.rules.end(),
                    [](const TrackRule& r) { return r.cgroup_only(); })) {
        walked = procfs::cgroup_directories();
        if (walked) {
            std::erase_if(untracked_cgroups_, [&](const std::string& p) {
                return !std::binary_search(walked->begin(), walked->end(), p);
            });
        }
    }
    std::set<std::string> taken;  // directories of applications that still take tasks
    for (const auto& [id, app] : apps_) {
        if (!app.cgroup.empty() && !app.ended_at) taken.insert(app.cgroup);
    }
    for (const TrackRule& rule : config_.rules) {
        if (!rule.cgroup_only()) {
            process_rules = true;
            continue;
        }
        static const std::vector<std::string> kNoDirectories;
        for (const std::string& path : walked ? *walked : kNoDirectories) {
            if (!cgroup_matches(rule, path) || untracked_cgroups_.count(path) || taken.count(path))
                continue;
            // The module refuses a directory that an application still takes tasks of (EEXIST:
            // tracked by hand, or before a restart). Once that one ended (its tasks exited, or
            // the directory was removed), the next run in the directory is a new application.
            try {
                const std::uint32_t id = device().track_cgroup(path);
                for (const cdsm_app_info& info : device().list_apps()) {
                    if (info.app_id == id)
                        adopt(info, rule.name.empty() ? path : rule.name).cgroup = path;
                }
                taken.insert(path);
            } catch (const SystemError& e) {
                if (e.err() != EEXIST && e.err() != ENOENT)
                    spdlog::warn("cannot track cgroup {}: {}", path, e.what());
            }
        }
    }
    if (!process_rules) return;
    const auto pids = procfs::processes();
    const auto gone = [&](pid_t p) { return !std::binary_search(pids.begin(), pids.end(), p); };
    std::erase_if(rejected_pids_, gone);
    std::erase_if(untracked_pids_, gone);
    for (pid_t pid : pids) {
        if (pid <= 1 || pid == ::getpid() || rejected_pids_.count(pid) ||
            untracked_pids_.count(pid))
            continue;
        const auto status = procfs::status(pid);
        const auto comm = procfs::comm(pid);
        if (!status || !comm || status->threads == 0) continue;  // gone, or a kernel thread
        const ProcessFacts facts{*comm, status->uid, procfs::cgroup(pid).value_or(""),
                                 status->threads};
        for (const TrackRule& rule : config_.rules) {
            if (rule.cgroup_only() || !rule_matches(rule, facts)) continue;
            track_pid(pid, rule.name.empty() ? *comm : rule.name);
            break;
        }
    }
}

// ---- the loop -------------------------------------------------------------------------------

Clock::time_point Daemon::next_wakeup() const {
    Clock::time_point t = next_scan_;
    const auto release_after = std::chrono::milliseconds(config_.release_ended_after_ms);
    for (const auto& [id, app] : apps_) {
        t = std::min(t, app.ended_at ? *app.ended_at + release_after : app.due);
    }
    return t;
}

int Daemon::run() {
    const auto kept = drop_capabilities();
    spdlog::info("capabilities kept: {} (every other one dropped)",
                 kept.empty() ? std::string("none") : fmt::format("{}", fmt::join(kept, ", ")));
    open_kernel();
    load_state();
    apply_kernel_params();
    resync();
    if (options_.once) {
        for (auto& [id, app] : apps_) {
            if (app.ended_at) continue;
            std::cout << map_app(app, MapRequest{!options_.dry_run, {}, true, false}).dump()
                      << std::endl;
        }
        save_state();
        return 0;
    }
    server_ = std::make_unique<ControlServer>(
        control::socket_path(options_.socket.empty() ? config_.socket : options_.socket),
        [this](const Json& r, const control::PeerCredentials& p) { return handle(r, p); },
        server_limits(config_));

    sigset_t signals;
    sigemptyset(&signals);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, s);
    ::sigprocmask(SIG_BLOCK, &signals, nullptr);
    Fd sigfd(::signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK));
    Fd epoll(::epoll_create1(EPOLL_CLOEXEC));
    if (!sigfd || !epoll) throw_errno("signalfd/epoll_create1");
    for (int fd : {sigfd.get(), events_->fd(), server_->fd()}) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd, &ev) < 0) throw_errno("epoll_ctl");
    }
    scan_rules();
    spdlog::info("cdsmd {} ready: {} application(s), control socket {}{}", cdsm::version(),
                 apps_.size(), server_->path(), options_.dry_run ? ", dry run" : "");
    ::sd_notifyf(0, "READY=1\nSTATUS=mapping %zu application(s)\nMAINPID=%d", apps_.size(),
                 int(::getpid()));
    if (on_ready_) on_ready_();

    while (!stop_) {
        const auto wait =
            std::chrono::duration_cast<std::chrono::milliseconds>(next_wakeup() - Clock::now());
        epoll_event ready[8];
        // Requests read and not answered yet (one per connection and turn) do not wait.
        const int n = ::epoll_wait(
            epoll.get(), ready, 8,
            server_->busy() ? 0 : int(std::clamp<std::int64_t>(wait.count(), 0, 1000)));
        if (n < 0 && errno != EINTR) throw_errno("epoll_wait");
        bool serve = server_->busy();
        for (int i = 0; i < n; ++i) {
            const int fd = ready[i].data.fd;
            if (fd == sigfd.get()) {
                signalfd_siginfo si{};
                while (::read(sigfd.get(), &si, sizeof(si)) == ssize_t(sizeof(si))) {
                    if (si.ssi_signo == SIGHUP) {
                        reload_ = true;
                    } else {
                        spdlog::info("signal {}: stopping", strsignal(int(si.ssi_signo)));
                        stop_ = true;
                    }
                }
            } else if (fd == events_->fd()) {
                on_events();
            } else if (fd == server_->fd()) {
                serve = true;
            }
        }
        if (serve) server_->dispatch();
        if (reload_) reload();
        if (stop_) break;
        run_due();
        if (Clock::now() >= next_scan_) {
            scan_rules();
            resync();  // a safety net: the events are the fast path
        }
        release_ended();
        server_->expire();
    }
    ::sd_notify(0, "STOPPING=1");
    save_state();
    return 0;
}

}  // namespace cdsm::cdsmd
