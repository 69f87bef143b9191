// SPDX-License-Identifier: GPL-2.0
// cdsmd's metrics for Prometheus: the module's counters, each application's figures and
// cdsmd's own, in the text exposition format, written as cdsm.prom into the node exporter's
// textfile-collector directory ([metrics] in cdsmd.toml; the names in docs/metrics.md).
#pragma once

#include <linux/cdsm.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app_state.hpp"
#include "commands.hpp"
#include "config.hpp"
#include "slurm_step.hpp"

namespace cdsm::cdsmd {

/// The file cdsmd writes in [metrics] textfile_dir (the collector reads only *.prom files).
inline constexpr std::string_view kMetricsFile = "cdsm.prom";

/// One application as the metrics show it.
struct AppMetrics {
    std::uint32_t app_id = 0;
    std::string name;
    std::string comm;
    std::string user;                ///< the owner's name (its uid without one); empty: no owner
    std::optional<SlurmStep> slurm;  ///< the job step it was tracked for
    std::uint64_t events = 0;
    std::uint64_t pages_rearmed = 0;
    std::uint32_t tasks = 0;  ///< live tasks
    double cost_current = 0;
    double cost_best = 0;
    std::uint64_t migrations = 0;
    std::uint64_t passes = 0;
    std::optional<double> last_mapping_s;  ///< Unix time of its last pass; none before the first
    double interval_s = 0;
};

/// Everything one metrics file holds.
struct MetricsSnapshot {
    cdsm_counters module{};
    std::uint64_t applications = 0;  ///< followed by cdsmd (ended ones not counted)
    std::uint64_t mapping_passes = 0;
    std::uint64_t migrations = 0;
    double cpu_seconds = 0;
    std::uint64_t resident_bytes = 0;
    double start_time_s = 0;  ///< Unix time cdsmd started
    std::string version;
    std::vector<AppMetrics> apps;
};

/// The snapshot in the Prometheus text exposition format (version 0.0.4): each family with its
/// HELP and TYPE lines, label values escaped and made valid UTF-8.
std::string format_metrics(const MetricsSnapshot& snapshot);

/// A label value as the text format writes it between quotes: \ " and newline escaped, bytes
/// that are not UTF-8 replaced by U+FFFD (names and commands are chosen by users; one bad byte
/// would make the node exporter drop the whole file).
std::string escape_label_value(std::string_view value);

/// The snapshot of cdsmd's state now, with the module's counters `module` (read by the caller)
/// and cdsmd's CPU time and resident memory; applications that ended are left out.
MetricsSnapshot gather_metrics(const std::map<std::uint32_t, AppState>& apps,
                               const ServiceCounters& counters, const cdsm_counters& module);

/// Writes the metrics file every period_ms while textfile_dir is set. A write that fails is
/// logged (once until it works again, then that it works) and tried again the next period:
/// cdsmd keeps mapping whatever happens to its metrics.
class MetricsWriter {
  public:
    explicit MetricsWriter(MetricsConfig config = {});

    /// A new configuration (SIGHUP): written at the next tick; the file in a directory no
    /// longer configured is removed.
    void reconfigure(const MetricsConfig& config);
    /// When the next write is due; time_point::max() when metrics are off.
    Clock::time_point due() const noexcept { return due_; }
    /// Writes the snapshot `gather` makes when a write is due at `now`.
    void tick(Clock::time_point now, const std::function<MetricsSnapshot()>& gather);
    /// Removes the file (cdsmd stops: what it wrote would go stale).
    void remove();

    std::filesystem::path path() const;

  private:
    MetricsConfig config_;
    Clock::time_point due_;
    std::string failure_;  ///< the last write's error, empty after a write that worked
    bool written_ = false;
};

}  // namespace cdsm::cdsmd
