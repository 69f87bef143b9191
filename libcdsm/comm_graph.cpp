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
    const bool pruning = n >= prune.min_tasks && prune.keep_per_task + 1 < n;
    // Both directions of every non-zero pair, row by row in column order.
    std::vector<std::size_t> degree(n + 1, 0);
    matrix.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value) {
        ++degree[i];
        ++degree[j];
    });
    offsets_.assign(n + 1, 0);
    for (std::size_t i = 0; i < n; ++i) offsets_[i + 1] = offsets_[i] + degree[i];
    std::vector<Arc> arcs(offsets_[n]);
    {
        std::vector<std::size_t> fill(offsets_.begin(), offsets_.end() - 1);
        // Row i receives its partners j < i (from earlier rows) before its own j > i: sorted.
        matrix.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value v) {
            arcs[fill[j]++] = {static_cast<std::uint32_t>(i), v};
            arcs[fill[i]++] = {static_cast<std::uint32_t>(j), v};
        });
    }
    // The weakest arc each task keeps among its strongest partners: an edge survives if it is
    // at least as strong as either end's.
    std::vector<Arc> cut(n, Arc{0, 0});
    if (pruning && prune.keep_per_task > 0) {
        // The keep_per_task strongest arcs of each row in a heap whose top is the weakest of
        // them: one pass over the row, no copy (nth_element over a copy took a third of a dense
        // 512-task mapping).
        const std::size_t k = prune.keep_per_task;
        std::vector<Arc> top;
        top.reserve(k);
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t begin = offsets_[i], end = offsets_[i + 1];
            if (end - begin <= k) {
                cut[i] = {static_cast<std::uint32_t>(n), 0};  // keeps every arc
                continue;
            }
            top.assign(arcs.begin() + static_cast<std::ptrdiff_t>(begin),
                       arcs.begin() + static_cast<std::ptrdiff_t>(begin + k));
            std::make_heap(top.begin(), top.end(), stronger);
            for (std::size_t a = begin + k; a < end; ++a) {
                if (!stronger(arcs[a], top.front())) continue;
                std::pop_heap(top.begin(), top.end(), stronger);
                top.back() = arcs[a];
                std::push_heap(top.begin(), top.end(), stronger);
            }
            cut[i] = top.front();
        }
    }
    auto kept_by = [&](std::size_t i, const Arc& arc) {
        return cut[i].to == n || (prune.keep_per_task > 0 && !stronger(cut[i], arc));
    };
    double kept_total = 0;
    neighbours_.reserve(arcs.size());
    weights_.reserve(arcs.size());
    std::size_t begin = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t end = offsets_[i + 1];
        for (std::size_t k = begin; k < end; ++k) {
            const Arc& arc = arcs[k];
            if (pruning && !kept_by(i, arc) &&
                !kept_by(arc.to, Arc{static_cast<std::uint32_t>(i), arc.weight}))
                continue;
            neighbours_.push_back(arc.to);
            weights_.push_back(arc.weight);
            kept_total += static_cast<double>(arc.weight);
        }
        begin = end;
        offsets_[i + 1] = neighbours_.size();
    }
    const double total = matrix.total();
    pruned_ = neighbours_.size() < arcs.size();
    kept_fraction_ = total == 0 ? 1.0 : kept_total / 2 / total;
}

}  // namespace cdsm
