// SPDX-License-Identifier: GPL-2.0
#include "cdsm/topology_json.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

namespace cdsm {

nlohmann::json topology_json(const Topology& topology, const Distances& distances) {
    nlohmann::json levels = nlohmann::json::array();
    for (std::size_t level = 0; level < topology.level_count(); ++level) {
        std::size_t lo = 0, hi = 0;
        if (level + 1 < topology.level_count()) {
            lo = SIZE_MAX;
            for (std::uint32_t node = 0; node < topology.node_count(level); ++node) {
                const std::size_t arity = topology.children(level, node).size();
                lo = std::min(lo, arity);
                hi = std::max(hi, arity);
            }
        }
        levels.push_back({{"depth", level},
                          {"kind", to_string(topology.level_kind(level))},
                          {"nodes", topology.node_count(level)},
                          {"arity_min", lo},
                          {"arity_max", hi},
                          {"cost", distances.level_cost(level)}});
    }
    nlohmann::json pus = nlohmann::json::array(), table = nlohmann::json::array();
    for (PuId id = 0; id < topology.pu_count(); ++id) {
        pus.push_back({{"id", id},
                       {"logical_index", topology.pu(id).logical_index},
                       {"os_index", topology.pu(id).os_index}});
        nlohmann::json row = nlohmann::json::array();
        for (PuId other = 0; other < topology.pu_count(); ++other)
            row.push_back(distances(id, other));
        table.push_back(std::move(row));
    }
    return {{"schema", kTopologySchema},       {"source", topology.source()},
            {"summary", topology.describe()},  {"symmetric", topology.is_symmetric()},
            {"pu_count", topology.pu_count()}, {"levels", std::move(levels)},
            {"pus", std::move(pus)},           {"distances", std::move(table)}};
}

}  // namespace cdsm
