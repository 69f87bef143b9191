// SPDX-License-Identifier: GPL-2.0
#include "cdsm/scotch_mapper.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

#include "cdsm/baseline_mappers.hpp"
#include "cdsm/cost.hpp"
#include "cdsm/error.hpp"
#include "placement_repair.hpp"
#include "scotch_support.hpp"

namespace cdsm {
namespace {

using scotch::Arch;
using scotch::check;
using scotch::Context;
using scotch::Graph;
using scotch::Strat;

// The largest arity of each level above the PUs.
std::vector<SCOTCH_Num> largest_arities(const Topology& topology) {
    std::vector<SCOTCH_Num> arity(topology.level_count() - 1, 1);
    for (std::size_t level = 0; level < arity.size(); ++level)
        for (std::uint32_t node = 0; node < topology.node_count(level); ++node)
            arity[level] = std::max<SCOTCH_Num>(
                arity[level], static_cast<SCOTCH_Num>(topology.children(level, node).size()));
    return arity;
}

// The levels of SCOTCH_archTleaf, top first: the arity of each and the cost of its links.
struct TreeLevels {
    std::vector<SCOTCH_Num> sizes, links;
};

// Scotch adds link costs from the leaf up to the common ancestor: a level's link costs the
// difference between its distance and the distance one level down. Merging two levels of equal
// cost keeps every leaf number.
TreeLevels tree_levels(const Distances& distances, const std::vector<SCOTCH_Num>& arity) {
    std::vector<SCOTCH_Num> sizes, costs;
    for (std::size_t level = 0; level < arity.size(); ++level) {
        const auto cost = static_cast<SCOTCH_Num>(distances.level_cost(level));
        if (!costs.empty() && costs.back() == cost)
            sizes.back() *= arity[level];
        else {
            sizes.push_back(arity[level]);
            costs.push_back(cost);
        }
    }
    std::vector<SCOTCH_Num> links(costs.size());
    for (std::size_t k = 0; k < costs.size(); ++k)
        links[k] = costs[k] - (k + 1 < costs.size() ? costs[k + 1] : 0);
    return {std::move(sizes), std::move(links)};
}

// The hierarchy as a Scotch tree-leaf target. Leaves are numbered in mixed radix over the
// largest arity of each level; on a restricted or asymmetric machine some leaves are phantoms
// (no usable PU) and the mapping pins idle vertices on them.
class TreeTarget {
  public:
    static constexpr PuId kPhantom = std::numeric_limits<PuId>::max();

    TreeTarget(const Topology& topology, const Distances& distances)
        : leaf_of_(topology.pu_count(), 0) {
        const std::size_t internal = topology.level_count() - 1;
        const std::vector<SCOTCH_Num> arity = largest_arities(topology);
        // rank[level][node]: the node's rank among its parent's children (level > 0).
        std::vector<std::vector<SCOTCH_Num>> rank(internal + 1);
        for (std::size_t level = 0; level < internal; ++level) {
            rank[level + 1].resize(topology.node_count(level + 1));
            for (std::uint32_t node = 0; node < topology.node_count(level); ++node) {
                const auto children = topology.children(level, node);
                for (std::size_t k = 0; k < children.size(); ++k)
                    rank[level + 1][children[k]] = static_cast<SCOTCH_Num>(k);
            }
        }
        for (PuId pu = 0; pu < topology.pu_count(); ++pu) {
            const auto path = topology.path(pu);
            SCOTCH_Num leaf = 0;
            for (std::size_t level = 0; level < internal; ++level)
                leaf = leaf * arity[level] + rank[level + 1][path[level + 1]];
            leaf_of_[pu] = leaf;
        }
        TreeLevels tree = tree_levels(distances, arity);
        check(SCOTCH_archTleaf(arch_.get(), static_cast<SCOTCH_Num>(tree.sizes.size()),
                               tree.sizes.data(), tree.links.data()),
              "SCOTCH_archTleaf");
        pu_of_leaf_.assign(static_cast<std::size_t>(SCOTCH_archSize(arch_.get())), kPhantom);
        for (PuId pu = 0; pu < leaf_of_.size(); ++pu)
            pu_of_leaf_[static_cast<std::size_t>(leaf_of_[pu])] = pu;
    }

    SCOTCH_Arch* arch() noexcept { return arch_.get(); }
    std::size_t leaf_count() const noexcept { return pu_of_leaf_.size(); }
    SCOTCH_Num leaf(PuId pu) const { return leaf_of_.at(pu); }
    // The PU of a leaf, or kPhantom.
    PuId pu(SCOTCH_Num leaf) const { return pu_of_leaf_.at(static_cast<std::size_t>(leaf)); }

