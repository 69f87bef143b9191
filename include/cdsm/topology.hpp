// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdsm {

/// Dense index of a processing unit inside one Topology: its rank among the usable PUs in hwloc
/// logical order (0 .. pu_count()-1). It is neither an hwloc logical index nor an OS index; ask
/// Topology::pu() for those.
using PuId = std::uint32_t;

/// What a level of the mapping hierarchy stands for. The distance between two PUs is the cost of
/// the kind of their lowest common ancestor (see Distances).
enum class LevelKind : std::uint8_t { kMachine, kPackage, kNuma, kL3, kL2, kCore, kPu };

/// "Machine", "Package", "NUMANode", "L3", "L2", "Core" or "PU".
std::string_view to_string(LevelKind kind) noexcept;

/// A usable processing unit. sched_setaffinity() takes os_index; hwloc's own tools show
/// logical_index. SMT siblings are usually not contiguous in OS numbering.
struct Pu {
    std::uint32_t logical_index;  ///< hwloc logical index of the PU object.
    std::uint32_t os_index;       ///< Linux CPU number.
};

/// The hardware hierarchy used for mapping: a tree from the machine (level 0) down to the usable
/// PUs (the last level). Only PUs that are online and in the allowed cpuset are kept. Levels
/// come from hwloc's Machine, Package, NUMA-carrying Group, Die/L3, L2, Core and PU objects;
/// a level in which no node branches (every node has exactly one child) is dropped, so a Core with
/// one PU or a Package with one L3 leaves a single level. Restricted or asymmetric machines keep
/// nodes of different arity (is_symmetric() is then false).
///
/// A Topology is an immutable value: cheap to move, copyable, and it holds no hwloc handle.
class Topology {
  public:
    /// The running machine, restricted to the PUs that are online and in the caller's allowed
    /// cpuset (cgroup cpuset). Throws Error if hwloc cannot discover it.
    static Topology from_system();
    /// Keeps hwloc from loading its I/O plugins (GPU, OpenCL, PCI), which a Topology never uses
    /// (hwloc's default filter leaves I/O objects out) but which load libX11, OpenCL and
    /// libpciaccess into the process: a third of a 32-task `cdsmctl map`'s CPU time. Without
    /// `xml`, its libxml2 reader too (it loads libxml2, ICU and libstdc++: a tenth of a 32-task
    /// `cdsmctl map` on a synthetic machine, more than the whole run once cdsmctl was linked
    /// with libstdc++): from_xml_file and from_xml_string then read with hwloc's own reader,
    /// which takes hwloc's exports as hwloc writes them, and read what it rejects (a comment,
    /// for one) again with libxml2's, provided no other topology of hwloc's is alive then (hwloc
    /// loads its plugins when the first one is created). Sets HWLOC_PLUGINS_BLACKLIST unless
    /// the user set it; call before any thread starts and before the first topology is loaded.
    static void skip_io_plugins(bool xml = true);

    /// An hwloc XML export (v1 or v2 format). Throws Error naming the file if it cannot be read
    /// or parsed.
    static Topology from_xml_file(const std::filesystem::path& path);

    /// An hwloc XML document held in memory; `name` names it in error messages.
    static Topology from_xml_string(std::string_view xml, std::string_view name = "XML buffer");

    /// An hwloc synthetic description such as "pack:2 l3:1 core:8 pu:2". Throws Error naming
    /// the description if hwloc rejects it, or if it has more than max_pus PUs (the default,
    /// 8192, is the most CPUs Debian's kernels run; hwloc needs seconds for such a machine).
    static Topology from_synthetic(std::string_view description, std::size_t max_pus = 8192);

    /// The same machine restricted to the given OS CPU numbers (e.g. a job's cgroup cpuset).
    /// Throws Error if none of them is a PU of this topology.
    Topology restricted_to(std::span<const std::uint32_t> os_indices) const;

    std::size_t pu_count() const noexcept { return pus_.size(); }
    const Pu& pu(PuId id) const { return pus_.at(id); }
    std::span<const Pu> pus() const noexcept { return pus_; }
    /// The PU with this OS index, if it is usable.
    std::optional<PuId> find_os_index(std::uint32_t os_index) const noexcept;

    /// Number of levels, the machine (0) and the PUs (level_count()-1) included.
    std::size_t level_count() const noexcept { return levels_.size(); }
    LevelKind level_kind(std::size_t level) const { return levels_.at(level).kind; }
    /// Number of nodes at a level; at the last level that is pu_count().
    std::size_t node_count(std::size_t level) const { return levels_.at(level).nodes.size(); }
    /// Children of a node (indices into the next level), in logical order.
    std::span<const std::uint32_t> children(std::size_t level, std::uint32_t node) const;
    /// The ancestor of a PU at a level (a node index of that level).
    std::uint32_t ancestor(PuId pu, std::size_t level) const;
    /// The ancestors of a PU at every level, the machine (0) first: ancestor(pu, level) for every
    /// level at once. The last is the PU's own node, whose index is `pu`. Throws Error if `pu` is
    /// out of range.
    std::span<const std::uint32_t> path(PuId pu) const;
    /// The deepest level at which both PUs have the same ancestor (level_count()-1 if a == b).
    std::size_t common_level(PuId a, PuId b) const;
    /// Nodes with the same shape (at any level) root isomorphic subtrees: their PUs can be
    /// exchanged without changing any distance.
    std::uint32_t shape(std::size_t level, std::uint32_t node) const {
        return levels_.at(level).nodes.at(node).shape;
    }
    /// True when every node of a level has as many children as every other node of that level.
    bool is_symmetric() const noexcept;

    /// Where the topology came from, e.g. "synthetic 'pack:2 pu:2'" or "XML file x.xml".
    const std::string& source() const noexcept { return source_; }
    /// A one-line summary such as "Machine:2 Package:8 Core:2 PU" (arity of each level; "2-8"
    /// when the arity varies).
    std::string describe() const;

    /// One usable PU before the hierarchy is assembled: its identity and, for every candidate
    /// level, the hwloc logical index of its ancestor there. Public only so that the
    /// implementation files can share it.
    struct RawPu {
        Pu pu;
        std::vector<std::uint32_t> ancestors;
    };
    Topology(std::string source, std::vector<LevelKind> raw_kinds, std::vector<RawPu> raw_pus);

  private:
    struct Node {
        std::uint32_t parent;
        std::vector<std::uint32_t> children;
        std::uint32_t shape = 0;
    };
    struct Level {
        LevelKind kind;
        std::vector<Node> nodes;
    };

    void assemble();
    void compute_shapes();

    std::string source_;
    std::vector<LevelKind> raw_kinds_;
    std::vector<RawPu> raw_pus_;
    std::vector<Pu> pus_;
    std::vector<Level> levels_;
    std::vector<std::uint32_t> paths_;  // pu * level_count() + level -> node
};

}  // namespace cdsm
