// SPDX-License-Identifier: GPL-2.0
// Internal: small corrections applied to a mapper's raw result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cdsm/comm_graph.hpp"
#include "cdsm/distances.hpp"
#include "cdsm/topology.hpp"

namespace cdsm::detail {

/// Moves tasks until every PU holds floor(N/P) or ceil(N/P) of them, each time choosing the
/// move that raises the cost least, and returns true. `graph` holds every edge of the matrix
/// (no pruning). With `fixed` (a flag per task), only the other tasks move; false when they
/// cannot balance the PUs alone (`pus` is then partly moved).
bool rebalance(std::vector<PuId>& pus, const CommGraph& graph, const Distances& distances,
               const std::vector<bool>* fixed = nullptr);

/// Local search keeping the balance: swaps two tasks, or moves one to a PU with room, while that
/// lowers the cost; at most `max_passes` sweeps over all pairs, and it stops once it has done
/// `max_work` units of work (one unit: a candidate move or swap weighed, or one cell of the
/// table of costs updated after a move). Returns the work done: a budget for a second search
/// deterministic across machines, unlike a time limit.
/// `distances` must be built from `topology`.
std::size_t refine(std::vector<PuId>& pus, const CommGraph& graph, const Topology& topology,
                   const Distances& distances, std::size_t max_passes = 8,
                   std::size_t max_work = SIZE_MAX);

/// For small problems, after refine(): leaves a local optimum by one step uphill (any single
/// swap or move) followed by refine(), keeping the first that ends cheaper; at most `max_rounds`
/// times. A trial costs a refine(), so this is for a few dozen tasks at most.
void escape(std::vector<PuId>& pus, const CommGraph& graph, const Topology& topology,
            const Distances& distances, std::size_t max_rounds = 16);

}  // namespace cdsm::detail
