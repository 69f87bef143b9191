// SPDX-License-Identifier: GPL-2.0
// Reading a machine through hwloc: the running system, an XML export or a synthetic description.
#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include "cdsm/error.hpp"
#include "cdsm/topology.hpp"

namespace cdsm {
namespace {

// The most PUs a synthetic description may have: NR_CPUS of Debian's kernels.
constexpr std::uint64_t kMaxSyntheticPus = 8192;

struct HwlocTopologyDeleter {
    void operator()(hwloc_topology* topology) const noexcept { hwloc_topology_destroy(topology); }
};
using HwlocTopology = std::unique_ptr<hwloc_topology, HwlocTopologyDeleter>;

// The level kind for an hwloc depth, or nothing if that depth adds no distance class.
std::optional<LevelKind> classify(hwloc_topology_t topology, int depth) {
    switch (hwloc_get_depth_type(topology, depth)) {
        case HWLOC_OBJ_MACHINE:
            return LevelKind::kMachine;
        case HWLOC_OBJ_PACKAGE:
            return LevelKind::kPackage;
        case HWLOC_OBJ_DIE:
        case HWLOC_OBJ_L3CACHE:
            return LevelKind::kL3;
        case HWLOC_OBJ_L2CACHE:
            return LevelKind::kL2;
        case HWLOC_OBJ_CORE:
            return LevelKind::kCore;
        case HWLOC_OBJ_PU:
            return LevelKind::kPu;
        case HWLOC_OBJ_GROUP: {
            // hwloc 2 attaches NUMA nodes to the object with the same cpuset; a Group exists
            // for them when no Package or cache matches, and then it is the NUMA level.
            const int count = hwloc_get_nbobjs_by_depth(topology, depth);
            for (int i = 0; i < count; ++i)
                if (hwloc_get_obj_by_depth(topology, depth, static_cast<unsigned>(i))
                        ->memory_arity > 0)
                    return LevelKind::kNuma;
            return std::nullopt;
        }
        default:
            return std::nullopt;
    }
}

Topology extract(hwloc_topology_t topology, std::string source) {
    const int pu_depth = hwloc_get_type_depth(topology, HWLOC_OBJ_PU);
    std::vector<int> depths;
    std::vector<LevelKind> kinds;
    for (int depth = 0; depth <= pu_depth; ++depth) {
        if (auto kind = classify(topology, depth)) {
            depths.push_back(depth);
            kinds.push_back(*kind);
        }
    }
    const hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topology);
    std::vector<Topology::RawPu> pus;
    hwloc_obj_t pu = nullptr;
    while ((pu = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_PU, pu)) != nullptr) {
        if (!hwloc_bitmap_isincluded(pu->cpuset, allowed)) continue;
        Topology::RawPu raw{{pu->logical_index, pu->os_index}, {}};
        for (int depth : depths)
            raw.ancestors.push_back(
                depth == pu_depth
                    ? pu->logical_index
                    : hwloc_get_ancestor_obj_by_depth(topology, depth, pu)->logical_index);
        pus.push_back(std::move(raw));
    }
    return Topology(std::move(source), std::move(kinds), std::move(pus));
}

Topology load(const std::string& source, const std::function<int(hwloc_topology_t)>& configure) {
    hwloc_topology_t raw = nullptr;
    if (hwloc_topology_init(&raw) != 0) throw Error(source, "hwloc_topology_init failed");
    HwlocTopology topology(raw);
    if (configure(raw) != 0)
        throw Error(source, std::string("hwloc rejected it (") + std::strerror(errno) + ")");
    if (hwloc_topology_load(raw) != 0)
        throw Error(source, std::string("hwloc could not load it (") + std::strerror(errno) + ")");
    return extract(raw, source);
}

// The synthetic types that hwloc builds as a plain tree level: its names for them as this file
// writes them (hwloc takes more spellings; those go through hwloc), their kind and their rank in
// hwloc's order of types (Package, Die, L3, L2, Core, PU).
struct SimpleType {
    std::string_view name;
    LevelKind kind;
    int rank;
};
constexpr SimpleType kSimpleTypes[] = {
    {"package", LevelKind::kPackage, 0}, {"pack", LevelKind::kPackage, 0},
    {"socket", LevelKind::kPackage, 0},  {"die", LevelKind::kL3, 1},
    {"l3", LevelKind::kL3, 2},           {"l2", LevelKind::kL2, 3},
    {"core", LevelKind::kCore, 4},       {"pu", LevelKind::kPu, 5}};

