// SPDX-License-Identifier: GPL-2.0
// The placement rules (issue 28) asserted as rules, over real and synthetic machines, restricted
// cpusets and random matrices: no two busy tasks on one core while a core is idle, packages
// loaded in proportion to their cores, never costlier than the communication-blind placement of
// the same resources. The checks here are written independently of libcdsm's rule_violation().
#include "cdsm/placement_rules.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "cdsm/baseline_mappers.hpp"
#include "cdsm/exhaustive_mapper.hpp"
#include "cdsm/patterns.hpp"
#include "cdsm/scotch_mapper.hpp"
#include "test_support.hpp"

namespace cdsm {
namespace {

using test::error_of;
using test::kSanitized;
using test::machine;
using test::sampled;
using test::Target;
using ::testing::HasSubstr;

// A machine to test on, and its name.
struct Case {
    std::string name;
    Topology topology;
};

// The restrictions of "pack:2 core:8 pu:2" (OS PUs 0-15 in package 0 are cores 0-7 x 2 PUs,
// siblings adjacent in synthetic numbering).
std::vector<std::uint32_t> os_range(std::uint32_t from, std::uint32_t to, std::uint32_t step = 1) {
    std::vector<std::uint32_t> out;
    for (std::uint32_t k = from; k < to; k += step) out.push_back(k);
    return out;
}

std::vector<Case> machines() {
    std::vector<Case> out;
    for (const char* xml : {"32em64t-2n8c2t-pci-noio.xml", "16em64t-4s2c2t.xml",
                            "24em64t-2n6c2t-pci.xml", "16amd64-8n2c-cpusets.xml"})
        out.push_back({xml, machine(xml)});
    for (const char* synthetic : {"pack:2 core:8 pu:2", "pack:2 core:4 pu:4",
                                  "pack:2 l3:4 core:4 pu:2", "pack:4 core:2 pu:2"})
        out.push_back({synthetic, Topology::from_synthetic(synthetic)});
    const Topology smt2 = Topology::from_synthetic("pack:2 core:8 pu:2");
    // One PU of some cores: package 0 whole, package 1 only the first PU of each core.
    std::vector<std::uint32_t> half = os_range(0, 16);
    for (std::uint32_t k : os_range(16, 32, 2)) half.push_back(k);
    out.push_back({"one PU of package 1's cores", smt2.restricted_to(half)});
    // Unequal packages: 8 cores in package 0, 2 in package 1.
    std::vector<std::uint32_t> unequal = os_range(0, 16);
    for (std::uint32_t k : os_range(16, 20)) unequal.push_back(k);
    out.push_back({"unequal packages 8+2 cores", smt2.restricted_to(unequal)});
    // Holes: every third PU.
    out.push_back({"every third PU", smt2.restricted_to(os_range(0, 32, 3))});
    const Topology smt4 = Topology::from_synthetic("pack:2 core:4 pu:4");
    // SMT-4 with cores of 4, 2 and 1 usable PUs.
    out.push_back(
        {"SMT-4, cores of 4/2/1 PUs", smt4.restricted_to(std::vector<std::uint32_t>{
                                          0, 1, 2, 3, 4, 5, 8, 12, 16, 17, 18, 19, 20, 24, 25})});
    return out;
}

// Independent view of a machine: the core and package of each PU, found from the level kinds.
struct View {
    std::vector<std::uint32_t> core, package;
    std::size_t cores = 0, packages = 0;
    explicit View(const Topology& t) : core(t.pu_count()), package(t.pu_count()) {
        std::size_t core_level = t.level_count() - 1;
        for (std::size_t l = 1; l < t.level_count(); ++l)
            if (t.level_kind(l) == LevelKind::kCore) {
                core_level = l;
                break;
            }
        for (PuId pu = 0; pu < t.pu_count(); ++pu) {
            core[pu] = t.ancestor(pu, core_level);
            package[pu] = core_level > 1 ? t.ancestor(pu, 1) : 0;
        }
        cores = t.node_count(core_level);
        packages = core_level > 1 ? t.node_count(1) : 1;
    }
};

// The rules checked by counting: every PU at most one task (n <= PUs); under avoid no core with
// two tasks more than one that has a PU free (so none with two while one is idle); under
// balanced, each package within one task of its share (by cores under avoid while n <= cores,
// by PUs under allow).
std::string broken_rule(const Topology& t, const Placement& p, PlacementRules rules) {
    const View v(t);
    const std::size_t n = p.size();
    if (n > t.pu_count()) return "";
    std::vector<std::size_t> on_pu(t.pu_count(), 0), on_core(v.cores, 0), core_pus(v.cores, 0);
    std::vector<std::size_t> on_package(v.packages, 0), package_cap(v.packages, 0);
    std::vector<bool> seen(v.cores, false);
    for (PuId pu = 0; pu < t.pu_count(); ++pu) {
        ++core_pus[v.core[pu]];
        if (rules.smt == SmtRule::kAllow || !seen[v.core[pu]]) ++package_cap[v.package[pu]];
        seen[v.core[pu]] = true;
    }
    for (PuId pu : p.pus()) {
        if (++on_pu[pu] > 1) return "two tasks on PU " + std::to_string(pu);
        ++on_core[v.core[pu]];
        ++on_package[v.package[pu]];
    }
    if (rules.smt == SmtRule::kAvoid)
        for (std::size_t a = 0; a < v.cores; ++a)
            for (std::size_t b = 0; b < v.cores; ++b)
                if (on_core[a] >= on_core[b] + 2 && on_core[b] < core_pus[b])
                    return "core " + std::to_string(a) + " holds " + std::to_string(on_core[a]) +
                           ", core " + std::to_string(b) + " " + std::to_string(on_core[b]);
    const std::size_t cap = std::accumulate(package_cap.begin(), package_cap.end(), std::size_t{0});
    if (rules.spread == SpreadRule::kBalanced && (rules.smt == SmtRule::kAllow || n <= v.cores))
        for (std::size_t k = 0; k < v.packages; ++k) {
            const double share = double(n) * double(package_cap[k]) / double(cap);
            if (std::abs(double(on_package[k]) - share) >= 1)
                return "package " + std::to_string(k) + " holds " + std::to_string(on_package[k]) +
                       " of share " + std::to_string(share);
        }
    return "";
}

constexpr PlacementRules kAllRules[] = {{SmtRule::kAvoid, SpreadRule::kBalanced},
                                        {SmtRule::kAvoid, SpreadRule::kPack},
                                        {SmtRule::kAllow, SpreadRule::kBalanced},
                                        {SmtRule::kAllow, SpreadRule::kPack}};

Placement map_with(const Target& s, const Mapper& mapper, const CommMatrix& m,
                   PlacementRules rules) {
    return mapper.map(MappingProblem{m, s.topology, s.distances, nullptr, rules});
}

std::vector<patterns::Named> matrices(std::size_t n) {
    std::vector<patterns::Named> out;
    for (std::uint64_t seed = 1; seed <= 3; ++seed)
        out.push_back(
            {"random-sparse seed " + std::to_string(seed), patterns::random_sparse(n, 3, seed)});
    out.push_back({"ring", patterns::ring(n)});
    out.push_back({"clusters", patterns::clusters(n)});
    out.push_back({"dense-clusters", patterns::dense_clusters(n, 4, 5)});
    out.push_back({"random-pairs", patterns::random_pairs(n, 3)});
    return out;
}

TEST(PlacementRules, EveryMapperKeepsEveryRuleOnEveryMachine) {
    const ScotchMapper scotch;
    const RandomMapper random(7);
    std::size_t cases = 0, seen = 0;
    for (const Case& c : machines()) {
        const Target s(c.topology);
        const std::size_t p = s.topology.pu_count();
        for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{3}, p / 4, p / 2 - 1,
                              p / 2, p / 2 + 1, p - 1, p, p + 3}) {
            if (n == 0) continue;
            for (const PlacementRules rules : kAllRules) {
                for (const auto& [name, m] : matrices(n)) {
                    if (!sampled(seen)) continue;
                    for (const Mapper* mapper : {static_cast<const Mapper*>(&scotch),
                                                 static_cast<const Mapper*>(&random)}) {
                        const Placement placed = map_with(s, *mapper, m, rules);
                        const std::string where = c.name + " n=" + std::to_string(n) + " " +
                                                  to_string(rules) + " " + name + " " +
                                                  std::string(mapper->name());
                        ASSERT_EQ(placed.size(), n) << where;
                        ASSERT_TRUE(placed.is_balanced(p)) << where;
                        if (rules.smt == SmtRule::kAllow && rules.spread == SpreadRule::kPack)
                            continue;  // communication alone: the CDSM paper's placements
                        ASSERT_EQ(broken_rule(s.topology, placed, rules), "") << where;
                        ASSERT_EQ(rule_violation(s.topology, placed, rules), "") << where;
                        if (mapper == &scotch) {
                            const Resources r = choose_resources(s.topology, n, rules);
                            const Placement blind = blind_placement(s.topology, r, n);
                            ASSERT_LE(s.cost(m, placed), s.cost(m, blind)) << where;
                        }
                        ++cases;
                    }
                }
            }
        }
    }
    std::printf("placement rules held in %zu cases\n", cases);
}

