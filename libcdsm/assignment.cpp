// SPDX-License-Identifier: GPL-2.0
#include "assignment.hpp"

#include <limits>

namespace cdsm::detail {

// Kuhn-Munkres with potentials, O(k^3), minimising the negated gains.
std::vector<std::size_t> best_assignment(const std::vector<double>& gain, std::size_t k) {
    const double inf = std::numeric_limits<double>::infinity();
    auto cost = [&](std::size_t row, std::size_t column) {
        return -gain[(row - 1) * k + column - 1];
    };
    std::vector<double> u(k + 1, 0), v(k + 1, 0);
    std::vector<std::size_t> match(k + 1, 0), way(k + 1, 0);  // match[column] = row, 1-based
    for (std::size_t row = 1; row <= k; ++row) {
        match[0] = row;
        std::size_t column0 = 0;
        std::vector<double> least(k + 1, inf);
        std::vector<char> used(k + 1, 0);
        do {
            used[column0] = 1;
            const std::size_t row0 = match[column0];
            double delta = inf;
            std::size_t column1 = 0;
            for (std::size_t column = 1; column <= k; ++column) {
                if (used[column]) continue;
                const double reduced = cost(row0, column) - u[row0] - v[column];
                if (reduced < least[column]) {
                    least[column] = reduced;
                    way[column] = column0;
                }
                if (least[column] < delta) {
                    delta = least[column];
                    column1 = column;
                }
            }
            for (std::size_t column = 0; column <= k; ++column) {
                if (used[column]) {
                    u[match[column]] += delta;
                    v[column] -= delta;
                } else {
                    least[column] -= delta;
                }
            }
            column0 = column1;
        } while (match[column0] != 0);
        do {
            const std::size_t column1 = way[column0];
            match[column0] = match[column1];
            column0 = column1;
        } while (column0 != 0);
    }
    std::vector<std::size_t> column_of(k);
    for (std::size_t column = 1; column <= k; ++column) column_of[match[column] - 1] = column - 1;
    return column_of;
}

}  // namespace cdsm::detail
