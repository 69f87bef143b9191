// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cdsm/comm_graph.hpp"
#include "cdsm/mapper.hpp"

namespace cdsm {

/// Tuning of ScotchMapper. The defaults meet the mapping-time targets (bench/) without losing
/// quality on the benchmark's pattern suite.
struct ScotchOptions {
    /// Weak edges dropped before mapping large matrices (the cost is still of the full matrix).
    PruneOptions prune{};
    /// A Scotch mapping strategy string for every problem; empty means SCOTCH_stratGraphMapBuild
    /// with `strategy_flags` (SCOTCH_STRAT* values) and `imbalance`, except for small problems.
    std::string strategy;
    unsigned strategy_flags = 0;
    double imbalance = 0.01;
    /// Problems of at most this many tasks (when `strategy` is empty) are bipartitioned without
    /// multilevel coarsening, by one greedy graph growing of 5 tries plus Fiduccia-Mattheyses
    /// (SCOTCH_stratGraphMapBuild runs two of 10 tries after coarsening). The local search below
    /// makes up the difference: equal quality on the benchmark's suite, in a third of the time
    /// (bench/mapping_bench.cpp, N = 32 dense).
    std::size_t flat_max_tasks = 64;
    /// Placements of at most this many tasks are polished after Scotch by swapping pairs of
    /// tasks (or moving one to a free PU) while that lowers the cost.
    std::size_t refine_max_tasks = 128;
    /// Problems of at most this many tasks are mapped `attempts` times with different fixed
    /// seeds and the cheapest result is kept: on small, oddly shaped problems one bipartitioning
    /// can fall into a local optimum that swaps cannot leave.
    std::size_t attempts_max_tasks = 16;
    std::size_t attempts = 4;
    /// Sparse problems (no edge pruned) too large for the local search (more than
    /// refine_max_tasks tasks) are mapped attempt_arcs / arcs times (at most max_attempts; arcs:
    /// twice the edges), with different seeds, keeping the cheapest: such a graph maps in a few
    /// ms, and one seed's bipartitioning can miss by 5 % (a 2-D stencil of 512 tasks on a
    /// 4-level machine: 271800 with seed 1, 259200 with seed 6 or with scotch_gmap's two
    /// threads). Dense graphs get one attempt.
    std::size_t attempt_arcs = 16384;
    std::size_t max_attempts = 8;
    /// Small problems (tasks x PUs at most this, tasks at most refine_max_tasks) then leave the
    /// local optimum of the swaps: each single swap or move, even one that raises the cost, is
    /// tried followed by the local search, while one ends cheaper. Swaps alone left 176 of 5572
    /// random sparse patterns of 2 to 8 tasks more than 2 % above the optimum on a 2x2x2
    /// machine, none after; a trial costs a local search, hence the bound (8 tasks on 8 PUs:
    /// 0.07 ms -> 0.11 ms).
    std::size_t escape_max_size = 128;
    /// With the local search (refine_max_tasks), also start it from the compact placement and
    /// keep that result if it is cheaper.
    bool compact_start = true;
};

/// Dual recursive bipartitioning with Scotch (SCOTCH_graphMap) of the communication graph onto
/// the hierarchy: a tree-leaf target whose link costs reproduce the Distances. A machine that is
/// not a symmetric tree (offline PUs, restricted cpusets) is padded to one, and idle vertices
/// pinned on the missing leaves (SCOTCH_graphMapFixed) keep tasks off them: this was closer to the
/// optimum than SCOTCH_archSub in the tests. Deterministic: Scotch runs in a context with
/// SCOTCH_OPTIONNUMDETERMINISTIC and a fixed random seed.
///
/// With fewer tasks than PUs the graph is padded with idle vertices, so that Scotch chooses which
/// PUs stay free; with more, tasks are spread evenly (floor or ceil of N/P per PU).
class ScotchMapper final : public Mapper {
  public:
    explicit ScotchMapper(ScotchOptions options = {}) : options_(std::move(options)) {}
    static constexpr std::string_view kName = "scotch";
    std::string_view name() const noexcept override { return kName; }
    const ScotchOptions& options() const noexcept { return options_; }

    /// The distance between every pair of PUs (row-major, pu_count() squared) in the Scotch
    /// target built for this topology, read back with SCOTCH_archDomDist. It equals Distances
    /// by construction; exposed so that tests can check that.
    static std::vector<std::uint32_t> target_distances(const Topology& topology,
                                                       const Distances& distances);

    /// The same target in Scotch's target file format ("tleaf LEVELS SIZE LINK ..."), e.g.
    /// "tleaf 3 2 5 8 4 2 1" for 2 packages x 8 cores x 2 PUs at the default costs: what
    /// scotch_gmap needs to map onto the machine this mapper sees. Leaf k of a symmetric machine
    /// is its PU k.
    static std::string target_description(const Topology& topology, const Distances& distances);

  protected:
    Placement place(const MappingProblem& problem) const override;

  private:
    ScotchOptions options_;
};

}  // namespace cdsm
