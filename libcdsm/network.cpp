// SPDX-License-Identifier: GPL-2.0
#include "cdsm/network.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "cdsm/error.hpp"
#include "text_lines.hpp"

namespace cdsm {
namespace {

std::vector<std::string_view> split_top_level(std::string_view list, std::string_view name) {
    std::vector<std::string_view> items;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t k = 0; k <= list.size(); ++k) {
        const char c = k < list.size() ? list[k] : ',';
        if (c == '[') ++depth;
        if (c == ']' && --depth < 0) throw Error(name, "']' without '['");
        if (c == ',' && depth == 0) {
            if (k > start) items.push_back(list.substr(start, k - start));
            start = k + 1;
        }
    }
    if (depth != 0) throw Error(name, "'[' without ']'");
    return items;
}

std::uint64_t range_bound(std::string_view text, std::string_view name) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        throw Error(name, "'" + std::string(text) + "' is not a number in a host range");
    return value;
}

// One item without top-level commas, e.g. "rack[1-2]n[01-03,7]".
void expand_item(std::string_view item, std::string_view name, std::vector<std::string>& out) {
    const std::size_t open = item.find('[');
    if (open == std::string_view::npos) {
        out.emplace_back(item);
        return;
    }
    const std::size_t close = item.find(']', open);
    const std::string_view prefix = item.substr(0, open);
    std::vector<std::string> rest;
    expand_item(item.substr(close + 1), name, rest);
    for (const std::string_view range :
         split_top_level(item.substr(open + 1, close - open - 1), name)) {
        const std::size_t dash = range.find('-');
        const std::string_view lo_text = range.substr(0, dash);
        const std::uint64_t lo = range_bound(lo_text, name);
        const std::uint64_t hi =
            dash == std::string_view::npos ? lo : range_bound(range.substr(dash + 1), name);
        if (hi < lo) throw Error(name, "range '" + std::string(range) + "' runs backwards");
        if (hi - lo > 1'000'000)
            throw Error(name, "range '" + std::string(range) + "' is too long");
        for (std::uint64_t v = lo; v <= hi; ++v) {
            std::string number = std::to_string(v);
            if (number.size() < lo_text.size())
                number.insert(0, lo_text.size() - number.size(), '0');
            for (const std::string& tail : rest) out.push_back(std::string(prefix) + number + tail);
        }
    }
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// A tree of switches above the job's nodes: each node's chain of ancestors, nearest first.
// Returns the level description and the groups of Network.
struct Grouping {
    std::size_t levels = 0;
    std::vector<std::uint32_t> groups;
    std::string description;
};

// chains[n]: the ancestors of node n (ids >= 0), nearest first, each with its height.
Grouping group_nodes(const std::vector<std::vector<std::pair<int, std::size_t>>>& chains) {
    const std::size_t n = chains.size();
    std::size_t top = 1;
    for (const auto& chain : chains)
        for (const auto& [id, height] : chain) top = std::max(top, height);
    // Representative at level L: the highest ancestor of height <= L, or the node itself.
    std::vector<std::vector<std::uint32_t>> by_height(top + 1, std::vector<std::uint32_t>(n));
    std::vector<std::size_t> group_count(top + 1);
    for (std::size_t level = 0; level <= top; ++level) {
        std::map<long, std::uint32_t> ids;
        for (std::size_t node = 0; node < n; ++node) {
            long rep = -1 - static_cast<long>(node);
            for (const auto& [id, height] : chains[node])
                if (height <= level) rep = id;
            by_height[level][node] =
                ids.emplace(rep, static_cast<std::uint32_t>(ids.size())).first->second;
        }
        group_count[level] = ids.size();
    }
    // Levels that join nothing (as many groups as the level below) are dropped, but the top.
    std::vector<std::size_t> kept{0};
    for (std::size_t level = 1; level <= top; ++level)
        if (group_count[level] < group_count[kept.back()] || level == top) kept.push_back(level);
    Grouping g;
    g.levels = kept.size() - 1;
    g.groups.resize(n * kept.size());
    for (std::size_t node = 0; node < n; ++node)
        for (std::size_t k = 0; k < kept.size(); ++k)
            g.groups[node * kept.size() + k] = by_height[kept[k]][node];
    if (g.levels == 1 && group_count[top] == 1) {
        g.description = "flat (" + std::to_string(n) + " nodes under one switch)";
        return g;
    }
    g.description = std::to_string(g.levels) + " switch levels:";
    for (std::size_t k = kept.size() - 1; k >= 1; --k) {
        std::map<std::uint32_t, std::set<std::uint32_t>> children;
        for (std::size_t node = 0; node < n; ++node)
            children[g.groups[node * kept.size() + k]].insert(g.groups[node * kept.size() + k - 1]);
        std::size_t lo = std::numeric_limits<std::size_t>::max(), hi = 0;
        for (const auto& [group, below] : children) {
            lo = std::min(lo, below.size());
            hi = std::max(hi, below.size());
        }
        g.description +=
            " " + std::to_string(children.size()) + " x " +
            (lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi)) +
            (k == 1 ? " nodes" : ",");
    }
    return g;
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view list) {
    const std::string name = "hostlist '" + std::string(list) + "'";
    std::vector<std::string> out;
    for (const std::string_view item : split_top_level(list, name)) expand_item(item, name, out);
    if (out.empty()) throw Error(name, "names no host");
    return out;
}

