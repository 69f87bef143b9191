// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "cdsm/rank_traffic.hpp"

namespace cdsm {

/// Which of Open MPI's monitoring records make up a job's traffic (docs/cluster.md).
struct MonitoringOptions {
    /// `I` lines: the library's own point-to-point messages (collectives run over them).
    bool internal = true;
    /// The `# OSC` section: one-sided puts (`S`, sender to target) and gets (`R`, the target's
    /// data to the reader).
    bool one_sided = true;
};

/// Reads the flows of one rank's monitoring file, as Open MPI 4.1 writes it with
/// `--mca pml_monitoring_enable 2 --mca pml_monitoring_enable_output 3` (docs/cluster.md shows
/// it): `E|I SRC DST N bytes M msgs sent [histogram]` under `# POINT TO POINT`, `S|R` lines of
/// the same form under `# OSC`; `# COLLECTIVES` is skipped (its `C` lines count again what the
/// `I` lines hold, its `D` blocks are per communicator, not per pair). Appends to `flows`.
/// Throws Error naming `name` and the line if a line is malformed, a rank is not below `ranks`,
/// or a line is not this rank's (its sender, or reader for `R`, must be `rank`).
void parse_monitoring_file(std::string_view text, std::string_view name, std::uint32_t rank,
                           std::size_t ranks, const MonitoringOptions& options,
                           std::vector<Flow>& flows);

/// The files of one job: `PREFIX.<rank>.prof` for ranks 0 to N-1. `path` is the directory that
/// holds them (it must hold one job's files only) or the prefix given to Open MPI
/// (`--mca pml_monitoring_filename DIR/prof`). Throws Error if there are none, a rank's file is
/// missing, or the directory mixes prefixes.
std::vector<std::filesystem::path> monitoring_files(const std::filesystem::path& path);

/// The whole job's traffic: every rank's file read and merged (monitoring_files).
RankTraffic read_monitoring(const std::filesystem::path& path,
                            const MonitoringOptions& options = {});

}  // namespace cdsm
