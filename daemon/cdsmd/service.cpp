// SPDX-License-Identifier: GPL-2.0
#include "service.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cdsm/cpu_list.hpp>
#include <cdsm/error.hpp>
#include <cdsm/version.hpp>
#include <cstring>
#include <fstream>
#include <iostream>

#include "atomic_file.hpp"
#include "capabilities.hpp"
#include "slurm_step.hpp"

namespace cdsm::cdsmd {

using control::Json;
using control::ProtocolError;

namespace {

bool is_enoent(const SystemError& e) {
    return e.err() == ENOENT;
}

// Every pass reads each task's schedstat through a descriptor kept open (SystemProc): up to the
// hard limit of open files, at most 65536, instead of the usual soft limit of 1024 (a 1024-task
// application would otherwise have most of its files opened anew at each pass).
void raise_open_files_limit() {
    rlimit files{};
    if (::getrlimit(RLIMIT_NOFILE, &files) != 0) return;
    const rlim_t wanted = std::min<rlim_t>(files.rlim_max, 65536);
    if (files.rlim_cur >= wanted) return;
    files.rlim_cur = wanted;
    if (::setrlimit(RLIMIT_NOFILE, &files) != 0)
        spdlog::warn("cannot raise the open files limit to {}: {}", wanted, std::strerror(errno));
}

}  // namespace

Service::Service(Options options, Config config)
    : options_(std::move(options)),
      config_(std::move(config)),
      commands_(CommandContext{
          .apps = apps_,
          .config = config_,
          .planner = planner_,
          .kernel = kernel_,
          .proc = proc_,
          .untracked_pids = untracked_pids_,
          .untracked_cgroups = untracked_cgroups_,
          .counters = counters_,
          .dry_run = options_.dry_run,
          .adopt = [this](const cdsm_app_info& info, const std::string& name) -> AppState& {
              return adopt(info, name);
          },
          .forget = [this](std::uint32_t id) { forget(id); },
          .save_state = [this] { save_state(); },
          .apply_kernel_params = [this] { apply_kernel_params(); },
          .reload_config = [this] { reload_config(); },
          .map = [this](AppState& app,
                        const MapRequest& request) { return map_app(app, request); }}) {}

Service::~Service() = default;

// ---- set-up -------------------------------------------------------------------------------

void Service::open_kernel() {
    device_ = std::make_unique<kernel::Device>(config_.device);
    if (const auto m = module_version(); m && *m != version())
        spdlog::warn(
            "cdsm.ko {} is loaded, cdsmd is {}: install matching packages and reload "
            "the module",
            *m, version());
    events_ = std::make_unique<kernel::EventListener>();
    planner_ = std::make_unique<Planner>(Topology::from_system(), config_.costs, config_.model);
    spdlog::info("machine: {} ({} PUs: {})", planner_->machine().describe(),
                 planner_->machine().pu_count(), format_cpu_list(planner_->machine_cpus()));
}

kernel::Device& Service::device() const {
    if (!device_) throw control::ProtocolError("ENODEV", "cdsmd has not opened the cdsm device");
    return *device_;
}

void Service::apply_kernel_params() {
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

void Service::reload() {
    reload_ = false;
    try {
        reload_config();
    } catch (const std::exception& e) {
        spdlog::error("reload failed, keeping the previous configuration: {}", e.what());
    }
}

void Service::reload_config() {
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
            fresh.costs.machine != config_.costs.machine ||
            fresh.model.to_json() != config_.model.to_json();
        fresh.socket = config_.socket;
        fresh.device = config_.device;
        config_ = std::move(fresh);
        spdlog::set_level(config_.log_level);
        if (costs_changed) {
            planner_ = std::make_unique<Planner>(planner_->machine(), config_.costs, config_.model);
        }
        for (auto& [id, app] : apps_) app.interval.reconfigure(config_.interval);
        apply_kernel_params();
        metrics_.reconfigure(config_.metrics);
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

std::string state_file_text(const std::map<std::uint32_t, AppState>& apps_by_id,
                            const std::set<pid_t>& untracked_pids,
                            const std::set<std::string>& untracked_cgroups) {
    Json apps = Json::array();
    for (const auto& [id, app] : apps_by_id) {
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
                        {"mode", mode_name(app.mode)},
                        {"smt", app.rules ? Json(to_string(app.rules->smt)) : Json(nullptr)},
                        {"spread", app.rules ? Json(to_string(app.rules->spread)) : Json(nullptr)},
                        {"migrations", app.migrations},
                        {"bound", bound},
                        {"foreign", foreign},
                        {"history", Json(app.history)}});
    }
    // Names are users' (a command name is any 15 bytes): bytes that are not UTF-8 become
    // U+FFFD instead of failing the dump, and with it every later save of every application.
    return Json{{"version", 1},
                {"apps", apps},
                {"untracked_pids", untracked_pids},
                {"untracked_cgroups", untracked_cgroups}}
               .dump(-1, ' ', false, Json::error_handler_t::replace) +
           "\n";
}

void Service::save_state() const {
    if (config_.state_file.empty() || options_.dry_run) return;
    const std::filesystem::path path(config_.state_file);
    try {
        // Its directory may also hold the socket, which users must reach: 0755 when created.
        const auto dir = path.parent_path();
        if (!dir.empty() && !std::filesystem::exists(dir)) {
            std::filesystem::create_directories(dir);
            ::chmod(dir.c_str(), 0755);
        }
        // Private whatever the umask: it names every user's applications.
        write_file_atomically(path, state_file_text(apps_, untracked_pids_, untracked_cgroups_),
                              0600);
    } catch (const std::exception& e) {
        spdlog::warn("cannot save state to {}: {}", path.string(), e.what());
    }
}

void Service::load_state() {
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

AppState& Service::adopt(const cdsm_app_info& info, const std::string& name) {
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
        app.mode = parse_mode(j.value("mode", "map")).value_or(AppMode::kMap);
        if (j.contains("smt") && j["smt"].is_string() && j.contains("spread") &&
            j["spread"].is_string()) {
            try {
                app.rules = PlacementRules{parse_smt_rule(j["smt"].get<std::string>()),
                                           parse_spread_rule(j["spread"].get<std::string>())};
            } catch (const Error&) {
                // A state file from another version: the application keeps [mapping]'s.
            }
        }
        for (const auto& [tid, cpu] : j["bound"].items()) {
            app.tasks.try_emplace(std::stoi(tid)).first->second.bound_cpu =
                cpu.get<std::uint32_t>();
        }
        for (const Json& tid : j["foreign"]) {
            TaskState& t = app.tasks.try_emplace(tid.get<pid_t>()).first->second;
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
    read_task_cgroup(app, proc_);
    if (info.flags & CDSM_APP_ENDED) app.ended_at = Clock::now();
    return app;
}

void Service::forget(std::uint32_t app_id) {
    if (apps_.erase(app_id)) save_state();
}

void Service::resync() {
    std::set<std::uint32_t> live;
    for (const cdsm_app_info& info : kernel_.list_apps()) {
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

void Service::on_events() {
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
                proc_.forget_task(e.tid);
                break;
        }
    }
    if (apps_changed) resync();
}

void Service::release_ended() {
    const auto now = Clock::now();
    const auto after = std::chrono::milliseconds(config_.release_ended_after_ms);
    std::vector<std::uint32_t> done;
    for (auto& [id, app] : apps_) {
        if (!app.ended_at || now < *app.ended_at + after) continue;
        if (!options_.dry_run) {
            done.push_back(id);
        } else if (!app.kept_ended) {
            // A dry run changes nothing in the module, so the application stays there; forgotten
            // here, the next resync would adopt it again and end it again, every scan.
            spdlog::info("{}: ended; a dry run releases nothing, so it stays listed",
                         app_label(app.info, app.name));
            app.kept_ended = true;
        }
    }
    for (std::uint32_t id : done) {
        try {
            kernel_.release(id);
            spdlog::info("{}: ended, released", app_label(apps_[id].info, apps_[id].name));
        } catch (const SystemError& e) {
            if (!is_enoent(e)) spdlog::warn("{}", e.what());
        }
        forget(id);
    }
}

// ---- mapping --------------------------------------------------------------------------------

std::set<std::uint32_t> Service::claimed_by_others(std::uint32_t app_id) const {
    std::set<std::uint32_t> claimed;
    for (const auto& [id, app] : apps_) {
        if (id != app_id) claimed.insert(app.claimed.begin(), app.claimed.end());
    }
    return claimed;
}

Json Service::map_app(AppState& app, const MapRequest& request) {
    PassContext context{.config = config_,
                        .planner = *planner_,
                        .kernel = kernel_,
                        .proc = proc_,
                        .applier = applier_,
                        .dry_run = options_.dry_run,
                        .claimed_by_others = claimed_by_others(app.info.app_id),
                        .save_state = [this] { save_state(); }};
    ++counters_.mappings;
    PassResult result = map_pass(app, request, context);
    counters_.migrations += result.moved;
    return std::move(result.decision);
}

void Service::run_due() {
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

void Service::track_pid(pid_t pid, const std::string& name, int pidfd) {
    try {
        const std::uint32_t id = kernel_.track_pid(pid);
        // The rule matched what /proc said of process `pid` while `pidfd` referred to it: if it
        // has exited since, the number may have been reused and the module tracked another.
        pollfd p{pidfd, POLLIN, 0};
        if (::poll(&p, 1, 0) != 0) {
            spdlog::info("process {} ended while it was being tracked; released", pid);
            kernel_.release(id);
            return;
        }
        for (const cdsm_app_info& info : kernel_.list_apps()) {
            if (info.app_id == id) adopt(info, name);
        }
    } catch (const SystemError& e) {
        rejected_pids_.insert(pid);
        if (e.err() != EEXIST) spdlog::warn("cannot track process {}: {}", pid, e.what());
    }
}

void Service::scan_rules() {
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
                const std::uint32_t id = kernel_.track_cgroup(path);
                for (const cdsm_app_info& info : kernel_.list_apps()) {
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
        // Held from before its /proc files are read until it is tracked (track_pid).
        const Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
        if (!pidfd) continue;  // gone
        const auto status = procfs::status(pid);
        const auto comm = procfs::comm(pid);
        if (!status || !comm || status->threads == 0) continue;  // gone, or a kernel thread
        const ProcessFacts facts{*comm, status->uid, procfs::cgroup(pid).value_or(""),
                                 status->threads};
        for (const TrackRule& rule : config_.rules) {
            if (rule.cgroup_only() || !rule_matches(rule, facts)) continue;
            track_pid(pid, rule.name.empty() ? *comm : rule.name, pidfd.get());
            break;
        }
    }
}

// ---- the loop -------------------------------------------------------------------------------

Clock::time_point Service::next_wakeup() const {
    Clock::time_point t = std::min(next_scan_, metrics_.due());
    const auto release_after = std::chrono::milliseconds(config_.release_ended_after_ms);
    for (const auto& [id, app] : apps_) {
        t = std::min(t, app.ended_at ? *app.ended_at + release_after : app.due);
    }
    return t;
}

int Service::run() {
    const auto kept = drop_capabilities();
    spdlog::info("capabilities kept: {} (every other one dropped)",
                 kept.empty() ? std::string("none") : fmt::format("{}", fmt::join(kept, ", ")));
    raise_open_files_limit();
    open_kernel();
    load_state();
    apply_kernel_params();
    resync();
    if (options_.once) {
        for (auto& [id, app] : apps_) {
            if (app.ended_at) continue;
            std::cout << map_app(app, MapRequest{!options_.dry_run, {}, true, false})
                             .dump(-1, ' ', false, Json::error_handler_t::replace)
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
        // Rounded up: epoll counts whole milliseconds, and a wait rounded down wakes before
        // the pass is due and again with 0 until it is, a busy loop of up to 1 ms per pass.
        const auto wait =
            std::chrono::ceil<std::chrono::milliseconds>(next_wakeup() - Clock::now());
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
        metrics_.tick(Clock::now(),
                      [this] { return gather_metrics(apps_, counters_, kernel_.counters()); });
        server_->expire();
    }
    ::sd_notify(0, "STOPPING=1");
    metrics_.remove();
    save_state();
    return 0;
}

}  // namespace cdsm::cdsmd
