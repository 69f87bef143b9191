// SPDX-License-Identifier: GPL-2.0
#pragma once

#include "cdsm/placement.hpp"
#include "cdsm/topology.hpp"

namespace cdsm {

/// The placement equivalent to `proposed` that moves the fewest tasks away from `current`.
/// Subtrees of the same shape (two packages, two cores of a package, SMT siblings) can be
/// exchanged without changing any distance, so a mapper's labels are arbitrary; this picks the
/// exchange, level by level, that keeps the most tasks where they are (an assignment problem
/// per node, solved exactly). The cost of the result equals the cost of `proposed`.
/// Throws Error if the placements differ in size or name PUs the topology lacks.
Placement relabel_to_minimise_moves(const Placement& proposed, const Placement& current,
                                    const Topology& topology);

}  // namespace cdsm