// A synthetic description of the plain form "TYPE:N TYPE:N ... pu:N" (types from kSimpleTypes
// in hwloc's order, each once, N a decimal number from 1, single spaces or newlines), built
// directly: the same machine hwloc builds from it (PUs and every node numbered in order, OS
// indices equal to the logical ones), without hwloc inserting every object by its cpuset, which
// took 70 % of a 4096-task `cdsmctl map` (bench/mapping/README.md). Anything else: nothing, and
// hwloc builds it.
std::optional<Topology> plain_synthetic(const std::string& text, const std::string& source) {
    std::vector<LevelKind> kinds{LevelKind::kMachine};
    std::vector<std::uint64_t> arities;
    int last_rank = -1;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t end = text.find_first_of(" \n", pos);
        const std::string_view token = std::string_view(text).substr(
            pos, (end == std::string::npos ? text.size() : end) - pos);
        pos = end == std::string::npos ? text.size() : end + 1;
        if (token.empty()) return std::nullopt;  // two separators in a row
        const std::size_t colon = token.find(':');
        if (colon == std::string_view::npos) return std::nullopt;
        const std::string_view name = token.substr(0, colon), number = token.substr(colon + 1);
        const auto type = std::find_if(std::begin(kSimpleTypes), std::end(kSimpleTypes),
                                       [&](const SimpleType& t) { return t.name == name; });
        if (type == std::end(kSimpleTypes) || type->rank <= last_rank) return std::nullopt;
        last_rank = type->rank;
        if (number.empty() || number.size() > 5 || number[0] < '1' || number[0] > '9')
            return std::nullopt;
        std::uint64_t arity = 0;
        for (const char c : number) {
            if (c < '0' || c > '9') return std::nullopt;
            arity = arity * 10 + static_cast<std::uint64_t>(c - '0');
        }
        kinds.push_back(type->kind);
        arities.push_back(arity);
    }
    if (last_rank != kSimpleTypes[std::size(kSimpleTypes) - 1].rank)
        return std::nullopt;  // no PU level last (or nothing at all)
    std::uint64_t pu_count = 1;
    for (std::uint64_t a : arities) pu_count *= a;  // at most kMaxSyntheticPus: checked before
    // below[level]: PUs under one node of that level (level 0: the machine).
    std::vector<std::uint64_t> below(kinds.size(), 1);
    for (std::size_t level = kinds.size() - 1; level-- > 0;)
        below[level] = below[level + 1] * arities[level];
    std::vector<Topology::RawPu> pus(pu_count);
    for (std::uint32_t pu = 0; pu < pu_count; ++pu) {
        pus[pu].pu = Pu{pu, pu};
        pus[pu].ancestors.resize(kinds.size());
        for (std::size_t level = 0; level < kinds.size(); ++level)
            pus[pu].ancestors[level] = static_cast<std::uint32_t>(pu / below[level]);
    }
    return Topology(source, std::move(kinds), std::move(pus));
}

constexpr const char* kBlacklist = "HWLOC_PLUGINS_BLACKLIST";
constexpr const char* kIoPlugins = "hwloc_gl,hwloc_opencl,hwloc_pci";
// Whether skip_io_plugins(false) left hwloc's libxml2 reader out (the user's own list is kept).
bool libxml_left_out = false;

// The document without its comments, each with the line end after it: hwloc's own reader
// rejects them (a comment line in hwloc's test machines is enough). An unterminated comment is
// left for the reader to reject.
std::string without_comments(const std::string& xml) {
    std::string out;
    out.reserve(xml.size());
    std::size_t pos = 0;
    for (;;) {
        const std::size_t open = xml.find("<!--", pos);
        if (open == std::string::npos) return out.append(xml, pos);
        const std::size_t close = xml.find("-->", open + 4);
        if (close == std::string::npos) return xml;
        out.append(xml, pos, open - pos);
        pos = close + 3;
        if (pos < xml.size() && xml[pos] == '\n') ++pos;
    }
}

}  // namespace

void Topology::skip_io_plugins(bool xml) {
    // hwloc reads the list when it initialises its components for the process's first live
    // topology (again after the last one is destroyed).
    if (std::getenv(kBlacklist) != nullptr) return;
    setenv(kBlacklist, xml ? kIoPlugins : "hwloc_gl,hwloc_opencl,hwloc_pci,hwloc_xml_libxml", 0);
    libxml_left_out = !xml;
}

