// SPDX-License-Identifier: GPL-2.0
#include "cdsm/patterns.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <random>

namespace cdsm::patterns {
namespace {

constexpr CommMatrix::Value kStrong = 100;
// Background traffic of dense patterns: 1..kNoise per pair.
constexpr CommMatrix::Value kNoise = 10;

// The largest divisor of n that is at most its k-th root: the shortest side of a grid.
std::size_t side(std::size_t n, double k) {
    auto s = static_cast<std::size_t>(std::floor(std::pow(static_cast<double>(n), 1.0 / k) + 1e-9));
    while (s > 1 && n % s != 0) --s;
    return std::max<std::size_t>(s, 1);
}

CommMatrix grid(const std::array<std::size_t, 3>& dims) {
    const std::size_t n = dims[0] * dims[1] * dims[2];
    CommMatrix m(n);
    for (std::size_t i = 0; i < n; ++i) {
        std::size_t stride = 1;
        for (std::size_t d = 0; d < 3; ++d) {
            const std::size_t coordinate = i / stride % dims[d];
            if (coordinate + 1 < dims[d]) m.set(i, i + stride, kStrong);
            stride *= dims[d];
        }
    }
    return m;
}

}  // namespace

CommMatrix stencil_1d(std::size_t n) {
    return grid({n, 1, 1});
}

CommMatrix stencil_2d(std::size_t n) {
    const std::size_t y = side(n, 2);
    return grid({n / y, y, 1});
}

CommMatrix stencil_3d(std::size_t n) {
    const std::size_t z = side(n, 3), y = side(n / z, 2);
    return grid({n / z / y, y, z});
}

CommMatrix ring(std::size_t n) {
    CommMatrix m = stencil_1d(n);
    if (n > 2) m.set(0, n - 1, kStrong);
    return m;
}

CommMatrix random_pairs(std::size_t n, std::uint64_t seed) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
    CommMatrix m(n);
    for (std::size_t k = 0; k + 1 < n; k += 2) m.set(order[k], order[k + 1], kStrong);
    return m;
}

CommMatrix clusters(std::size_t n, std::size_t size) {
    const std::size_t groups = std::max<std::size_t>(1, n / std::max<std::size_t>(size, 1));
    CommMatrix m(n);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + groups; j < n; j += groups) m.set(i, j, kStrong);
    return m;
}

CommMatrix pipeline(std::size_t n, std::size_t stages) {
    const std::size_t width = std::max<std::size_t>(1, n / std::max<std::size_t>(stages, 1));
    CommMatrix m(n);
    for (std::size_t i = 0; i + width < n; ++i) m.set(i, i + width, kStrong);
    return m;
}

CommMatrix all_to_all(std::size_t n) {
    CommMatrix m(n);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) m.set(i, j, kStrong);
    return m;
}

CommMatrix random_sparse(std::size_t n, std::size_t degree, std::uint64_t seed) {
    CommMatrix m(n);
    if (n < 2) return m;
    std::mt19937_64 rng(seed);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t k = 0; k < degree; ++k) {
            const std::size_t j = (i + 1 + rng() % (n - 1)) % n;
            m.set(i, j, 1 + rng() % kStrong);
        }
    }
    return m;
}

CommMatrix dense_clusters(std::size_t n, std::size_t size, std::uint64_t seed) {
    CommMatrix m = clusters(n, size);
    std::mt19937_64 rng(seed);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) m.add(i, j, 1 + rng() % kNoise);
    return m;
}

CommMatrix decaying_stencil_2d(std::size_t n) {
    const std::size_t y = side(n, 2), x = n / y;
    CommMatrix m(n);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j) {
            const auto dx = static_cast<double>(std::max(i % x, j % x) - std::min(i % x, j % x));
            const auto dy = static_cast<double>(j / x - i / x);
            const double d2 = dx * dx + dy * dy;
            m.set(i, j, std::max<CommMatrix::Value>(1, std::llround(kStrong / d2)));
        }
    }
    return m;
}

std::vector<Named> suite(std::size_t n) {
    return {{"stencil-1d", stencil_1d(n)},
            {"stencil-2d", stencil_2d(n)},
            {"stencil-3d", stencil_3d(n)},
            {"ring", ring(n)},
            {"random-pairs", random_pairs(n)},
            {"clusters", clusters(n)},
            {"pipeline", pipeline(n)},
            {"all-to-all", all_to_all(n)},
            {"random-sparse", random_sparse(n)},
            {"dense-clusters", dense_clusters(n)},
            {"decaying-stencil-2d", decaying_stencil_2d(n)}};
}

}  // namespace cdsm::patterns
