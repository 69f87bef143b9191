// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "app_state.hpp"
#include "cdsm/control.hpp"
#include "config.hpp"
#include "pass.hpp"
#include "planner.hpp"
#include "policy.hpp"
#include "sources.hpp"

/// The control socket's commands (docs/protocol.md) over cdsmd's state: a unit of its own,
/// which reaches the module through Kernel and the rest of cdsmd through CommandContext, so that
/// the host tests (tests/cdsmd/commands_test.cpp) run every command.
namespace cdsm::cdsmd {

/// cdsmd's own figures, for "stats".
struct ServiceCounters {
    Clock::time_point started = Clock::now();
    std::uint64_t mappings = 0;    ///< passes
    std::uint64_t migrations = 0;  ///< tasks moved
};

/// The name of user `uid`, or its number when it has none (the "slurm" JSON field, metrics).
std::string user_name(uid_t uid);

/// The most live tasks of an application whose map request an unprivileged peer may make.
inline constexpr std::uint32_t kMaxRequestTasks = 1024;

/// What the commands read and change of cdsmd, and the daemon's operations they call.
struct CommandContext {
    std::map<std::uint32_t, AppState>& apps;
    Config& config;
    const std::unique_ptr<Planner>& planner;
    Kernel& kernel;
    ProcSource& proc;
    /// Untracked on request: the [[track]] rules leave them alone.
    std::set<pid_t>& untracked_pids;
    std::set<std::string>& untracked_cgroups;
    const ServiceCounters& counters;
    const bool& dry_run;
    std::function<AppState&(const cdsm_app_info&, const std::string&)> adopt;
    std::function<void(std::uint32_t)> forget;
    std::function<void()> save_state;
    std::function<void()> apply_kernel_params;
    std::function<void()> reload_config;
    std::function<control::Json(AppState&, const MapRequest&)> map;
};

class Commands {
  public:
    explicit Commands(CommandContext context, WorkBudget::Limits limits = {})
        : c_(std::move(context)), budget_(limits) {}

    /// Answers one validated request of a peer (throws ProtocolError, as ControlServer expects).
    control::Json handle(const control::Json& request, const control::PeerCredentials& creds);

  private:
    AppState& find_app(const control::Json& request, const Peer& peer);
    control::Json app_json(const AppState& app) const;
    control::Json tasks_json(AppState& app);
    control::Json stats_json() const;
    control::Json topology_json() const;
    control::Json matrix_json(const control::Json& request, const Peer& peer);
    control::Json track(const control::Json& request, const Peer& peer);
    control::Json app_command(const std::string& cmd, const control::Json& request,
                              const Peer& peer);
    control::Json set_params(const control::Json& request);
    control::Json map(const control::Json& request, const Peer& peer, bool dry_run);

    CommandContext c_;
    /// Unprivileged peers' map dry runs (docs/security.md).
    WorkBudget budget_;
};

}  // namespace cdsm::cdsmd
