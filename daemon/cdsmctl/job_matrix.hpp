// SPDX-License-Identifier: GPL-2.0
// A job's whole matrix (issue 29): Open MPI's monitoring of all its ranks merged with each
// node's shared-memory matrix from cdsm.ko, by rank, with each pair's level. `cdsmctl job-matrix`
// merges files collected on the nodes; `cdsmctl run` builds one for an mpirun it ran.
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cdsm/job_matrix.hpp"

namespace cdsm::cdsmctl {

struct JobMatrixOptions {
    std::string monitoring;                    ///< --monitoring: directory or prefix
    bool application_only = false;             ///< --application-only
    std::vector<std::string> node_matrices;    ///< --node-matrix HOST=FILE
    std::vector<std::string> node_topologies;  ///< --node-topology [HOST=]XML|SYNTHETIC
    std::string format = "heatmap";            ///< heatmap, json, csv, pairs
    std::string output;                        ///< --output: also write the JSON there
    std::string colour = "auto";
    std::string charset = "auto";
    std::size_t width = 0;
};

void add_job_matrix(CLI::App& app, JobMatrixOptions& options);
int job_matrix(const JobMatrixOptions& options, std::ostream& out);

/// Open MPI's monitoring under `path` (directory or prefix), or nothing when Open MPI wrote no
/// file there (a static build, another MPI): `missing` then says so. Malformed files throw.
std::optional<cdsm::RankTraffic> read_job_monitoring(const std::string& path, bool application_only,
                                                     std::vector<std::string>& missing);

/// The matrix, its totals and what is missing, as `format` says ("heatmap" is the heatmap with
/// node boundaries and a totals table; "json", "csv", "pairs").
void print_job_matrix(const cdsm::JobMatrix& job, const std::string& title,
                      const JobMatrixOptions& options, std::ostream& out);

}  // namespace cdsm::cdsmctl
