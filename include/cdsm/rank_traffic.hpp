// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cdsm/comm_matrix.hpp"

namespace cdsm {

/// What one rank sent to another: bytes and messages, sender side.
struct Flow {
    std::uint32_t src;
    std::uint32_t dst;
    std::uint64_t bytes;
    std::uint64_t messages;

    friend bool operator==(const Flow&, const Flow&) = default;
};

/// A job's traffic between its ranks, by direction: the flows from each rank to each other one,
/// sorted by source then destination, one per pair and direction, none from a rank to itself.
/// Sparse: a 2-D stencil of 4,096 ranks takes 16 k flows (400 kB), where dense matrices of bytes
/// and messages would take 256 MB.
class RankTraffic {
  public:
    explicit RankTraffic(std::size_t ranks = 0) : ranks_(ranks) {}

    /// Flows in any order and with repeats (they add up); a rank's flows to itself are dropped.
    /// Throws Error if a rank is out of range.
    static RankTraffic from_flows(std::size_t ranks, std::vector<Flow> flows);
    /// A symmetric matrix of bytes (cdsm-matrix files): each pair's value is split between its
    /// two directions (the lower rank sends the odd byte), as are its messages when `messages`
    /// (of the same size) is given; without it every flow has 0 messages. Throws Error if the
    /// sizes differ.
    static RankTraffic from_matrices(const CommMatrix& bytes, const CommMatrix* messages = nullptr);

    std::size_t ranks() const noexcept { return ranks_; }
    std::span<const Flow> flows() const noexcept { return flows_; }
    std::uint64_t total_bytes() const noexcept;
    std::uint64_t total_messages() const noexcept;
    /// The pair matrices (both directions added), as a CommMatrix for the node-level tools.
    CommMatrix byte_matrix() const;
    CommMatrix message_matrix() const;

  private:
    std::size_t ranks_;
    std::vector<Flow> flows_;
};

}  // namespace cdsm
