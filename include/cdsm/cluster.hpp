// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cdsm/distances.hpp"
#include "cdsm/network.hpp"
#include "cdsm/placement_rules.hpp"
#include "cdsm/rank_traffic.hpp"
#include "cdsm/time_model.hpp"
#include "cdsm/topology.hpp"

namespace cdsm {

/// Where a rank runs on a cluster: a node of the Network and a core of the node's hierarchy
/// (a PuId of Cluster::node()).
struct RankSlot {
    std::uint32_t node;
    PuId core;
    friend bool operator==(const RankSlot&, const RankSlot&) = default;
};
using ClusterPlacement = std::vector<RankSlot>;

/// A job's nodes, the network above them and, below each, the same hierarchy. Busy ranks get a
/// core each (DESIGN §9: SMT siblings share execution units), so the hierarchy is the node's
/// with one PU per core: a node has as many slots as cores.
class Cluster {
  public:
    /// `node`: one node's hierarchy (an hwloc XML or synthetic description), applied to every
    /// node. Throws Error if the model's costs are invalid.
    Cluster(Network network, const Topology& node, const TimeModel& model = {},
            LevelCosts node_costs = {});

    const Network& network() const noexcept { return network_; }
    /// One node, one PU per core.
    const Topology& node() const noexcept { return node_; }
    const Distances& node_distances() const noexcept { return node_distances_; }
    const TimeModel& model() const noexcept { return model_; }
    std::size_t cores_per_node() const noexcept { return node_.pu_count(); }
    std::size_t slot_count() const noexcept { return network_.node_count() * cores_per_node(); }
    /// A core's socket (hwloc Package, logical) and its rank among that socket's cores: Open MPI
    /// rankfile's "slot=S:C" in logical numbering.
    std::uint32_t socket(PuId core) const { return socket_.at(core); }
    std::uint32_t core_in_socket(PuId core) const { return core_in_socket_.at(core); }
    /// The mapping cost of two ranks' slots: the node's Distances on one node, the model's
    /// switch cost of their common level otherwise.
    std::uint32_t distance(RankSlot a, RankSlot b) const;

  private:
    Network network_;
    Topology node_;
    Distances node_distances_;
    TimeModel model_;
    std::vector<std::uint32_t> socket_, core_in_socket_;
};

/// Slurm's block distribution: node k gets the next ceil or floor of N/nodes ranks (the first
/// N mod nodes nodes one more); cores in rank order. Throws Error if the ranks do not fit.
ClusterPlacement block_placement(std::size_t ranks, const Cluster& cluster);
/// Round robin over the nodes (srun --distribution=cyclic, mpirun --map-by node).
ClusterPlacement cyclic_placement(std::size_t ranks, const Cluster& cluster);
/// A SLURM_HOSTFILE: line i names rank i's node ('#' comments and blank lines skipped); cores
/// in rank order. Throws Error naming `name` and the line for a node not in the job, a node
/// with more ranks than cores, or a count of lines other than `ranks`.
ClusterPlacement hostfile_placement(std::string_view text, std::string_view name, std::size_t ranks,
                                    const Cluster& cluster);

/// Maps the ranks onto the cluster: Scotch (SCOTCH_graphMap on a tree-leaf target of the
/// network's levels, each node a leaf of as many slots as cores) puts ranks on nodes, then
/// libcdsm's node-level mapper puts each node's ranks on its cores under `rules` (issue 28's:
/// by default one rank per core, balanced over the node's packages; the node has one PU per
/// core, so the SMT rule changes nothing). The result is never worse between nodes than
/// `current` (if given) or the block placement: the cheapest of them in inter-node cost is
/// kept. Deterministic. Throws Error if the ranks do not fit.
ClusterPlacement map_cluster(const RankTraffic& traffic, const Cluster& cluster,
                             const ClusterPlacement* current = nullptr, PlacementRules rules = {});

/// What a placement makes of a job's traffic.
struct PlacementFigures {
    std::uint64_t inter_node_bytes = 0;
    std::uint64_t inter_node_messages = 0;
    /// Sum over flows of bytes x Cluster::distance.
    double cost = 0;
    /// The time model's prediction (docs/cluster.md), in seconds.
    double time_s = 0;
    /// The node whose communication takes longest, and its off-node bytes.
    std::uint32_t slowest_node = 0;
    std::uint64_t slowest_node_bytes_out = 0;
};

/// Throws Error if the placement does not have one valid slot per rank.
PlacementFigures evaluate(const RankTraffic& traffic, const Cluster& cluster,
                          const ClusterPlacement& placement);

/// SLURM_HOSTFILE for srun --distribution=arbitrary: line i = rank i's node.
std::string format_hostfile(const Cluster& cluster, const ClusterPlacement& placement);
/// Open MPI rankfile: "rank N=HOST slot=S:C" (logical socket and core).
std::string format_rankfile(const Cluster& cluster, const ClusterPlacement& placement);

}  // namespace cdsm
