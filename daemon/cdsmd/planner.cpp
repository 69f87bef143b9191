// SPDX-License-Identifier: GPL-2.0
#include "planner.hpp"

#include <algorithm>
#include <cdsm/error.hpp>
#include <cdsm/mapper.hpp>
#include <cdsm/remapper.hpp>

namespace cdsm::cdsmd {

CommMatrix submatrix(const CommMatrix& m, const std::vector<std::uint32_t>& indices) {
    CommMatrix out(indices.size());
    for (std::size_t a = 0; a < indices.size(); ++a) {
        for (std::size_t b = a + 1; b < indices.size(); ++b) {
            const std::uint32_t i = indices[a], j = indices[b];
            if (i < m.size() && j < m.size() && i != j) out.set(a, b, m.at(i, j));
        }
    }
    return out;
}

Planner::Planner(Topology machine, LevelCosts costs)
    : machine_(std::move(machine)), costs_(costs), distances_(machine_, costs_) {}

std::vector<std::uint32_t> Planner::machine_cpus() const {
    std::vector<std::uint32_t> cpus;
    for (const Pu& pu : machine_.pus()) cpus.push_back(pu.os_index);
    return cpus;
}

double Planner::cost(const CommMatrix& matrix, const std::vector<std::uint32_t>& cpus) const {
    double total = 0;
    std::vector<std::optional<PuId>> pus;
    for (std::uint32_t c : cpus) pus.push_back(machine_.find_os_index(c));
    for (std::size_t i = 0; i < matrix.size(); ++i) {
        for (std::size_t j = i + 1; j < matrix.size(); ++j) {
            const auto v = matrix.at(i, j);
            if (!v) continue;
            const double d = pus[i] && pus[j] ? distances_(*pus[i], *pus[j]) : distances_.max();
            total += double(v) * d;
        }
    }
    return total;
}

std::string_view reason_name(MoveReason reason) noexcept {
    switch (reason) {
        case MoveReason::kNone:
            return "";
        case MoveReason::kCheaper:
            return "cheaper";
        case MoveReason::kSpread:
            return "spread";
        case MoveReason::kOutside:
            return "outside";
    }
    return "";
}

std::string_view reason_note(MoveReason reason) noexcept {
    switch (reason) {
        case MoveReason::kSpread:
            return ": tasks shared a CPU while another was free";
        case MoveReason::kOutside:
            return ": tasks ran on CPUs not available to them";
        default:
            return "";
    }
}

Plan Planner::plan(const CommMatrix& matrix, const std::vector<std::uint32_t>& current_cpus,
                   const std::vector<std::uint32_t>& available_cpus, std::string_view algorithm,
                   double min_gain, bool with_baselines) const {
    const Topology sub = machine_.restricted_to(available_cpus);
    const Distances sub_distances(sub, costs_);
    // Tasks running outside the available CPUs have no place in `sub`: stacking them all on
    // one PU makes the current placement unbalanced, which the Remapper always replaces.
    std::vector<PuId> current;
    bool inside = true;
    for (std::uint32_t c : current_cpus) {
        const auto pu = sub.find_os_index(c);
        inside = inside && pu.has_value();
        current.push_back(pu.value_or(0));
    }
    if (!inside) current.assign(current.size(), 0);

    const Remapper remapper(make_mapper(algorithm), RemapOptions{min_gain});
    const RemapDecision d = remapper.decide(matrix, sub, sub_distances, Placement(current));

    Plan plan;
    for (PuId pu : d.placement.pus()) plan.target_cpus.push_back(sub.pu(pu).os_index);
    plan.cost_before = cost(matrix, current_cpus);
    plan.cost_after = cost(matrix, plan.target_cpus);
    for (std::size_t i = 0; i < current_cpus.size(); ++i) {
        plan.moved += plan.target_cpus[i] != current_cpus[i];
    }
    // The Remapper judges on the sub-topology; the machine's distances decide here too, so that
    // no migration is made for a gain below min_gain (a task left alone can shift the set).
    // Strictly below: an equally good placement (cost 0 -> 0 once every pair shares a PU, or a
    // mirror image of the current one) is no reason to move anything.
    // Not when tasks share a PU while another PU is free: stacked tasks cost little (a PU is at
    // distance 0 from itself) but wait for each other, and always spread. (Over-subscribed, a
    // PU with one task more than another is no reason to move without a gain.)
    std::vector<std::size_t> per_pu(sub.pu_count(), 0);
    for (PuId pu : current) ++per_pu[pu];
    const bool stacked = std::find_if(per_pu.begin(), per_pu.end(),
                                      [](std::size_t n) { return n > 1; }) != per_pu.end() &&
                         std::find(per_pu.begin(), per_pu.end(), 0u) != per_pu.end();
    if (inside && !stacked && plan.moved > 0 &&
        !(plan.cost_after < (1 - min_gain) * plan.cost_before)) {
        plan.target_cpus = current_cpus;
        plan.cost_after = plan.cost_before;
        plan.moved = 0;
    }
    plan.changed = plan.moved > 0;
    if (plan.changed)
        plan.why = !inside   ? MoveReason::kOutside
                   : stacked ? MoveReason::kSpread
                             : MoveReason::kCheaper;
    if (with_baselines) {
        for (const std::string_view name : mapper_names()) {
            const MappingProblem problem{matrix, sub, sub_distances, nullptr};
            std::vector<std::uint32_t> cpus;
            const Placement placement = make_mapper(name)->map(problem);
            for (PuId pu : placement.pus()) cpus.push_back(sub.pu(pu).os_index);
            plan.baselines[std::string(name)] = cost(matrix, cpus);
        }
    }
    return plan;
}

}  // namespace cdsm::cdsmd
