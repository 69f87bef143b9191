// SPDX-License-Identifier: GPL-2.0
// cdsmd's service: the loop around one mapping pass per application (pass.hpp), the module's
// events, the tracking rules and the control socket (commands.hpp).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "cdsm/control.hpp"
#include "cdsm/kernel.hpp"
#include "cdsm/kernel_events.hpp"
#include "commands.hpp"
#include "config.hpp"
#include "interval.hpp"
#include "metrics.hpp"
#include "pass.hpp"
#include "planner.hpp"
#include "policy.hpp"
#include "server.hpp"
#include "sources.hpp"

namespace cdsm::cdsmd {

/// The state file's text (what must survive a restart: each application's name, mode, bindings,
/// history; what was untracked on request). Never throws on names that are not UTF-8.
std::string state_file_text(const std::map<std::uint32_t, AppState>& apps,
                            const std::set<pid_t>& untracked_pids,
                            const std::set<std::string>& untracked_cgroups);

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
class Service {
  public:
    Service(Options options, Config config);
    ~Service();

    /// Runs until SIGTERM/SIGINT (0) or a fatal error (thrown). With Options::once: one mapping
    /// pass over every live application, each decision printed as a JSON line, then returns.
    int run();

    /// Called once when the daemon is ready (socket listening, applications adopted).
    void on_ready(std::function<void()> callback) { on_ready_ = std::move(callback); }

  private:
    // Set-up and reconfiguration.
    void open_kernel();
    /// The module's device, opened by open_kernel(); before that every use is answered
    /// ProtocolError("ENODEV") (tests/fuzz/fuzz_request.cpp runs requests on a Service that never
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

    // Mapping: one pass (pass.hpp) over the system's sources.
    control::Json map_app(AppState& app, const MapRequest& request);
    std::set<std::uint32_t> claimed_by_others(std::uint32_t app_id) const;
    void run_due();

    // Automatic tracking.
    void scan_rules();
    /// Tracks process pid for a rule; `pidfd` refers to the process the rule matched.
    void track_pid(pid_t pid, const std::string& name, int pidfd);

    // Control socket (commands.hpp). tests/fuzz/fuzz_request.cpp calls handle()
    // (ServiceFuzzAccess).
    friend struct ServiceFuzzAccess;
    control::Json handle(const control::Json& request, const control::PeerCredentials& creds) {
        return commands_.handle(request, creds);
    }

    Clock::time_point next_wakeup() const;

    Options options_;
    Config config_;
    std::unique_ptr<kernel::Device> device_;
    std::unique_ptr<kernel::EventListener> events_;
    DeviceKernel kernel_{[this]() -> kernel::Device& { return device(); }};
    SystemProc proc_;
    SystemApplier applier_;
    std::unique_ptr<Planner> planner_;
    std::unique_ptr<ControlServer> server_;
    std::map<std::uint32_t, AppState> apps_;
    std::map<std::uint32_t, control::Json> saved_;  ///< state file entries not yet matched
    std::set<pid_t> rejected_pids_;                 ///< matched a rule but could not be tracked
    // Untracked on request: the rules leave them alone while the process or directory exists.
    std::set<pid_t> untracked_pids_;
    std::set<std::string> untracked_cgroups_;
    Clock::time_point next_scan_;
    ServiceCounters counters_;
    MetricsWriter metrics_{config_.metrics};
    bool stop_ = false;
    bool reload_ = false;
    std::function<void()> on_ready_;
    Commands commands_;
};

}  // namespace cdsm::cdsmd
