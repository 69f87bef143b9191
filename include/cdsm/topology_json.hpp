// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "cdsm/distances.hpp"
#include "cdsm/topology.hpp"

namespace cdsm {

/// The name and version of the topology JSON schema (docs/json.md), its "schema" member.
inline constexpr std::string_view kTopologySchema = "cdsm-topology/1";

/// A machine and its distances as JSON (docs/json.md, "Topology"): schema, source, summary,
/// symmetric, pu_count, levels (depth, kind, nodes, arity_min, arity_max, cost), pus (id,
/// logical_index, os_index) and distances (PU by PU). cdsmd's "topology" answer and
/// `cdsmctl topology --json` both write it.
nlohmann::json topology_json(const Topology& topology, const Distances& distances);

}  // namespace cdsm
