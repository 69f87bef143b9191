// SPDX-License-Identifier: GPL-2.0
#include "cdsm/cost.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_support.hpp"

namespace cdsm {
namespace {

using test::error_of;
using ::testing::HasSubstr;

TEST(Cost, SumsPairsTimesDistanceByHand) {
    const Topology t = test::small_machine();  // PUs 0,1 share a core; 0..3 a package
    const Distances d(t);
    CommMatrix m(3);
    m.set(0, 1, 4);
    m.set(1, 2, 2);
    m.set(0, 2, 1);
    // 4 * same core (1) + 2 * other package (10) + 1 * other package (10)
    EXPECT_EQ(mapping_cost(m, Placement({0, 1, 4}), d), 34.0);
    // 4 * same package (5) + 2 * same core (1) + 1 * same package (5)
    EXPECT_EQ(mapping_cost(m, Placement({0, 2, 3}), d), 27.0);
    // Everything on one PU costs nothing.
    EXPECT_EQ(mapping_cost(m, Placement({6, 6, 6}), d), 0.0);
}

TEST(Cost, RejectsPlacementsThatDoNotFit) {
    const Topology t = test::small_machine();
    const Distances d(t);
    const CommMatrix m(3);
    EXPECT_THAT(error_of([&] {
                    mapping_cost(m, Placement({0, 1}), d);
                }),
                HasSubstr("placement of 2 tasks: does not match the communication matrix of 3"));
    EXPECT_THAT(error_of([&] {
                    mapping_cost(m, Placement({0, 1, 8}), d);
                }),
                HasSubstr("task 2 is on PU 8 but the topology has only 8 PUs"));
}

}  // namespace
}  // namespace cdsm
