// SPDX-License-Identifier: GPL-2.0
#include "cdsm/distances.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "cdsm/error.hpp"

namespace cdsm {

std::uint32_t LevelCosts::cost(LevelKind kind) const noexcept {
    switch (kind) {
        case LevelKind::kMachine:
            return machine;
        case LevelKind::kPackage:
            return package;
        case LevelKind::kNuma:
            return numa;
        case LevelKind::kL3:
            return l3;
        case LevelKind::kL2:
            return l2;
        case LevelKind::kCore:
            return core;
        case LevelKind::kPu:
            return 0;
    }
    return 0;
}

void LevelCosts::validate() const {
    const std::pair<const char*, std::uint32_t> ordered[] = {
        {"core", core}, {"l2", l2},           {"l3", l3},
        {"numa", numa}, {"package", package}, {"machine", machine}};
    for (std::size_t i = 0; i < std::size(ordered); ++i) {
        if (ordered[i].second < 1)
            throw Error("level costs", std::string(ordered[i].first) + " cost must be at least 1");
        if (i > 0 && ordered[i].second < ordered[i - 1].second)
            throw Error("level costs", std::string(ordered[i].first) + " cost " +
                                           std::to_string(ordered[i].second) + " is below " +
                                           ordered[i - 1].first + " cost " +
                                           std::to_string(ordered[i - 1].second) +
                                           " (costs must not fall from core to machine)");
    }
}

Distances::Distances(const Topology& topology, LevelCosts costs)
    : costs_(costs), pu_count_(topology.pu_count()) {
    costs_.validate();
    // A deeper level never costs more than its parent, even if hwloc nests kinds unusually.
    for (std::size_t level = 0; level < topology.level_count(); ++level) {
        const std::uint32_t cost = costs_.cost(topology.level_kind(level));
        level_costs_.push_back(level == 0 ? cost : std::min(cost, level_costs_.back()));
    }
    const std::size_t levels = topology.level_count();
    if (levels > 256) throw Error(topology.source(), "has more than 256 levels");
    // Every pair shares the machine (level 0); each deeper level overwrites the pairs under
    // one of its nodes, row by row over the node's PUs: a contiguous range of each row when
    // they are numbered in a row, as hwloc's logical order does. For 4096 PUs this writes
    // 25 MB in bulk, where comparing the ancestors of each pair took 70 ms.
    common_.assign(pu_count_ * pu_count_, 0);
    std::size_t highest = levels - 1;  // the shallowest common level of any pair
    std::vector<std::vector<PuId>> under;
    for (std::size_t level = 1; level < levels; ++level) {
        under.assign(topology.node_count(level), {});
        for (PuId a = 0; a < pu_count_; ++a) under[topology.ancestor(a, level)].push_back(a);
        if (under.size() > 1 && highest == levels - 1) highest = level - 1;
        const auto value = static_cast<std::uint8_t>(level);
        for (const std::vector<PuId>& pus : under) {
            if (pus.empty()) continue;
            const bool in_a_row = pus.back() - pus.front() + 1 == pus.size();
            for (const PuId a : pus) {
                std::uint8_t* const row = common_.data() + a * pu_count_;
                if (in_a_row)
                    std::fill(row + pus.front(), row + pus.back() + 1, value);
                else
                    for (const PuId b : pus) row[b] = value;
            }
        }
    }
    max_ = level_costs_[highest];
}

}  // namespace cdsm