TEST(PlacementRules, ScotchNeverCostsMoreThanTheLaunchersOnTheSameCores) {
    // On machines whose packages have equal cores, map-by-socket and Slurm's block:cyclic use
    // the cores avoid + balanced chooses; map-by-core and block:block those of avoid + pack.
    for (const char* spec :
         {"pack:2 core:8 pu:2", "pack:2 l3:4 core:4 pu:2", "pack:4 core:2 pu:2"}) {
        const Target s(Topology::from_synthetic(spec));
        const std::size_t cores = core_count(s.topology);
        for (std::size_t n = 2; n <= cores; n += kSanitized ? 9 : 3) {
            for (const auto& [name, m] : matrices(n)) {
                const double balanced = s.cost(
                    m, map_with(s, ScotchMapper(), m, {SmtRule::kAvoid, SpreadRule::kBalanced}));
                const double packed =
                    s.cost(m, map_with(s, ScotchMapper(), m, {SmtRule::kAvoid, SpreadRule::kPack}));
                for (std::string_view launcher : {"map-by-socket", "slurm-block-cyclic"})
                    EXPECT_LE(balanced, s.cost(m, s.map(*make_mapper(launcher), m)))
                        << spec << " n=" << n << " " << name << " vs " << launcher;
                for (std::string_view launcher : {"map-by-core", "slurm-block-block"})
                    EXPECT_LE(packed, s.cost(m, s.map(*make_mapper(launcher), m)))
                        << spec << " n=" << n << " " << name << " vs " << launcher;
            }
        }
    }
}

