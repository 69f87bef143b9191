// SPDX-License-Identifier: GPL-2.0
#include "cdsm/remapper.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "cdsm/cost.hpp"
#include "cdsm/error.hpp"
#include "cdsm/relabel.hpp"
#include "placement_repair.hpp"

namespace cdsm {
namespace {

// Whether a placement costing `cost` beats one costing `than` by the margin: strictly cheaper,
// and by min_gain (so even with min_gain 0 an equally good one does not win).
bool cheaper_by(double cost, double than, double min_gain) {
    return cost < than && cost <= (1 - min_gain) * than;
}

// The current placement with only the tasks not `placed` before moved, so that it keeps the
// rules: each in turn (in task order) to the free PU of an idle core where it costs least with
// the tasks already there, preferring PUs that keep the tasks so far within the rules; nullopt
// when no such placement keeps them (e.g. the placed tasks alone break them).
std::optional<Placement> keep_placed_within_rules(
    const CommMatrix& matrix, const Topology& topology, const Distances& distances,
    const Placement& current, const std::vector<bool>& placed, PlacementRules rules) {
    const std::vector<std::uint32_t> core = core_of_pus(topology);
    std::vector<PuId> pus;
    std::vector<std::size_t> where;  // task index of pus[k]
    std::vector<std::size_t> on_core(core_count(topology), 0);
    for (std::size_t i = 0; i < current.size(); ++i) {
        if (!placed[i]) continue;
        pus.push_back(current[i]);
        where.push_back(i);
        ++on_core.at(core.at(current[i]));
    }
    std::vector<PuId> result(current.pus().begin(), current.pus().end());
    for (std::size_t i = 0; i < current.size(); ++i) {
        if (placed[i]) continue;
        std::optional<PuId> best;
        bool best_keeps = false;
        double best_cost = 0;
        for (PuId pu = 0; pu < topology.pu_count(); ++pu) {
            if (on_core[core[pu]] != 0) continue;  // an idle core's PU only
            double cost = 0;
            for (std::size_t k = 0; k < pus.size(); ++k)
                cost += double(matrix.at(i, where[k])) * double(distances(pu, pus[k]));
            std::vector<PuId> trial = pus;
            trial.push_back(pu);
            const bool keeps = rule_violation(topology, Placement(std::move(trial)), rules).empty();
            if (!best || (keeps && !best_keeps) || (keeps == best_keeps && cost < best_cost)) {
                best = pu;
                best_keeps = keeps;
                best_cost = cost;
            }
        }
        if (!best) return std::nullopt;  // no idle core left
        pus.push_back(*best);
        where.push_back(i);
        ++on_core[core[*best]];
        result[i] = *best;
    }
    Placement keep(std::move(result));
    if (!rule_violation(topology, keep, rules).empty()) return std::nullopt;
    return keep;
}

}  // namespace

bool worth_moving(double current, double proposed, double noise, const RemapOptions& options) {
    return cheaper_by(proposed, current, options.min_gain) &&
           current - proposed > options.min_gain_sigma * noise;
}

double cost_difference_noise(
    const CommMatrix& matrix,
    const std::function<double(std::size_t, std::size_t)>& distance_change) {
    double variance = 0;
    matrix.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value v) {
        const double d = distance_change(i, j);
        variance += double(v) * d * d;
    });
    return std::sqrt(variance);
}

double cost_difference_noise(const CommMatrix& matrix, const Placement& a, const Placement& b,
                             const Distances& distances) {
    return cost_difference_noise(matrix, [&](std::size_t i, std::size_t j) {
        return double(distances(a[i], a[j])) - double(distances(b[i], b[j]));
    });
}

Remapper::Remapper(std::unique_ptr<Mapper> mapper, RemapOptions options)
    : mapper_(std::move(mapper)), options_(options) {
    if (!mapper_) throw Error("remapper", "needs a mapper");
    if (!(options_.min_gain >= 0 && options_.min_gain < 1))
        throw Error("remapper", "min_gain must be in [0, 1)");
    if (!(options_.min_gain_sigma >= 0 && options_.min_gain_sigma <= 100))
        throw Error("remapper", "min_gain_sigma must be in [0, 100]");
}

RemapDecision Remapper::decide(const CommMatrix& matrix, const Topology& topology,
                               const Distances& distances, const Placement& current) const {
    return decide(matrix, topology, distances, current, current.is_stacked(topology.pu_count()));
}

