// SPDX-License-Identifier: GPL-2.0
#include "cdsm/comm_matrix.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cdsm/comm_graph.hpp"
#include "cdsm/patterns.hpp"
#include "test_support.hpp"

namespace cdsm {
namespace {

using test::error_of;
using ::testing::HasSubstr;

TEST(CommMatrix, IsSymmetricWithAnEmptyDiagonal) {
    CommMatrix m(4);
    m.set(2, 1, 7);
    m.add(1, 2, 3);
    EXPECT_EQ(m.at(1, 2), 10u);
    EXPECT_EQ(m.at(2, 1), 10u);
    EXPECT_EQ(m.at(3, 3), 0u);
    EXPECT_EQ(m.row_total(1), 10u);
    EXPECT_EQ(m.total(), 10.0);
    EXPECT_THAT(error_of([&] { m.set(1, 1, 1); }), HasSubstr("no pair (1, 1)"));
    EXPECT_THAT(error_of([&] { (void)m.at(0, 4); }),
                HasSubstr("matrix of 4 tasks: no pair (0, 4)"));
}

TEST(CommMatrix, AgingRemovesAQuarter) {
    CommMatrix m(3);
    m.set(0, 1, 100);
    m.set(0, 2, 3);
    m.set(1, 2, 1);
    m.age();
    EXPECT_EQ(m.at(0, 1), 75u);
    EXPECT_EQ(m.at(0, 2), 3u);  // 3 >> 2 == 0: small counts fade slowly
    EXPECT_EQ(m.at(1, 2), 1u);
}

TEST(CommMatrix, NormalisationScalesToTheMaximumAndKeepsWeakEdges) {
    CommMatrix m(3);
    m.set(0, 1, 1'000'000);
    m.set(0, 2, 500'000);
    m.set(1, 2, 1);
    const CommMatrix n = m.normalised(1000);
    EXPECT_EQ(n.at(0, 1), 1000u);
    EXPECT_EQ(n.at(0, 2), 500u);
    EXPECT_EQ(n.at(1, 2), 1u);
    EXPECT_EQ(CommMatrix(3).normalised(10), CommMatrix(3));
}

TEST(CommMatrix, StructurednessSeparatesPatternsThatMappingHelps) {
    EXPECT_NEAR(patterns::all_to_all(64).structuredness(), 0.0, 1e-12);
    EXPECT_NEAR(patterns::random_pairs(64).structuredness(), 1.0, 1e-12);
    EXPECT_NEAR(patterns::ring(64).structuredness(), std::sqrt((63.0 / 2 - 1) / 62), 1e-12);
    EXPECT_GT(patterns::stencil_2d(64).structuredness(), 0.4);
    EXPECT_EQ(CommMatrix(64).structuredness(), 0.0);
}

TEST(CommMatrix, FromSquareValidatesEveryCell) {
    const double ok[] = {0, 2, 2, 0};
    EXPECT_EQ(CommMatrix::from_square(ok, 2, "ok").at(0, 1), 2u);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double bad_nan[] = {0, nan, 1, 0};
    EXPECT_THAT(error_of([&] { CommMatrix::from_square(bad_nan, 2, "m.csv"); }),
                HasSubstr("m.csv: cell (0, 1) is NaN"));
    const double negative[] = {0, 1, -1, 0};
    EXPECT_THAT(error_of([&] { CommMatrix::from_square(negative, 2, "m.csv"); }),
                HasSubstr("m.csv: cell (1, 0) is negative"));
    const double fraction[] = {0, 1.5, 1.5, 0};
    EXPECT_THAT(error_of([&] { CommMatrix::from_square(fraction, 2, "m"); }),
                HasSubstr("is not a whole event count"));
    const double asymmetric[] = {0, 1, 3, 0};
    EXPECT_THAT(error_of([&] { CommMatrix::from_square(asymmetric, 2, "m"); }),
                HasSubstr("m: is not symmetric: cell (0, 1) = 1"));
    EXPECT_EQ(
        CommMatrix::from_square(asymmetric, 2, "m", CommMatrix::Symmetry::kAddTranspose).at(0, 1),
        4u);
    EXPECT_THAT(error_of([&] { CommMatrix::from_square(ok, 3, "m"); }),
                HasSubstr("m: has 4 values, a 3x3 matrix needs 9"));
}

TEST(CommGraph, KeepsEveryEdgeOfSmallMatrices) {
    const CommGraph g(patterns::all_to_all(16));
    EXPECT_EQ(g.edge_count(), 16u * 15 / 2);
    EXPECT_EQ(g.kept_fraction(), 1.0);
    EXPECT_FALSE(g.pruned());
}

TEST(CommGraph, PrunesWeakEdgesOfLargeMatrices) {
    // A 2-D stencil under uniform background noise: pruning keeps the stencil.
    CommMatrix m = patterns::stencil_2d(256);
    const CommMatrix stencil = m;
    for (std::size_t i = 0; i < 256; ++i)
        for (std::size_t j = i + 1; j < 256; ++j) m.add(i, j, 1);
    const CommGraph g(m, PruneOptions{.min_tasks = 128, .keep_per_task = 4});
    EXPECT_LT(g.edge_count(), 256u * 4);
    for (std::size_t i = 0; i < 256; ++i) {
        std::size_t strong = 0;
        for (std::size_t k = g.offsets()[i]; k < g.offsets()[i + 1]; ++k)
            strong += stencil.at(i, g.neighbours()[k]) > 0;
        EXPECT_EQ(strong, stencil.row_total(i) / 100) << "task " << i;
    }
    EXPECT_LT(g.kept_fraction(), 1.0);
    EXPECT_GT(g.kept_fraction(), 0.5);
    EXPECT_TRUE(g.pruned());
}

// A reference: the same operations on a plain square table.
TEST(CommMatrix, SparseStorageBehavesLikeDense) {
    for (const std::size_t n : {CommMatrix::kSparseMinTasks, std::size_t{300}}) {
        CommMatrix m(n);
        ASSERT_TRUE(m.is_sparse()) << n;
        std::vector<CommMatrix::Value> ref(n * n, 0);
        std::mt19937_64 random(n);
        std::uniform_int_distribution<std::size_t> task(0, n - 1);
        auto check = [&](const char* when) {
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = 0; j < n; ++j)
                    ASSERT_EQ(m.at(i, j), ref[i * n + j]) << when << " (" << i << ", " << j << ")";
            std::vector<std::tuple<std::size_t, std::size_t, CommMatrix::Value>> seen;
            m.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value v) {
                seen.emplace_back(i, j, v);
            });
            std::vector<std::tuple<std::size_t, std::size_t, CommMatrix::Value>> expected;
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = i + 1; j < n; ++j)
                    if (ref[i * n + j]) expected.emplace_back(i, j, ref[i * n + j]);
            ASSERT_EQ(seen, expected) << when;  // by rows, zeros skipped
        };
        // Few pairs: stays sparse; then adds, sets (also to 0) and aging.
        for (int k = 0; k < 2000; ++k) {
            const std::size_t i = task(random), j = task(random);
            if (i == j) continue;
            const CommMatrix::Value v = random() % 1000;
            if (k % 3 == 0) {
                m.set(i, j, v);
                ref[i * n + j] = ref[j * n + i] = v;
            } else {
                m.add(i, j, v);
                ref[i * n + j] += v;
                ref[j * n + i] += v;
            }
        }
        EXPECT_TRUE(m.is_sparse());
        check("sparse");
        const CommMatrix copy = m;
        m.age();
        for (auto& v : ref) v -= v >> 2;
        check("aged");
        EXPECT_FALSE(m == copy);
        // A quarter of the pairs non-zero: switches to dense storage, same contents.
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = i + 1; j < n; j += 2) {
                m.add(i, j, 1);
                ref[i * n + j] += 1;
                ref[j * n + i] += 1;
            }
        EXPECT_FALSE(m.is_sparse());
        check("dense");
        CommMatrix sparse_again(n);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = i + 1; j < n; ++j)
                if (ref[i * n + j]) sparse_again.set(i, j, ref[i * n + j]);
        EXPECT_TRUE(m == sparse_again);  // equal contents, whatever the storage
        EXPECT_THROW(m.at(n, 0), Error);
        EXPECT_THROW(CommMatrix(n).add(3, 3, 1), Error);
        EXPECT_THROW(CommMatrix(n).set(0, n, 0), Error);
    }
}

