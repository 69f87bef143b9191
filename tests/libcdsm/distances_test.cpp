// SPDX-License-Identifier: GPL-2.0
#include "cdsm/distances.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "cdsm/scotch_mapper.hpp"
#include "test_support.hpp"

namespace cdsm {
namespace {

using test::error_of;
using test::machine;
using ::testing::HasSubstr;

TEST(Distances, DefaultsRiseFromCoreToOtherPackage) {
    const LevelCosts c;
    EXPECT_LT(c.core, c.l3);
    EXPECT_LT(c.l3, c.package);
    EXPECT_LT(c.package, c.machine);
    const Topology t = machine("16em64t-4s2c2t.xml");
    const Distances d(t);
    EXPECT_EQ(d(0, 0), 0u);
    EXPECT_EQ(d(0, 1), c.core);     // SMT siblings (OS 0 and 8)
    EXPECT_EQ(d(0, 2), c.l3);       // other core, same L3
    EXPECT_EQ(d(0, 4), c.machine);  // other package
    EXPECT_EQ(d(4, 0), d(0, 4));
    EXPECT_EQ(d.max(), c.machine);
}

TEST(Distances, UseTheConfiguredCosts) {
    const Topology t = Topology::from_synthetic("pack:2 core:2 pu:2");
    const Distances d(t, LevelCosts{.core = 2, .package = 7, .machine = 30});
    EXPECT_EQ(d(0, 1), 2u);
    EXPECT_EQ(d(0, 2), 7u);
    EXPECT_EQ(d(0, 7), 30u);
}

TEST(Distances, RejectCostsThatAreZeroOrFall) {
    const Topology t = test::small_machine();
    EXPECT_THAT(error_of([&] { Distances(t, LevelCosts{.core = 0}); }),
                HasSubstr("core cost must be at least 1"));
    EXPECT_THAT(error_of([&] { Distances(t, LevelCosts{.package = 2}); }),
                HasSubstr("package cost 2 is below numa cost 4"));
}

// Each pair's distance is the cost of the deepest level at which the two PUs share a node
// (Topology::common_level), whether a node's PUs are numbered in a row (hwloc's machines) or
// not (a machine whose packages take every other PU).
TEST(Distances, AreTheCostOfTheDeepestCommonLevel) {
    std::vector<Topology> machines;
    for (const char* xml :
         {"16em64t-4s2c2t.xml", "24em64t-2n6c2t-pci.xml", "16amd64-8n2c-cpusets.xml"})
        machines.push_back(machine(xml));
    machines.push_back(Topology::from_synthetic("pack:2 l3:2 core:3 pu:2"));
    const std::uint32_t cpus[] = {0, 16, 1, 8, 24};
    machines.push_back(machine("32em64t-2n8c2t-pci-noio.xml").restricted_to(cpus));
    std::vector<Topology::RawPu> interleaved;
    for (std::uint32_t p = 0; p < 8; ++p) interleaved.push_back({{p, p}, {0, p % 2, p % 4, p}});
    machines.emplace_back("interleaved",
                          std::vector<LevelKind>{LevelKind::kMachine, LevelKind::kPackage,
                                                 LevelKind::kCore, LevelKind::kPu},
                          interleaved);
    machines.push_back(Topology::from_synthetic("pu:1"));
    for (const Topology& t : machines) {
        const Distances d(t);
        std::uint32_t farthest = 0;
        for (PuId a = 0; a < t.pu_count(); ++a) {
            for (PuId b = 0; b < t.pu_count(); ++b) {
                const std::size_t level = t.common_level(a, b);
                ASSERT_EQ(d(a, b), d.level_cost(level))
                    << t.source() << ": PUs " << a << " and " << b;
                farthest = std::max(farthest, d(a, b));
            }
        }
        if (t.pu_count() > 1) {
            EXPECT_EQ(d.max(), farthest) << t.source();
        }
    }
    EXPECT_EQ(Distances(machines[5])(0, 2), LevelCosts{}.package);  // interleaved: PUs 0, 2
}

// Scotch's tree-leaf target adds link costs from the leaf up; the table it gives back must be
// exactly the configured distances, for symmetric trees, restricted ones (sub-architecture) and
// levels of equal cost (merged).
void expect_target_equals_distances(const Topology& t, LevelCosts costs = {}) {
    const Distances d(t, costs);
    const auto scotch = ScotchMapper::target_distances(t, d);
    for (PuId a = 0; a < t.pu_count(); ++a)
        for (PuId b = 0; b < t.pu_count(); ++b)
            ASSERT_EQ(scotch[a * t.pu_count() + b], d(a, b))
                << t.source() << ": PUs " << a << " and " << b;
}

TEST(Distances, ScotchTargetReproducesThem) {
    for (const char* xml : {"16em64t-4s2c2t.xml", "24em64t-2n6c2t-pci.xml",
                            "32em64t-2n8c2t-pci-noio.xml", "16amd64-8n2c-cpusets.xml"})
        expect_target_equals_distances(machine(xml));
    expect_target_equals_distances(
        test::small_machine(),
        LevelCosts{.core = 3, .l2 = 4, .l3 = 5, .numa = 6, .package = 7, .machine = 40});
    expect_target_equals_distances(Topology::from_synthetic("pack:2 l3:2 core:3 pu:2"),
                                   LevelCosts{.l3 = 5, .numa = 5, .package = 5});
    const std::uint32_t cpus[] = {0, 16, 1, 8, 24};
    expect_target_equals_distances(machine("32em64t-2n8c2t-pci-noio.xml").restricted_to(cpus));
}

// The target file for scotch_gmap (bench/mapping): link costs that add up to the distances
// (1 on a core, 1 + 4 = 5 in a package, 1 + 4 + 5 = 10 across), equal-cost levels merged.
TEST(Distances, ScotchTargetDescription) {
    const Topology t = Topology::from_synthetic("pack:2 core:8 pu:2");
    EXPECT_EQ(ScotchMapper::target_description(t, Distances(t)), "tleaf 3 2 5 8 4 2 1");
    const Topology merged = Topology::from_synthetic("pack:2 l3:2 core:3 pu:2");
    EXPECT_EQ(ScotchMapper::target_description(
                  merged, Distances(merged, LevelCosts{.l3 = 5, .numa = 5, .package = 5})),
              "tleaf 3 2 5 6 4 2 1");
}

}  // namespace
}  // namespace cdsm
