// SPDX-License-Identifier: GPL-2.0
// The local search behind ScotchMapper (libcdsm/placement_repair.hpp, internal).
#include "placement_repair.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "cdsm/comm_graph.hpp"
#include "cdsm/patterns.hpp"
#include "test_support.hpp"

namespace cdsm {
namespace {

using test::machine;
using test::Target;

// A balanced placement of n tasks, shuffled with a fixed seed.
std::vector<PuId> shuffled(std::size_t n, std::size_t pu_count, std::uint64_t seed) {
    std::vector<PuId> pus(n);
    for (std::size_t t = 0; t < n; ++t) pus[t] = static_cast<PuId>(t % pu_count);
    std::shuffle(pus.begin(), pus.end(), std::mt19937_64(seed));
    return pus;
}

// Whether a single swap of two tasks or a move of one to a PU with room (keeping the balance)
// lowers the cost: the cost of every neighbour placement, computed from scratch.
bool one_step_is_cheaper(const Target& s, const CommMatrix& m, const std::vector<PuId>& pus) {
    const std::size_t n = pus.size(), p = s.topology.pu_count();
    const std::size_t low = n / p, high = (n + p - 1) / p;
    std::vector<std::size_t> load(p, 0);
    for (PuId pu : pus) ++load[pu];
    const double cost = s.cost(m, Placement(pus));
    auto cheaper = [&](const std::vector<PuId>& other) {
        return s.cost(m, Placement(other)) < cost - 1e-6;
    };
    for (std::size_t t = 0; t < n; ++t) {
        for (PuId to = 0; to < p; ++to) {
            if (to == pus[t] || load[pus[t]] <= low || load[to] >= high) continue;
            auto other = pus;
            other[t] = to;
            if (cheaper(other)) return true;
        }
        for (std::size_t u = t + 1; u < n; ++u) {
            auto other = pus;
            std::swap(other[t], other[u]);
            if (cheaper(other)) return true;
        }
    }
    return false;
}

// refine() keeps a table of what every task would pay on every PU and updates it after each
// move; where the table is wrong, it stops at a placement one swap or move can still improve
// (or takes steps that raise the cost). Checked on a symmetric machine, an asymmetric one
// (restricted cpuset) and an over-subscribed one, from shuffled placements.
TEST(PlacementRepair, RefineEndsWhereNoSwapOrMoveLowersTheCost) {
    const Target machines[] = {
        Target(Topology::from_synthetic("pack:2 l3:2 core:2 pu:2")),
        Target(machine("16amd64-8n2c-cpusets.xml")),
        Target(Topology::from_synthetic("pack:3 core:2 pu:1")),
    };
    for (const Target& s : machines) {
        const std::size_t p = s.topology.pu_count();
        for (std::size_t n : {p / 2, p, 2 * p + 1}) {
            for (const auto& [name, m] : patterns::suite(n)) {
                const CommGraph graph(m, PruneOptions{.min_tasks = n + 1});
                for (std::uint64_t seed = 1; seed <= 3; ++seed) {
                    std::vector<PuId> pus = shuffled(n, p, seed);
                    const double before = s.cost(m, Placement(pus));
                    detail::refine(pus, graph, s.topology, s.distances, 1000);
                    const std::string what = s.topology.source() + " " + name +
                                             " n=" + std::to_string(n) +
                                             " seed=" + std::to_string(seed);
                    ASSERT_TRUE(Placement(pus).is_balanced(p)) << what;
                    EXPECT_LE(s.cost(m, Placement(pus)), before + 1e-6) << what;
                    EXPECT_FALSE(one_step_is_cheaper(s, m, pus)) << what;
                }
            }
        }
    }
}

}  // namespace
}  // namespace cdsm
