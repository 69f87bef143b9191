// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "cdsm/comm_matrix.hpp"
#include "cdsm/distances.hpp"
#include "cdsm/placement.hpp"
#include "cdsm/placement_rules.hpp"
#include "cdsm/topology.hpp"

namespace cdsm {

/// What a mapper works on. The references must outlive the call.
struct MappingProblem {
    const CommMatrix& matrix;
    const Topology& topology;
    const Distances& distances;          ///< built from `topology`
    const Placement* current = nullptr;  ///< where the tasks run now, if known
    /// The resources the tasks may use (every task is taken as busy); mappers that follow rules
    /// (Mapper::follows_rules) place within them.
    PlacementRules rules{};
};

/// Computes a placement of the matrix's tasks on the topology's PUs. Every mapper returns a
/// balanced placement (Placement::is_balanced) and the same placement for the same problem.
///
/// A mapper that follows the rules (the communication-aware ones and "random") first chooses
/// the resources (choose_resources: which PUs may be used, from the rules and the number of
/// tasks alone), then places the tasks within them: on the topology restricted to those PUs.
/// A communication-aware mapper then keeps the cheaper of its placement and the
/// communication-blind placement of the same resources (blind_placement), so that its cost never
/// exceeds what the same cores give without cdsm. The baselines named after launchers
/// ("map-by-core", "slurm-block-cyclic", ...) and "pack" place by their own recipe.
class Mapper {
  public:
    virtual ~Mapper() = default;
    /// A short name: "scotch", "map-by-core", "pack", "random", "current", "exhaustive", ...
    virtual std::string_view name() const noexcept = 0;
    /// Throws Error if the problem is inconsistent (see check_problem).
    Placement map(const MappingProblem& problem) const;
    /// The same, saying which rule shaped the placement (Resources::rule) in `rule`.
    Placement map(const MappingProblem& problem, std::string& rule) const;
    /// Whether map() applies problem.rules; false for fixed recipes.
    virtual bool follows_rules() const noexcept { return true; }
    /// Whether the mapper looks at communication (then never worse than blind_placement).
    virtual bool communication_aware() const noexcept { return true; }

  protected:
    /// The placement on the problem's whole topology (after the rules restricted it).
    virtual Placement place(const MappingProblem& problem) const = 0;
};

/// Throws Error if the distance table was not built for the topology, or a current placement
/// does not have one valid PU per task.
void check_problem(const MappingProblem& problem);

/// The mappers a user chooses from, the default first: "scotch", then the baselines users get
/// without cdsm ("map-by-core", "map-by-socket", "slurm-block-block", "slurm-block-cyclic",
/// "pack") and "random" (each class's kName). They are also the baselines a placement is compared
/// with. make_mapper knows more: "current" (needs a current placement), "exhaustive"
/// (exponential), "scatter", and "compact" (the old name of "pack").
std::span<const std::string_view> mapper_names() noexcept;

/// A mapper by its name() with default options; `seed` is used by "random" only. Throws Error
/// naming the unknown name.
std::unique_ptr<Mapper> make_mapper(std::string_view name, std::uint64_t seed = 1);

}  // namespace cdsm