  private:
    std::vector<SCOTCH_Num> leaf_of_;
    std::vector<PuId> pu_of_leaf_;
    Arch arch_{"tleaf target"};
};

// Edge weights scaled into Scotch's integers so that no cost sum can overflow.
std::vector<SCOTCH_Num> scaled_weights(const CommGraph& graph, std::uint32_t max_distance) {
    const auto weights = graph.weights();
    std::vector<SCOTCH_Num> out(weights.size(), 1);
    if (weights.empty()) return out;
    const double top = static_cast<double>(*std::max_element(weights.begin(), weights.end()));
    const double limit = std::clamp(
        double(1 << 30) / (static_cast<double>(weights.size()) * std::max(1u, max_distance)), 1.0,
        65535.0);
    for (std::size_t k = 0; k < weights.size(); ++k)
        out[k] = std::max<SCOTCH_Num>(
            1, static_cast<SCOTCH_Num>(static_cast<double>(weights[k]) / top * limit + 0.5));
    return out;
}

// Recursive bipartitioning with no coarsening: see ScotchOptions::flat_max_tasks.
std::string flat_strategy(double imbalance) {
    const std::string bal = "bal=" + std::to_string(imbalance);
    return "r{job=t,map=t,poli=S," + bal + ",sep=h{pass=5}f{move=120,pass=-1," + bal + ",type=b}}";
}

// One deterministic Scotch run of a problem of `tasks` tasks; parttab holds the pinned vertices
// on entry, the mapping on exit.
void run_scotch(SCOTCH_Graph* graph, std::size_t tasks, TreeTarget& target,
                const ScotchOptions& options, SCOTCH_Num seed, bool pinned,
                std::vector<SCOTCH_Num>& parttab) {
    Context context("context");
    Graph bound("context graph");
    scotch::deterministic_context(context, graph, bound, seed);

    Strat strat("strategy");
    const std::string text = options.strategy.empty() && tasks <= options.flat_max_tasks
                                 ? flat_strategy(options.imbalance)
                                 : options.strategy;
    if (text.empty())
        check(SCOTCH_stratGraphMapBuild(
                  strat.get(), static_cast<SCOTCH_Num>(options.strategy_flags),
                  static_cast<SCOTCH_Num>(target.leaf_count()), options.imbalance),
              "SCOTCH_stratGraphMapBuild");
    else if (SCOTCH_stratGraphMap(strat.get(), text.c_str()) != 0)
        throw Error("Scotch strategy '" + text + "'", "rejected by Scotch");

    if (pinned)
        check(SCOTCH_graphMapFixed(bound.get(), target.arch(), strat.get(), parttab.data()),
              "SCOTCH_graphMapFixed");
    else
        check(SCOTCH_graphMap(bound.get(), target.arch(), strat.get(), parttab.data()),
              "SCOTCH_graphMap");
}

}  // namespace

std::vector<std::uint32_t> ScotchMapper::target_distances(const Topology& topology,
                                                          const Distances& distances) {
    const std::size_t p = topology.pu_count();
    std::vector<std::uint32_t> table(p * p, 0);
    if (p == 1) return table;
    TreeTarget target(topology, distances);
    for (PuId a = 0; a < p; ++a) {
        for (PuId b = 0; b < p; ++b) {
            SCOTCH_ArchDom da, db;
            check(SCOTCH_archDomTerm(target.arch(), &da, target.leaf(a)), "SCOTCH_archDomTerm");
            check(SCOTCH_archDomTerm(target.arch(), &db, target.leaf(b)), "SCOTCH_archDomTerm");
            table[a * p + b] =
                static_cast<std::uint32_t>(SCOTCH_archDomDist(target.arch(), &da, &db));
        }
    }
    return table;
}

std::string ScotchMapper::target_description(const Topology& topology, const Distances& distances) {
    const TreeLevels tree = tree_levels(distances, largest_arities(topology));
    std::string out = "tleaf " + std::to_string(tree.sizes.size());
    for (std::size_t k = 0; k < tree.sizes.size(); ++k)
        out += " " + std::to_string(tree.sizes[k]) + " " + std::to_string(tree.links[k]);
    return out;
}

Placement ScotchMapper::place(const MappingProblem& problem) const {
    check_problem(problem);
    const std::size_t n = problem.matrix.size(), p = problem.topology.pu_count();
    if (n == 0) return Placement();
    if (p == 1) return Placement(std::vector<PuId>(n, 0));

    const CommGraph comm(problem.matrix, options_.prune);
    TreeTarget target(problem.topology, problem.distances);
    // Every leaf gets `per_leaf` vertices: the tasks, idle vertices that let Scotch choose which
    // PUs stay (partly) idle, and idle vertices pinned on phantom leaves so that only usable
    // PUs receive tasks.
    const std::size_t per_leaf = (n + p - 1) / p, usable = per_leaf * p;
    const std::size_t vertices = per_leaf * target.leaf_count();
    if (vertices > static_cast<std::size_t>(std::numeric_limits<SCOTCH_Num>::max() / 2))
        throw Error("Scotch mapper", std::to_string(n) + " tasks are too many");
    std::vector<SCOTCH_Num> verttab(vertices + 1);
    for (std::size_t v = 0; v <= vertices; ++v)
        verttab[v] = static_cast<SCOTCH_Num>(comm.offsets()[std::min(v, n)]);
    std::vector<SCOTCH_Num> edgetab(comm.neighbours().begin(), comm.neighbours().end());
    std::vector<SCOTCH_Num> edlotab = scaled_weights(comm, problem.distances.max());
    std::vector<SCOTCH_Num> parttab(vertices, -1);
    const std::size_t pinned = vertices - usable;

    Graph graph("graph");
    check(
        SCOTCH_graphBuild(graph.get(), 0, static_cast<SCOTCH_Num>(vertices), verttab.data(),
                          verttab.data() + 1, nullptr, nullptr,
                          static_cast<SCOTCH_Num>(edgetab.size()), edgetab.data(), edlotab.data()),
        "SCOTCH_graphBuild");
    // Every edge, for the repairs: the graph given to Scotch when it has them all, else built
    // only if a repair needs it.
    std::optional<CommGraph> whole_storage;
    const CommGraph* whole = comm.pruned() ? nullptr : &comm;
    bool repaired = false;  // whether any result was rebalanced (and refined)
    const bool refining = n <= options_.refine_max_tasks;
    const std::size_t arcs = std::max<std::size_t>(edgetab.size(), 1);
    const bool sparse = !comm.pruned();
    const std::size_t attempts =
        n <= options_.attempts_max_tasks ? options_.attempts
        : refining || !sparse
            ? 1
            : std::clamp<std::size_t>(options_.attempt_arcs / arcs, 1, options_.max_attempts);
    std::vector<PuId> best;
    double best_cost = 0;
    std::size_t refine_work = 0;  // what the local search from Scotch's mappings took
    for (std::size_t attempt = 0; attempt < std::max<std::size_t>(attempts, 1); ++attempt) {
        parttab.assign(parttab.size(), -1);
        for (std::size_t v = usable, leaf = 0; leaf < target.leaf_count(); ++leaf)
            if (target.pu(static_cast<SCOTCH_Num>(leaf)) == TreeTarget::kPhantom)
                for (std::size_t k = 0; k < per_leaf; ++k)
                    parttab[v++] = static_cast<SCOTCH_Num>(leaf);
        run_scotch(graph.get(), n, target, options_, static_cast<SCOTCH_Num>(attempt + 1),
                   pinned > 0, parttab);
        // A task Scotch left on a phantom leaf (it should not) goes to PU 0; rebalancing moves it.
        std::vector<PuId> pus(n);
        for (std::size_t t = 0; t < n; ++t) {
            const PuId pu = target.pu(parttab[t]);
            pus[t] = pu == TreeTarget::kPhantom ? 0 : pu;
        }
        if (refining || !Placement(pus).is_balanced(p)) {
            if (!whole)
                whole = &whole_storage.emplace(problem.matrix, PruneOptions{.min_tasks = n + 1});
            detail::rebalance(pus, *whole, problem.distances);
            repaired = true;
            if (refining)
                refine_work += detail::refine(pus, *whole, problem.topology, problem.distances);
        }
        if (attempts > 1) {
            const double cost = mapping_cost(problem.matrix, Placement(pus), problem.distances);
            if (!best.empty() && cost >= best_cost) continue;
            best_cost = cost;
        }
        best = std::move(pus);
    }
    if (refining && options_.compact_start) {
        // Bipartitioning can cut chains badly on lopsided over-subscribed machines (a 1-D
        // stencil of 40 tasks on 10 PUs of packages of 1 or 2 cores: 1.5 times compact's cost);
        // the local search from the compact placement is the second candidate. Its work is
        // bounded by twice that of the search from Scotch's mapping (at least two sweeps):
        // from compact, a dense graph of 128 tasks took 36 ms of moves for no gain, where
        // Scotch's own took 1.6 ms (bench/mapping/side_by_side.cpp).
        const Placement compact = CompactMapper().map(problem);
        std::vector<PuId> pus(compact.pus().begin(), compact.pus().end());
        const std::size_t sweep = n * (p + n);
        detail::refine(pus, *whole, problem.topology, problem.distances, 8,
                       std::max(2 * refine_work, 2 * sweep));
        if (mapping_cost(problem.matrix, Placement(pus), problem.distances) <
            mapping_cost(problem.matrix, Placement(best), problem.distances))
            best = std::move(pus);
    }
    if (n * p <= options_.escape_max_size && repaired)
        detail::escape(best, *whole, problem.topology, problem.distances);
    return Placement(std::move(best));
}

}  // namespace cdsm
