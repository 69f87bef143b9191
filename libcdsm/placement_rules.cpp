// SPDX-License-Identifier: GPL-2.0
#include "cdsm/placement_rules.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "cdsm/error.hpp"

namespace cdsm {
namespace {

// The level whose nodes are the cores: the Core level, or the PUs where cores have one PU each.
std::size_t core_level(const Topology& topology) {
    for (std::size_t level = 1; level < topology.level_count(); ++level)
        if (topology.level_kind(level) == LevelKind::kCore) return level;
    return topology.level_count() - 1;
}

// Levels over whose nodes balanced spreads the tasks: the top division of the machine
// (packages, or whatever hwloc left of them) and every Package or NUMA level above the cores.
std::vector<bool> spread_levels(const Topology& topology) {
    const std::size_t cores = core_level(topology);
    std::vector<bool> spread(topology.level_count(), false);
    for (std::size_t level = 1; level < cores; ++level) {
        const LevelKind kind = topology.level_kind(level);
        spread[level] = level == 1 || kind == LevelKind::kPackage || kind == LevelKind::kNuma;
    }
    return spread;
}

// Counts of candidate PUs below every node, level by level.
std::vector<std::vector<std::size_t>> counts_below(const Topology& topology,
                                                   const std::vector<bool>& candidate) {
    std::vector<std::vector<std::size_t>> count(topology.level_count());
    for (std::size_t level = 0; level < topology.level_count(); ++level)
        count[level].assign(topology.node_count(level), 0);
    for (PuId pu = 0; pu < topology.pu_count(); ++pu)
        if (candidate[pu])
            for (std::size_t level = 0; level < topology.level_count(); ++level)
                ++count[level][topology.ancestor(pu, level)];
    return count;
}

// Shares of `quota` in proportion to `caps` (largest remainder; ties to the first).
std::vector<std::size_t> proportional(std::size_t quota, const std::vector<std::size_t>& caps) {
    const std::size_t total = std::accumulate(caps.begin(), caps.end(), std::size_t{0});
    std::vector<std::size_t> share(caps.size(), 0);
    if (total == 0) return share;
    std::vector<std::size_t> order(caps.size());
    std::size_t given = 0;
    for (std::size_t k = 0; k < caps.size(); ++k) {
        share[k] = quota * caps[k] / total;
        given += share[k];
        order[k] = k;
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return quota * caps[a] % total > quota * caps[b] % total;
    });
    for (std::size_t k = 0; given < quota && k < order.size(); ++k, ++given) ++share[order[k]];
    return share;
}

// Chooses `quota` of the candidate PUs below a node: in proportion where the next level is a
// spread level, in logical order (block) otherwise.
void pick(const Topology& topology, const std::vector<std::vector<std::size_t>>& count,
          const std::vector<bool>& spread, std::size_t level, std::uint32_t node, std::size_t quota,
          std::vector<PuId>& out) {
    if (quota == 0) return;
    if (level + 1 == topology.level_count()) {
        out.push_back(node);
        return;
    }
    const auto children = topology.children(level, node);
    std::vector<std::size_t> caps;
    for (std::uint32_t child : children) caps.push_back(count[level + 1][child]);
    std::vector<std::size_t> share(caps.size(), 0);
    if (spread[level + 1]) {
        share = proportional(quota, caps);
    } else {
        for (std::size_t k = 0, left = quota; k < caps.size(); ++k) {
            share[k] = std::min(left, caps[k]);
            left -= share[k];
        }
    }
    for (std::size_t k = 0; k < children.size(); ++k)
        pick(topology, count, spread, level + 1, children[k], share[k], out);
}

// The k-th PU (in logical order) of every core that has more than k: SMT layer k.
std::vector<std::vector<PuId>> smt_layers(const Topology& topology) {
    const std::vector<std::uint32_t> core = core_of_pus(topology);
    std::vector<std::size_t> seen(core_count(topology), 0);
    std::vector<std::vector<PuId>> layers;
    for (PuId pu = 0; pu < topology.pu_count(); ++pu) {
        const std::size_t k = seen[core[pu]]++;
        if (layers.size() <= k) layers.resize(k + 1);
        layers[k].push_back(pu);
    }
    return layers;
}

std::string share_text(const Topology& topology, const std::vector<PuId>& pus) {
    if (topology.level_count() < 3 || core_level(topology) <= 1) return "";
    std::vector<std::size_t> per(topology.node_count(1), 0);
    for (PuId pu : pus) ++per[topology.ancestor(pu, 1)];
    std::string out;
    for (std::size_t n : per) out += (out.empty() ? "" : "+") + std::to_string(n);
    return out + " over " + std::to_string(per.size()) + " " +
           std::string(to_string(topology.level_kind(1))) + "s";
}

}  // namespace

