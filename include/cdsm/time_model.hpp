// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

#include "cdsm/comm_matrix.hpp"
#include "cdsm/placement.hpp"
#include "cdsm/topology.hpp"

namespace cdsm {

/// The cost of a message at one level of the machine: a latency and a per-process rate.
struct LinkTiming {
    double latency_us;
    double rate_gbs;  ///< gigabytes (10^9 bytes) per second one process can send
};

/// Communication time as Bienz, Gropp and Olson model it (EuroMPI 2018): per level a latency and
/// a rate, and between nodes the max-rate term, in which the node's injection rate caps what
/// its processes send at once: T = alpha + ppn * s / min(R_N, ppn * R_b). docs/cluster.md shows
/// how a placement's time is summed from it, and its limits.
///
/// The defaults: the latencies are Blue Waters' short-message figures (Table 1 of the paper:
/// 0.44 us within a socket, 0.83 us within a node, 2.3 us between nodes); the rates are not
/// from the paper but assumed: 4 GB/s within a socket, and the other two from the paper's ratios
/// of 1 MiB messages (1 : 1.005 : 2.1), 3.98 and 1.90 GB/s; the injection rate 6 GB/s. Measure
/// them for a real machine and write them to a model file.
struct TimeModel {
    LinkTiming socket{0.44, 4.0};
    LinkTiming node{0.83, 3.98};
    LinkTiming network{2.3, 1.9};
    double injection_gbs = 6.0;  ///< R_N: what one node can send into the network at once
    /// Mapping cost (not time) of two ranks whose lowest common switch is at level L:
    /// network_cost + (L - 1) * network_cost_step. The first is about 5 times a package's cost
    /// (LevelCosts::package), as a 64-byte message between nodes cost 5.0 times one within a
    /// socket on Blue Waters (DESIGN §5); the step per switch level is an assumption.
    std::uint32_t network_cost = 25;
    std::uint32_t network_cost_step = 5;

    /// The cost of two ranks meeting at switch level `level` (1 or more).
    std::uint32_t switch_cost(std::size_t level) const noexcept {
        return network_cost + static_cast<std::uint32_t>(level - 1) * network_cost_step;
    }

    /// Throws Error naming `name` unless every latency is >= 0, every rate > 0, the network
    /// cost >= 1 and its step >= 1 (Scotch's tree needs rising costs).
    void validate(std::string_view name) const;

    /// A model file (docs/cluster.md): {"schema": "cdsm-time-model/1", "socket": {"latency_us":
    /// ..., "rate_gbs": ...}, "node": {...}, "network": {...}, "injection_gbs": ...,
    /// "network_cost": ..., "network_cost_step": ...}; members left out keep their defaults.
    /// Throws Error naming `name` for a member of the wrong type or a value validate() rejects.
    static TimeModel from_json(const nlohmann::json& json, std::string_view name);
    /// Reads a model file; Error names the file if it cannot be read or parsed.
    static TimeModel from_file(const std::filesystem::path& path);
    nlohmann::json to_json() const;

    /// The node-level prediction of a placement (docs/cluster.md "Calibration"): each event of a
    /// pair counted as one short message at the latency of the pair's level (the socket's when
    /// both PUs share a package, or the machine has one; the node's otherwise), summed per task;
    /// the largest task's sum, in seconds. cdsm.ko's events are page faults, not messages: it
    /// ranks placements, it predicts no run's time. Throws Error if the placement's size is not
    /// the matrix's.
    double node_time_s(const CommMatrix& matrix, const Topology& topology,
                       const Placement& placement) const;
};

/// Where cdsmctl looks for a model file when none is given.
inline constexpr std::string_view kDefaultTimeModelPath = "/etc/cdsm/time-model.json";

}  // namespace cdsm
