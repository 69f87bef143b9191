// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "cdsm/topology.hpp"

namespace cdsm {

/// Where each task runs: task i (the i-th row of the communication matrix) on PU pus()[i] of a
/// Topology. Several tasks may share a PU when there are more tasks than PUs.
class Placement {
  public:
    Placement() = default;
    explicit Placement(std::vector<PuId> pus) : pus_(std::move(pus)) {}

    std::size_t size() const noexcept { return pus_.size(); }
    PuId operator[](std::size_t task) const { return pus_.at(task); }
    std::span<const PuId> pus() const noexcept { return pus_; }

    /// Number of tasks on each of pu_count PUs.
    std::vector<std::size_t> loads(std::size_t pu_count) const;
    /// True when every PU holds floor(N/P) or ceil(N/P) of the N tasks: one task per PU at most
    /// when under-subscribed, an even share when over-subscribed.
    bool is_balanced(std::size_t pu_count) const;
    /// True when a PU holds several tasks while another PU of the pu_count holds none: the
    /// stacked tasks wait for each other, whatever their distance says (an over-subscribed
    /// placement with every PU busy is not stacked, even if uneven).
    bool is_stacked(std::size_t pu_count) const;
    /// Number of tasks whose PU differs from `before` (which must have as many tasks).
    std::size_t moves_from(const Placement& before) const;
    /// Throws Error naming `what` unless every PU exists in a topology of pu_count PUs.
    void check(std::size_t pu_count, std::string_view what) const;

    friend bool operator==(const Placement&, const Placement&) = default;

  private:
    std::vector<PuId> pus_;
};

}  // namespace cdsm
