// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cdsm/comm_matrix.hpp"
#include "cdsm/rank_traffic.hpp"
#include "cdsm/topology.hpp"

namespace cdsm {

/// Where two ranks of a job ran, from near to far (docs/cluster.md "A job's whole matrix").
enum class PairLevel : std::uint8_t {
    kSelf,     ///< the diagonal
    kCore,     ///< one core (the same PU or SMT siblings)
    kL3,       ///< one shared cache (L3, or L2 shared by cores)
    kPackage,  ///< one package (or NUMA node)
    kNode,     ///< one node: different packages, or the CPUs are not known
    kNetwork,  ///< two nodes
    kUnknown,  ///< a rank's node is not known
};
/// "self", "core", "l3", "package", "node", "network" or "unknown".
std::string_view to_string(PairLevel level) noexcept;

/// One node's shared-memory matrix from cdsm.ko, by task, as cdsmd sends it: its rows' MPI ranks
/// and last CPUs.
struct NodeMatrix {
    std::string node;
    CommMatrix matrix;
    /// Per row: the task's MPI rank, if it has one.
    std::vector<std::optional<std::uint32_t>> rank;
    /// Per row: the OS CPU the task ran on last, if known (cdsmd knows it while it runs).
    std::vector<std::optional<std::uint32_t>> cpu;
    /// Per row: whether it is its process's main thread (tid == pid).
    std::vector<bool> main_thread;
    /// The node's hierarchy, to tell core, L3 and package apart; without it two ranks of the
    /// node are at level kNode.
    std::optional<Topology> topology;
};

/// A node's matrix from cdsmd's `matrix` reply or `cdsmctl show --format json` (dense "cells" or
/// "matrix", or sparse "entries"; "tasks" objects with "index", "rank", "cpu", "tid", "pid",
/// or, from show, "task_info"). Throws Error naming `name` if it is not a matrix or its tasks do
/// not match its rows.
NodeMatrix node_matrix_from_json(const nlohmann::json& reply, std::string node,
                                 std::string_view name);

/// One rank x rank matrix of a job (docs/json.md: `cdsm-matrix/1` with the job's members).
struct JobMatrix {
    std::size_t ranks = 0;
    /// Open MPI's monitoring: each pair's bytes and messages (both directions added). Absent when
    /// the job had none.
    std::optional<CommMatrix> bytes, messages;
    /// cdsm.ko's shared-memory events between the ranks' tasks (a rank's threads added),
    /// summed over the nodes; zero where no node had both ranks.
    CommMatrix shared_memory;
    /// Per rank: its node's name, empty when no node's matrix lists it.
    std::vector<std::string> node_of_rank;
    /// Per rank: its OS CPU on its node, if known.
    std::vector<std::optional<std::uint32_t>> cpu_of_rank;
    /// Dense, ranks x ranks.
    std::vector<PairLevel> levels;
    /// What is missing, one sentence each (no monitoring, ranks on no node, ...).
    std::vector<std::string> missing;

    PairLevel level(std::size_t a, std::size_t b) const { return levels.at(a * ranks + b); }
    /// The matrix shown: bytes when there is monitoring, else the shared-memory events.
    const CommMatrix& primary() const noexcept { return bytes ? *bytes : shared_memory; }
};

/// Merges a job's monitoring traffic (null when it has none) with its nodes' matrices. The job
/// has `traffic->ranks()` ranks, or without monitoring one more than the largest rank of the
/// nodes. Throws Error if a rank is listed on two nodes, or a node lists a rank beyond the
/// monitoring's.
JobMatrix merge_job_matrix(const RankTraffic* traffic, const std::vector<NodeMatrix>& nodes);

/// The matrix as a `cdsm-matrix/1` document (dense) with the job's members: "by": "rank",
/// "labels", "unit" ("bytes" or "events"), "nodes", "levels", "messages", "shared_memory",
/// "totals" and "missing" (docs/json.md).
nlohmann::json job_matrix_json(const JobMatrix& job, std::string_view title);

/// Per pair with traffic, a CSV line "rank_a,rank_b,node_a,node_b,level,bytes,messages,
/// shared_memory_events" after that header (a < b).
std::string job_matrix_pairs_csv(const JobMatrix& job);

}  // namespace cdsm
