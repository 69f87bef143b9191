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

bool crowded(const std::vector<std::vector<std::uint32_t>>& masks,
             const std::vector<std::uint32_t>& available) {
    // A maximum matching of tasks to CPUs (Kuhn's augmenting paths; a task's first free CPU is
    // taken at once, so wide masks cost little): crowded when it is smaller than the smaller side.
    std::vector<std::vector<std::size_t>> can(masks.size());
    for (std::size_t t = 0; t < masks.size(); ++t)
        for (std::size_t c = 0; c < available.size(); ++c)
            if (std::find(masks[t].begin(), masks[t].end(), available[c]) != masks[t].end())
                can[t].push_back(c);
    constexpr std::size_t kFree = SIZE_MAX;
    std::vector<std::size_t> task_on(available.size(), kFree);
    std::vector<char> seen;
    const auto augment = [&](auto&& self, std::size_t t) -> bool {
        for (std::size_t c : can[t]) {
            if (seen[c]) continue;
            seen[c] = 1;
            if (task_on[c] == kFree || self(self, task_on[c])) {
                task_on[c] = t;
                return true;
            }
        }
        return false;
    };
    std::size_t matched = 0;
    for (std::size_t t = 0; t < masks.size(); ++t) {
        seen.assign(available.size(), 0);
        matched += augment(augment, t) ? 1 : 0;
    }
    return matched < std::min(masks.size(), available.size());
}

bool shares_a_cpu(const std::vector<std::uint32_t>& current,
                  const std::vector<std::uint32_t>& available) {
    // Placement::is_stacked over the available CPUs, as plan() asks it of the same tasks.
    std::vector<PuId> at;
    for (std::uint32_t c : current) {
        const auto it = std::find(available.begin(), available.end(), c);
        if (it != available.end()) at.push_back(PuId(it - available.begin()));
    }
    return Placement(std::move(at)).is_stacked(available.size());
}

Planner::Planner(Topology machine, LevelCosts costs, TimeModel model)
    : machine_(std::move(machine)), costs_(costs), distances_(machine_, costs_), model_(model) {}

std::vector<std::uint32_t> Planner::machine_cpus() const {
    std::vector<std::uint32_t> cpus;
    for (const Pu& pu : machine_.pus()) cpus.push_back(pu.os_index);
    return cpus;
}

Planner::OnMachine Planner::on_machine(const CommMatrix& matrix,
                                       const std::vector<std::uint32_t>& cpus) const {
    OnMachine out;
    std::vector<std::size_t> known;
    for (std::size_t i = 0; i < cpus.size(); ++i) {
        if (const auto pu = machine_.find_os_index(cpus[i])) {
            known.push_back(i);
            out.pus.push_back(*pu);
        }
    }
    out.all = known.size() == matrix.size();
    out.known.assign(matrix.size(), false);
    for (std::size_t i : known) out.known[i] = true;
    out.inside = CommMatrix(known.size());
    for (std::size_t a = 0; a < known.size(); ++a) {
        for (std::size_t b = a + 1; b < known.size(); ++b)
            out.inside.set(a, b, matrix.at(known[a], known[b]));
    }
    return out;
}

double Planner::cost(const CommMatrix& matrix, const std::vector<std::uint32_t>& cpus) const {
    // libcdsm's mapping_cost over the tasks on the machine's PUs; a task on a CPU outside it is
    // at the farthest distance from each partner.
    const OnMachine m = on_machine(matrix, cpus);
    if (m.all) return mapping_cost(matrix, Placement(m.pus), distances_);
    return mapping_cost(m.inside, Placement(m.pus), distances_) +
           double(distances_.max()) * (matrix.total() - m.inside.total());
}

