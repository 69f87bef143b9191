// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>

#include "cdsm/mapper.hpp"

namespace cdsm {

/// Baselines that ignore the communication matrix, to compare mappings against.

/// Fills PUs in logical order (SMT siblings, then cores, then packages): task i on PU i. With
/// more tasks than PUs, consecutive tasks share a PU (blocks of N/P tasks).
class CompactMapper final : public Mapper {
  public:
    static constexpr std::string_view kName = "compact";
    std::string_view name() const noexcept override { return kName; }
    Placement map(const MappingProblem& problem) const override;
};

/// Spreads consecutive tasks as far apart as the hierarchy allows: one per package first, then
/// one per L3, per core, and only then SMT siblings. With more tasks than PUs it wraps around.
class ScatterMapper final : public Mapper {
  public:
    static constexpr std::string_view kName = "scatter";
    std::string_view name() const noexcept override { return kName; }
    Placement map(const MappingProblem& problem) const override;
};

/// A random balanced placement, the same for the same seed.
class RandomMapper final : public Mapper {
  public:
    explicit RandomMapper(std::uint64_t seed = 1) : seed_(seed) {}
    static constexpr std::string_view kName = "random";
    std::string_view name() const noexcept override { return kName; }
    Placement map(const MappingProblem& problem) const override;

  private:
    std::uint64_t seed_;
};

/// Keeps the current placement; throws Error if the problem has none.
class CurrentMapper final : public Mapper {
  public:
    static constexpr std::string_view kName = "current";
    std::string_view name() const noexcept override { return kName; }
    Placement map(const MappingProblem& problem) const override;
};

}  // namespace cdsm
