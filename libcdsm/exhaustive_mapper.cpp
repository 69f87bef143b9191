// SPDX-License-Identifier: GPL-2.0
#include "cdsm/exhaustive_mapper.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "cdsm/error.hpp"

namespace cdsm {
namespace {

class Search {
  public:
    explicit Search(const MappingProblem& problem)
        : m_(problem.matrix),
          topo_(problem.topology),
          d_(problem.distances),
          n_(m_.size()),
          p_(topo_.pu_count()),
          low_(n_ / p_),
          high_((n_ + p_ - 1) / p_),
          order_(n_),
          where_(n_, 0),
          load_(p_, 0),
          occupied_(topo_.level_count()) {
        for (std::size_t level = 0; level < topo_.level_count(); ++level)
            occupied_[level].assign(topo_.node_count(level), 0);
        // Heavy communicators first: the bound then bites early.
        std::iota(order_.begin(), order_.end(), 0);
        std::stable_sort(order_.begin(), order_.end(), [this](std::size_t a, std::size_t b) {
            return m_.row_total(a) > m_.row_total(b);
        });
    }

    Placement run() {
        descend(0, 0.0);
        return Placement(best_);
    }

  private:
    void descend(std::size_t k, double cost) {
        if (cost >= best_cost_) return;
        if (k == n_) {
            best_cost_ = cost;
            best_ = where_;
            return;
        }
        const std::size_t task = order_[k];
        for (PuId pu = 0; pu < p_; ++pu) {
            if (load_[pu] >= high_ || !worth_trying(pu)) continue;
            double added = 0;
            for (std::size_t j = 0; j < k; ++j)
                added += static_cast<double>(m_.at(task, order_[j])) * d_(pu, where_[order_[j]]);
            place(task, pu, +1);
            if (deficit_ <= n_ - k - 1) descend(k + 1, cost + added);
            place(task, pu, -1);
        }
    }

    // Among empty subtrees of the same shape only the first one is tried: they are
    // interchangeable because nothing has been placed in them yet.
    bool worth_trying(PuId pu) const {
        if (load_[pu] > 0) return true;
        std::size_t top = topo_.level_count() - 1;
        while (top > 0 && occupied_[top - 1][topo_.ancestor(pu, top - 1)] == 0) --top;
        for (std::size_t level = std::max<std::size_t>(top, 1); level < topo_.level_count();
             ++level) {
            const std::uint32_t node = topo_.ancestor(pu, level);
            const std::uint32_t shape = topo_.shape(level, node);
            for (std::uint32_t sibling : topo_.children(level - 1, topo_.ancestor(pu, level - 1))) {
                if (sibling == node) break;
                if (occupied_[level][sibling] == 0 && topo_.shape(level, sibling) == shape)
                    return false;
            }
        }
        return true;
    }

    void place(std::size_t task, PuId pu, int delta) {
        if (delta > 0) {
            where_[task] = pu;
            if (load_[pu] < low_) --deficit_;
            ++load_[pu];
        } else {
            --load_[pu];
            if (load_[pu] < low_) ++deficit_;
        }
        for (std::size_t level = 0; level < topo_.level_count(); ++level)
            occupied_[level][topo_.ancestor(pu, level)] += static_cast<std::size_t>(delta);
    }

    const CommMatrix& m_;
    const Topology& topo_;
    const Distances& d_;
    const std::size_t n_, p_, low_, high_;
    std::vector<std::size_t> order_;
    std::vector<PuId> where_;
    std::vector<std::size_t> load_;
    std::vector<std::vector<std::size_t>> occupied_;  // tasks under each node
    std::size_t deficit_ = low_ * p_;                 // tasks still needed to reach low_ everywhere
    std::vector<PuId> best_;
    double best_cost_ = std::numeric_limits<double>::infinity();
};

}  // namespace

Placement ExhaustiveMapper::place(const MappingProblem& problem) const {
    check_problem(problem);
    if (problem.matrix.size() > kMaxTasks)
        throw Error("exhaustive mapper", "cannot search " + std::to_string(problem.matrix.size()) +
                                             " tasks (at most " + std::to_string(kMaxTasks) + ")");
    if (problem.matrix.size() == 0) return Placement();
    return Search(problem).run();
}

}  // namespace cdsm
