// SPDX-License-Identifier: GPL-2.0
// Machines the tests map onto, and a way to read an expected error.
#pragma once

#include <cstddef>
#include <string>

#include "cdsm/cost.hpp"
#include "cdsm/distances.hpp"
#include "cdsm/error.hpp"
#include "cdsm/mapper.hpp"
#include "cdsm/topology.hpp"

namespace cdsm::test {

// True in the sanitizer tree (tests/fuzz/run: AddressSanitizer and UndefinedBehaviorSanitizer,
// -O1), where the mapping code runs about ten times slower: the property tests there check a
// sample of their cases (sampled()), the same code paths on every machine, and the normal build
// checks them all.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// Whether the next case of a property test runs: every one in the normal build, one in
// @p stride under the sanitizers (@p counter counts the cases seen).
inline bool sampled(std::size_t& counter, std::size_t stride = 4) {
    return !kSanitized || counter++ % stride == 0;
}

inline std::string data_path(const std::string& relative) {
    return std::string(CDSM_TEST_DATA_DIR) + "/" + relative;
}

/// One of tests/data/topologies/*.xml (from hwloc's test suite), by file name.
inline Topology machine(const std::string& xml) {
    return Topology::from_xml_file(data_path("topologies/" + xml));
}

/// 2 packages x 2 cores x 2 PUs: the machine of the exhaustive comparisons.
inline Topology small_machine() {
    return Topology::from_synthetic("pack:2 core:2 pu:2");
}

/// The CDSM paper's rules: communication alone chooses the PUs (tests of the cost model itself).
inline constexpr PlacementRules kPaperRules{SmtRule::kAllow, SpreadRule::kPack};

/// A machine with its default distances, to map onto and to score placements.
struct Target {
    Topology topology;
    Distances distances;
    PlacementRules rules;
    explicit Target(Topology t, PlacementRules r = {})
        : topology(std::move(t)), distances(topology), rules(r) {}
    Placement map(const Mapper& mapper, const CommMatrix& m,
                  const Placement* current = nullptr) const {
        return mapper.map(MappingProblem{m, topology, distances, current, rules});
    }
    double cost(const CommMatrix& m, const Placement& p) const {
        return mapping_cost(m, p, distances);
    }
};

/// The message of the cdsm::Error that `action` throws, or "no error".
inline std::string error_of(const auto& action) {
    try {
        action();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace cdsm::test
