// SPDX-License-Identifier: GPL-2.0
// map_cluster: ranks onto nodes with Scotch on the network's tree, then onto each node's cores
// with the node-level mapper.
#include <algorithm>
#include <limits>
#include <memory>
#include <string>

#include "cdsm/cluster.hpp"
#include "cdsm/error.hpp"
#include "cdsm/mapper.hpp"
#include "scotch_support.hpp"

namespace cdsm {
namespace {

// The job's traffic as an undirected graph in compressed rows: both directions of a pair
// added, each edge in both rows.
struct PairGraph {
    std::vector<std::size_t> offsets;
    std::vector<std::uint32_t> neighbours;
    std::vector<std::uint64_t> weights;
};

PairGraph pair_graph(const RankTraffic& traffic) {
    struct Edge {
        std::uint32_t a, b;
        std::uint64_t w;
    };
    std::vector<Edge> edges;
    edges.reserve(traffic.flows().size());
    for (const Flow& f : traffic.flows())
        if (f.bytes || f.messages)
            edges.push_back({std::min(f.src, f.dst), std::max(f.src, f.dst),
                             std::max<std::uint64_t>(f.bytes, 1)});
    std::sort(edges.begin(), edges.end(),
              [](const Edge& x, const Edge& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
    std::size_t out = 0;
    for (const Edge& e : edges) {
        if (out > 0 && edges[out - 1].a == e.a && edges[out - 1].b == e.b)
            edges[out - 1].w += e.w;
        else
            edges[out++] = e;
    }
    edges.resize(out);
    PairGraph g;
    g.offsets.assign(traffic.ranks() + 1, 0);
    for (const Edge& e : edges) {
        ++g.offsets[e.a + 1];
        ++g.offsets[e.b + 1];
    }
    for (std::size_t r = 0; r < traffic.ranks(); ++r) g.offsets[r + 1] += g.offsets[r];
    g.neighbours.resize(2 * edges.size());
    g.weights.resize(2 * edges.size());
    std::vector<std::size_t> fill(g.offsets.begin(), g.offsets.end() - 1);
    for (const Edge& e : edges) {
        g.neighbours[fill[e.a]] = e.b;
        g.weights[fill[e.a]++] = e.w;
        g.neighbours[fill[e.b]] = e.a;
        g.weights[fill[e.b]++] = e.w;
    }
    return g;
}

// The network as a Scotch tree-leaf target whose leaves are nodes: per level (top first) the
// largest number of children of a group, a node's leaf numbered in that mixed radix. Groups
// with fewer children leave phantom leaves, which the mapping fills with pinned idle vertices.
struct NetworkTree {
    std::vector<SCOTCH_Num> sizes, links;
    std::vector<SCOTCH_Num> leaf_of_node;
    std::vector<std::uint32_t> node_of_leaf;  // node_count() for a phantom leaf
};

NetworkTree network_tree(const Network& net, const TimeModel& model) {
    const std::size_t levels = net.level_count(), nodes = net.node_count();
    // rank[node][L]: the rank of the node's level L-1 group among its level L group's children.
    std::vector<std::vector<SCOTCH_Num>> rank(nodes, std::vector<SCOTCH_Num>(levels + 1, 0));
    std::vector<SCOTCH_Num> arity(levels + 1, 1);
    for (std::size_t level = 1; level <= levels; ++level) {
        std::vector<std::vector<std::uint32_t>> children(nodes);
        for (std::size_t n = 0; n < nodes; ++n) {
            auto& list = children[net.group(n, level)];
            const std::uint32_t child = net.group(n, level - 1);
            auto it = std::find(list.begin(), list.end(), child);
            if (it == list.end()) it = list.insert(list.end(), child);
            rank[n][level] = static_cast<SCOTCH_Num>(it - list.begin());
            arity[level] = std::max(arity[level], static_cast<SCOTCH_Num>(list.size()));
        }
    }
    NetworkTree t;
    SCOTCH_Num leaves = 1;
    for (std::size_t level = levels; level >= 1; --level) {
        t.sizes.push_back(arity[level]);
        const std::uint32_t cost = model.switch_cost(level);
        t.links.push_back(
            static_cast<SCOTCH_Num>(level > 1 ? cost - model.switch_cost(level - 1) : cost));
        leaves *= arity[level];
    }
    t.node_of_leaf.assign(static_cast<std::size_t>(leaves), static_cast<std::uint32_t>(nodes));
    for (std::size_t n = 0; n < nodes; ++n) {
        SCOTCH_Num leaf = 0;
        for (std::size_t level = levels; level >= 1; --level)
            leaf = leaf * arity[level] + rank[n][level];
        t.leaf_of_node.push_back(leaf);
        t.node_of_leaf[static_cast<std::size_t>(leaf)] = static_cast<std::uint32_t>(n);
    }
    return t;
}

// Ranks onto nodes by Scotch; a rank Scotch left on a phantom leaf gets node_count().
std::vector<std::uint32_t> scotch_nodes(const PairGraph& g, std::size_t ranks,
                                        const Cluster& cluster) {
    const Network& net = cluster.network();
    const NetworkTree tree = network_tree(net, cluster.model());
    const std::size_t slots = cluster.cores_per_node(), leaves = tree.node_of_leaf.size();
    const std::size_t vertices = slots * leaves;
    if (vertices > static_cast<std::size_t>(std::numeric_limits<SCOTCH_Num>::max() / 4))
        throw Error("cluster", "too many slots for Scotch (" + std::to_string(vertices) + ")");
    std::vector<SCOTCH_Num> verttab(vertices + 1);
    for (std::size_t v = 0; v <= vertices; ++v)
        verttab[v] = static_cast<SCOTCH_Num>(g.offsets[std::min(v, ranks)]);
    std::vector<SCOTCH_Num> edgetab(g.neighbours.begin(), g.neighbours.end());
    // Weights scaled so that Scotch's sums of weight x distance stay within its integers.
    std::vector<SCOTCH_Num> edlotab(g.weights.size(), 1);
    if (!g.weights.empty()) {
        const double top =
            static_cast<double>(*std::max_element(g.weights.begin(), g.weights.end()));
        const double limit =
            std::clamp(double(1 << 30) / (static_cast<double>(g.weights.size()) *
                                          cluster.model().switch_cost(net.level_count())),
                       1.0, 1e6);
        for (std::size_t k = 0; k < g.weights.size(); ++k)
            edlotab[k] = std::max<SCOTCH_Num>(
                1, static_cast<SCOTCH_Num>(static_cast<double>(g.weights[k]) / top * limit + 0.5));
    }
    std::vector<SCOTCH_Num> parttab(vertices, -1);
    std::size_t pinned = 0;
    for (std::size_t leaf = 0, v = slots * net.node_count(); leaf < leaves; ++leaf)
        if (tree.node_of_leaf[leaf] == net.node_count())
            for (std::size_t k = 0; k < slots; ++k, ++pinned)
                parttab[v++] = static_cast<SCOTCH_Num>(leaf);

    scotch::Arch arch("tleaf target");
    scotch::check(SCOTCH_archTleaf(arch.get(), static_cast<SCOTCH_Num>(tree.sizes.size()),
                                   tree.sizes.data(), tree.links.data()),
                  "SCOTCH_archTleaf");
    scotch::Graph graph("graph");
    scotch::check(
        SCOTCH_graphBuild(graph.get(), 0, static_cast<SCOTCH_Num>(vertices), verttab.data(),
                          verttab.data() + 1, nullptr, nullptr,
                          static_cast<SCOTCH_Num>(edgetab.size()), edgetab.data(), edlotab.data()),
        "SCOTCH_graphBuild");
    // Deterministic (DESIGN §4): a private generator with a fixed seed, one thread.
    scotch::Context context("context");
    scotch::Graph bound("context graph");
    scotch::deterministic_context(context, graph.get(), bound, 1);
    scotch::Strat strat("strategy");
    scotch::check(SCOTCH_stratGraphMapBuild(strat.get(), SCOTCH_STRATDEFAULT,
                                            static_cast<SCOTCH_Num>(leaves), 0.01),
                  "SCOTCH_stratGraphMapBuild");
    if (pinned > 0)
        scotch::check(SCOTCH_graphMapFixed(bound.get(), arch.get(), strat.get(), parttab.data()),
                      "SCOTCH_graphMapFixed");
    else
        scotch::check(SCOTCH_graphMap(bound.get(), arch.get(), strat.get(), parttab.data()),
                      "SCOTCH_graphMap");
    std::vector<std::uint32_t> node_of(ranks);
    for (std::size_t r = 0; r < ranks; ++r)
        node_of[r] = tree.node_of_leaf.at(static_cast<std::size_t>(parttab[r]));
    return node_of;
}

// Moves ranks off nodes with more ranks than cores (Scotch balances within 1 %) and off
// phantom nodes (node_count()), each time the move that loses least: the rank with the least
// traffic to its node, to the node with room it talks to most.
void fit_to_cores(std::vector<std::uint32_t>& node_of, const PairGraph& g, const Cluster& cluster) {
    const std::size_t nodes = cluster.network().node_count(), slots = cluster.cores_per_node();
    std::vector<std::size_t> load(nodes + 1, 0);
    for (const std::uint32_t n : node_of) ++load[n];
    load[nodes] = std::numeric_limits<std::size_t>::max() / 2;  // every phantom rank moves
    std::vector<std::uint64_t> affinity(nodes + 1, 0);
    for (;;) {
        std::size_t best_rank = node_of.size();
        std::uint32_t best_target = 0;
        double best_gain = -std::numeric_limits<double>::infinity();
        for (std::size_t r = 0; r < node_of.size(); ++r) {
            const std::uint32_t from = node_of[r];
            if (from != nodes && load[from] <= slots) continue;
            std::vector<std::uint32_t> touched;
            for (std::size_t k = g.offsets[r]; k < g.offsets[r + 1]; ++k) {
                const std::uint32_t n = node_of[g.neighbours[k]];
                if (affinity[n] == 0) touched.push_back(n);
                affinity[n] += g.weights[k];
            }
            const auto gain = [&](std::uint32_t to) {
                return static_cast<double>(affinity[to]) -
                       (from == nodes ? 0.0 : static_cast<double>(affinity[from]));
            };
            for (const std::uint32_t n : touched)
                if (n != nodes && n != from && load[n] < slots && gain(n) > best_gain) {
                    best_gain = gain(n);
                    best_rank = r;
                    best_target = n;
                }
            for (std::uint32_t n = 0; n < nodes; ++n)  // the first node with room, if no partner's
                if (n != from && load[n] < slots) {
                    if (gain(n) > best_gain) {
                        best_gain = gain(n);
                        best_rank = r;
                        best_target = n;
                    }
                    break;
                }
            for (const std::uint32_t n : touched) affinity[n] = 0;
        }
        if (best_rank == node_of.size()) return;
        --load[node_of[best_rank]];
        ++load[best_target];
        node_of[best_rank] = best_target;
    }
}

// Swaps of two ranks between nodes, or moves to a node with room, that lower the inter-node
// cost, sweep after sweep while one does (at most `sweeps`): Scotch's bipartitions can cut a
// ring twice where once would do, most of all beside the idle vertices pinned on a padded tree
// (3 + 2 nodes under two switches: a ring cut 7 times; 6 after the swaps, where 5 is best).
constexpr std::size_t kRefineMaxRanks = 1024;

void refine_nodes(std::vector<std::uint32_t>& node_of, const PairGraph& g, const Cluster& cluster,
                  int sweeps) {
    const Network& net = cluster.network();
    const std::size_t slots = cluster.cores_per_node();
    constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
    const auto dist = [&](std::uint32_t a, std::uint32_t b) -> double {
        return a == b ? 0.0 : cluster.model().switch_cost(net.common_level(a, b));
    };
    std::vector<std::vector<std::uint32_t>> members(net.node_count());
    for (std::size_t r = 0; r < node_of.size(); ++r)
        members[node_of[r]].push_back(static_cast<std::uint32_t>(r));
    // What moving r to `to` saves on its edges, the one to `partner` (its swap) left out.
    const auto move_gain = [&](std::uint32_t r, std::uint32_t to, std::uint32_t partner) {
        double gain = 0;
        const std::uint32_t from = node_of[r];
        for (std::size_t k = g.offsets[r]; k < g.offsets[r + 1]; ++k) {
            const std::uint32_t x = g.neighbours[k];
            if (x == partner) continue;
            gain +=
                static_cast<double>(g.weights[k]) * (dist(from, node_of[x]) - dist(to, node_of[x]));
        }
        return gain;
    };
    for (int sweep = 0; sweep < sweeps; ++sweep) {
        bool improved = false;
        for (std::uint32_t r = 0; r < node_of.size(); ++r) {
            const std::uint32_t from = node_of[r];
            double best = 0;
            std::uint32_t best_to = kNone, best_swap = kNone;
            std::vector<std::uint32_t> tried;
            for (std::size_t k = g.offsets[r]; k < g.offsets[r + 1]; ++k) {
                const std::uint32_t to = node_of[g.neighbours[k]];
                if (to == from || std::find(tried.begin(), tried.end(), to) != tried.end())
                    continue;
                tried.push_back(to);
                if (members[to].size() < slots) {
                    const double gain = move_gain(r, to, kNone);
                    if (gain > best) {
                        best = gain;
                        best_to = to;
                        best_swap = kNone;
                    }
                }
                for (const std::uint32_t other : members[to]) {
                    const double gain = move_gain(r, to, other) + move_gain(other, from, r);
                    if (gain > best) {
                        best = gain;
                        best_to = to;
                        best_swap = other;
                    }
                }
            }
            if (best_to == kNone) continue;
            const auto relocate = [&](std::uint32_t rank, std::uint32_t to) {
                auto& list = members[node_of[rank]];
                list.erase(std::find(list.begin(), list.end(), rank));
                members[to].push_back(rank);
                node_of[rank] = to;
            };
            if (best_swap != kNone) relocate(best_swap, from);
            relocate(r, best_to);
            improved = true;
        }
        if (!improved) return;
    }
}

// The inter-node part of the mapping cost: what choosing nodes decides.
double inter_node_cost(const PairGraph& g, const std::vector<std::uint32_t>& node_of,
                       const Cluster& cluster) {
    double cost = 0;
    for (std::size_t r = 0; r < node_of.size(); ++r)
        for (std::size_t k = g.offsets[r]; k < g.offsets[r + 1]; ++k)
            if (node_of[r] != node_of[g.neighbours[k]])
                cost += static_cast<double>(g.weights[k]) *
                        cluster.model().switch_cost(
                            cluster.network().common_level(node_of[r], node_of[g.neighbours[k]]));
    return cost / 2;
}

}  // namespace

ClusterPlacement map_cluster(const RankTraffic& traffic, const Cluster& cluster,
                             const ClusterPlacement* current, PlacementRules rules) {
    const std::size_t ranks = traffic.ranks(), nodes = cluster.network().node_count();
    const ClusterPlacement block = block_placement(ranks, cluster);
    if (current && current->size() != ranks)
        throw Error("current placement", "has " + std::to_string(current->size()) +
                                             " ranks, the job " + std::to_string(ranks));
    if (ranks == 0) return {};
    const PairGraph g = pair_graph(traffic);
    std::vector<std::uint32_t> node_of(ranks, 0);
    if (nodes > 1) {
        node_of = scotch_nodes(g, ranks, cluster);
        fit_to_cores(node_of, g, cluster);
        // Small jobs only: at 4,096 ranks (a stencil, 256 nodes) the swaps took 0.3-0.4 s
        // and found nothing better than Scotch's.
        if (ranks <= kRefineMaxRanks) refine_nodes(node_of, g, cluster, 8);
        // Scotch can lose to a plain placement (DESIGN §4): the current one, then block.
        double best = inter_node_cost(g, node_of, cluster);
        for (const ClusterPlacement* other : {current, &block}) {
            if (!other) continue;
            std::vector<std::uint32_t> candidate(ranks);
            for (std::size_t r = 0; r < ranks; ++r) candidate[r] = (*other)[r].node;
            const double cost = inter_node_cost(g, candidate, cluster);
            if (cost < best) {
                best = cost;
                node_of = std::move(candidate);
            }
        }
    }
    // Each node's ranks onto its cores by the node-level mapper, on their pair matrix, under
    // the node-level rules (by default balanced over the packages).
    std::vector<std::vector<std::uint32_t>> on_node(nodes);
    for (std::size_t r = 0; r < ranks; ++r)
        on_node[node_of[r]].push_back(static_cast<std::uint32_t>(r));
    const std::unique_ptr<Mapper> mapper = make_mapper("scotch");
    ClusterPlacement placement(ranks);
    std::vector<std::uint32_t> local(ranks, 0);
    for (std::size_t n = 0; n < nodes; ++n) {
        const auto& members = on_node[n];
        if (members.empty()) continue;
        for (std::size_t k = 0; k < members.size(); ++k)
            local[members[k]] = static_cast<std::uint32_t>(k);
        CommMatrix sub(members.size());
        for (const std::uint32_t r : members)
            for (std::size_t k = g.offsets[r]; k < g.offsets[r + 1]; ++k) {
                const std::uint32_t peer = g.neighbours[k];
                if (peer > r && node_of[peer] == n) sub.add(local[r], local[peer], g.weights[k]);
            }
        const Placement cores =
            mapper->map({sub, cluster.node(), cluster.node_distances(), nullptr, rules});
        for (std::size_t k = 0; k < members.size(); ++k)
            placement[members[k]] = {static_cast<std::uint32_t>(n), cores[k]};
    }
    return placement;
}

}  // namespace cdsm
