// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cdsm {

/// Expands a Slurm hostlist such as "n[1-4,7],gpu[01-02]" (zero padding kept) into its names, in
/// order. Throws Error naming the list if a bracket is unbalanced or a range is not numeric.
std::vector<std::string> expand_hostlist(std::string_view list);

/// A job's nodes as the leaves of the network's switch tree. Levels are counted by height: the
/// switches directly above nodes are level 1, the switches above them level 2, and so on; two
/// nodes communicate through their lowest common switch, whose level says how far apart they are.
/// A node that hangs from a higher switch than others (an irregular tree) meets its neighbours
/// at that switch's level.
class Network {
  public:
    /// One switch above every node.
    static Network flat(std::vector<std::string> nodes);
    /// Slurm's topology.conf (`SwitchName=S Nodes=HOSTLIST` or `Switches=HOSTLIST`, '#'
    /// comments), restricted to `nodes`, the job's: switches above none of them are left out.
    /// Throws Error naming `name` and the line if a line has no SwitchName, a switch or node
    /// has two parents, the switches form a cycle, a job node is under no switch, or the
    /// job's nodes are not under one root.
    static Network from_topology_conf(std::string_view text, std::string_view name,
                                      std::vector<std::string> nodes);

    /// Slurm's SLURM_TOPOLOGY_ADDR of each node, one a line ("s0.s3.n12": the switches from the
    /// root down, then the node, as the tree plugin sets it in every task), each optionally
    /// followed by its SLURM_TOPOLOGY_ADDR_PATTERN ("switch.switch.node"); `pattern` is the
    /// pattern of lines without one (empty: every component but the last is a switch). '#'
    /// comments and blank lines are skipped. Throws Error naming `name` and the line for a
    /// pattern that is not switches then one node or does not match its address, an empty
    /// component, a node given twice, a switch under two parents; and as from_topology_conf()
    /// for a job node without an address.
    static Network from_topology_addr(std::string_view text, std::string_view name,
                                      std::vector<std::string> nodes,
                                      std::string_view pattern = {});

    std::size_t node_count() const noexcept { return nodes_.size(); }
    const std::vector<std::string>& nodes() const noexcept { return nodes_; }
    /// The node's index, or node_count() if it is not one of the job's.
    std::size_t find(std::string_view node) const noexcept;
    /// Number of switch levels (1 for a flat network).
    std::size_t level_count() const noexcept { return levels_; }
    /// The level of the lowest switch above both nodes (0 when a == b).
    std::size_t common_level(std::size_t a, std::size_t b) const;
    /// The group of a node at a level: nodes with equal groups at level L meet at level L or
    /// below (groups are numbered from 0 per level; level 0 is the node itself).
    std::uint32_t group(std::size_t node, std::size_t level) const {
        return groups_.at(node * (levels_ + 1) + level);
    }
    /// E.g. "flat (4 nodes)" or "2 levels: 1 switch, 4 switches of 2-4 nodes".
    std::string describe() const;

  private:
    Network(std::vector<std::string> nodes, std::size_t levels, std::vector<std::uint32_t> groups,
            std::string description);

    std::vector<std::string> nodes_;
    std::size_t levels_;
    std::vector<std::uint32_t> groups_;  // node * (levels_ + 1) + level
    std::string description_;
};

}  // namespace cdsm
