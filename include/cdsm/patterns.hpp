// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cdsm/comm_matrix.hpp"

namespace cdsm::patterns {

/// Synthetic communication patterns of n tasks, as found in parallel programs: for tests,
/// benchmarks and trying the mapper offline. Strong edges weigh 100.

/// Task i with i+1 (a chain, no wrap-around).
CommMatrix stencil_1d(std::size_t n);
/// The tasks on the most square grid that n allows, each with its 4 neighbours.
CommMatrix stencil_2d(std::size_t n);
/// The tasks on the most cubic grid that n allows, each with its 6 neighbours.
CommMatrix stencil_3d(std::size_t n);
/// Task i with (i+1) mod n.
CommMatrix ring(std::size_t n);
/// A random perfect matching: every task talks to one random partner.
CommMatrix random_pairs(std::size_t n, std::uint64_t seed = 1);
/// Groups of `size` tasks, all-to-all inside each group; the members of a group are
/// interleaved (task i is in group i mod (n/size)), as when threads are created round-robin.
CommMatrix clusters(std::size_t n, std::size_t size = 4);
/// n/stages independent pipelines of `stages` stages; stage s of pipeline k is task
/// k + s*(n/stages) (each stage is a thread pool) and talks to stage s+1 of the same pipeline.
CommMatrix pipeline(std::size_t n, std::size_t stages = 4);
/// Every pair equally.
CommMatrix all_to_all(std::size_t n);
/// Every task picks `degree` random partners with random weights 1..100.
CommMatrix random_sparse(std::size_t n, std::size_t degree = 4, std::uint64_t seed = 1);

/// clusters(n, size) on top of background traffic between every pair (random, 1..10): a dense
/// matrix whose structure is in its strongest edges.
CommMatrix dense_clusters(std::size_t n, std::size_t size = 8, std::uint64_t seed = 1);
/// The tasks on the grid of stencil_2d, every pair communicating 100 / d^2 (at least 1) at
/// Euclidean grid distance d: dense, with locality at every scale (long-range neighbours carry
/// most of a task's traffic when the grid is large).
CommMatrix decaying_stencil_2d(std::size_t n);

/// A named pattern of n tasks, for suites.
struct Named {
    std::string name;
    CommMatrix matrix;
};
/// All the patterns above with their defaults: stencil-1d, stencil-2d, stencil-3d, ring,
/// random-pairs, clusters, pipeline, all-to-all, random-sparse, dense-clusters,
/// decaying-stencil-2d.
std::vector<Named> suite(std::size_t n);

}  // namespace cdsm::patterns
