// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace cdsm::workloads {

/// Who communicates with whom, by task index (0..n-1): partners[i] lists i's partners.
using PartnerGraph = std::vector<std::vector<int>>;

/// A small deterministic generator (splitmix64): the same seed gives the same pairing on every
/// machine and standard library, which std::shuffle does not promise.
class SplitMix64 {
  public:
    explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next();
    /// Uniform in [0, bound), bound > 0.
    std::uint64_t below(std::uint64_t bound);

  private:
    std::uint64_t state_;
};

/// True when i and j sit next to each other in a compact placement: i±1 (cyclically) or i^1.
bool are_neighbours(int i, int j, int n);

/// A pairing of 0..n-1: an involution without fixed points (partner[partner[i]] == i) in which no
/// task is paired with a neighbour, chosen by `seed`. Throws UsageError unless n is even and >= 4.
std::vector<int> make_pairing(int n, std::uint64_t seed);

/// Two such pairings that have no pair in common, chosen by `seed`: the phases of a workload that
/// switches. Throws UsageError when none exist (n odd or n < 6).
std::pair<std::vector<int>, std::vector<int>> make_disjoint_pairings(int n, std::uint64_t seed);

/// The partner graph of a pairing.
PartnerGraph pairing_graph(std::span<const int> partner);

}  // namespace cdsm::workloads
