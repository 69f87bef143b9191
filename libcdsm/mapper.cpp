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

namespace {

constexpr std::string_view kChoices[] = {ScotchMapper::kName, CompactMapper::kName,
                                         ScatterMapper::kName, RandomMapper::kName};

}  // namespace

std::span<const std::string_view> mapper_names() noexcept {
    return kChoices;
}

std::unique_ptr<Mapper> make_mapper(std::string_view name, std::uint64_t seed) {
    if (name == ScotchMapper::kName) return std::make_unique<ScotchMapper>();
    if (name == CompactMapper::kName) return std::make_unique<CompactMapper>();
    if (name == ScatterMapper::kName) return std::make_unique<ScatterMapper>();
    if (name == RandomMapper::kName) return std::make_unique<RandomMapper>(seed);
    if (name == CurrentMapper::kName) return std::make_unique<CurrentMapper>();
    if (name == ExhaustiveMapper::kName) return std::make_unique<ExhaustiveMapper>();
    std::string expected;
    for (std::string_view n : kChoices) expected += std::string(n) + ", ";
    throw Error("mapper '" + std::string(name) + "'",
                "unknown (expected " + expected + std::string(CurrentMapper::kName) + " or " +
                    std::string(ExhaustiveMapper::kName) + ")");
}

}  // namespace cdsm