RemapDecision Remapper::decide(const CommMatrix& matrix, const Topology& topology,
                               const Distances& distances, const Placement& current,
                               bool stacked) const {
    return decide(matrix, topology, distances, current, stacked, {});
}

RemapDecision Remapper::decide(const CommMatrix& matrix, const Topology& topology,
                               const Distances& distances, const Placement& current, bool stacked,
                               const std::vector<bool>& placed) const {
    if (!placed.empty() && placed.size() != current.size())
        throw Error("remapper", "a placed flag per task, or none");
    const MappingProblem problem{matrix, topology, distances, &current, options_.rules};
    check_problem(problem);
    RemapDecision d;
    const Placement proposed =
        relabel_to_minimise_moves(mapper_->map(problem, d.rule), current, topology);
    d.current_cost = mapping_cost(matrix, current, distances);
    d.proposed_cost = mapping_cost(matrix, proposed, distances);
    d.placement = current;
    if (mapper_->follows_rules()) d.broken_rule = rule_violation(topology, current, options_.rules);
    if (!stacked && !current.is_stacked(topology.pu_count()) && !d.broken_rule.empty() &&
        rule_violation(topology, proposed, options_.rules).empty()) {
        // The rules come before the margins: the mapper's placement keeps them. Or, when tasks
        // were placed before (cdsmd bound them) and the others alone can be moved within the
        // rules, that placement, unless it costs min_gain more: moving a placed task is its
        // second migration (a thread created after its process was placed, say, inherits a
        // one-PU mask on its creator's core).
        d.placement = proposed;
        d.spread = true;
        if (std::find(placed.begin(), placed.end(), true) != placed.end()) {
            if (const auto keep = keep_placed_within_rules(matrix, topology, distances, current,
                                                           placed, options_.rules)) {
                const double keep_cost = mapping_cost(matrix, *keep, distances);
                if (!cheaper_by(d.proposed_cost, keep_cost, options_.min_gain)) {
                    d.placement = *keep;
                    d.proposed_cost = keep_cost;
                }
            }
        }
    } else if (stacked) {
        // Tasks wait for each other: spread them, whatever it costs, but at the least cost of
        // two unstacked placements: the mapper's, or the current one with only stacked tasks
        // moved, each to the free PU where it costs least (usually the fewer migrations).
        const CommGraph graph(matrix, PruneOptions{SIZE_MAX, 0});
        std::vector<PuId> pus(current.pus().begin(), current.pus().end());
        detail::rebalance(pus, graph, distances);
        const Placement spread(std::move(pus));
        const double spread_cost = mapping_cost(matrix, spread, distances);
        const bool keeps_rules =
            !mapper_->follows_rules() || rule_violation(topology, spread, options_.rules).empty();
        const bool take_spread =
            keeps_rules && (spread_cost < d.proposed_cost ||
                            (spread_cost == d.proposed_cost &&
                             spread.moves_from(current) <= proposed.moves_from(current)));
        d.placement = take_spread ? spread : proposed;
        d.proposed_cost = take_spread ? spread_cost : d.proposed_cost;
        d.spread = true;
        // Or only the tasks not placed before moved, unless that costs min_gain more.
        if (std::find(placed.begin(), placed.end(), true) != placed.end()) {
            std::vector<PuId> others(current.pus().begin(), current.pus().end());
            if (detail::rebalance(others, graph, distances, &placed)) {
                const Placement keep(std::move(others));
                const double keep_cost = mapping_cost(matrix, keep, distances);
                const bool keep_ok = !mapper_->follows_rules() ||
                                     rule_violation(topology, keep, options_.rules).empty();
                if (keep_ok && !cheaper_by(d.proposed_cost, keep_cost, options_.min_gain)) {
                    d.placement = keep;
                    d.proposed_cost = keep_cost;
                }
            }
        }
    } else if (cheaper_by(d.proposed_cost, d.current_cost, options_.min_gain)) {
        // Strictly cheaper, and by the margin: an equally good placement (a cost of 0 -> 0, or
        // the same cost on another symmetric PU set) is never worth a migration. And more than
        // counting noise, when asked.
        if (options_.min_gain_sigma > 0)
            d.noise = cost_difference_noise(matrix, current, proposed, distances);
        if (worth_moving(d.current_cost, d.proposed_cost, d.noise, options_))
            d.placement = proposed;
    }
    d.moved = d.placement.moves_from(current);
    d.changed = d.moved > 0;
    return d;
}

}  // namespace cdsm
