// SPDX-License-Identifier: GPL-2.0
#include "placement_repair.hpp"

#include <algorithm>
#include <limits>

namespace cdsm::detail {
namespace {

// Cost differences below this are rounding, not improvements.
constexpr double kEpsilon = 1e-9;

// What task t would pay to the others if it ran on PU p.
double cost_on(std::size_t t, PuId p, const std::vector<PuId>& pus, const CommGraph& graph,
               const Distances& distances) {
    double cost = 0;
    for (std::size_t k = graph.offsets()[t]; k < graph.offsets()[t + 1]; ++k)
        cost += static_cast<double>(graph.weights()[k]) * distances(p, pus[graph.neighbours()[k]]);
    return cost;
}

// out[t * P + p] = cost_on(t, p) for every task and PU, in O(degree + nodes) per task instead of
// O(degree * P): the weight of t's partners under every node of the hierarchy gives, for each
// PU, how much of it has its lowest common ancestor at each level. With w_l the weight under
// p's ancestor at level l and c_l that level's cost (0 at the PUs), the cost on p is
// sum_l (w_l - w_{l+1}) c_l = w_0 c_0 + sum_{l>0} w_l (c_l - c_{l-1}). The sum is built top down,
// once per node: a node's partial sum is its parent's plus its own term, so that every PU reads
// the sum of its path (the same additions, in the same order, as summing each PU's levels).
void costs_on_every_pu(const std::vector<PuId>& pus, const CommGraph& graph,
                       const Topology& topology, const Distances& distances,
                       std::vector<double>& out) {
    const std::size_t levels = topology.level_count(), p_count = topology.pu_count();
    // ancestor[level * P + p]; parent[level][node] (a node index of level - 1); under[level][node]:
    // weight of the partners below node; sum[level][node]: the partial sum down to node; and
    // step[level]: c_l - c_{l-1}.
    std::vector<std::uint32_t> ancestor(levels * p_count);
    std::vector<std::vector<std::uint32_t>> parent(levels);
    std::vector<std::vector<double>> under(levels), sum(levels);
    std::vector<double> step(levels);
    for (std::size_t level = 0; level < levels; ++level) {
        parent[level].resize(topology.node_count(level));
        under[level].resize(topology.node_count(level));
        sum[level].resize(topology.node_count(level));
        step[level] = static_cast<double>(distances.level_cost(level)) -
                      (level == 0 ? 0.0 : static_cast<double>(distances.level_cost(level - 1)));
    }
    for (PuId p = 0; p < p_count; ++p) {
        const std::span<const std::uint32_t> path = topology.path(p);
        for (std::size_t level = 0; level < levels; ++level) {
            ancestor[level * p_count + p] = path[level];
            if (level > 0) parent[level][path[level]] = path[level - 1];
        }
    }
    for (std::size_t t = 0; t < pus.size(); ++t) {
        for (auto& nodes : under) std::fill(nodes.begin(), nodes.end(), 0.0);
        for (std::size_t k = graph.offsets()[t]; k < graph.offsets()[t + 1]; ++k)
            for (std::size_t level = 0; level < levels; ++level)
                under[level][ancestor[level * p_count + pus[graph.neighbours()[k]]]] +=
                    static_cast<double>(graph.weights()[k]);
        double* const row = out.data() + t * p_count;
        for (std::size_t level = 0; level < levels; ++level) {
            const double* const weight = under[level].data();
            // PU p is node p of the last level: its partial sums are the row.
            double* const partial = level + 1 == levels ? row : sum[level].data();
            const std::size_t nodes = sum[level].size();
            if (level == 0) {
                for (std::size_t node = 0; node < nodes; ++node)
                    partial[node] = 0.0 + weight[node] * step[0];
                continue;
            }
            const double* const above = sum[level - 1].data();
            const std::uint32_t* const up = parent[level].data();
            for (std::size_t node = 0; node < nodes; ++node)
                partial[node] = above[up[node]] + weight[node] * step[level];
        }
    }
}

std::vector<std::size_t> loads_of(const std::vector<PuId>& pus, std::size_t pu_count) {
    std::vector<std::size_t> load(pu_count, 0);
    for (PuId p : pus) ++load[p];
    return load;
}

}  // namespace

bool rebalance(std::vector<PuId>& pus, const CommGraph& graph, const Distances& distances,
               const std::vector<bool>* fixed) {
    const std::size_t p_count = distances.pu_count(), n = pus.size();
    const std::size_t low = n / p_count, high = (n + p_count - 1) / p_count;
    auto load = loads_of(pus, p_count);
    for (;;) {
        // First empty the overloaded PUs, then fill the underloaded ones.
        bool over = false, under = false;
        for (std::size_t l : load) {
            over |= l > high;
            under |= l < low;
        }
        if (!over && !under) return true;
        double best = std::numeric_limits<double>::infinity();
        std::size_t best_task = 0;
        PuId best_pu = 0;
        for (std::size_t t = 0; t < n; ++t) {
            const PuId from = pus[t];
            if (over ? load[from] <= high : load[from] <= low) continue;
            if (fixed && (*fixed)[t]) continue;
            const double here = cost_on(t, from, pus, graph, distances);
            for (PuId to = 0; to < p_count; ++to) {
                if (over ? load[to] >= high : load[to] >= low) continue;
                const double delta = cost_on(t, to, pus, graph, distances) - here;
                if (delta < best) {
                    best = delta;
                    best_task = t;
                    best_pu = to;
                }
            }
        }
        if (best == std::numeric_limits<double>::infinity()) return false;  // only fixed ones
        --load[pus[best_task]];
        ++load[best_pu];
        pus[best_task] = best_pu;
    }
}

std::size_t refine(std::vector<PuId>& pus, const CommGraph& graph, const Topology& topology,
                   const Distances& distances, std::size_t max_passes, std::size_t max_work) {
    const std::size_t p_count = distances.pu_count(), n = pus.size();
    const std::size_t low = n / p_count, high = (n + p_count - 1) / p_count;
    auto load = loads_of(pus, p_count);
    // on[t][p]: what task t pays if it runs on p, the others staying where they are.
    std::vector<double> on(n * p_count);
    costs_on_every_pu(pus, graph, topology, distances, on);
    std::size_t work = 0;
    std::vector<double> change(p_count);  // distances(p, to) - distances(p, from)
    std::vector<double> with_t(n, 0.0);   // weight of the edge (t, u), for the current t
    auto move = [&](std::size_t t, PuId to) {
        const PuId from = pus[t];
        work += (graph.offsets()[t + 1] - graph.offsets()[t]) * p_count;
        // Only PUs below the common ancestor of `from` and `to` see a change: the others' rows
        // are left alone (adding m * 0 would leave them as they are).
        PuId first = static_cast<PuId>(p_count), last = 0;
        for (PuId p = 0; p < p_count; ++p) {
            change[p] = distances(p, to) - static_cast<double>(distances(p, from));
            if (change[p] != 0) {
                first = std::min(first, p);
                last = p;
            }
        }
        for (std::size_t k = graph.offsets()[t]; k < graph.offsets()[t + 1]; ++k) {
            double* const row = on.data() + graph.neighbours()[k] * p_count;
            const auto m = static_cast<double>(graph.weights()[k]);
            for (PuId p = first; p <= last; ++p) row[p] += m * change[p];
        }
        --load[from];
        ++load[to];
        pus[t] = to;
    };
    for (std::size_t pass = 0; pass < max_passes; ++pass) {
        bool improved = false;
        for (std::size_t t = 0; t < n; ++t) {
            if (work >= max_work) return work;
            work += p_count + (n - t - 1);
            // Moves to the first PU with room where t pays less, then on from there (t's own row
            // does not change when t moves).
            const double* const mine = on.data() + t * p_count;
            PuId from = pus[t];
            double limit = mine[from] - kEpsilon;
            for (PuId to = 0; to < p_count && load[from] > low; ++to) {
                if (mine[to] < limit && to != from && load[to] < high) {
                    move(t, to);
                    improved = true;
                    from = to;
                    limit = mine[from] - kEpsilon;
                }
            }
            const std::size_t first = graph.offsets()[t], last = graph.offsets()[t + 1];
            for (std::size_t k = first; k < last; ++k)
                with_t[graph.neighbours()[k]] = static_cast<double>(graph.weights()[k]);
            for (std::size_t u = t + 1; u < n; ++u) {
                const PuId a = pus[t], b = pus[u];
                if (a == b) continue;
                const double delta = on[t * p_count + b] - on[t * p_count + a] +
                                     on[u * p_count + a] - on[u * p_count + b] +
                                     2.0 * with_t[u] * distances(a, b);
                if (delta < -kEpsilon) {
                    move(t, b);
                    move(u, a);
                    improved = true;
                }
            }
            for (std::size_t k = first; k < last; ++k) with_t[graph.neighbours()[k]] = 0;
        }
        if (!improved) return work;
    }
    return work;
}

void escape(std::vector<PuId>& pus, const CommGraph& graph, const Topology& topology,
            const Distances& distances, std::size_t max_rounds) {
    const std::size_t p_count = distances.pu_count(), n = pus.size();
    const std::size_t low = n / p_count, high = (n + p_count - 1) / p_count;
    auto cost_of = [&](const std::vector<PuId>& where) {
        double cost = 0;
        for (std::size_t t = 0; t < n; ++t) cost += cost_on(t, where[t], where, graph, distances);
        return cost / 2;
    };
    double best = cost_of(pus);
    auto try_kick = [&](std::vector<PuId> trial) {
        refine(trial, graph, topology, distances);
        const double cost = cost_of(trial);
        if (cost >= best - kEpsilon) return false;
        best = cost;
        pus = std::move(trial);
        return true;
    };
    // The first kick (a move of a task to a PU with room, or a swap of two tasks) after which
    // refine() ends cheaper.
    auto kick = [&]() {
        const auto load = loads_of(pus, p_count);
        for (std::size_t t = 0; t < n; ++t) {
            for (PuId to = 0; to < p_count; ++to) {
                if (to == pus[t] || load[pus[t]] <= low || load[to] >= high) continue;
                std::vector<PuId> trial = pus;
                trial[t] = to;
                if (try_kick(std::move(trial))) return true;
            }
            for (std::size_t u = t + 1; u < n; ++u) {
                if (pus[t] == pus[u]) continue;
                std::vector<PuId> trial = pus;
                std::swap(trial[t], trial[u]);
                if (try_kick(std::move(trial))) return true;
            }
        }
        return false;
    };
    for (std::size_t round = 0; round < max_rounds && kick(); ++round) {
    }
}

}  // namespace cdsm::detail
