// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <memory>

#include "cdsm/mapper.hpp"

namespace cdsm {

struct RemapOptions {
    /// The new placement is taken only if it costs less than the current one and at most
    /// (1 - min_gain) times as much (so even with min_gain 0 an equally good one is not taken):
    /// migrations are not free, and a mapper can return something worse (Scotch on rings of
    /// 256+ tasks cost up to 1.5 times the identity placement).
    double min_gain = 0.05;
};

/// What Remapper decided.
struct RemapDecision {
    Placement placement;   ///< what to apply: the current placement when nothing changed
    bool changed = false;  ///< placement differs from the current one
    double current_cost = 0;
    double proposed_cost = 0;  ///< of the mapper's (relabelled) proposal
    std::size_t moved = 0;     ///< tasks whose PU changes
};

/// Decides whether to migrate: maps, relabels the result to move as few tasks as possible, and
/// keeps the current placement unless the new one is better by the margin. A current placement
/// with tasks stacked on a PU while another is free (Placement::is_stacked) is always replaced:
/// on one PU they cost little but wait for each other. (Over-subscribed, a PU with one task more
/// than another is no reason to move without a gain.)
class Remapper {
  public:
    explicit Remapper(std::unique_ptr<Mapper> mapper, RemapOptions options = {});
    RemapDecision decide(const CommMatrix& matrix, const Topology& topology,
                         const Distances& distances, const Placement& current) const;

  private:
    std::unique_ptr<Mapper> mapper_;
    RemapOptions options_;
};

}  // namespace cdsm
