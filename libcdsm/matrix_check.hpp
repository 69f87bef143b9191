// SPDX-License-Identifier: GPL-2.0
// The checks of a matrix cell that CommMatrix::from_square and the streaming readers share.
#pragma once

#include <cstddef>
#include <string_view>

#include "cdsm/comm_matrix.hpp"

namespace cdsm::detail {

/// The cell (row, column) of `input` as an event count. Throws Error naming the cell if it is
/// NaN, infinite, negative or not a whole number.
CommMatrix::Value checked_count(double value, std::string_view input, std::size_t row,
                                std::size_t column);
/// Throws Error: cell (i, j) = upper differs from cell (j, i) = lower.
[[noreturn]] void asymmetric(std::string_view input, std::size_t i, std::size_t j, double upper,
                             double lower);

}  // namespace cdsm::detail
