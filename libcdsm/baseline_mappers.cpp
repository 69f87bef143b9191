// SPDX-License-Identifier: GPL-2.0
#include "cdsm/baseline_mappers.hpp"

#include <algorithm>
#include <random>

#include "cdsm/error.hpp"
#include "cdsm/placement_rules.hpp"

namespace cdsm {
namespace {

// Rank of a PU's ancestor at `level` among its siblings.
std::uint32_t rank_in_parent(const Topology& topology, PuId pu, std::size_t level) {
    const auto siblings = topology.children(level - 1, topology.ancestor(pu, level - 1));
    const auto it = std::find(siblings.begin(), siblings.end(), topology.ancestor(pu, level));
    return static_cast<std::uint32_t>(it - siblings.begin());
}

}  // namespace

LauncherMapper::LauncherMapper(std::string_view name) {
    for (std::string_view known : {kMapByCore, kMapBySocket, kSlurmBlockBlock, kSlurmBlockCyclic})
        if (name == known) name_ = known;
    if (name_.empty()) throw Error("launcher baseline '" + std::string(name) + "'", "unknown");
    cyclic_ = name_ == kMapBySocket || name_ == kSlurmBlockCyclic;
}

Placement LauncherMapper::place(const MappingProblem& problem) const {
    check_problem(problem);
    const Topology& topology = problem.topology;
    // The order in which the launcher hands out PUs: round k takes the k-th PU of every core
    // that has one, cores in logical order (block) or round-robin over the top-level nodes
    // (cyclic).
    const std::vector<std::uint32_t> core = core_of_pus(topology);
    std::vector<std::size_t> seen(core_count(topology), 0);
    std::vector<std::vector<PuId>> rounds;
    for (PuId pu = 0; pu < topology.pu_count(); ++pu) {
        const std::size_t k = seen[core[pu]]++;
        if (rounds.size() <= k) rounds.resize(k + 1);
        rounds[k].push_back(pu);
    }
    std::vector<PuId> order;
    for (const std::vector<PuId>& round : rounds) {
        Resources r;
        r.kind = Resources::Kind::kSlots;
        r.pus = round;
        const Placement p = cyclic_ ? blind_placement(topology, r, round.size()) : Placement(round);
        order.insert(order.end(), p.pus().begin(), p.pus().end());
    }
    std::vector<PuId> pus(problem.matrix.size());
    for (std::size_t t = 0; t < pus.size(); ++t) pus[t] = order[t % order.size()];
    return Placement(std::move(pus));
}

Placement CompactMapper::place(const MappingProblem& problem) const {
    check_problem(problem);
    const std::size_t n = problem.matrix.size(), p = problem.topology.pu_count();
    std::vector<PuId> pus(n);
    for (std::size_t t = 0; t < n; ++t) pus[t] = static_cast<PuId>(n <= p ? t : t * p / n);
    return Placement(std::move(pus));
}

Placement ScatterMapper::place(const MappingProblem& problem) const {
    check_problem(problem);
    const Topology& topology = problem.topology;
    // Order PUs by their position read from the leaf upwards, so that the top level varies
    // fastest.
    std::vector<std::pair<std::vector<std::uint32_t>, PuId>> keyed;
    for (PuId pu = 0; pu < topology.pu_count(); ++pu) {
        std::vector<std::uint32_t> key;
        for (std::size_t level = topology.level_count() - 1; level > 0; --level)
            key.push_back(rank_in_parent(topology, pu, level));
        keyed.emplace_back(std::move(key), pu);
    }
    std::sort(keyed.begin(), keyed.end());
    std::vector<PuId> pus(problem.matrix.size());
    for (std::size_t t = 0; t < pus.size(); ++t) pus[t] = keyed[t % keyed.size()].second;
    return Placement(std::move(pus));
}

Placement RandomMapper::place(const MappingProblem& problem) const {
    check_problem(problem);
    const std::size_t n = problem.matrix.size(), p = problem.topology.pu_count();
    std::mt19937_64 rng(seed_);
    std::vector<PuId> all(p);
    for (PuId pu = 0; pu < p; ++pu) all[pu] = pu;
    // floor(N/P) tasks on every PU, one more on N mod P distinct random PUs.
    std::vector<PuId> slots;
    for (std::size_t k = 0; k < n / p; ++k) slots.insert(slots.end(), all.begin(), all.end());
    std::shuffle(all.begin(), all.end(), rng);
    slots.insert(slots.end(), all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n % p));
    std::shuffle(slots.begin(), slots.end(), rng);
    return Placement(std::move(slots));
}

Placement CurrentMapper::place(const MappingProblem& problem) const {
    check_problem(problem);
    if (!problem.current) throw Error("current mapper", "the problem has no current placement");
    return *problem.current;
}

}  // namespace cdsm
