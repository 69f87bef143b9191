// SPDX-License-Identifier: GPL-2.0
// cdsmctl calibrate: the time model's figures (docs/cluster.md) measured on this node by pinned
// ping-pongs through shared memory: within a socket (two cores of one package) and between two
// sockets, when the machine has them; with --peer, the network by a TCP ping-pong with
// `cdsmctl calibrate --serve` on another node, and the node's injection rate by several streams
// at once. Levels it cannot measure keep their defaults.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <ostream>
#include <string>

namespace cdsm::cdsmctl {

struct CalibrateOptions {
    std::string output;  ///< --output (default /etc/cdsm/time-model.json)
    std::string base;    ///< --time-model: the model whose other figures are kept
    std::size_t round_trips = 2000;
    std::size_t bytes = 1 << 20;
    bool json = false;
    std::string serve;  ///< --serve [ADDR:]PORT: answer one peer's network ping-pong, then exit
    std::string peer;   ///< --peer HOST:PORT: measure the network against a --serve
    unsigned serve_timeout_s = 120;
    std::size_t streams = 0;  ///< --streams: for the injection rate (0: this node's PUs, <= 16)
};

void add_calibrate(CLI::App& app, CalibrateOptions& options);
int calibrate(const CalibrateOptions& options, std::ostream& out);

}  // namespace cdsm::cdsmctl
