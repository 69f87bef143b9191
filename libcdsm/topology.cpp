// SPDX-License-Identifier: GPL-2.0
// Assembling the mapping hierarchy from the usable PUs and their ancestors.
#include "cdsm/topology.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "cdsm/error.hpp"

namespace cdsm {

std::string_view to_string(LevelKind kind) noexcept {
    switch (kind) {
        case LevelKind::kMachine:
            return "Machine";
        case LevelKind::kPackage:
            return "Package";
        case LevelKind::kNuma:
            return "NUMANode";
        case LevelKind::kL3:
            return "L3";
        case LevelKind::kL2:
            return "L2";
        case LevelKind::kCore:
            return "Core";
        case LevelKind::kPu:
            return "PU";
    }
    return "?";
}

Topology::Topology(std::string source, std::vector<LevelKind> raw_kinds, std::vector<RawPu> raw_pus)
    : source_(std::move(source)), raw_kinds_(std::move(raw_kinds)), raw_pus_(std::move(raw_pus)) {
    if (raw_pus_.empty()) throw Error(source_, "the machine has no usable processing unit");
    assemble();
}

void Topology::assemble() {
    const std::size_t raw_levels = raw_kinds_.size();
    // Distinct ancestors per raw level; a level with as many nodes as the level below it does
    // not branch and is never the lowest common ancestor of two PUs, so it is dropped.
    std::vector<std::size_t> distinct(raw_levels);
    for (std::size_t l = 0; l < raw_levels; ++l) {
        std::unordered_set<std::uint32_t> seen;
        for (const RawPu& p : raw_pus_) seen.insert(p.ancestors[l]);
        distinct[l] = seen.size();
    }
    std::vector<std::size_t> kept;
    for (std::size_t l = 0; l + 1 < raw_levels; ++l)
        if (distinct[l] != distinct[l + 1]) kept.push_back(l);
    kept.push_back(raw_levels - 1);
    if (distinct[kept.front()] != 1) kept.insert(kept.begin(), 0);  // always a single root

    levels_.assign(kept.size(), Level{});
    paths_.assign(raw_pus_.size() * kept.size(), 0);
    std::vector<std::unordered_map<std::uint32_t, std::uint32_t>> index(kept.size());
    pus_.clear();
    for (std::size_t p = 0; p < raw_pus_.size(); ++p) {
        pus_.push_back(raw_pus_[p].pu);
        for (std::size_t k = 0; k < kept.size(); ++k) {
            Level& level = levels_[k];
            level.kind = raw_kinds_[kept[k]];
            const std::uint32_t raw_id = raw_pus_[p].ancestors[kept[k]];
            auto [it, inserted] =
                index[k].try_emplace(raw_id, static_cast<std::uint32_t>(level.nodes.size()));
            if (inserted) {
                const std::uint32_t parent = k == 0 ? 0 : paths_[p * kept.size() + k - 1];
                level.nodes.push_back(Node{parent, {}});
                if (k > 0) levels_[k - 1].nodes[parent].children.push_back(it->second);
            }
            paths_[p * kept.size() + k] = it->second;
        }
    }
    levels_.back().kind = LevelKind::kPu;
    compute_shapes();
}

void Topology::compute_shapes() {
    // Bottom-up: a shape is the sorted list of its children's shapes, interned. Leaves are 0.
    std::map<std::vector<std::uint32_t>, std::uint32_t> interned{{{}, 0}};
    for (std::size_t level = levels_.size(); level-- > 0;) {
        for (Node& node : levels_[level].nodes) {
            std::vector<std::uint32_t> key;
            for (std::uint32_t child : node.children)
                key.push_back(levels_[level + 1].nodes[child].shape);
            std::sort(key.begin(), key.end());
            node.shape =
                interned.try_emplace(std::move(key), static_cast<std::uint32_t>(interned.size()))
                    .first->second;
        }
    }
}

std::optional<PuId> Topology::find_os_index(std::uint32_t os_index) const noexcept {
    for (std::size_t i = 0; i < pus_.size(); ++i)
        if (pus_[i].os_index == os_index) return static_cast<PuId>(i);
    return std::nullopt;
}

std::span<const std::uint32_t> Topology::children(std::size_t level, std::uint32_t node) const {
    return levels_.at(level).nodes.at(node).children;
}

std::uint32_t Topology::ancestor(PuId pu, std::size_t level) const {
    if (pu >= pus_.size() || level >= levels_.size())
        throw Error(source_, "PU " + std::to_string(pu) + " or level " + std::to_string(level) +
                                 " out of range");
    return paths_[pu * levels_.size() + level];
}

std::span<const std::uint32_t> Topology::path(PuId pu) const {
    if (pu >= pus_.size()) throw Error(source_, "PU " + std::to_string(pu) + " out of range");
    return std::span<const std::uint32_t>(paths_).subspan(pu * levels_.size(), levels_.size());
}

std::size_t Topology::common_level(PuId a, PuId b) const {
    std::size_t level = 0;
    while (level + 1 < levels_.size() && ancestor(a, level + 1) == ancestor(b, level + 1)) ++level;
    return level;
}

bool Topology::is_symmetric() const noexcept {
    for (const Level& level : levels_)
        for (const Node& node : level.nodes)
            if (node.children.size() != level.nodes.front().children.size()) return false;
    return true;
}

std::string Topology::describe() const {
    std::string out;
    for (const Level& level : levels_) {
        if (!out.empty()) out += ' ';
        out += to_string(level.kind);
        if (&level == &levels_.back()) break;
        auto [lo, hi] = std::minmax_element(
            level.nodes.begin(), level.nodes.end(),
            [](const Node& x, const Node& y) { return x.children.size() < y.children.size(); });
        out += ':' + std::to_string(lo->children.size());
        if (hi->children.size() != lo->children.size())
            out += '-' + std::to_string(hi->children.size());
    }
    return out;
}

Topology Topology::restricted_to(std::span<const std::uint32_t> os_indices) const {
    const std::unordered_set<std::uint32_t> wanted(os_indices.begin(), os_indices.end());
    std::vector<RawPu> kept;
    for (const RawPu& p : raw_pus_)
        if (wanted.contains(p.pu.os_index)) kept.push_back(p);
    if (kept.empty())
        throw Error(source_, "none of the " + std::to_string(wanted.size()) +
                                 " requested CPUs is a usable PU of this machine");
    return Topology(source_ + " restricted to " + std::to_string(kept.size()) + " PUs", raw_kinds_,
                    std::move(kept));
}

}  // namespace cdsm