TEST(PlacementRules, TheIssuesCaseGetsFourCoresOverTwoPackages) {
    // Issue 28: LAMMPS's 4 ranks on the paper's 2 x 8-core Xeon were packed on two cores' SMT
    // siblings (PUs 14 30 15 31).
    const Target s(machine("32em64t-2n8c2t-pci-noio.xml"));
    const CommMatrix m = patterns::stencil_2d(4);
    const Placement placed = s.map(ScotchMapper(), m);
    const View v(s.topology);
    std::set<std::uint32_t> cores;
    std::vector<std::size_t> per_package(v.packages, 0);
    for (PuId pu : placed.pus()) {
        cores.insert(v.core[pu]);
        ++per_package[v.package[pu]];
    }
    EXPECT_EQ(cores.size(), 4u);
    EXPECT_THAT(per_package, ::testing::ElementsAre(2, 2));
    // allow + pack keeps the CDSM paper's behaviour: two cores.
    const Placement paper = map_with(s, ScotchMapper(), m, {SmtRule::kAllow, SpreadRule::kPack});
    cores.clear();
    for (PuId pu : paper.pus()) cores.insert(v.core[pu]);
    EXPECT_EQ(cores.size(), 2u);
}

TEST(PlacementRules, ResourcesFollowTheLayersAndShares) {
    const Topology t = Topology::from_synthetic("pack:2 core:4 pu:4");  // 8 cores, 32 PUs
    const View v(t);
    auto per_core = [&](const Resources& r) {
        std::vector<std::size_t> c(v.cores, 0);
        for (PuId pu : r.pus) ++c[v.core[pu]];
        return c;
    };
    const Resources five = choose_resources(t, 5, {});
    EXPECT_EQ(five.kind, Resources::Kind::kSlots);
    EXPECT_THAT(per_core(five), ::testing::ElementsAre(1, 1, 1, 0, 1, 1, 0, 0));
    EXPECT_THAT(five.rule, HasSubstr("one task per core (5 of 8 cores)"));
    EXPECT_THAT(five.rule, HasSubstr("3+2 over 2 Packages"));
    // 8 cores busy, 3 more tasks: second PUs of 2 cores of package 0 and 1 of package 1; never a
    // third PU while a core has one task.
    EXPECT_THAT(per_core(choose_resources(t, 11, {})),
                ::testing::ElementsAre(2, 2, 1, 1, 2, 1, 1, 1));
    EXPECT_THAT(per_core(choose_resources(t, 17, {})),
                ::testing::ElementsAre(3, 2, 2, 2, 2, 2, 2, 2));
    // pack: the mapper chooses among one PU per core.
    const Resources packed = choose_resources(t, 5, {SmtRule::kAvoid, SpreadRule::kPack});
    EXPECT_EQ(packed.kind, Resources::Kind::kEligible);
    EXPECT_EQ(packed.pus.size(), 8u);
    EXPECT_EQ(choose_resources(t, 32, {}).kind, Resources::Kind::kWhole);
    EXPECT_THAT(choose_resources(t, 40, {}).rule, HasSubstr("over-subscribed"));
}

