// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "cdsm/comm_matrix.hpp"
#include "cdsm/distances.hpp"
#include "cdsm/placement.hpp"
#include "cdsm/topology.hpp"

namespace cdsm {

/// What a mapper works on. The references must outlive the call.
struct MappingProblem {
    const CommMatrix& matrix;
    const Topology& topology;
    const Distances& distances;          ///< built from `topology`
    const Placement* current = nullptr;  ///< where the tasks run now, if known
};

/// Computes a placement of the matrix's tasks on the topology's PUs. Every mapper returns a
/// balanced placement (Placement::is_balanced) and the same placement for the same problem.
class Mapper {
  public:
    virtual ~Mapper() = default;
    /// A short name: "scotch", "compact", "scatter", "random", "current", "exhaustive".
    virtual std::string_view name() const noexcept = 0;
    /// Throws Error if the problem is inconsistent (see check_problem).
    virtual Placement map(const MappingProblem& problem) const = 0;
};

/// Throws Error if the distance table was not built for the topology, or a current placement
/// does not have one valid PU per task.
void check_problem(const MappingProblem& problem);

/// The mappers a user chooses from, the default first: "scotch", "compact", "scatter", "random"
/// (each class's kName). They are also the baselines a placement is compared with. make_mapper
/// knows two more: "current" (needs a current placement) and "exhaustive" (exponential).
std::span<const std::string_view> mapper_names() noexcept;

/// A mapper by its name() with default options; `seed` is used by "random" only. Throws Error
/// naming the unknown name.
std::unique_ptr<Mapper> make_mapper(std::string_view name, std::uint64_t seed = 1);

}  // namespace cdsm
