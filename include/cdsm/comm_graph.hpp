// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cdsm/comm_matrix.hpp"

namespace cdsm {

/// When to drop weak edges before mapping. A dense N x N matrix makes the mapper's graph
/// quadratic; keeping each task's strongest partners keeps the structure that mapping can
/// exploit (weak edges are the ones no placement can serve anyway).
struct PruneOptions {
    /// Matrices with fewer tasks are kept whole.
    std::size_t min_tasks = 128;
    /// Each task keeps the edges to its this-many strongest partners (an edge survives if
    /// either end keeps it).
    std::size_t keep_per_task = 8;
};

/// A communication matrix as a sparse undirected graph in compressed-row form: the neighbours
/// of task i are neighbours()[offsets()[i] .. offsets()[i+1]), each edge present in both rows.
class CommGraph {
  public:
    CommGraph(const CommMatrix& matrix, PruneOptions prune = {});

    std::size_t vertex_count() const noexcept { return offsets_.size() - 1; }
    std::span<const std::size_t> offsets() const noexcept { return offsets_; }
    std::span<const std::uint32_t> neighbours() const noexcept { return neighbours_; }
    std::span<const CommMatrix::Value> weights() const noexcept { return weights_; }
    /// Number of undirected edges.
    std::size_t edge_count() const noexcept { return neighbours_.size() / 2; }
    /// Fraction of the matrix's total communication that the kept edges carry.
    double kept_fraction() const noexcept { return kept_fraction_; }
    /// Whether pruning dropped any edge.
    bool pruned() const noexcept { return pruned_; }

  private:
    std::vector<std::size_t> offsets_;
    std::vector<std::uint32_t> neighbours_;
    std::vector<CommMatrix::Value> weights_;
    double kept_fraction_ = 1.0;
    bool pruned_ = false;
};

}  // namespace cdsm