Network::Network(std::vector<std::string> nodes, std::size_t levels,
                 std::vector<std::uint32_t> groups, std::string description)
    : nodes_(std::move(nodes)),
      levels_(levels),
      groups_(std::move(groups)),
      description_(std::move(description)) {}

Network Network::flat(std::vector<std::string> nodes) {
    std::vector<std::vector<std::pair<int, std::size_t>>> chains(nodes.size(), {{0, 1}});
    if (nodes.empty()) throw Error("network", "no nodes");
    Grouping g = group_nodes(chains);
    return Network(std::move(nodes), g.levels, std::move(g.groups), std::move(g.description));
}

Network Network::from_topology_conf(std::string_view text, std::string_view name,
                                    std::vector<std::string> nodes) {
    if (nodes.empty()) throw Error(name, "no nodes");
    std::unordered_map<std::string, int> switch_id;
    std::vector<std::string> switch_names;
    std::unordered_map<std::string, int> parent_of_node;
    std::vector<int> parent_of_switch;
    const auto id_of = [&](const std::string& s) {
        const auto [it, added] = switch_id.emplace(s, static_cast<int>(switch_names.size()));
        if (added) {
            switch_names.push_back(s);
            parent_of_switch.push_back(-1);
        }
        return it->second;
    };
    detail::TextLines lines(text);
    for (std::string_view line; lines.next(line);) {
        line = line.substr(0, line.find('#'));
        const std::string where = std::string(name) + ":" + std::to_string(lines.number());
        std::string sw, below_nodes, below_switches;
        std::size_t k = 0;
        while (k < line.size()) {
            while (k < line.size() && std::isspace(static_cast<unsigned char>(line[k]))) ++k;
            const std::size_t start = k;
            while (k < line.size() && !std::isspace(static_cast<unsigned char>(line[k]))) ++k;
            const std::string_view token = line.substr(start, k - start);
            if (token.empty()) continue;
            const std::size_t eq = token.find('=');
            if (eq == std::string_view::npos)
                throw Error(where, "'" + std::string(token) + "' is not KEY=VALUE");
            const std::string key = lower(token.substr(0, eq));
            const std::string value(token.substr(eq + 1));
            if (key == "switchname")
                sw = value;
            else if (key == "nodes")
                below_nodes = value;
            else if (key == "switches")
                below_switches = value;
        }
        if (sw.empty()) {
            if (line.find_first_not_of(" \t\r") != std::string_view::npos)
                throw Error(where, "a line without SwitchName= (only switch lines are read)");
            continue;
        }
        const int id = id_of(sw);
        if (!below_switches.empty())
            for (const std::string& child : expand_hostlist(below_switches)) {
                const int c = id_of(child);
                if (parent_of_switch[c] >= 0 && parent_of_switch[c] != id)
                    throw Error(where, "switch " + child + " has two parents, " +
                                           switch_names[parent_of_switch[c]] + " and " + sw +
                                           " (only trees are supported)");
                parent_of_switch[c] = id;
            }
        if (!below_nodes.empty())
            for (const std::string& node : expand_hostlist(below_nodes)) {
                const auto [it, added] = parent_of_node.emplace(node, id);
                if (!added && it->second != id)
                    throw Error(where, "node " + node + " is under two switches, " +
                                           switch_names[it->second] + " and " + sw);
            }
    }
    // Each job node's chain of switches up to its root, with heights.
    std::vector<std::vector<std::pair<int, std::size_t>>> chains(nodes.size());
    std::vector<std::size_t> height(switch_names.size(), 0);
    std::set<int> roots;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
        const auto it = parent_of_node.find(nodes[n]);
        if (it == parent_of_node.end())
            throw Error(name, "node " + nodes[n] + " is under no switch");
        std::size_t steps = 0;
        for (int s = it->second; s >= 0; s = parent_of_switch[s]) {
            if (++steps > switch_names.size())
                throw Error(name, "the switches above " + nodes[n] + " form a cycle");
            chains[n].push_back({s, 0});
            height[s] = std::max(height[s], steps);
        }
        roots.insert(chains[n].back().first);
    }
    // Trees with several roots are joined under one more level.
    std::size_t top = 0;
    for (const int r : roots) top = std::max(top, height[r]);
    for (auto& chain : chains) {
        for (auto& [s, h] : chain) h = height[s];
        if (roots.size() > 1) chain.push_back({static_cast<int>(switch_names.size()), top + 1});
    }
    Grouping g = group_nodes(chains);
    return Network(std::move(nodes), g.levels, std::move(g.groups), std::move(g.description));
}