TEST(CommGraph, PruningKeepsTheStrongestPartnersWithTiesByIndex) {
    // Every pair of a 256-task matrix at weight 5, except partner i+1 of each i at 9: keeping
    // 3 per task keeps i+1 and i-1 (9) and then the lowest-numbered partner at 5.
    const std::size_t n = 256;
    CommMatrix m(n);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) m.set(i, j, j == i + 1 ? 9 : 5);
    const CommGraph g(m, PruneOptions{.min_tasks = 128, .keep_per_task = 3});
    for (std::size_t i = 0; i < n; ++i) {
        std::vector<std::uint32_t> partners(g.neighbours().begin() + g.offsets()[i],
                                            g.neighbours().begin() + g.offsets()[i + 1]);
        // Its own three, plus the tasks that keep it among theirs (an edge survives if either
        // end keeps it): tasks 0, 1 and 2 keep low partners, so everyone links to them.
        std::vector<std::uint32_t> own;
        if (i > 0) own.push_back(static_cast<std::uint32_t>(i - 1));
        if (i + 1 < n) own.push_back(static_cast<std::uint32_t>(i + 1));
        for (std::uint32_t j = 0; own.size() < 3; ++j)
            if (j != i && j + 1 != i && j != i + 1) own.push_back(j);
        for (std::uint32_t j : own) EXPECT_THAT(partners, ::testing::Contains(j)) << i;
        EXPECT_TRUE(std::is_sorted(partners.begin(), partners.end())) << i;
        if (i < 5) continue;
        // Nothing else: the 5s to tasks above 3 are cut at both ends.
        for (std::uint32_t j : partners)
            EXPECT_TRUE(j <= 3 || j + 1 == i || j == i + 1) << i << " keeps " << j;
    }
}

