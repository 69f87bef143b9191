// SPDX-License-Identifier: GPL-2.0
// Issue 29's scale figures, as medians (never pass/fail):
//  1. merging Open MPI monitoring files: 4,096 ranks' files (a 64 x 64 2-D stencil of
//     application messages plus internal messages to 12 binomial-tree partners each, in
//     Open MPI 4.1's format with its size histograms) read by cdsm::read_monitoring;
//  2. placing those 4,096 ranks on 256 nodes of 16 cores (2 packages x 8) under a two-level
//     tree (16 leaf switches of 16 nodes): cdsm::map_cluster in this process, then the whole
//     `cdsmctl cluster-map` process beside `scotch_gmap` on the same graph and the same target
//     (the whole cluster as one tree-leaf: 16 x 16 nodes x 2 packages x 8 cores, the same
//     costs), both under /usr/bin/time (wall seconds, peak RSS), with each one's inter-node
//     bytes and cost by cdsm::evaluate.
// Usage: cdsm_cluster_bench [--runs N] [--dir DIR] [--cdsmctl PATH] [--scotch-gmap PATH]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cdsm/cluster.hpp"
#include "cdsm/matrix_io.hpp"
#include "cdsm/monitoring.hpp"

namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t kSide = 64, kRanks = kSide * kSide;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

void write_monitoring(const fs::path& dir) {
    fs::create_directories(dir);
    std::string histogram;
    for (int k = 0; k < 66; ++k) histogram += k == 17 ? "100," : "0,";
    for (std::uint32_t r = 0; r < kRanks; ++r) {
        std::ofstream out(dir / ("prof." + std::to_string(r) + ".prof"));
        out << "# POINT TO POINT\n";
        const std::uint32_t x = r % kSide, y = r / kSide;
        std::vector<std::uint32_t> peers;
        if (x > 0) peers.push_back(r - 1);
        if (x + 1 < kSide) peers.push_back(r + 1);
        if (y > 0) peers.push_back(r - kSide);
        if (y + 1 < kSide) peers.push_back(r + kSide);
        for (const std::uint32_t p : peers)
            out << "E\t" << r << '\t' << p << "\t13107200 bytes\t100 msgs sent\t" << histogram
                << '\n';
        for (std::uint32_t bit = 1; bit < kRanks; bit <<= 1)
            out << "I\t" << r << '\t' << (r ^ bit) << "\t96 bytes\t12 msgs sent\t" << histogram
                << '\n';
        out << "# OSC\n# COLLECTIVES\n";
        for (std::uint32_t bit = 1; bit < kRanks; bit <<= 1)
            out << "C\t" << r << '\t' << (r ^ bit) << "\t96 bytes\t12 msgs sent\n";
        out << "D\tMPI_COMM_WORLD\tprocs: 0-" << kRanks - 1 << "\nO2A\t" << r
            << "\t0 bytes\t0 msgs sent\n";
    }
}

// /usr/bin/time's "%e %M" of a command: wall seconds and peak RSS in KiB.
std::pair<double, double> timed(const std::string& command, const fs::path& dir) {
    const fs::path log = dir / "time.log";
    const std::string full =
        "/usr/bin/time -f '%e %M' -o " + log.string() + " " + command + " >/dev/null 2>&1";
    if (std::system(full.c_str()) != 0) {
        std::cerr << "failed: " << command << '\n';
        std::exit(1);
    }
    std::ifstream in(log);
    double wall = 0, rss = 0;
    in >> wall >> rss;
    return {wall, rss};
}

}  // namespace

