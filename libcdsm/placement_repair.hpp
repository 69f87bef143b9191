// SPDX-License-Identifier: GPL-2.0
// Internal: small corrections applied to a mapper's raw result.
#pragma once

#include <cstddef>
#include <vector>

#include "cdsm/comm_graph.hpp"
#include "cdsm/distances.hpp"
#include "cdsm/topology.hpp"

namespace cdsm::detail {

/// Moves tasks until every PU holds floor(N/P) or ceil(N/P) of them, each time choosing the
/// move that raises the cost least.
/// `graph` holds every edge of the matrix (no pruning).
void rebalance(std::vector<PuId>& pus, const CommGraph& graph, const Distances& distances);

/// Local search keeping the balance: swaps two tasks, or moves one to a PU with room, while that
/// lowers the cost; at most `max_passes` sweeps over all pairs.
/// `distances` must be built from `topology`.
void refine(std::vector<PuId>& pus, const CommGraph& graph, const Topology& topology,
            const Distances& distances, std::size_t max_passes = 8);

/// For small problems, after refine(): leaves a local optimum by one step uphill (any single
/// swap or move) followed by refine(), keeping the first that ends cheaper; at most `max_rounds`
/// times. A trial costs a refine(), so this is for a few dozen tasks at most.
void escape(std::vector<PuId>& pus, const CommGraph& graph, const Topology& topology,
            const Distances& distances, std::size_t max_rounds = 16);

}  // namespace cdsm::detail
