// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>

#include "cdsm/mapper.hpp"

namespace cdsm {

/// The optimal balanced placement, found by branch and bound with the symmetries of the
/// hierarchy removed (empty isomorphic subtrees are tried once). Exponential: meant for tests
/// and benchmarks with at most kMaxTasks tasks; throws Error for more.
class ExhaustiveMapper final : public Mapper {
  public:
    static constexpr std::size_t kMaxTasks = 10;
    static constexpr std::string_view kName = "exhaustive";
    std::string_view name() const noexcept override { return kName; }

  protected:
    Placement place(const MappingProblem& problem) const override;
};

}  // namespace cdsm
