// SPDX-License-Identifier: GPL-2.0
#include "planner.hpp"

#include <algorithm>
#include <cdsm/cost.hpp>
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
    // libcdsm's mapping_cost over the tasks on the machine's PUs; a task on a CPU outside it is
    // at the farthest distance from each partner.
    std::vector<std::size_t> known;
    std::vector<PuId> pus;
    for (std::size_t i = 0; i < cpus.size(); ++i) {
        if (const auto pu = machine_.find_os_index(cpus[i])) {
            known.push_back(i);
            pus.push_back(*pu);
        }
    }
    if (known.size() == matrix.size()) return mapping_cost(matrix, Placement(pus), distances_);
    CommMatrix inside(known.size());
    for (std::size_t a = 0; a < known.size(); ++a) {
        for (std::size_t b = a + 1; b < known.size(); ++b)
            inside.set(a, b, matrix.at(known[a], known[b]));
    }
    return mapping_cost(inside, Placement(pus), distances_) +
           double(distances_.max()) * (matrix.total() - inside.total());
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
    // one PU makes the current placement stacked, which the Remapper always replaces.
    std::vector<PuId> current;
    bool inside = true;
    for (std::uint32_t c : current_cpus) {
        const auto pu = sub.find_os_index(c);
        inside = inside && pu.has_value();
        current.push_back(pu.value_or(0));
    }
    if (!inside) current.assign(current.size(), 0);

    // libcdsm decides: the mapper's proposal if cheaper by min_gain, or if the current placement
    // stacks tasks on a PU while another is free. Its costs, on the sub-topology's distances,
    // are the machine's for tasks inside it (restricted_to keeps the levels).
    const Remapper remapper(make_mapper(algorithm), RemapOptions{min_gain});
    const RemapDecision d = remapper.decide(matrix, sub, sub_distances, Placement(current));

    Plan plan;
    for (PuId pu : d.placement.pus()) plan.target_cpus.push_back(sub.pu(pu).os_index);
    plan.cost_before = cost(matrix, current_cpus);
    plan.cost_after = cost(matrix, plan.target_cpus);
    for (std::size_t i = 0; i < current_cpus.size(); ++i) {
        plan.moved += plan.target_cpus[i] != current_cpus[i];
    }
    plan.changed = plan.moved > 0;
    if (plan.changed)
        plan.why = !inside                                         ? MoveReason::kOutside
                   : Placement(current).is_stacked(sub.pu_count()) ? MoveReason::kSpread
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
