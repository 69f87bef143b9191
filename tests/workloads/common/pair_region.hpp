// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

#include "memory.hpp"
#include "system.hpp"

namespace cdsm::workloads {

/// The memory through which one pair communicates: a control page, then data pages. Both partners
/// sweep the same data words with atomic additions, each adding its own increment, so both read
/// and write the same 256-byte blocks; at the end the content proves that nothing was lost.
/// The region is a view: its memory (whole pages, shared by exactly the two partners) is owned by
/// the caller — a private mapping for threads, a shared-memory segment for processes.
class PairRegion {
  public:
    /// Bytes needed for `data_pages` pages of data plus the control page.
    static std::size_t bytes(std::size_t data_pages);

    /// `memory`: page-aligned, bytes(data_pages) long, zero-filled before either partner starts.
    explicit PairRegion(std::span<std::byte> memory);

    /// One pass of partner `side` (0 or 1) over the data, from the first word to the last: both
    /// partners enter every page at its first block, so the page's first touch and the first
    /// access after it is re-armed by either of them fall in the same 256-byte block.
    void sweep(int side) const;

    /// Sweeps until `stop` says done, sleeping `pause` after each pass; returns the number of
    /// passes.
    std::uint64_t sweep_until(int side, const StopRule& stop,
                              std::chrono::microseconds pause = {}) const;

    /// Records that `side` made `passes` passes in all and will not touch the data again.
    void publish(int side, std::uint64_t passes) const;

    /// Waits until both partners published, then checks every data word against the passes.
    /// Returns the number of wrong words (0 when the data is intact).
    std::size_t verify() const;

  private:
    struct Control {
        std::uint64_t passes[2];
        std::uint32_t published;
    };
    Control& control() const { return *reinterpret_cast<Control*>(memory_.data()); }
    std::span<std::uint64_t> data() const;

    std::span<std::byte> memory_;
};

/// What one task of a pairs workload reports, on a page of its own.
struct PairTaskResult {
    pid_t tid;
    std::uint64_t passes;     ///< passes over its pair regions, all phases
    std::size_t wrong_words;  ///< wrong words found in the regions it verified
};

/// The results of all tasks, summed up.
struct PairTotals {
    std::uint64_t min_passes = UINT64_MAX;
    std::uint64_t max_passes = 0;
    std::size_t wrong_words = 0;

    PairTotals(const PerTaskPages<PairTaskResult>& results, int tasks);
    /// "passes per TASK_NOUN A..B, wrong words W"
    std::string describe(const char* task_noun) const;
};

}  // namespace cdsm::workloads
