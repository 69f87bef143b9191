// SPDX-License-Identifier: GPL-2.0
// The adaptive mapping interval of CDSM: +50 ms when unchanged, halved when changed, [50, 2000].
#include "interval.hpp"

#include <gtest/gtest.h>

namespace cdsm::cdsmd {
namespace {

using std::chrono::milliseconds;

TEST(AdaptiveInterval, StartsAtTheMinimumAndGrowsByTheStep) {
    AdaptiveInterval i;
    EXPECT_EQ(i.current(), milliseconds(50));
    i.update(false);
    EXPECT_EQ(i.current(), milliseconds(100));
    i.update(false);
    EXPECT_EQ(i.current(), milliseconds(150));
}

TEST(AdaptiveInterval, HalvesOnChange) {
    AdaptiveInterval i;
    for (int k = 0; k < 15; ++k) i.update(false);
    EXPECT_EQ(i.current(), milliseconds(800));
    i.update(true);
    EXPECT_EQ(i.current(), milliseconds(400));
    i.update(true);
    EXPECT_EQ(i.current(), milliseconds(200));
}

TEST(AdaptiveInterval, StaysWithinItsBounds) {
    AdaptiveInterval i;
    for (int k = 0; k < 100; ++k) i.update(false);
    EXPECT_EQ(i.current(), milliseconds(2000));
    for (int k = 0; k < 100; ++k) i.update(true);
    EXPECT_EQ(i.current(), milliseconds(50));
}

TEST(AdaptiveInterval, ReconfigureClampsTheCurrentValue) {
    AdaptiveInterval i;
    for (int k = 0; k < 100; ++k) i.update(false);
    i.reconfigure({10, 300, 25});
    EXPECT_EQ(i.current(), milliseconds(300));
    i.update(true);
    EXPECT_EQ(i.current(), milliseconds(150));
    i.update(false);
    EXPECT_EQ(i.current(), milliseconds(175));
}

}  // namespace
}  // namespace cdsm::cdsmd
