// SPDX-License-Identifier: GPL-2.0
#include "cdsm/comm_graph.hpp"

#include <algorithm>

namespace cdsm {
namespace {

struct Arc {
    std::uint32_t to;
    CommMatrix::Value weight;
};

// Ties broken by partner index so that pruning is deterministic.
bool stronger(const Arc& a, const Arc& b) {
    return a.weight != b.weight ? a.weight > b.weight : a.to < b.to;
}

}  // namespace

CommGraph::CommGraph(const CommMatrix& matrix, PruneOptions prune) {
    const std::size_t n = matrix.size();
    std::vector<std::size_t> degree(n, 0);
    // Both directions of the kept edges, row by row in column order (row i receives its
    // partners j < i, from earlier rows, before its own j > i), `degree` counting them.
    auto place = [&](const auto& for_each_kept) {
        offsets_.assign(n + 1, 0);
        for (std::size_t i = 0; i < n; ++i) offsets_[i + 1] = offsets_[i] + degree[i];
        neighbours_.resize(offsets_[n]);
        weights_.resize(offsets_[n]);
        std::vector<std::size_t> fill(offsets_.begin(), offsets_.end() - 1);
        for_each_kept([&](std::size_t i, std::size_t j, CommMatrix::Value v) {
            neighbours_[fill[j]] = static_cast<std::uint32_t>(i);
            weights_[fill[j]++] = v;
            neighbours_[fill[i]] = static_cast<std::uint32_t>(j);
            weights_[fill[i]++] = v;
        });
    };
    if (n < prune.min_tasks || prune.keep_per_task + 1 >= n) {
        matrix.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value) {
            ++degree[i];
            ++degree[j];
        });
        place([&](const auto& f) { matrix.for_each_pair(f); });
        return;
    }

    // One pass for the degrees, the total and the k strongest arcs of each row in a heap whose
    // top is the weakest of them: k arcs per task, where a table of all 261 K arcs of a dense
    // 512-task matrix took a third of its mapping.
    const std::size_t k = prune.keep_per_task;
    std::vector<Arc> top(n * k);
    // The top of each full heap, side by side: most arcs are weaker, and this rejects them.
    std::vector<Arc> weakest(n, Arc{0, 0});
    double total = 0;
    std::size_t pairs = 0;
    // Arc `arc` into row i's heap, whose weakest it beats or which is not full.
    auto insert = [&top, &weakest, &degree, k](std::size_t i, const Arc& arc) {
        const auto heap = top.begin() + static_cast<std::ptrdiff_t>(i * k);
        const auto size = static_cast<std::ptrdiff_t>(std::min(degree[i], k));  // offered so far
        if (size == static_cast<std::ptrdiff_t>(k)) {
            std::pop_heap(heap, heap + size, stronger);
            heap[size - 1] = arc;
        } else {
            heap[size] = arc;
        }
        std::push_heap(heap, heap + std::min(size + 1, static_cast<std::ptrdiff_t>(k)), stronger);
        weakest[i] = heap[0];
    };
    matrix.for_each_pair([&, k](std::size_t i, std::size_t j, CommMatrix::Value v) {
        if (k > 0) {
            const Arc to_j{static_cast<std::uint32_t>(j), v},
                to_i{static_cast<std::uint32_t>(i), v};
            if (degree[i] < k || stronger(to_j, weakest[i])) insert(i, to_j);
            if (degree[j] < k || stronger(to_i, weakest[j])) insert(j, to_i);
        }
        ++degree[i];
        ++degree[j];
        ++pairs;
        total += static_cast<double>(v);
    });
    // The weakest arc each task keeps among its strongest partners: an edge survives if it is
    // at least as strong as either end's (a task of at most k partners keeps them all).
    auto kept_by = [&weakest, k](std::size_t i, const Arc& arc) {
        return k > 0 && !stronger(weakest[i], arc);
    };
    struct Edge {
        std::uint32_t i, j;
        CommMatrix::Value value;
    };
    std::vector<Edge> kept;
    std::fill(degree.begin(), degree.end(), 0);
    double kept_total = 0;
    matrix.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value v) {
        const auto a = static_cast<std::uint32_t>(i), b = static_cast<std::uint32_t>(j);
        if (!kept_by(i, {b, v}) && !kept_by(j, {a, v})) return;
        kept.push_back({a, b, v});
        ++degree[i];
        ++degree[j];
        kept_total += static_cast<double>(v);
    });
    place([&](const auto& f) {
        for (const Edge& e : kept) f(e.i, e.j, e.value);
    });
    pruned_ = kept.size() < pairs;
    kept_fraction_ = total == 0 ? 1.0 : kept_total / total;
}

}  // namespace cdsm
