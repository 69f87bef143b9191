// SPDX-License-Identifier: GPL-2.0
#include "cdsm/comm_graph.hpp"

#include <algorithm>

namespace cdsm {

CommGraph::CommGraph(const CommMatrix& matrix, PruneOptions prune) {
    const std::size_t n = matrix.size();
    const bool pruning = n >= prune.min_tasks && prune.keep_per_task + 1 < n;
    // kept[i * n + j]: one end of (i, j) counts it among its strongest partners.
    std::vector<char> kept(pruning ? n * n : 0, 0);
    if (pruning) {
        std::vector<std::pair<CommMatrix::Value, std::uint32_t>> row;
        // Ties broken by partner index so that pruning is deterministic.
        auto stronger = [](const auto& a, const auto& b) {
            return a.first != b.first ? a.first > b.first : a.second < b.second;
        };
        for (std::size_t i = 0; i < n; ++i) {
            row.clear();
            for (std::size_t j = 0; j < n; ++j)
                if (const auto v = matrix.at(i, j))
                    row.emplace_back(v, static_cast<std::uint32_t>(j));
            const auto keep = std::min(row.size(), prune.keep_per_task);
            std::nth_element(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(keep),
                             row.end(), stronger);
            for (std::size_t k = 0; k < keep; ++k)
                kept[i * n + row[k].second] = kept[row[k].second * n + i] = 1;
        }
    }
    offsets_.assign(1, 0);
    double kept_total = 0;
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
            const auto v = matrix.at(i, j);
            if (v == 0 || (pruning && !kept[i * n + j])) continue;
            neighbours_.push_back(static_cast<std::uint32_t>(j));
            weights_.push_back(v);
            kept_total += static_cast<double>(v);
        }
        offsets_.push_back(neighbours_.size());
    }
    const double total = matrix.total();
    kept_fraction_ = total == 0 ? 1.0 : kept_total / 2 / total;
}

}  // namespace cdsm
