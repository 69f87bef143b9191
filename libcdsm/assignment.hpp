// SPDX-License-Identifier: GPL-2.0
// Internal: the assignment problem (Hungarian algorithm).
#pragma once

#include <cstddef>
#include <vector>

namespace cdsm::detail {

/// For a k x k matrix `gain` (row-major), the permutation `column[row]` that maximises the sum
/// of gain[row][column[row]]. Entries below kForbidden / 2 are never chosen if any permutation
/// avoids them.
inline constexpr double kForbidden = -1e12;
std::vector<std::size_t> best_assignment(const std::vector<double>& gain, std::size_t k);

}  // namespace cdsm::detail
