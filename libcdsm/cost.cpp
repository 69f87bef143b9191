// SPDX-License-Identifier: GPL-2.0
#include "cdsm/cost.hpp"

#include <string>

#include "cdsm/error.hpp"

namespace cdsm {

void check_sizes(const CommMatrix& matrix, const Placement& placement, const Distances& distances) {
    if (placement.size() != matrix.size())
        throw Error("placement of " + std::to_string(placement.size()) + " tasks",
                    "does not match the communication matrix of " + std::to_string(matrix.size()) +
                        " tasks");
    placement.check(distances.pu_count(), "placement");
}

double mapping_cost(const CommMatrix& matrix, const Placement& placement,
                    const Distances& distances) {
    check_sizes(matrix, placement, distances);
    double cost = 0;
    const auto pus = placement.pus();
    matrix.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value m) {
        cost += static_cast<double>(m) * distances(pus[i], pus[j]);
    });
    return cost;
}

}  // namespace cdsm
