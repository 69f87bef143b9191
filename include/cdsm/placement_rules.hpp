// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cdsm/placement.hpp"
#include "cdsm/topology.hpp"

namespace cdsm {

/// Whether busy tasks may share a core's SMT siblings while another core of the allowed set is
/// idle. Two busy tasks on one core share its execution units (together roughly 1.1-1.3 times
/// one task's throughput, where a second core gives 2), so `avoid` gives each task a core of its
/// own while there are no more tasks than cores, and uses every core before any core takes a
/// second task. `allow` lets communication alone decide (the CDSM paper's behaviour).
enum class SmtRule : std::uint8_t { kAvoid, kAllow };

/// How tasks are spread over the packages and NUMA nodes of the allowed set. `balanced` gives
/// each package (and each NUMA node inside it) a share of the tasks proportional to its usable
/// cores, within one task, as `mpirun --map-by socket` and Slurm's `block:cyclic` do, so that a
/// job keeps every package's memory bandwidth and last-level cache; inside a package, cores are
/// taken in order (block). `pack` lets the tasks gather on as few packages as communication
/// wants.
enum class SpreadRule : std::uint8_t { kBalanced, kPack };

/// The rules every communication-aware mapper follows (MappingProblem::rules). The defaults are
/// what HPC centres run: one busy task per core, spread over the packages. `allow` + `pack` is
/// the CDSM paper's behaviour, for communication-bound codes whose working sets fit a core's
/// caches.
struct PlacementRules {
    SmtRule smt = SmtRule::kAvoid;
    SpreadRule spread = SpreadRule::kBalanced;
    friend bool operator==(const PlacementRules&, const PlacementRules&) = default;
};

/// "avoid" / "allow", "balanced" / "pack".
std::string_view to_string(SmtRule rule) noexcept;
std::string_view to_string(SpreadRule rule) noexcept;
/// The rule named so; throws Error naming the word and the choices otherwise.
SmtRule parse_smt_rule(std::string_view word);
SpreadRule parse_spread_rule(std::string_view word);
/// "smt=avoid spread=balanced".
std::string to_string(const PlacementRules& rules);

/// The processing resources a placement of some busy tasks may use under the rules, chosen
/// before communication is looked at.
struct Resources {
    enum class Kind : std::uint8_t {
        kWhole,     ///< every PU (over-subscribed or exactly full, or allow + pack): the mapper
                    ///< chooses freely, as many tasks per PU as is balanced
        kEligible,  ///< `pus` (one per core, avoid + pack): the mapper chooses which to use
        kSlots,     ///< exactly `pus`, one task each: the mapper chooses which task goes where
    };
    Kind kind = Kind::kWhole;
    /// PUs in logical order (empty for kWhole).
    std::vector<PuId> pus;
    /// Which rule shaped the resources, in words, e.g. "smt=avoid: one task per core (4 of 16
    /// cores); spread=balanced: 2+2 over 2 Packages".
    std::string rule;
};

/// The core of every PU: an index into the cores of the topology (its Core level, or the PU
/// itself where a core holds one usable PU), in logical order.
std::vector<std::uint32_t> core_of_pus(const Topology& topology);

/// Number of cores with at least one usable PU.
std::size_t core_count(const Topology& topology);

/// Chooses the resources for `tasks` busy tasks. Slots, avoid: while tasks <= cores, one PU (the
/// first) of each chosen core; with more, every core's first PU, then second PUs (then third...)
/// for the rest. balanced: the tasks of a partly used layer are shared among the packages and
/// NUMA nodes in proportion to their PUs of that layer (largest remainder), and in order within.
Resources choose_resources(const Topology& topology, std::size_t tasks, PlacementRules rules);

/// The communication-blind placement of the same resources: tasks round-robin over the packages
/// (the top level of the hierarchy), in logical order within each, one per slot (kSlots); task i
/// on the i-th PU (kEligible, and kWhole when tasks <= PUs); blocks of tasks per PU when
/// over-subscribed.
Placement blind_placement(const Topology& topology, const Resources& resources, std::size_t tasks);

/// Why a placement breaks the rules, or "" if it does not (tasks sharing a PU while another is
/// idle are Placement::is_stacked's business, not a rule's): under avoid, two tasks share a core
/// while a core of the topology is idle (or, with more tasks than cores, a core holds two more
/// than another); under balanced (and no more tasks than cores when avoid), a package or NUMA
/// node holds a task or more away from its share of its parent's tasks, in proportion to its
/// cores (its PUs under allow).
std::string rule_violation(const Topology& topology, const Placement& placement,
                           PlacementRules rules);

}  // namespace cdsm