TEST(PlacementRules, LaunchersOrderCoresAsOpenMpiAndSlurmDo) {
    const Target s(Topology::from_synthetic("pack:2 core:4 pu:2"));  // PU 2k, 2k+1: core k
    const CommMatrix m = patterns::ring(10);
    EXPECT_THAT(s.map(LauncherMapper("map-by-core"), m).pus(),
                ::testing::ElementsAre(0, 2, 4, 6, 8, 10, 12, 14, 1, 3));
    EXPECT_THAT(s.map(LauncherMapper("map-by-socket"), m).pus(),
                ::testing::ElementsAre(0, 8, 2, 10, 4, 12, 6, 14, 1, 9));
    EXPECT_EQ(s.map(LauncherMapper("slurm-block-block"), m),
              s.map(LauncherMapper("map-by-core"), m));
    EXPECT_EQ(s.map(LauncherMapper("slurm-block-cyclic"), m),
              s.map(LauncherMapper("map-by-socket"), m));
    EXPECT_THAT(error_of([] { LauncherMapper("by-node"); }), HasSubstr("unknown"));
    EXPECT_EQ(make_mapper("compact")->name(), "pack");
}

TEST(PlacementRules, RulesParseAndPrint) {
    EXPECT_EQ(parse_smt_rule("allow"), SmtRule::kAllow);
    EXPECT_EQ(parse_spread_rule("pack"), SpreadRule::kPack);
    EXPECT_EQ(to_string(PlacementRules{}), "smt=avoid spread=balanced");
    EXPECT_THAT(error_of([] { parse_smt_rule("never"); }), HasSubstr("expected avoid or allow"));
    EXPECT_THAT(error_of([] { parse_spread_rule("scatter"); }),
                HasSubstr("expected balanced or pack"));
}

// The best placement within the same resources: exhaustive for up to 8 tasks, else the best
// of many random starts of a swap search.
double long_search(const Target& s, const CommMatrix& m, const Resources& r, std::size_t starts) {
    const std::size_t n = m.size();
    std::vector<PuId> slots = r.pus;
    std::mt19937_64 rng(11);
    double best = INFINITY;
    for (std::size_t k = 0; k < starts; ++k) {
        std::shuffle(slots.begin(), slots.end(), rng);
        std::vector<PuId> pus(slots.begin(), slots.begin() + static_cast<std::ptrdiff_t>(n));
        double cost = s.cost(m, Placement(pus));
        for (bool better = true; better;) {
            better = false;
            for (std::size_t a = 0; a < n; ++a)
                for (std::size_t b = a + 1; b < n; ++b) {
                    std::swap(pus[a], pus[b]);
                    const double c = s.cost(m, Placement(pus));
                    if (c < cost) {
                        cost = c;
                        better = true;
                    } else {
                        std::swap(pus[a], pus[b]);
                    }
                }
        }
        best = std::min(best, cost);
    }
    return best;
}

TEST(PlacementRules, CloseToTheBestUnderTheSameRules) {
    // Prints the figures for the report: cost / best known, and cost / blind.
    for (const char* spec : {"pack:2 core:8 pu:2", "pack:2 l3:4 core:4 pu:2"}) {
        const Target s(Topology::from_synthetic(spec));
        for (std::size_t n : {4u, 6u, 8u, 12u, 16u, 24u}) {
            if (kSanitized && n != 6 && n != 16) continue;
            double worst = 0, sum = 0, blind_sum = 0;
            std::size_t count = 0;
            for (const auto& [name, m] : matrices(n)) {
                const Placement placed = s.map(ScotchMapper(), m);
                const Resources r = choose_resources(s.topology, n, {});
                const double best =
                    n <= 8 ? s.cost(m, s.map(ExhaustiveMapper(), m)) : long_search(s, m, r, 60);
                const double cost = s.cost(m, placed);
                const double ratio = best > 0 ? cost / best : 1;
                EXPECT_LE(ratio, 1.10) << spec << " n=" << n << " " << name;
                worst = std::max(worst, ratio);
                sum += ratio;
                const double blind = s.cost(m, blind_placement(s.topology, r, n));
                blind_sum += blind > 0 ? cost / blind : 1;
                ++count;
            }
            std::printf("%-26s n=%2zu vs %s: mean %.4f worst %.4f; vs blind: mean %.3f\n", spec, n,
                        n <= 8 ? "exhaustive" : "best of 60 swap searches", sum / double(count),
                        worst, blind_sum / double(count));
        }
    }
}

}  // namespace
}  // namespace cdsm
