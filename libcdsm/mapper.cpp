// SPDX-License-Identifier: GPL-2.0
#include "cdsm/mapper.hpp"

#include <string>

#include "cdsm/baseline_mappers.hpp"
#include "cdsm/cost.hpp"
#include "cdsm/error.hpp"
#include "cdsm/exhaustive_mapper.hpp"
#include "cdsm/scotch_mapper.hpp"

namespace cdsm {

void check_problem(const MappingProblem& problem) {
    if (problem.distances.pu_count() != problem.topology.pu_count())
        throw Error("distance table of " + std::to_string(problem.distances.pu_count()) + " PUs",
                    "was not built for " + problem.topology.source() + " (" +
                        std::to_string(problem.topology.pu_count()) + " PUs)");
    if (problem.current) check_sizes(problem.matrix, *problem.current, problem.distances);
}

std::unique_ptr<Mapper> make_mapper(std::string_view name, std::uint64_t seed) {
    if (name == "scotch") return std::make_unique<ScotchMapper>();
    if (name == "compact") return std::make_unique<CompactMapper>();
    if (name == "scatter") return std::make_unique<ScatterMapper>();
    if (name == "random") return std::make_unique<RandomMapper>(seed);
    if (name == "current") return std::make_unique<CurrentMapper>();
    if (name == "exhaustive") return std::make_unique<ExhaustiveMapper>();
    throw Error("mapper '" + std::string(name) + "'",
                "unknown (expected scotch, compact, scatter, random, current or exhaustive)");
}

}  // namespace cdsm
