// SPDX-License-Identifier: GPL-2.0
// cdsmd's use of libcdsm on the VM lab's machine shape (2 packages x 2 cores x 2 PUs), offline.
#include "planner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cdsm/mapper.hpp>

namespace cdsm::cdsmd {
namespace {

Planner lab() {
    return Planner(Topology::from_synthetic("pack:2 core:2 pu:2"), LevelCosts{});
}

// Pairs (0,5) (1,4) (2,7) (3,6): partners far apart in task order.
CommMatrix pairs() {
    CommMatrix m(8);
    for (auto [a, b] : {std::pair{0, 5}, {1, 4}, {2, 7}, {3, 6}}) m.set(a, b, 1000);
    m.set(0, 1, 3);  // a little noise
    return m;
}

// Each task bound to the one CPU it runs on (as cdsmd or a launcher binds).
std::vector<std::vector<std::uint32_t>> pinned(const std::vector<std::uint32_t>& cpus) {
    std::vector<std::vector<std::uint32_t>> masks;
    for (std::uint32_t c : cpus) masks.push_back({c});
    return masks;
}

// A ring of 4: 0-2-1-3-0.
CommMatrix ring4() {
    CommMatrix m(4);
    m.set(0, 3, 100);
    m.set(1, 3, 100);
    m.set(1, 2, 100);
    m.set(0, 2, 100);
    return m;
}

std::uint32_t package(std::uint32_t cpu) {
    return cpu / 4;
}  // synthetic: OS = logical order

// These scenarios (pairs meeting on a core's siblings, stacking, margins) were written for the
// CDSM paper's placement (smt=allow spread=pack); the default rules are tested in libcdsm.
const RemapOptions kPaperOptions{.min_gain = 0.05, .rules = {SmtRule::kAllow, SpreadRule::kPack}};

TEST(Submatrix, PicksRowsAndColumnsOfTheTasksToPlace) {
    CommMatrix k(3);
    k.set(0, 1, 5);
    k.set(0, 2, 7);
    k.set(1, 2, 9);
    const CommMatrix m = submatrix(k, {2, 0, 4});
    ASSERT_EQ(m.size(), 3u);
    EXPECT_EQ(m.at(0, 1), 7u);
    EXPECT_EQ(m.at(0, 2), 0u);  // index 4 joined after the snapshot
}

TEST(Planner, RepairsABadStartAndMatchesTheMapperOnTheTrueMatrix) {
    const Planner p = lab();
    // Partners on different packages (what --pin-bad does).
    const std::vector<std::uint32_t> bad = {0, 1, 2, 3, 5, 4, 7, 6};
    const Plan plan = p.plan(pairs(), bad, pinned(bad), p.machine_cpus(), "scotch", kPaperOptions);
    EXPECT_TRUE(plan.changed);
    EXPECT_EQ(plan.why, MoveReason::kCheaper);
    EXPECT_GT(plan.moved, 0u);
    for (auto [a, b] : {std::pair{0, 5}, {1, 4}, {2, 7}, {3, 6}}) {
        EXPECT_EQ(package(plan.target_cpus[a]), package(plan.target_cpus[b])) << a << "," << b;
    }
    EXPECT_LT(plan.cost_after, plan.cost_before);
    // Within 5 % of what the mapper finds on the true matrix from scratch.
    const Distances d(p.machine(), LevelCosts{});
    const auto best = make_mapper("scotch")->map({pairs(), p.machine(), d, nullptr});
    std::vector<std::uint32_t> best_cpus;
    for (PuId pu : best.pus()) best_cpus.push_back(p.machine().pu(pu).os_index);
    EXPECT_LE(plan.cost_after, 1.05 * p.cost(pairs(), best_cpus));
}

TEST(Planner, NeverMovesForAnEquallyGoodPlacement) {
    // 16 tasks on 8 PUs, every pair already sharing a PU: the cost is 0 and any other placement
    // the mapper finds costs 0 too; moving would be churn.
    const Planner p = lab();
    CommMatrix m(16);
    std::vector<std::uint32_t> shared(16);
    for (std::uint32_t i = 0; i < 8; ++i) {
        m.set(i, 15 - i, 500);
        shared[i] = shared[15 - i] = (i * 3) % 8;
    }
    const Plan plan = p.plan(m, shared, pinned(shared), p.machine_cpus(), "scotch", kPaperOptions);
    EXPECT_EQ(plan.cost_before, 0);
    EXPECT_FALSE(plan.changed);
    EXPECT_EQ(plan.why, MoveReason::kNone);
    EXPECT_EQ(plan.target_cpus, shared);
}

TEST(Planner, SpreadsTasksStackedOnACpuWhileOthersAreFree) {
    // A rank still on its launcher's core shares CPU 7 with its ring neighbour: on one PU the
    // pair costs nothing, yet 4 PUs of the package are free, so it moves (cdsmd once left it so).
    const Planner p = lab();
    const CommMatrix m = ring4();
    const std::vector<std::uint32_t> stacked = {5, 7, 6, 7};
    const Plan plan =
        p.plan(m, stacked, pinned(stacked), p.machine_cpus(), "scotch", kPaperOptions);
    EXPECT_TRUE(plan.changed);
    EXPECT_EQ(plan.why, MoveReason::kSpread);
    std::vector<std::uint32_t> cpus = plan.target_cpus;
    std::sort(cpus.begin(), cpus.end());
    EXPECT_EQ(std::adjacent_find(cpus.begin(), cpus.end()), cpus.end()) << "still stacked";
}

TEST(Planner, TasksFreeToRunElsewhereAreNotStackedWhereTheyRanLast) {
    // The same tasks, each free to run on every CPU of its package (mpirun's default binding):
    // two seen on CPU 7 at one moment are spread by the scheduler, not stacked. A move needs a
    // gain (in the VM lab cdsmd "spread" 8 ranks so on a matrix of their start-up, cost 312 ->
    // 0, and moved 4 of them again when they talked).
    const Planner p = lab();
    const CommMatrix m = ring4();
    const std::vector<std::uint32_t> seen = {5, 7, 6, 7};
    const std::vector<std::vector<std::uint32_t>> package1(4, {4, 5, 6, 7});
    const Plan plan = p.plan(m, seen, package1, p.machine_cpus(), "scotch", kPaperOptions);
    EXPECT_NE(plan.why, MoveReason::kSpread);
    EXPECT_FALSE(plan.changed);  // the pairs cost nothing where they ran: no gain
    // Bound to two CPUs, four tasks wait for each other.
    const std::vector<std::vector<std::uint32_t>> two(4, {6, 7});
    EXPECT_EQ(p.plan(m, seen, two, p.machine_cpus(), "scotch", kPaperOptions).why,
              MoveReason::kSpread);
}

TEST(Planner, CrowdedMasks) {
    const std::vector<std::uint32_t> all = {0, 1, 2, 3, 4, 5, 6, 7};
    using Masks = std::vector<std::vector<std::uint32_t>>;
    EXPECT_FALSE(crowded(Masks(4, {0, 1, 2, 3}), all));
    EXPECT_TRUE(crowded(Masks(5, {0, 1, 2, 3}), all));  // 5 tasks on 4 CPUs, 4 CPUs idle
    EXPECT_TRUE(crowded(Masks{{7}, {7}, {1}}, all));
    EXPECT_FALSE(crowded(Masks{{7}, {6}, {1}}, all));
    EXPECT_FALSE(crowded(Masks(3, {7}), {7}));                // nowhere else to go
    EXPECT_TRUE(crowded(Masks(3, {0, 1, 2, 3}), {2, 3, 4}));  // 2 of its CPUs available
    // Two tasks pinned to CPU 7 beside six free to go anywhere: CPU 7's pair still waits.
    Masks pinned_pair(6, all);
    pinned_pair.push_back({7});
    pinned_pair.push_back({7});
    EXPECT_TRUE(crowded(pinned_pair, all));
    // More tasks than CPUs: crowded only when a CPU is left without any (14 ranks and helpers
    // bound by socket to 8 CPUs are not; 10 tasks on one package while the other idles are).
    Masks by_socket(7, {0, 1, 2, 3});
    by_socket.insert(by_socket.end(), 7, {4, 5, 6, 7});
    EXPECT_FALSE(crowded(by_socket, all));
    EXPECT_TRUE(crowded(Masks(10, {0, 1, 2, 3}), all));
    // A matching found only by moving an earlier task: {0,1} {0} {1,2}.
    EXPECT_FALSE(crowded(Masks{{0, 1}, {0}, {1, 2}}, {0, 1, 2}));
}

TEST(Planner, AnUnevenOverSubscribedPlacementMovesOnlyForAGain) {
    // 15 tasks on 8 PUs, every PU busy, one with 3 tasks: a task more on a PU than the balanced
    // 2 is no reason to move when nothing communicates (cdsmd moved 4 of 62 tasks for 0.8 %).
    const Planner p = lab();
    const CommMatrix silent(15);
    std::vector<std::uint32_t> uneven;
    for (std::uint32_t i = 0; i < 15; ++i)
        uneven.push_back(i < 8 ? i : (i - 8) % 6);  // PU 0: 3 tasks
    const Plan plan =
        p.plan(silent, uneven, pinned(uneven), p.machine_cpus(), "scotch", kPaperOptions);
    EXPECT_FALSE(plan.changed);
    EXPECT_EQ(plan.target_cpus, uneven);
}

TEST(Planner, KeepsAGoodPlacement) {
    const Planner p = lab();
    const std::vector<std::uint32_t> good = {0, 2, 4, 6, 3, 1, 7, 5};
    const Plan plan =
        p.plan(pairs(), good, pinned(good), p.machine_cpus(), "scotch", kPaperOptions);
    EXPECT_FALSE(plan.changed);
    EXPECT_EQ(plan.target_cpus, good);
    EXPECT_DOUBLE_EQ(plan.cost_after, plan.cost_before);
}

TEST(Planner, StaysInsideTheAvailableCpus) {
    const Planner p = lab();
    CommMatrix m(4);
    m.set(0, 1, 100);
    m.set(2, 3, 100);
    const std::vector<std::uint32_t> available = {4, 5, 6, 7};
    // Tasks running outside the available set must all move into it.
    const Plan plan =
        p.plan(m, {0, 1, 2, 3}, pinned({0, 1, 2, 3}), available, "scotch", kPaperOptions, true);
    EXPECT_TRUE(plan.changed);
    EXPECT_EQ(plan.why, MoveReason::kOutside);
    EXPECT_EQ(plan.moved, 4u);
    for (std::uint32_t c : plan.target_cpus) EXPECT_GE(c, 4u);
    EXPECT_EQ(plan.baselines.size(), mapper_names().size());
    EXPECT_LE(plan.cost_after, plan.baselines.at("map-by-socket"));
}

TEST(Planner, AMarginalGainIsNotWorthAMigration) {
    const Planner p = lab();
    // 0-1 and 2-3 on SMT siblings (cost 1 each); moving cannot gain 5 %.
    CommMatrix m(4);
    m.set(0, 1, 100);
    m.set(2, 3, 100);
    const Plan plan =
        p.plan(m, {0, 1, 2, 3}, pinned({0, 1, 2, 3}), p.machine_cpus(), "scotch", kPaperOptions);
    EXPECT_FALSE(plan.changed);
}

TEST(Planner, CostCountsUnknownCpusAsFarthest) {
    const Planner p = lab();
    CommMatrix m(2);
    m.set(0, 1, 10);
    EXPECT_DOUBLE_EQ(p.cost(m, {0, 1}), 10.0 * 1);
    EXPECT_DOUBLE_EQ(p.cost(m, {0, 99}), 10.0 * p.distances().max());
}

TEST(Planner, ThePlanHasTheTimeModelsPredictionBesideTheCost) {
    // The ring's 4 tasks on two packages' cores, then where the plan puts them: the time model
    // (TimeModel::node_time_s, each event one short message) before and after, with the model
    // cdsmd was given.
    const Topology machine = Topology::from_synthetic("pack:2 core:2 pu:2");
    TimeModel slow;
    slow.socket.latency_us = 1;
    slow.node.latency_us = 10;
    const Planner p(machine, LevelCosts{}, slow);
    const CommMatrix m = ring4();
    const std::vector<std::uint32_t> spread = {0, 2, 4, 6};  // every ring pair across packages
    const Plan plan = p.plan(m, spread, pinned(spread), p.machine_cpus(), "scotch", kPaperOptions);
    std::vector<PuId> before, after;
    for (std::uint32_t c : spread) before.push_back(*machine.find_os_index(c));
    for (std::uint32_t c : plan.target_cpus) after.push_back(*machine.find_os_index(c));
    EXPECT_DOUBLE_EQ(plan.time_before_s, slow.node_time_s(m, machine, Placement(before)));
    EXPECT_DOUBLE_EQ(plan.time_before_s, 2 * 100 * 10e-6);  // each task: 2 partners x 100
    EXPECT_DOUBLE_EQ(plan.time_after_s, slow.node_time_s(m, machine, Placement(after)));
    EXPECT_LT(plan.time_after_s, plan.time_before_s);
    // A CPU the machine lacks: its events at the node's latency (the known tasks' on top).
    CommMatrix two(2);
    two.set(0, 1, 10);
    EXPECT_DOUBLE_EQ(p.time_s(two, {0, 99}), 10 * 10e-6);
    EXPECT_DOUBLE_EQ(p.time_s(two, {0, 1}), 10 * 1e-6);
}

}  // namespace
}  // namespace cdsm::cdsmd
