// SPDX-License-Identifier: GPL-2.0
// The cluster target (nodes, cores, network) and what a placement on it costs.
#include "cdsm/cluster.hpp"

#include <algorithm>
#include <map>

#include "cdsm/error.hpp"
#include "text_lines.hpp"

namespace cdsm {
namespace {

// One PU per core: the first PU (in logical order) of each core.
Topology one_pu_per_core(const Topology& node) {
    std::size_t core_level = node.level_count();
    for (std::size_t level = 0; level < node.level_count(); ++level)
        if (node.level_kind(level) == LevelKind::kCore) core_level = level;
    if (core_level + 1 >= node.level_count()) return node;  // no SMT: every PU is a core
    std::vector<std::uint32_t> first;
    std::vector<bool> seen(node.node_count(core_level), false);
    for (PuId pu = 0; pu < node.pu_count(); ++pu) {
        const std::uint32_t core = node.ancestor(pu, core_level);
        if (seen[core]) continue;
        seen[core] = true;
        first.push_back(node.pu(pu).os_index);
    }
    return node.restricted_to(first);
}

// The level whose nodes are the sockets. Topology drops a level whose nodes each have one child,
// keeping the child's: a Package with one NUMA node or one L3 is then that level, right below
// the machine. Without either, the node has one socket.
std::size_t socket_level(const Topology& node) {
    for (std::size_t level = 0; level < node.level_count(); ++level)
        if (node.level_kind(level) == LevelKind::kPackage) return level;
    if (node.level_count() > 2) {
        const LevelKind kind = node.level_kind(1);
        if (kind == LevelKind::kNuma || kind == LevelKind::kL3) return 1;
    }
    return node.level_count();
}

void check_fits(std::size_t ranks, const Cluster& cluster) {
    if (ranks > cluster.slot_count())
        throw Error("cluster", std::to_string(ranks) + " ranks do not fit on " +
                                   std::to_string(cluster.network().node_count()) + " nodes of " +
                                   std::to_string(cluster.cores_per_node()) +
                                   " cores (one rank per core)");
}

// Ranks placed on nodes: each node's cores in rank order.
ClusterPlacement cores_in_order(const std::vector<std::uint32_t>& node_of, const Cluster& cluster) {
    std::vector<PuId> next(cluster.network().node_count(), 0);
    ClusterPlacement placement(node_of.size());
    for (std::size_t r = 0; r < node_of.size(); ++r)
        placement[r] = {node_of[r], next[node_of[r]]++};
    return placement;
}

}  // namespace

Cluster::Cluster(Network network, const Topology& node, const TimeModel& model,
                 LevelCosts node_costs)
    : network_(std::move(network)),
      node_(one_pu_per_core(node)),
      node_distances_(node_, node_costs),
      model_(model) {
    model_.validate("time model");
    if (model_.network_cost <= node_distances_.max())
        throw Error("time model", "network_cost " + std::to_string(model_.network_cost) +
                                      " must exceed the largest cost within a node (" +
                                      std::to_string(node_distances_.max()) + ")");
    const std::size_t level = socket_level(node_);
    std::map<std::uint32_t, std::uint32_t> cores_seen;
    for (PuId core = 0; core < node_.pu_count(); ++core) {
        const std::uint32_t s = level < node_.level_count() ? node_.ancestor(core, level) : 0;
        socket_.push_back(s);
        core_in_socket_.push_back(cores_seen[s]++);
    }
}

std::uint32_t Cluster::distance(RankSlot a, RankSlot b) const {
    if (a.node == b.node) return node_distances_(a.core, b.core);
    return model_.switch_cost(network_.common_level(a.node, b.node));
}

ClusterPlacement block_placement(std::size_t ranks, const Cluster& cluster) {
    check_fits(ranks, cluster);
    const std::size_t nodes = cluster.network().node_count();
    std::vector<std::uint32_t> node_of(ranks);
    for (std::size_t node = 0, r = 0; node < nodes; ++node)
        for (std::size_t k = 0; k < ranks / nodes + (node < ranks % nodes ? 1 : 0); ++k)
            node_of[r++] = static_cast<std::uint32_t>(node);
    return cores_in_order(node_of, cluster);
}

ClusterPlacement cyclic_placement(std::size_t ranks, const Cluster& cluster) {
    check_fits(ranks, cluster);
    std::vector<std::uint32_t> node_of(ranks);
    for (std::size_t r = 0; r < ranks; ++r)
        node_of[r] = static_cast<std::uint32_t>(r % cluster.network().node_count());
    return cores_in_order(node_of, cluster);
}

ClusterPlacement hostfile_placement(std::string_view text, std::string_view name, std::size_t ranks,
                                    const Cluster& cluster) {
    std::vector<std::uint32_t> node_of;
    std::vector<std::size_t> load(cluster.network().node_count(), 0);
    detail::TextLines lines(text);
    for (std::string_view line; lines.next(line);) {
        line = line.substr(0, line.find('#'));
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())))
            line.remove_suffix(1);
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front())))
            line.remove_prefix(1);
        if (line.empty()) continue;
        const std::string where = std::string(name) + ":" + std::to_string(lines.number());
        const std::size_t node = cluster.network().find(line);
        if (node == cluster.network().node_count())
            throw Error(where, "'" + std::string(line) + "' is not one of the job's nodes");
        if (++load[node] > cluster.cores_per_node())
            throw Error(where, "more ranks on " + std::string(line) + " than its " +
                                   std::to_string(cluster.cores_per_node()) + " cores");
        node_of.push_back(static_cast<std::uint32_t>(node));
    }
    if (node_of.size() != ranks)
        throw Error(name, "names " + std::to_string(node_of.size()) + " ranks, the job has " +
                              std::to_string(ranks));
    return cores_in_order(node_of, cluster);
}