Network Network::from_topology_addr(std::string_view text, std::string_view name,
                                    std::vector<std::string> nodes, std::string_view pattern) {
    const auto split_dots = [](std::string_view s) {
        std::vector<std::string> parts;
        for (std::size_t start = 0;;) {
            const std::size_t dot = s.find('.', start);
            parts.emplace_back(s.substr(start, dot - start));
            if (dot == std::string_view::npos) break;
            start = dot + 1;
        }
        return parts;
    };
    // The same tree as topology.conf lines: a switch's child switches and nodes.
    std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>> below;
    std::map<std::string, std::string> parent;  // of a switch or node, "" for a root
    detail::TextLines lines(text);
    for (std::string_view line; lines.next(line);) {
        line = line.substr(0, line.find('#'));
        const std::string where = std::string(name) + ":" + std::to_string(lines.number());
        std::vector<std::string> tokens;
        for (std::size_t k = 0; k < line.size();) {
            while (k < line.size() && std::isspace(static_cast<unsigned char>(line[k]))) ++k;
            const std::size_t start = k;
            while (k < line.size() && !std::isspace(static_cast<unsigned char>(line[k]))) ++k;
            if (k > start) tokens.emplace_back(line.substr(start, k - start));
        }
        if (tokens.empty()) continue;
        if (tokens.size() > 2)
            throw Error(where,
                        "expected ADDRESS [PATTERN] (SLURM_TOPOLOGY_ADDR and "
                        "SLURM_TOPOLOGY_ADDR_PATTERN)");
        const std::vector<std::string> addr = split_dots(tokens[0]);
        std::vector<std::string> kinds;
        if (tokens.size() == 2 || !pattern.empty()) {
            kinds = split_dots(tokens.size() == 2 ? std::string_view(tokens[1]) : pattern);
            for (std::size_t i = 0; i < kinds.size(); ++i)
                if (kinds[i] != (i + 1 == kinds.size() ? "node" : "switch"))
                    throw Error(where, "pattern '" +
                                           (tokens.size() == 2 ? tokens[1] : std::string(pattern)) +
                                           "' is not switch.switch...node (the tree plugin's)");
            if (kinds.size() != addr.size())
                throw Error(where, "address '" + tokens[0] + "' has " +
                                       std::to_string(addr.size()) + " components, its pattern " +
                                       std::to_string(kinds.size()));
        }
        for (const std::string& part : addr)
            if (part.empty()) throw Error(where, "address '" + tokens[0] + "' has an empty name");
        for (std::size_t i = 0; i < addr.size(); ++i) {
            const std::string up = i == 0 ? std::string() : addr[i - 1];
            const auto [it, added] = parent.emplace(addr[i], up);
            if (i + 1 == addr.size() && !added)
                throw Error(where, "node " + addr[i] + " is given twice");
            if (!added && it->second != up)
                throw Error(where, "switch " + addr[i] + " has two parents, " +
                                       (it->second.empty() ? "none" : it->second) + " and " +
                                       (up.empty() ? "none" : up) + " (only trees are supported)");
            if (i > 0) {
                auto& children = below[up];
                (i + 1 == addr.size() ? children.second : children.first).insert(addr[i]);
            }
        }
        if (addr.size() == 1) below["(flat)"].second.insert(addr[0]);
    }
    std::string conf;
    for (const auto& [sw, children] : below) {
        conf += "SwitchName=" + sw;
        const auto list = [](const std::set<std::string>& names) {
            std::string out;
            for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
            return out;
        };
        if (!children.first.empty()) conf += " Switches=" + list(children.first);
        if (!children.second.empty()) conf += " Nodes=" + list(children.second);
        conf += '\n';
    }
    return from_topology_conf(conf, name, std::move(nodes));
}

std::size_t Network::find(std::string_view node) const noexcept {
    return static_cast<std::size_t>(std::find(nodes_.begin(), nodes_.end(), node) - nodes_.begin());
}

std::size_t Network::common_level(std::size_t a, std::size_t b) const {
    for (std::size_t level = 0; level <= levels_; ++level)
        if (group(a, level) == group(b, level)) return level;
    return levels_;
}

std::string Network::describe() const {
    return description_;
}

}  // namespace cdsm
