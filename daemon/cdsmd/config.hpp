// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <spdlog/common.h>
#include <sys/types.h>

#include <cdsm/distances.hpp>
#include <cdsm/mapper.hpp>
#include <cdsm/time_model.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cdsm::cdsmd {

/// The default configuration file.
inline constexpr std::string_view kDefaultConfigPath = "/etc/cdsm/cdsmd.toml";

/// Bounds and step of the adaptive mapping interval (CDSM: +50 ms, halved, [50 ms, 2 s]).
struct IntervalConfig {
    std::uint32_t min_ms = 50;
    std::uint32_t max_ms = 2000;
    std::uint32_t step_ms = 50;
};

/// Which applications to track automatically. A rule matches a process when every condition it
/// sets matches. A rule with only `cgroup` tracks each matching cgroup v2 directory as one
/// application (Slurm jobs); otherwise matching processes are tracked as process trees.
struct TrackRule {
    std::string name;  ///< label for logs and the application's name; empty: the comm
    std::string comm;  ///< glob on the process's command name (fnmatch)
    std::optional<uid_t> uid;
    std::string user;    ///< as written (a name or a number), for messages
    std::string cgroup;  ///< glob on the cgroup v2 path, e.g. "/system.slice/*/job_*"
    std::uint32_t min_threads = 0;

    bool cgroup_only() const noexcept {
        return !cgroup.empty() && comm.empty() && !uid && min_threads == 0;
    }
};

/// [metrics]: the Prometheus text file cdsmd writes for the node exporter's textfile collector
/// (metrics.hpp). Off unless textfile_dir is set: the file names every user's applications, and
/// the node exporter serves it to whoever can reach its port.
struct MetricsConfig {
    static constexpr std::uint32_t kPeriodMinMs = 1000;
    static constexpr std::uint32_t kPeriodMaxMs = 3600000;
    std::string textfile_dir;  ///< absolute; empty: no metrics
    std::uint32_t period_ms = 15000;
};

/// Everything cdsmd reads from its TOML file (see cdsmd.toml.example for the meaning of each key).
struct Config {
    std::string device = "/dev/cdsm";
    std::string socket;  ///< empty: the protocol's default ($CDSM_SOCKET or /run/cdsm/cdsmd.sock)
    std::string state_file = "/run/cdsm/state.json";
    spdlog::level::level_enum log_level = spdlog::level::info;
    /// Members of this group (gid or supplementary group when they connected) may control
    /// cdsmd as root may; empty: root only.
    std::string admin_group;
    std::optional<gid_t> admin_gid;
    /// Control-socket connections: at most max_clients at once (root's not counted), at most
    /// max_clients_per_user per uid, each closed after client_timeout_ms without a request.
    std::uint32_t max_clients = 128;
    std::uint32_t max_clients_per_user = 16;
    std::uint32_t client_timeout_ms = 30000;

    std::string algorithm{mapper_names().front()};
    /// [mapping] smt and spread: the resources busy tasks may use (PlacementRules). The default
    /// is PlacementRules{}'s (avoid + balanced), the one default of libcdsm, cdsmctl and cdsmd.
    PlacementRules placement_rules{};
    /// Migrate only for a cost lower by this fraction; twice it (at most 0.5) within a minute of
    /// the application's last migration (pass.cpp, remap_options).
    double min_gain = 0.05;
    /// ... and by more than this many standard deviations of its counting noise
    /// (RemapOptions::min_gain_sigma).
    double min_gain_sigma = 3;
    /// Do not map before the tasks to place exchanged this many events: placements drawn from
    /// a handful of faults are noise and would migrate for nothing.
    std::uint32_t min_events = 20;
    IntervalConfig interval;
    double idle_cpu = 0.10;  ///< a task runnable less than this share of the time is idle
    /// A placement is applied only once the tasks to place, their masks and their processes'
    /// commands have stayed the same for half the time cdsmd has seen the application, at least
    /// settle_ms and at most settle_max_ms: a starting MPI job creates threads, execs, and has
    /// its masks changed by its launcher and libraries for a while (tens of seconds under
    /// emulation), with lulls in between.
    std::uint32_t settle_ms = 1000;
    std::uint32_t settle_max_ms = 10000;
    /// A process whose environment sets OMP_NUM_THREADS=N is still starting while fewer than N
    /// of its tasks are busy: its application is not placed until each such process has N; an
    /// MPI rank however long that takes (a rank's set-up lasts as long as its input and the
    /// host's load make it), another process until cdsmd has seen the application this long
    /// (0: no process waits, MPI ranks included). Placing a hybrid code's ranks during its set-up
    /// would move them again when their OpenMP threads start. Once the threads have come, the
    /// settle wait is settle_ms only.
    std::uint32_t threads_wait_ms = 60000;
    std::vector<std::string> launchers = {"mpirun", "mpiexec",        "orterun", "orted",
                                          "prted",  "prterun",        "prte",    "slurmstepd",
                                          "srun",   "hydra_pmi_proxy"};
    bool age_after_migration = true;
    std::uint32_t release_ended_after_ms = 10000;
    std::uint32_t scan_interval_ms = 1000;
    LevelCosts costs;
    /// [mapping] time_model: the time model file (cdsmctl calibrate's); empty: /etc/cdsm/
    /// time-model.json if it exists, else TimeModel's defaults (load_time_model).
    std::string time_model;
    TimeModel model;  ///< what time_model (or the default file) holds

    /// Module parameters to set at start and on reload, by cdsm_params field name. By default
    /// the module ages every matrix each second, so that a program whose pattern changes is
    /// judged on what it does now (CDSM ages only after migrations: an old phase's counts would
    /// outweigh the new phase's for as long as the old one lasted).
    std::map<std::string, std::uint32_t> kernel = {{"age_period_ms", 1000}};
    std::vector<TrackRule> rules;
    MetricsConfig metrics;
};

/// Parses a configuration. Throws cdsm::Error naming `source`, the line and the problem
/// (unknown key, wrong type, out of range) — unknown keys are errors so that typos are seen.
Config parse_config(std::string_view text, std::string_view source);

/// Reads a file; a missing default file gives the defaults, a missing explicit one an error.
Config load_config(const std::filesystem::path& path, bool explicit_path);

/// The names of the module parameters [kernel] may set.
const std::vector<std::string>& kernel_param_names();

}  // namespace cdsm::cdsmd
