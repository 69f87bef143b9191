// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cdsm/mapper.hpp"

namespace cdsm {

struct RemapOptions {
    /// The new placement is taken only if it costs less than the current one and at most
    /// (1 - min_gain) times as much (so even with min_gain 0 an equally good one is not taken):
    /// migrations are not free, and a mapper can return something worse (Scotch on rings of
    /// 256+ tasks cost up to 1.5 times the identity placement).
    double min_gain = 0.05;
    /// The gain must also exceed this many standard deviations of its counting noise (0: not
    /// asked). A matrix cell counts events, which arrive about as a Poisson process, so the
    /// difference of two placements' costs, sum M_ij (d_ij - d'_ij), varies by about
    /// sum M_ij (d_ij - d'_ij)^2 between two samples of the same behaviour: with a few hundred
    /// events (a young application, a freshly aged matrix) a 10 % gain is often noise, and
    /// acting on it migrates tasks back and forth.
    double min_gain_sigma = 0;
    /// The resources the placement may use (MappingProblem::rules). A current placement that
    /// breaks them (rule_violation) is replaced like a stacked one, whatever the margins.
    PlacementRules rules{};
};

/// The standard deviation of the counting noise of mapping_cost(a) - mapping_cost(b) (see
/// RemapOptions::min_gain_sigma).
double cost_difference_noise(const CommMatrix& matrix, const Placement& a, const Placement& b,
                             const Distances& distances);
/// The same where `distance_change(i, j)` is how much farther tasks i and j are in one placement
/// than in the other (for placements that are not on one Topology's PUs: cdsmd's, on OS CPUs).
double cost_difference_noise(
    const CommMatrix& matrix,
    const std::function<double(std::size_t, std::size_t)>& distance_change);

/// Whether leaving a placement that costs `current` for one that costs `proposed` is worth a
/// migration by the options' margins: strictly cheaper, by min_gain, and (when min_gain_sigma
/// asks) by more than min_gain_sigma times `noise` (cost_difference_noise of the two).
bool worth_moving(double current, double proposed, double noise, const RemapOptions& options);

/// What Remapper decided.
struct RemapDecision {
    Placement placement;   ///< what to apply: the current placement when nothing changed
    bool changed = false;  ///< placement differs from the current one
    double current_cost = 0;
    double proposed_cost = 0;  ///< of the proposal: the mapper's (relabelled), or the spread one
    double noise = 0;          ///< cost_difference_noise() of the two, when min_gain_sigma asks
    std::size_t moved = 0;     ///< tasks whose PU changes
    bool spread = false;       ///< the current placement was stacked: the proposal spreads it
    /// Why the current placement broke the rules (then replaced), or empty.
    std::string broken_rule;
    /// Which rule shaped the mapper's placement (Resources::rule).
    std::string rule;
};

/// Decides whether to migrate: maps, relabels the result to move as few tasks as possible, and
/// keeps the current placement unless the new one is better by the margin. A current placement
/// with tasks stacked on a PU while another is free (Placement::is_stacked) is always replaced:
/// on one PU they cost little but wait for each other. It is replaced by the cheaper of two
/// unstacked placements, the mapper's and the current one with only the stacked tasks moved
/// (each to the free PU where it costs least): spreading may raise the cost, but never more
/// than it must. (Over-subscribed, a PU with one task more than another is no reason to move
/// without a gain.)
class Remapper {
  public:
    explicit Remapper(std::unique_ptr<Mapper> mapper, RemapOptions options = {});
    RemapDecision decide(const CommMatrix& matrix, const Topology& topology,
                         const Distances& distances, const Placement& current) const;
    /// The same, with the caller saying whether the current placement has tasks waiting for
    /// each other (e.g. only where their masks force them onto shared PUs: tasks free to run on
    /// several PUs are spread by the scheduler, whatever PU each last ran on).
    RemapDecision decide(const CommMatrix& matrix, const Topology& topology,
                         const Distances& distances, const Placement& current, bool stacked) const;
    /// The same, with `placed` (empty, or a flag per task) naming the tasks placed before (cdsmd
    /// bound them there). Stacked tasks are then spread by moving only the others, e.g. threads
    /// created after their process was placed, which inherit its thread's one-PU mask, unless
    /// an unstacked placement that moves placed tasks too is cheaper by min_gain: each such
    /// move is a task's second migration. Likewise for a placement that breaks the rules
    /// (replaced whatever min_gain says): only the tasks not placed before move, each to an
    /// idle core, when that keeps the rules and costs no more than min_gain above the mapper's.
    RemapDecision decide(const CommMatrix& matrix, const Topology& topology,
                         const Distances& distances, const Placement& current, bool stacked,
                         const std::vector<bool>& placed) const;

  private:
    std::unique_ptr<Mapper> mapper_;
    RemapOptions options_;
};

}  // namespace cdsm