std::string_view to_string(SmtRule rule) noexcept {
    return rule == SmtRule::kAvoid ? "avoid" : "allow";
}

std::string_view to_string(SpreadRule rule) noexcept {
    return rule == SpreadRule::kBalanced ? "balanced" : "pack";
}

SmtRule parse_smt_rule(std::string_view word) {
    if (word == "avoid") return SmtRule::kAvoid;
    if (word == "allow") return SmtRule::kAllow;
    throw Error("smt rule '" + std::string(word) + "'", "unknown (expected avoid or allow)");
}

SpreadRule parse_spread_rule(std::string_view word) {
    if (word == "balanced") return SpreadRule::kBalanced;
    if (word == "pack") return SpreadRule::kPack;
    throw Error("spread rule '" + std::string(word) + "'", "unknown (expected balanced or pack)");
}

std::string to_string(const PlacementRules& rules) {
    return "smt=" + std::string(to_string(rules.smt)) +
           " spread=" + std::string(to_string(rules.spread));
}

std::vector<std::uint32_t> core_of_pus(const Topology& topology) {
    const std::size_t level = core_level(topology);
    std::vector<std::uint32_t> core(topology.pu_count());
    for (PuId pu = 0; pu < topology.pu_count(); ++pu) core[pu] = topology.ancestor(pu, level);
    return core;
}

std::size_t core_count(const Topology& topology) {
    return topology.node_count(core_level(topology));
}

Resources choose_resources(const Topology& topology, std::size_t tasks, PlacementRules rules) {
    Resources r;
    const std::size_t p = topology.pu_count(), cores = core_count(topology);
    const bool balanced = rules.spread == SpreadRule::kBalanced;
    if (tasks == 0 || tasks >= p) {
        r.rule = tasks > p ? "over-subscribed: " + std::to_string(tasks) + " tasks on " +
                                 std::to_string(p) + " PUs, every PU busy"
                           : "every PU busy";
        return r;
    }
    if (rules.smt == SmtRule::kAllow && !balanced) {
        r.rule = "smt=allow spread=pack: communication alone chooses the PUs";
        return r;
    }
    const std::vector<bool> spread =
        balanced ? spread_levels(topology) : std::vector<bool>(topology.level_count(), false);
    std::vector<bool> candidate(p, false);
    std::size_t quota = tasks;
    if (rules.smt == SmtRule::kAllow) {
        candidate.assign(p, true);
        r.rule = "smt=allow: SMT siblings shared";
    } else {
        const auto layers = smt_layers(topology);
        std::size_t k = 0;
        while (quota >= layers[k].size()) {  // whole layers: every core's k-th PU
            r.pus.insert(r.pus.end(), layers[k].begin(), layers[k].end());
            quota -= layers[k].size();
            ++k;
        }
        for (PuId pu : layers[k]) candidate[pu] = true;
        r.rule = tasks <= cores ? "smt=avoid: one task per core (" + std::to_string(tasks) +
                                      " of " + std::to_string(cores) + " cores)"
                                : "smt=avoid: every core busy, " + std::to_string(quota) +
                                      " with " + std::to_string(k + 1) + " tasks";
        if (!balanced && tasks <= cores) {
            r.kind = Resources::Kind::kEligible;
            r.pus = layers[0];
            if (r.pus.size() == p) r.kind = Resources::Kind::kWhole, r.pus.clear();
            r.rule += "; spread=pack: communication chooses the cores";
            return r;
        }
    }
    pick(topology, counts_below(topology, candidate), spread, 0, 0, quota, r.pus);
    std::sort(r.pus.begin(), r.pus.end());
    r.kind = Resources::Kind::kSlots;
    const std::string shares = share_text(topology, r.pus);
    r.rule += balanced ? "; spread=balanced" + (shares.empty() ? "" : ": " + shares)
                       : "; spread=pack: cores in order";
    return r;
}

