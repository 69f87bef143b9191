// SPDX-License-Identifier: GPL-2.0
#include "cdsm/mapper.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cdsm/baseline_mappers.hpp"
#include "cdsm/cost.hpp"
#include "cdsm/exhaustive_mapper.hpp"
#include "cdsm/patterns.hpp"
#include "cdsm/scotch_mapper.hpp"
#include "test_support.hpp"

namespace cdsm {
namespace {

using test::error_of;
using test::machine;
using test::Target;
using ::testing::HasSubstr;

// The suite with its defaults, and random sparse patterns of several degrees and seeds.
std::vector<patterns::Named> suite_and_random(std::size_t n) {
    auto all = patterns::suite(n);
    for (std::size_t degree : {1u, 2u, 4u})
        for (std::uint64_t seed = 2; seed <= 12; ++seed)
            all.push_back(
                {"random-sparse degree " + std::to_string(degree) + " seed " + std::to_string(seed),
                 patterns::random_sparse(n, degree, seed)});
    return all;
}

// Every pattern of 2 to `max_tasks` tasks (under-subscribed below the PU count) is mapped
// within 2 % of the exhaustive optimum.
void expect_near_optimum(const Target& s, std::size_t max_tasks, double within = 1.02) {
    const ScotchMapper scotch;
    const ExhaustiveMapper exhaustive;
    for (std::size_t n = 2; n <= max_tasks; ++n) {
        for (const auto& [name, m] : suite_and_random(n)) {
            const Placement best = s.map(exhaustive, m);
            const Placement mapped = s.map(scotch, m);
            ASSERT_TRUE(mapped.is_balanced(s.topology.pu_count())) << name << " n=" << n;
            EXPECT_LE(s.cost(m, mapped), within * s.cost(m, best)) << name << " n=" << n;
        }
    }
}

TEST(Mapper, ScotchMatchesTheOptimumForUpToEightTasks) {
    expect_near_optimum(Target(test::small_machine()), 8);
}

TEST(Mapper, ExhaustiveIsNeverBeatenByAnyBaseline) {
    // Free to choose the PUs as the baselines are (under the default rules it keeps to its cores).
    const Target s(machine("16amd64-8n2c-cpusets.xml"), test::kPaperRules);
    const ExhaustiveMapper exhaustive;
    for (const auto& [name, m] : patterns::suite(7)) {
        const double best = s.cost(m, s.map(exhaustive, m));
        for (const char* other : {"scotch", "compact", "scatter", "random"})
            EXPECT_LE(best, s.cost(m, s.map(*make_mapper(other), m))) << name << " vs " << other;
    }
}

TEST(Mapper, ScotchIsDeterministic) {
    const Target s(machine("32em64t-2n8c2t-pci-noio.xml"));
    const ScotchMapper scotch;
    for (std::size_t n : {24u, 256u}) {
        const CommMatrix m = patterns::random_sparse(n, 6, 7);
        const Placement first = s.map(scotch, m);
        for (int run = 0; run < 6; ++run) ASSERT_EQ(s.map(scotch, m), first) << "n=" << n;
    }
}

TEST(Mapper, EveryMapperBalancesUnderAndOverSubscription) {
    const Target s(machine("16em64t-4s2c2t.xml"));
    const CommMatrix one = patterns::ring(1);
    for (const char* name : {"scotch", "compact", "scatter", "random"}) {
        for (std::size_t n : {1u, 5u, 16u, 23u, 40u, 64u}) {
            const CommMatrix m = patterns::stencil_2d(n);
            const Placement p = s.map(*make_mapper(name), m);
            ASSERT_EQ(p.size(), n);
            EXPECT_TRUE(p.is_balanced(16)) << name << " n=" << n;
        }
    }
}

TEST(Mapper, UnderSubscribedPairsShareACoreAndClustersAPackage) {
    // The cost model alone (smt=allow spread=pack): partners share a core.
    const Target s(machine("16em64t-4s2c2t.xml"), test::kPaperRules);
    const ScotchMapper scotch;
    const Placement pairs = s.map(scotch, patterns::random_pairs(6));
    const CommMatrix pm = patterns::random_pairs(6);
    for (std::size_t i = 0; i < 6; ++i)
        for (std::size_t j = i + 1; j < 6; ++j)
            if (pm.at(i, j)) {
                EXPECT_EQ(s.distances(pairs[i], pairs[j]), 1u);
            }
    // Two clusters of 3 and 2 tasks stay each inside a package.
    CommMatrix m(5);
    m.set(0, 1, 50);
    m.set(0, 2, 50);
    m.set(1, 2, 50);
    m.set(3, 4, 50);
    const Placement p = s.map(scotch, m);
    EXPECT_EQ(s.cost(m, p), s.cost(m, s.map(ExhaustiveMapper(), m)));
}

TEST(Mapper, OverSubscribedClustersShareAPu) {
    // 16 tasks in 8 interleaved pairs on 8 PUs: the optimum stacks each pair on one PU.
    const Target s(test::small_machine());
    const CommMatrix m = patterns::clusters(16, 2);
    const Placement p = s.map(ScotchMapper(), m);
    EXPECT_TRUE(p.is_balanced(8));
    EXPECT_EQ(s.cost(m, p), 0.0);
}

TEST(Mapper, ScotchBeatsTheBaselinesOnStructuredPatterns) {
    const Target s(machine("32em64t-2n8c2t-pci-noio.xml"));
    for (const char* pattern : {"clusters", "pipeline", "random-pairs", "stencil-3d"}) {
        for (const auto& [name, m] : patterns::suite(32)) {
            if (name != pattern) continue;
            const double scotch = s.cost(m, s.map(ScotchMapper(), m));
            for (const char* other : {"compact", "scatter", "random"})
                EXPECT_LE(scotch, s.cost(m, s.map(*make_mapper(other), m))) << name << " " << other;
        }
    }
}

TEST(Mapper, RestrictedMachineUsesOnlyAllowedPus) {
    // 10 of the 16 PUs allowed, in packages of 1 or 2 cores: within 2 % of the optimum too, under
    // the default rules and the paper's.
    // Under the default rules the PUs are fixed first and every one of them is busy, where the
    // swaps have no free PU to move through: within 5 % (one pattern of 9 tasks at 3.6 %).
    expect_near_optimum(Target(machine("16amd64-8n2c-cpusets.xml")), 10, 1.05);
    const Target s(machine("16amd64-8n2c-cpusets.xml"), test::kPaperRules);
    expect_near_optimum(s, 10);
    const ScotchMapper scotch;
    // Pairs land on the two cores of one package (OS 0 and 1, 2 and 3, ...), never across.
    const CommMatrix pairs = patterns::random_pairs(8, 3);
    const Placement p = s.map(scotch, pairs);
    for (std::size_t i = 0; i < 8; ++i)
        for (std::size_t j = i + 1; j < 8; ++j)
            if (pairs.at(i, j)) {
                EXPECT_EQ(s.distances(p[i], p[j]), LevelCosts{}.package);
            }
}

TEST(Mapper, OverSubscribedRestrictedMachineBeatsTheBaselines) {
    // 4 tasks per PU on 10 PUs in packages of 1 or 2 cores: bipartitioning alone cut a chain
    // into pieces that cost 1.5 times the compact placement.
    const Target s(machine("16amd64-8n2c-cpusets.xml"));
    for (const auto& [name, m] : patterns::suite(40)) {
        const Placement p = s.map(ScotchMapper(), m);
        EXPECT_TRUE(p.is_balanced(10)) << name;
        for (const char* other : {"compact", "scatter"})
            EXPECT_LE(s.cost(m, p), s.cost(m, s.map(*make_mapper(other), m)))
                << name << " " << other;
    }
}

TEST(Mapper, BaselinesDoWhatTheirNamesSay) {
    const Target s(test::small_machine());
    const CommMatrix m(4);
    EXPECT_EQ(s.map(CompactMapper(), m), Placement({0, 1, 2, 3}));
    EXPECT_EQ(s.map(ScatterMapper(), m), Placement({0, 4, 2, 6}));
    EXPECT_EQ(s.map(CompactMapper(), CommMatrix(16)).pus()[1], 0u);
    EXPECT_EQ(s.map(RandomMapper(5), m), s.map(RandomMapper(5), m));
    EXPECT_NE(s.map(RandomMapper(5), CommMatrix(8)), s.map(RandomMapper(6), CommMatrix(8)));
    const Placement current({7, 6, 5, 4});
    EXPECT_EQ(s.map(CurrentMapper(), m, &current), current);
}

TEST(Mapper, BadProblemsAreRejected) {
    const Target s(test::small_machine());
    const Target other(machine("16em64t-4s2c2t.xml"));
    EXPECT_THAT(error_of([&] { s.map(CurrentMapper(), CommMatrix(2)); }),
                HasSubstr("no current placement"));
    EXPECT_THAT(error_of([&] { s.map(ExhaustiveMapper(), CommMatrix(11)); }),
                HasSubstr("cannot search 11 tasks"));
    EXPECT_THAT(error_of([] { make_mapper("greedy"); }), HasSubstr("mapper 'greedy': unknown"));
    const Placement wrong({0, 1, 2});
    EXPECT_THAT(error_of([&] { s.map(ScotchMapper(), CommMatrix(2), &wrong); }),
                HasSubstr("placement of 3 tasks"));
    const CommMatrix m(2);
    EXPECT_THAT(error_of([&] {
                    ScotchMapper().map(MappingProblem{m, s.topology, other.distances});
                }),
                HasSubstr("distance table of 16 PUs"));
    EXPECT_THAT(error_of([&] { s.map(ScotchMapper(ScotchOptions{.strategy = "(bogus"}), m); }),
                HasSubstr("Scotch strategy '(bogus': rejected"));
}

}  // namespace
}  // namespace cdsm
