// SPDX-License-Identifier: GPL-2.0
#include "cdsm/relabel.hpp"

#include <map>
#include <string>
#include <unordered_map>

#include "assignment.hpp"
#include "cdsm/error.hpp"

namespace cdsm {
namespace {

class Relabeller {
  public:
    Relabeller(const Placement& proposed, const Placement& current, const Topology& topology)
        : topo_(topology), leaf_(topology.level_count() - 1), tasks_under_(topology.level_count()) {
        for (std::size_t level = 0; level <= leaf_; ++level)
            tasks_under_[level].assign(topology.node_count(level), 0);
        for (std::size_t t = 0; t < proposed.size(); ++t) {
            ++stay_[key(proposed[t], current[t])];
            for (std::size_t level = 0; level <= leaf_; ++level)
                ++tasks_under_[level][topology.ancestor(proposed[t], level)];
        }
    }

    // Where each PU of the proposed placement goes.
    std::vector<PuId> leaf_map() {
        std::vector<PuId> to(topo_.pu_count());
        descend(0, 0, 0, to);
        return to;
    }

  private:
    using Pair = std::uint64_t;
    static Pair key(std::uint32_t a, std::uint32_t b) { return (Pair{a} << 32) | b; }

    // How many tasks under proposed node `a` can stay if `a` is mapped onto node `b`.
    double score(std::size_t level, std::uint32_t a, std::uint32_t b) {
        if (tasks_under_[level][a] == 0) return 0;
        if (level == leaf_) {
            const auto it = stay_.find(key(a, b));
            return it == stay_.end() ? 0 : static_cast<double>(it->second);
        }
        auto& memo = memo_[level];
        if (const auto it = memo.find(key(a, b)); it != memo.end()) return it->second.score;
        const auto ca = topo_.children(level, a), cb = topo_.children(level, b);
        const std::size_t k = ca.size();
        std::vector<double> gain(k * k, detail::kForbidden);
        for (std::size_t i = 0; i < k; ++i)
            for (std::size_t j = 0; j < k; ++j)
                if (topo_.shape(level + 1, ca[i]) == topo_.shape(level + 1, cb[j]))
                    gain[i * k + j] = score(level + 1, ca[i], cb[j]);
        Choice choice{0, detail::best_assignment(gain, k)};
        for (std::size_t i = 0; i < k; ++i) choice.score += gain[i * k + choice.column[i]];
        return memo.emplace(key(a, b), std::move(choice)).first->second.score;
    }

    void descend(std::size_t level, std::uint32_t a, std::uint32_t b, std::vector<PuId>& to) {
        if (level == leaf_) {
            to[a] = b;
            return;
        }
        score(level, a, b);
        const auto ca = topo_.children(level, a), cb = topo_.children(level, b);
        const auto it = memo_[level].find(key(a, b));
        // An empty subtree has no stored choice: any exchange of equal shapes will do.
        const std::vector<std::size_t> column =
            it != memo_[level].end() ? it->second.column : same_shapes(level, ca, cb);
        for (std::size_t i = 0; i < ca.size(); ++i) descend(level + 1, ca[i], cb[column[i]], to);
    }

    std::vector<std::size_t> same_shapes(std::size_t level, std::span<const std::uint32_t> ca,
                                         std::span<const std::uint32_t> cb) const {
        std::vector<double> gain(ca.size() * ca.size(), detail::kForbidden);
        for (std::size_t i = 0; i < ca.size(); ++i)
            for (std::size_t j = 0; j < cb.size(); ++j)
                if (topo_.shape(level + 1, ca[i]) == topo_.shape(level + 1, cb[j]))
                    gain[i * ca.size() + j] = i == j ? 1 : 0;  // prefer the identity
        return detail::best_assignment(gain, ca.size());
    }

    struct Choice {
        double score;
        std::vector<std::size_t> column;
    };
    const Topology& topo_;
    const std::size_t leaf_;
    std::vector<std::vector<std::size_t>> tasks_under_;
    std::unordered_map<Pair, std::size_t> stay_;
    std::map<std::size_t, std::unordered_map<Pair, Choice>> memo_;
};

}  // namespace

Placement relabel_to_minimise_moves(const Placement& proposed, const Placement& current,
                                    const Topology& topology) {
    if (proposed.size() != current.size())
        throw Error("relabelling", "the proposed placement has " + std::to_string(proposed.size()) +
                                       " tasks, the current one " + std::to_string(current.size()));
    proposed.check(topology.pu_count(), "proposed placement");
    current.check(topology.pu_count(), "current placement");
    const std::vector<PuId> to = Relabeller(proposed, current, topology).leaf_map();
    std::vector<PuId> pus(proposed.size());
    for (std::size_t t = 0; t < pus.size(); ++t) pus[t] = to[proposed[t]];
    return Placement(std::move(pus));
}

}  // namespace cdsm