double Planner::time_s(const CommMatrix& matrix, const std::vector<std::uint32_t>& cpus) const {
    const OnMachine m = on_machine(matrix, cpus);
    if (m.all) return model_.node_time_s(matrix, machine_, Placement(m.pus));
    // Tasks outside the machine (rare: a CPU the topology lacks): the known ones by the model,
    // plus the most one task spends with the others, each event at the node's latency (an upper
    // bound of the largest task's sum).
    std::vector<double> outside_us(matrix.size(), 0.0);
    matrix.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value events) {
        if (m.known[i] && m.known[j]) return;
        const double us = static_cast<double>(events) * model_.node.latency_us;
        outside_us[i] += us;
        outside_us[j] += us;
    });
    return *std::max_element(outside_us.begin(), outside_us.end()) * 1e-6 +
           model_.node_time_s(m.inside, machine_, Placement(m.pus));
}

double Planner::difference_noise(const CommMatrix& matrix, const std::vector<std::uint32_t>& a,
                                 const std::vector<std::uint32_t>& b) const {
    const auto distance = [&](std::uint32_t x, std::uint32_t y) {
        const auto px = machine_.find_os_index(x), py = machine_.find_os_index(y);
        return double(px && py ? distances_(*px, *py) : distances_.max());
    };
    return cost_difference_noise(matrix, [&](std::size_t i, std::size_t j) {
        return distance(a[i], a[j]) - distance(b[i], b[j]);
    });
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
        case MoveReason::kRule:
            return "rule";
    }
    return "";
}

std::string_view reason_note(MoveReason reason) noexcept {
    switch (reason) {
        case MoveReason::kSpread:
            return ": tasks shared a CPU while another was free";
        case MoveReason::kOutside:
            return ": tasks ran on CPUs not available to them";
        case MoveReason::kRule:
            return ": the placement broke the placement rules ([mapping] smt, spread)";
        default:
            return "";
    }
}

Plan Planner::plan(const CommMatrix& matrix, const std::vector<std::uint32_t>& current_cpus,
                   const std::vector<std::vector<std::uint32_t>>& masks,
                   const std::vector<std::uint32_t>& available_cpus, std::string_view algorithm,
                   RemapOptions options, bool with_baselines, bool stuck,
                   const std::vector<bool>& placed) const {
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

    // libcdsm decides: the mapper's proposal if cheaper by the margins, or if the current placement
    // stacks tasks on a PU while another is free. Its costs, on the sub-topology's distances,
    // are the machine's for tasks inside it (restricted_to keeps the levels).
    const Remapper remapper(make_mapper(algorithm), options);
    // Stacked: tasks on one PU while another is free, where their masks keep them so or where
    // the caller saw them stay so (or all on PU 0 when outside).
    const bool stacked = Placement(current).is_stacked(sub.pu_count()) &&
                         (!inside || stuck || crowded(masks, available_cpus));
    const RemapDecision d =
        remapper.decide(matrix, sub, sub_distances, Placement(current), stacked, placed);

    Plan plan;
    for (PuId pu : d.placement.pus()) plan.target_cpus.push_back(sub.pu(pu).os_index);
    plan.cost_before = cost(matrix, current_cpus);
    plan.cost_after = cost(matrix, plan.target_cpus);
    plan.time_before_s = time_s(matrix, current_cpus);
    plan.time_after_s = time_s(matrix, plan.target_cpus);
    for (std::size_t i = 0; i < current_cpus.size(); ++i) {
        plan.moved += plan.target_cpus[i] != current_cpus[i];
    }
    plan.changed = plan.moved > 0;
    if (plan.changed)
        plan.why = !inside                  ? MoveReason::kOutside
                   : !d.broken_rule.empty() ? MoveReason::kRule
                   : d.spread               ? MoveReason::kSpread
                                            : MoveReason::kCheaper;
    plan.rule = d.rule;
    if (with_baselines) {
        for (const std::string_view name : mapper_names()) {
            // Under the rules cdsmd places by: the baselines use the same resources.
            const MappingProblem problem{matrix, sub, sub_distances, nullptr, options.rules};
            std::vector<std::uint32_t> cpus;
            const Placement placement = make_mapper(name)->map(problem);
            for (PuId pu : placement.pus()) cpus.push_back(sub.pu(pu).os_index);
            plan.baselines[std::string(name)] = cost(matrix, cpus);
        }
    }
    return plan;
}

}  // namespace cdsm::cdsmd