PlacementFigures evaluate(const RankTraffic& traffic, const Cluster& cluster,
                          const ClusterPlacement& placement) {
    const std::size_t nodes = cluster.network().node_count();
    if (placement.size() != traffic.ranks())
        throw Error("placement", "has " + std::to_string(placement.size()) + " ranks, the job " +
                                     std::to_string(traffic.ranks()));
    for (const RankSlot& s : placement)
        if (s.node >= nodes || s.core >= cluster.cores_per_node())
            throw Error("placement", "a slot is beyond the cluster");
    const TimeModel& m = cluster.model();
    // Seconds per message and per byte at each level.
    const auto alpha = [](const LinkTiming& t) { return t.latency_us * 1e-6; };
    const auto beta = [](const LinkTiming& t) { return 1.0 / (t.rate_gbs * 1e9); };
    PlacementFigures f;
    std::vector<double> on_node(traffic.ranks(), 0);  // seconds, per rank
    std::vector<std::uint64_t> off_messages(traffic.ranks(), 0);
    std::vector<bool> sends_off(traffic.ranks(), false);
    std::vector<std::uint64_t> off_bytes(nodes, 0);
    for (const Flow& flow : traffic.flows()) {
        const RankSlot a = placement[flow.src], b = placement[flow.dst];
        f.cost += static_cast<double>(flow.bytes) * cluster.distance(a, b);
        if (a.node != b.node) {
            f.inter_node_bytes += flow.bytes;
            f.inter_node_messages += flow.messages;
            off_bytes[a.node] += flow.bytes;
            off_messages[flow.src] += flow.messages;
            sends_off[flow.src] = true;
            continue;
        }
        const LinkTiming& t = cluster.socket(a.core) == cluster.socket(b.core) ? m.socket : m.node;
        on_node[flow.src] += static_cast<double>(flow.messages) * alpha(t) +
                             static_cast<double>(flow.bytes) * beta(t);
    }
    // Per node: its slowest rank within the node, then the network as the max-rate model has
    // it: the most messages one rank sends off the node, and the node's bytes through the
    // injection rate shared by its ppn sending ranks.
    std::vector<double> local(nodes, 0);
    std::vector<std::uint64_t> most_messages(nodes, 0);
    std::vector<std::size_t> senders(nodes, 0);
    for (std::size_t r = 0; r < traffic.ranks(); ++r) {
        const std::uint32_t n = placement[r].node;
        local[n] = std::max(local[n], on_node[r]);
        most_messages[n] = std::max(most_messages[n], off_messages[r]);
        if (sends_off[r]) ++senders[n];
    }
    for (std::size_t n = 0; n < nodes; ++n) {
        double t = local[n];
        if (senders[n] > 0) {
            const double ppn = static_cast<double>(senders[n]);
            const double rate = std::min(m.injection_gbs, ppn * m.network.rate_gbs) * 1e9;
            t += static_cast<double>(most_messages[n]) * alpha(m.network) +
                 static_cast<double>(off_bytes[n]) / rate;
        }
        if (t > f.time_s) {
            f.time_s = t;
            f.slowest_node = static_cast<std::uint32_t>(n);
            f.slowest_node_bytes_out = off_bytes[n];
        }
    }
    return f;
}

std::string format_hostfile(const Cluster& cluster, const ClusterPlacement& placement) {
    std::string out;
    for (const RankSlot& s : placement) out += cluster.network().nodes().at(s.node) + '\n';
    return out;
}

std::string format_rankfile(const Cluster& cluster, const ClusterPlacement& placement) {
    std::string out;
    for (std::size_t r = 0; r < placement.size(); ++r) {
        const RankSlot s = placement[r];
        out += "rank " + std::to_string(r) + "=" + cluster.network().nodes().at(s.node) +
               " slot=" + std::to_string(cluster.socket(s.core)) + ":" +
               std::to_string(cluster.core_in_socket(s.core)) + '\n';
    }
    return out;
}

}  // namespace cdsm