// A reference: each task's k strongest partners (heavier first, then lower index) found by
// sorting its row; an edge is kept if either end keeps it, listed in both rows by partner.
TEST(CommGraph, PruningMatchesSortingEachRow) {
    std::mt19937_64 random(7);
    for (const std::size_t n : {std::size_t{130}, std::size_t{300}}) {
        for (const int density : {3, 50, 100}) {  // % of pairs non-zero
            CommMatrix m(n);
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = i + 1; j < n; ++j)
                    if (static_cast<int>(random() % 100) < density) m.set(i, j, 1 + random() % 6);
            for (const std::size_t k : {0, 1, 4, 8}) {
                const CommGraph g(m, PruneOptions{.min_tasks = 128, .keep_per_task = k});
                std::vector<std::vector<bool>> keeps(n, std::vector<bool>(n, false));
                for (std::size_t i = 0; i < n; ++i) {
                    std::vector<std::size_t> partners;
                    for (std::size_t j = 0; j < n; ++j)
                        if (m.at(i, j) > 0) partners.push_back(j);
                    std::stable_sort(
                        partners.begin(), partners.end(),
                        [&](std::size_t a, std::size_t b) { return m.at(i, a) > m.at(i, b); });
                    for (std::size_t r = 0; r < std::min(k, partners.size()); ++r)
                        keeps[i][partners[r]] = true;
                }
                std::vector<std::uint32_t> neighbours;
                std::vector<CommMatrix::Value> weights;
                std::vector<std::size_t> offsets{0};
                double kept = 0;
                for (std::size_t i = 0; i < n; ++i) {
                    for (std::size_t j = 0; j < n; ++j) {
                        if (!keeps[i][j] && !keeps[j][i]) continue;
                        neighbours.push_back(static_cast<std::uint32_t>(j));
                        weights.push_back(m.at(i, j));
                        kept += static_cast<double>(m.at(i, j)) / 2;
                    }
                    offsets.push_back(neighbours.size());
                }
                const std::string what = "n " + std::to_string(n) + ", " + std::to_string(density) +
                                         " %, k " + std::to_string(k);
                EXPECT_TRUE(std::equal(offsets.begin(), offsets.end(), g.offsets().begin(),
                                       g.offsets().end()))
                    << what;
                EXPECT_TRUE(std::equal(neighbours.begin(), neighbours.end(), g.neighbours().begin(),
                                       g.neighbours().end()))
                    << what;
                EXPECT_TRUE(std::equal(weights.begin(), weights.end(), g.weights().begin(),
                                       g.weights().end()))
                    << what;
                std::size_t pairs = 0;
                m.for_each_pair([&](std::size_t, std::size_t, CommMatrix::Value) { ++pairs; });
                EXPECT_EQ(g.pruned(), neighbours.size() / 2 < pairs) << what;
                EXPECT_NEAR(g.kept_fraction(), kept / m.total(), 1e-12) << what;
            }
        }
    }
}

}  // namespace
}  // namespace cdsm