int main(int argc, char** argv) {
    int runs = 5;
    fs::path dir = fs::temp_directory_path() / "cdsm-cluster-bench";
    std::string cdsmctl = CDSMCTL_BINARY, gmap = "/usr/bin/scotch_gmap";
    for (int k = 1; k + 1 < argc; k += 2) {
        const std::string arg = argv[k], value = argv[k + 1];
        if (arg == "--runs")
            runs = std::stoi(value);
        else if (arg == "--dir")
            dir = value;
        else if (arg == "--cdsmctl")
            cdsmctl = value;
        else if (arg == "--scotch-gmap")
            gmap = value;
        else {
            std::cerr << "usage: cdsm_cluster_bench [--runs N] [--dir DIR] [--cdsmctl PATH] "
                         "[--scotch-gmap PATH]\n";
            return 2;
        }
    }
    fs::remove_all(dir);
    write_monitoring(dir / "mon");

    using clock = std::chrono::steady_clock;
    std::vector<double> merge;
    cdsm::RankTraffic traffic;
    for (int k = 0; k < runs; ++k) {
        const auto t0 = clock::now();
        traffic = cdsm::read_monitoring(dir / "mon");
        merge.push_back(std::chrono::duration<double>(clock::now() - t0).count());
    }
    std::cout << "merge of " << kRanks << " ranks' monitoring files (" << traffic.flows().size()
              << " flows): median " << median(merge) << " s of " << runs << " runs\n";

    std::ofstream(dir / "topology.conf") << "SwitchName=top Switches=leaf[0-15]\n";
    {
        std::ofstream conf(dir / "topology.conf", std::ios::app);
        for (int s = 0; s < 16; ++s)
            conf << "SwitchName=leaf" << s << " Nodes=n[" << s * 16 + 1 << "-" << s * 16 + 16
                 << "]\n";
    }
    const std::string node = "pack:2 core:8 pu:1";
    std::ifstream conf_in(dir / "topology.conf");
    std::stringstream conf_text;
    conf_text << conf_in.rdbuf();
    const cdsm::Cluster cluster(
        cdsm::Network::from_topology_conf(conf_text.str(), "topology.conf",
                                          cdsm::expand_hostlist("n[1-256]")),
        cdsm::Topology::from_synthetic(node));
    std::vector<double> map_s;
    cdsm::ClusterPlacement placement;
    for (int k = 0; k < runs; ++k) {
        const auto t0 = clock::now();
        placement = cdsm::map_cluster(traffic, cluster);
        map_s.push_back(std::chrono::duration<double>(clock::now() - t0).count());
    }
    const auto after = cdsm::evaluate(traffic, cluster, placement);
    const auto cyclic = cdsm::evaluate(traffic, cluster, cdsm::cyclic_placement(kRanks, cluster));
    std::cout << "map_cluster, 4096 ranks on 256 nodes x 16 cores, 2 switch levels: median "
              << median(map_s) << " s; inter-node bytes " << after.inter_node_bytes << " (cyclic "
              << cyclic.inter_node_bytes << "), cost " << after.cost << '\n';

    // The same problem for the whole process of cdsmctl and of scotch_gmap.
    const cdsm::CommMatrix bytes = traffic.byte_matrix();
    std::ofstream(dir / "m.json") << cdsm::matrix_json(bytes, cdsm::MatrixLayout::kSparse).dump();
    {
        std::ofstream grf(dir / "m.grf");
        std::vector<std::vector<std::pair<std::size_t, std::uint64_t>>> adj(kRanks);
        std::size_t arcs = 0;
        const double top = static_cast<double>(bytes.max());
        bytes.for_each_pair([&](std::size_t i, std::size_t j, std::uint64_t v) {
            // Scotch's integers: the weights scaled as cdsm scales them (at most 2^30 / arcs /
            // the largest distance).
            const auto w = std::max<std::uint64_t>(
                1, static_cast<std::uint64_t>(static_cast<double>(v) / top * 1000 + 0.5));
            adj[i].push_back({j, w});
            adj[j].push_back({i, w});
            arcs += 2;
        });
        grf << "0\n" << kRanks << ' ' << arcs << "\n0 010\n";
        for (const auto& row : adj) {
            grf << row.size();
            for (const auto& [j, w] : row) grf << ' ' << w << ' ' << j;
            grf << '\n';
        }
    }
    // Distances 5 (package), 10 (node), 25 (leaf switch), 30 (top switch).
    std::ofstream(dir / "cluster.tgt") << "tleaf 4 16 5 16 15 2 5 8 5\n";
    const std::string cdsm_command =
        cdsmctl + " cluster-map --matrix " + (dir / "m.json").string() +
        " --nodes 'n[1-256]' --node-topology '" + node + "' --topology-conf " +
        (dir / "topology.conf").string() + " --hostfile " + (dir / "hosts").string();
    const std::string gmap_command = gmap + " " + (dir / "m.grf").string() + " " +
                                     (dir / "cluster.tgt").string() + " " +
                                     (dir / "gmap.map").string() + " -b0";
    std::vector<double> a_wall, a_rss, b_wall, b_rss;
    for (int k = 0; k < runs; ++k) {
        const auto [aw, ar] = timed(cdsm_command, dir);
        const auto [bw, br] = timed(gmap_command, dir);
        a_wall.push_back(aw);
        a_rss.push_back(ar);
        b_wall.push_back(bw);
        b_rss.push_back(br);
    }
    // scotch_gmap's mapping: "COUNT" then "VERTEX LEAF"; leaf k is node k / 16, core k % 16.
    std::ifstream map_in(dir / "gmap.map");
    std::size_t count = 0;
    map_in >> count;
    cdsm::ClusterPlacement gmap_placement(kRanks);
    for (std::size_t k = 0; k < count; ++k) {
        std::size_t v = 0, leaf = 0;
        map_in >> v >> leaf;
        gmap_placement.at(v) = {static_cast<std::uint32_t>(leaf / 16),
                                static_cast<cdsm::PuId>(leaf % 16)};
    }
    const auto gmap_figures = cdsm::evaluate(traffic, cluster, gmap_placement);
    std::cout << "whole process, medians of " << runs
              << " (A: cdsmctl cluster-map, B: scotch_gmap):\n"
              << "  A wall " << median(a_wall) << " s, peak RSS " << median(a_rss) / 1024
              << " MiB, inter-node bytes " << after.inter_node_bytes << ", cost " << after.cost
              << "\n  B wall " << median(b_wall) << " s, peak RSS " << median(b_rss) / 1024
              << " MiB, inter-node bytes " << gmap_figures.inter_node_bytes << ", cost "
              << gmap_figures.cost << '\n';
    fs::remove_all(dir);
    return 0;
}
