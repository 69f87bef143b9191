// SPDX-License-Identifier: GPL-2.0
#include "pairing.hpp"

#include <numeric>
#include <string>

#include "cli.hpp"

namespace cdsm::workloads {

std::uint64_t SplitMix64::next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::uint64_t SplitMix64::below(std::uint64_t bound) {
    return next() % bound;
}

bool are_neighbours(int i, int j, int n) {
    const int d = (i - j + n) % n;
    return d == 1 || d == n - 1 || (i ^ 1) == j;
}

namespace {

// Depth-first search: pair the lowest unpaired task with each allowed candidate in random order.
// Random candidate order makes the first try succeed almost always; the backtracking only
// matters for small n, where it also proves that no pairing exists.
bool complete(std::vector<int>& partner, std::span<const int> avoid, SplitMix64& rng) {
    const int n = static_cast<int>(partner.size());
    int i = 0;
    while (i < n && partner[i] >= 0) ++i;
    if (i == n) return true;
    std::vector<int> candidates;
    for (int j = i + 1; j < n; ++j) {
        const bool reused = !avoid.empty() && avoid[i] == j;
        if (partner[j] < 0 && !are_neighbours(i, j, n) && !reused) candidates.push_back(j);
    }
    for (std::size_t k = candidates.size(); k > 1; --k) {
        std::swap(candidates[k - 1], candidates[rng.below(k)]);
    }
    for (const int j : candidates) {
        partner[i] = j;
        partner[j] = i;
        if (complete(partner, avoid, rng)) return true;
        partner[i] = partner[j] = -1;
    }
    return false;
}

}  // namespace

namespace {

void check_size(int n) {
    if (n < 4 || n % 2 != 0) {
        throw UsageError("a non-neighbour pairing needs an even number of tasks >= 4, not " +
                         std::to_string(n));
    }
}

}  // namespace

std::vector<int> make_pairing(int n, std::uint64_t seed) {
    check_size(n);
    std::vector<int> partner(n, -1);
    SplitMix64 rng(seed);
    complete(partner, {}, rng);  // succeeds: i with i + n/2 is one such pairing
    return partner;
}

std::pair<std::vector<int>, std::vector<int>> make_disjoint_pairings(int n, std::uint64_t seed) {
    check_size(n);
    SplitMix64 rng(seed);
    // Some first pairings leave no disjoint second one (a third of them at n = 6): draw again.
    for (int attempt = 0; attempt < 64; ++attempt) {
        std::vector<int> first(n, -1), second(n, -1);
        complete(first, {}, rng);
        if (complete(second, first, rng)) return {first, second};
    }
    throw UsageError("no two disjoint non-neighbour pairings exist for " + std::to_string(n) +
                     " tasks (use at least 6)");
}

PartnerGraph pairing_graph(std::span<const int> partner) {
    PartnerGraph graph(partner.size());
    for (std::size_t i = 0; i < partner.size(); ++i) graph[i] = {partner[i]};
    return graph;
}

}  // namespace cdsm::workloads
