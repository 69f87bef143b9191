// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <chrono>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cdsm/control.hpp"
#include "cdsm/kernel.hpp"
#include "cdsm/kernel_events.hpp"
#include "config.hpp"
#include "interval.hpp"
#include "planner.hpp"
#include "policy.hpp"
#include "server.hpp"

namespace cdsm::cdsmd {

using Clock = std::chrono::steady_clock;

/// How cdsmd was started (its command line).
struct Options {
    std::filesystem::path config_path{std::string(kDefaultConfigPath)};
    bool config_explicit = false;
    std::string socket;  ///< overrides the configuration's
    bool dry_run = false;
    bool once = false;
    bool no_socket = false;  ///< --once without a control socket
};

/// The service: keeps one AppState per application the module tracks, maps each on its adaptive
/// interval, reacts to the module's events, tracks processes and cgroups matching the rules, and
/// answers the control socket. Single-threaded around one epoll loop.
class Daemon {
  public:
    Daemon(Options options, Config config);
    ~Daemon();

    /// Runs until SIGTERM/SIGINT (0) or a fatal error (thrown). With Options::once: one mapping
    /// pass over every live application, each decision printed as a JSON line, then returns.
    int run();

    /// Called once when the daemon is ready (socket listening, applications adopted).
    void on_ready(std::function<void()> callback) { on_ready_ = std::move(callback); }

  private:
    struct TaskState {
        RunnableShare runnable{0};
        std::optional<std::uint32_t> bound_cpu;  ///< the CPU cdsmd bound it to
        bool foreign = false;
        TaskRole role = TaskRole::kIdle;
        std::vector<std::uint32_t> changed_mask;  ///< a mask not cdsmd's, read since changed_ns
        std::uint64_t changed_ns = 0;
        /// The masks it had before cdsmd first bound it (a launcher's binding; a few at most).
        std::vector<std::vector<std::uint32_t>> launch_masks;
    };
    static TaskState new_task();
    /// Where cdsmd placed the task, if it places it now (an idle task keeps the CPU it was bound
    /// to while busy, but is not placed).
    static std::optional<std::uint32_t> placed_on(const TaskState& t) {
        return t.role == TaskRole::kPlace ? t.bound_cpu : std::nullopt;
    }

    /// What cdsmd read from a process's environment, and the command it ran then.
    struct ProcessEnv {
        std::string comm;
        std::map<std::string, std::string> vars;
        bool read = true;  ///< false: /proc/PID/environ was unreadable or empty, read it again
    };

    struct AppState {
        cdsm_app_info info{};
        std::string name;
        bool named = false;  ///< given by track/a rule; else the root process's command
        AdaptiveInterval interval;
        Clock::time_point due;
        std::map<pid_t, TaskState> tasks;
        std::map<pid_t, ProcessEnv> env_by_tgid;
        bool opted_out = false;
        bool planned = false;                ///< had enough data for a placement once
        std::vector<std::uint32_t> claimed;  ///< OS CPUs its placed tasks hold
        std::optional<Clock::time_point> ended_at;
        std::string cgroup;  ///< the cgroup v2 directory it was tracked for, if cdsmd tracked it
        std::uint64_t passes = 0;
        std::uint64_t migrations = 0;
        double cost_current = 0;
        double cost_best = 0;
        std::uint64_t last_mapped_ns = 0;
        control::Json last = nullptr;       ///< last decision
        std::deque<control::Json> history;  ///< recent migrations
    };
    struct MapRequest {
        bool apply = true;
        std::string algorithm;
        bool baselines = false;
        bool from_timer = true;
    };

    // Set-up and reconfiguration.
    void open_kernel();
    /// The module's device, opened by open_kernel(); before that every use is answered
    /// ProtocolError("ENODEV") (tests/fuzz/fuzz_request.cpp runs requests on a Daemon that never
    /// opened /dev/cdsm: each runs up to its first ioctl).
    kernel::Device& device() const;
    void apply_kernel_params();
    /// SIGHUP: reload_config(), an error logged and the running configuration kept.
    void reload();
    /// Re-reads the configuration file; throws (and keeps the running one) when it is bad.
    void reload_config();
    void load_state();
    void save_state() const;

    // The module's applications.
    void resync();
    AppState& adopt(const cdsm_app_info& info, const std::string& name = {});
    void on_events();
    void forget(std::uint32_t app_id);
    void release_ended();

    // Mapping.
    control::Json map_app(AppState& app, const MapRequest& request);
    /// Reads process tgid's environment when its command changed; returns its command.
    const std::string& check_environment(AppState& app, pid_t tgid);
    std::vector<std::uint32_t> allowed_cpus(pid_t tid) const;
    std::set<std::uint32_t> claimed_by_others(std::uint32_t app_id) const;
    void run_due();

    // Automatic tracking.
    void scan_rules();
    void track_pid(pid_t pid, const std::string& name);

    // Control socket. tests/fuzz/fuzz_request.cpp calls handle() (DaemonFuzzAccess).
    friend struct DaemonFuzzAccess;
    control::Json handle(const control::Json& request, const control::PeerCredentials& creds);
    AppState& find_app(const control::Json& request, const Peer& peer);
    control::Json app_json(const AppState& app) const;
    control::Json tasks_json(AppState& app);
    control::Json stats_json() const;
    control::Json topology_json() const;

    Clock::time_point next_wakeup() const;

    Options options_;
    Config config_;
    std::unique_ptr<kernel::Device> device_;
    std::unique_ptr<kernel::EventListener> events_;
    std::unique_ptr<Planner> planner_;
    std::unique_ptr<ControlServer> server_;
    std::map<std::uint32_t, AppState> apps_;
    std::map<std::uint32_t, control::Json> saved_;  ///< state file entries not yet matched
    std::set<pid_t> rejected_pids_;                 ///< matched a rule but could not be tracked
    // Untracked on request: the rules leave them alone while the process or directory exists.
    std::set<pid_t> untracked_pids_;
    std::set<std::string> untracked_cgroups_;
    Clock::time_point next_scan_;
    Clock::time_point started_;
    std::uint64_t mappings_ = 0;
    std::uint64_t migrations_ = 0;
    bool stop_ = false;
    bool reload_ = false;
    std::function<void()> on_ready_;
};

}  // namespace cdsm::cdsmd
