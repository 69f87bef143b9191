// SPDX-License-Identifier: GPL-2.0
// cdsmctl cluster-map: where a job's ranks should run on its nodes next time (offline, libcdsm's
// cluster.hpp). Its own subcommand and options, registered by cli.cpp.
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>
#include <string>

namespace cdsm::cdsmctl {

struct ClusterMapOptions {
    std::string matrix_file;    ///< --matrix: bytes per rank pair (cdsm-matrix CSV or JSON)
    std::string messages_file;  ///< --messages: messages per rank pair, with --matrix
    std::string monitoring;     ///< --monitoring: Open MPI's monitoring files (directory/prefix)
    bool application_only = false;
    std::string nodes;          ///< --nodes: Slurm hostlist
    std::string node_topology;  ///< --node-topology: hwloc XML or synthetic
    std::string topology_conf;  ///< --topology-conf: Slurm's topology.conf
    std::string topology_addr;  ///< --topology-addr: the nodes' SLURM_TOPOLOGY_ADDR, one a line
    std::string topology_addr_pattern;  ///< --topology-addr-pattern: SLURM_TOPOLOGY_ADDR_PATTERN
    std::string current = "block";
    std::string spread = "balanced";  ///< --spread: within each node (issue 28's rule)
    std::string time_model;           ///< --time-model: JSON file
    std::string hostfile;
    std::string rankfile;
    std::string save_matrix;
    std::string format = "text";
};

/// Adds the subcommand "cluster-map" and its options to `app`.
void add_cluster_map(CLI::App& app, ClusterMapOptions& options);
/// Runs it; throws UsageError for inconsistent options, cdsm::Error for bad input.
int cluster_map(const ClusterMapOptions& options, std::ostream& out);

}  // namespace cdsm::cdsmctl