Placement blind_placement(const Topology& topology, const Resources& resources, std::size_t tasks) {
    const std::size_t p = topology.pu_count();
    std::vector<PuId> pus(tasks);
    if (resources.kind == Resources::Kind::kWhole) {
        for (std::size_t t = 0; t < tasks; ++t)
            pus[t] = static_cast<PuId>(tasks <= p ? t : t * p / tasks);
        return Placement(std::move(pus));
    }
    if (resources.kind == Resources::Kind::kEligible) {
        for (std::size_t t = 0; t < tasks; ++t) pus[t] = resources.pus.at(t);
        return Placement(std::move(pus));
    }
    // Round-robin over the top-level nodes, in logical order within each.
    std::vector<std::vector<PuId>> groups(
        topology.node_count(std::min<std::size_t>(1, topology.level_count() - 1)));
    for (PuId pu : resources.pus)
        groups[topology.level_count() > 1 ? topology.ancestor(pu, 1) : 0].push_back(pu);
    std::vector<std::size_t> next(groups.size(), 0);
    for (std::size_t t = 0, g = 0; t < tasks; g = (g + 1) % groups.size()) {
        if (next[g] < groups[g].size()) pus[t++] = groups[g][next[g]++];
    }
    return Placement(std::move(pus));
}

std::string rule_violation(const Topology& topology, const Placement& placement,
                           PlacementRules rules) {
    const std::size_t p = topology.pu_count(), n = placement.size();
    if (n > p) return "";
    const std::vector<std::size_t> load = placement.loads(p);
    if (rules.smt == SmtRule::kAvoid) {
        const std::vector<std::uint32_t> core = core_of_pus(topology);
        std::vector<std::size_t> busy(core_count(topology), 0), cap(busy.size(), 0);
        for (PuId pu = 0; pu < p; ++pu) busy[core[pu]] += load[pu], ++cap[core[pu]];
        for (std::size_t a = 0; a < busy.size(); ++a)
            for (std::size_t b = 0; b < busy.size(); ++b)
                if (busy[a] >= busy[b] + 2 && busy[b] < cap[b])
                    return "a core holds " + std::to_string(busy[a]) +
                           " tasks while another holds " + std::to_string(busy[b]) + " (smt=avoid)";
    }
    const bool avoid = rules.smt == SmtRule::kAvoid;
    if (rules.spread == SpreadRule::kBalanced && (!avoid || n <= core_count(topology))) {
        const std::vector<bool> spread = spread_levels(topology);
        const std::vector<std::uint32_t> core = core_of_pus(topology);
        // Cores (PUs under allow) and tasks below every node.
        std::vector<std::vector<std::size_t>> cores(topology.level_count()), tasks = cores;
        std::vector<bool> counted(core_count(topology), false);
        for (std::size_t level = 0; level < topology.level_count(); ++level)
            cores[level].assign(topology.node_count(level), 0), tasks[level] = cores[level];
        for (PuId pu = 0; pu < p; ++pu) {
            const bool first = !counted[core[pu]];
            counted[core[pu]] = true;
            for (std::size_t level = 0; level < topology.level_count(); ++level) {
                cores[level][topology.ancestor(pu, level)] += avoid ? first : 1;
                tasks[level][topology.ancestor(pu, level)] += load[pu];
            }
        }
        for (std::size_t level = 1; level < topology.level_count(); ++level) {
            if (!spread[level]) continue;
            for (PuId pu = 0; pu < p; ++pu) {
                const std::uint32_t node = topology.ancestor(pu, level),
                                    up = topology.ancestor(pu, level - 1);
                const double share = double(tasks[level - 1][up]) * double(cores[level][node]) /
                                     double(cores[level - 1][up]);
                if (std::abs(double(tasks[level][node]) - share) >= 1)
                    return std::string(to_string(topology.level_kind(level))) + " " +
                           std::to_string(node) + " holds " + std::to_string(tasks[level][node]) +
                           " tasks where its share is " + std::to_string(share) +
                           " (spread=balanced)";
            }
        }
    }
    return "";
}

}  // namespace cdsm
