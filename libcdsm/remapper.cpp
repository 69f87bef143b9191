// SPDX-License-Identifier: GPL-2.0
#include "cdsm/remapper.hpp"

#include "cdsm/cost.hpp"
#include "cdsm/error.hpp"
#include "cdsm/relabel.hpp"

namespace cdsm {

Remapper::Remapper(std::unique_ptr<Mapper> mapper, RemapOptions options)
    : mapper_(std::move(mapper)), options_(options) {
    if (!mapper_) throw Error("remapper", "needs a mapper");
    if (!(options_.min_gain >= 0 && options_.min_gain < 1))
        throw Error("remapper", "min_gain must be in [0, 1)");
}

RemapDecision Remapper::decide(const CommMatrix& matrix, const Topology& topology,
                               const Distances& distances, const Placement& current) const {
    const MappingProblem problem{matrix, topology, distances, &current};
    check_problem(problem);
    RemapDecision d;
    const Placement proposed = relabel_to_minimise_moves(mapper_->map(problem), current, topology);
    d.current_cost = mapping_cost(matrix, current, distances);
    d.proposed_cost = mapping_cost(matrix, proposed, distances);
    // Strictly cheaper, and by the margin: an equally good placement (a cost of 0 -> 0, or the
    // same cost on another symmetric PU set) is never worth a migration.
    const bool better = d.proposed_cost < d.current_cost &&
                        d.proposed_cost <= (1 - options_.min_gain) * d.current_cost;
    if (better || current.is_stacked(topology.pu_count())) {
        d.placement = proposed;
        d.moved = proposed.moves_from(current);
        d.changed = d.moved > 0;
    } else {
        d.placement = current;
    }
    return d;
}

}  // namespace cdsm
