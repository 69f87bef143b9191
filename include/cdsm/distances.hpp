// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cdsm/topology.hpp"

namespace cdsm {

/// The cost of communicating between two PUs whose lowest common ancestor is of a given kind.
/// Two tasks on the same PU cost 0.
///
/// The defaults are relative latencies of small transfers, which is how shared-page
/// communication behaves (Bienz, Gropp, Olson, EuroMPI 2018, measured 64-byte messages at
/// same socket : other socket = 1 : 2.05). Inside a package the order follows the cache that
/// carries the data: SMT siblings share L1/L2 (1), cores of one L2 cluster (2), of one L3 or die
/// (3), of one NUMA node inside a package (4), anywhere in the package (5); another package costs
/// about twice a package-local transfer (10).
struct LevelCosts {
    std::uint32_t core = 1;
    std::uint32_t l2 = 2;
    std::uint32_t l3 = 3;
    std::uint32_t numa = 4;
    std::uint32_t package = 5;
    std::uint32_t machine = 10;

    /// The cost of a common ancestor of this kind (0 for kPu: the same PU).
    std::uint32_t cost(LevelKind kind) const noexcept;
    /// Throws Error unless every cost is at least 1 and they never fall from core to machine.
    void validate() const;
};

/// The distance between every pair of PUs of one topology: the cost of the kind of their lowest
/// common ancestor. The mapper and the cost function both use this table.
class Distances {
  public:
    explicit Distances(const Topology& topology, LevelCosts costs = {});

    std::uint32_t operator()(PuId a, PuId b) const noexcept {
        return level_costs_[common_[a * pu_count_ + b]];
    }
    /// The cost of a common ancestor at a level of the topology.
    std::uint32_t level_cost(std::size_t level) const { return level_costs_.at(level); }
    std::size_t pu_count() const noexcept { return pu_count_; }
    const LevelCosts& costs() const noexcept { return costs_; }
    /// The largest distance between two PUs.
    std::uint32_t max() const noexcept { return max_; }

  private:
    LevelCosts costs_;
    std::size_t pu_count_;
    std::vector<std::uint32_t> level_costs_;
    // The common level of every pair of PUs (one byte each: 16 MB for 4096 PUs, where a table
    // of distances took 64 MB).
    std::vector<std::uint8_t> common_;
    std::uint32_t max_ = 0;
};

}  // namespace cdsm