Topology Topology::from_system() {
    return load("this system", [](hwloc_topology_t) { return 0; });
}

Topology Topology::from_xml_file(const std::filesystem::path& path) {
    // Read the file ourselves so that a missing file is reported as such, not as bad XML.
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("XML file " + path.string(), "cannot be opened");
    std::ostringstream text;
    text << in.rdbuf();
    return from_xml_string(text.str(), "XML file " + path.string());
}

Topology Topology::from_xml_string(std::string_view xml, std::string_view name) {
    const std::string buffer(xml);
    if (buffer.find("<topology") == std::string::npos)
        throw Error(name, "is not an hwloc XML topology (no <topology> element)");
    const auto from = [&name](const std::string& text) {
        return load(std::string(name), [&text](hwloc_topology_t t) {
            // hwloc wants the terminating NUL counted in the size.
            return hwloc_topology_set_xmlbuffer(t, text.c_str(), static_cast<int>(text.size() + 1));
        });
    };
    if (!libxml_left_out) return from(buffer);
    try {
        return from(without_comments(buffer));
    } catch (const Error&) {
    }
    // hwloc's own reader takes its exports as hwloc writes them: the rest goes to libxml2's,
    // which hwloc loads when it next initialises its components.
    setenv(kBlacklist, kIoPlugins, 1);
    libxml_left_out = false;
    return from(buffer);
}

Topology Topology::from_synthetic(std::string_view description, std::size_t max_pus) {
    const std::string text(description);
    // Bytes that are not printable ASCII are shown as \xHH in messages.
    std::string shown;
    for (const unsigned char c : text) {
        if (c >= 0x20 && c < 0x7f) {
            shown += static_cast<char>(c);
        } else {
            static constexpr char kHex[] = "0123456789abcdef";
            shown += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
        }
    }
    const std::string source = "synthetic topology '" + shown + "'";
    // hwloc builds whatever the description asks for: a level of 10^8 objects takes it minutes
    // and gigabytes, 2 x 45 x 1555 PUs (one level written "core:45pu:1555", no space needed)
    // seconds. Multiply the arities first, reading the levels as hwloc 2.9's synthetic parser
    // does: spaces and newlines between levels, "[...]" (an attached memory object, no PUs),
    // "TYPE:" before a number, the number as strtoul(…, 0) reads it (decimal, 0x hex, 0 octal),
    // "(...)" attributes after it. Where hwloc would stop with an error, the count stops too.
    // hwloc reads up to a NUL byte; the count below must read what hwloc reads.
    if (text.find('\0') != std::string::npos) throw Error(source, "contains a NUL byte");
    const std::uint64_t limit = std::min<std::uint64_t>(max_pus, kMaxSyntheticPus);
    std::uint64_t pus = 1;
    // Just past the next `c` from p, or null (where hwloc reports a missing `c`).
    const auto past = [](const char* p, char c) -> const char* {
        p = std::strchr(p, c);
        return p ? p + 1 : nullptr;
    };
    const char* pos = text.c_str();
    if (*pos == '(') pos = past(pos, ')');  // the root's attributes
    while (pos != nullptr) {
        while (*pos == ' ' || *pos == '\n') ++pos;
        if (*pos == '\0') break;
        if (*pos == '[') {
            pos = past(pos, ']');
            continue;
        }
        if ((*pos < '0' || *pos > '9') && !(pos = past(pos, ':'))) break;
        char* end = nullptr;
        errno = 0;
        const unsigned long n = std::strtoul(pos, &end, 0);
        if (end == pos) break;
        const std::uint64_t arity = errno == ERANGE ? limit + 1 : std::uint64_t(n);
        pus = std::min(pus * std::min(arity, limit + 1), limit + 1);
        pos = *end == '(' ? past(end, ')') : end;
    }
    if (pus > limit) {
        throw Error(source, "describes more than " + std::to_string(limit) + " PUs" +
                                (limit == kMaxSyntheticPus
                                     ? " (Debian's kernels run at most that many CPUs)"
                                     : ""));
    }
    if (auto plain = plain_synthetic(text, source)) return std::move(*plain);
    return load(source, [&text](hwloc_topology_t t) {
        return hwloc_topology_set_synthetic(t, text.c_str());
    });
}

}  // namespace cdsm
