// SPDX-License-Identifier: GPL-2.0
#pragma once

#include "cdsm/comm_matrix.hpp"
#include "cdsm/distances.hpp"
#include "cdsm/placement.hpp"

namespace cdsm {

/// The cost of a placement: the sum over task pairs i < j of M[i][j] * d(PU(i), PU(j)).
/// Throws Error if the placement and the matrix disagree on the number of tasks or a PU is not
/// one of the distance table's.
double mapping_cost(const CommMatrix& matrix, const Placement& placement,
                    const Distances& distances);

/// Throws Error unless the placement has one PU per task of the matrix, all within distances.
void check_sizes(const CommMatrix& matrix, const Placement& placement, const Distances& distances);

}  // namespace cdsm
