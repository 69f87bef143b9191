// SPDX-License-Identifier: GPL-2.0
#include "cdsm/topology.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hwloc.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>

#include "cdsm/error.hpp"
#include "cdsm/topology_json.hpp"
#include "test_support.hpp"

namespace cdsm {
namespace {

using test::error_of;
using test::machine;
using ::testing::HasSubstr;

TEST(Topology, SyntheticKeepsEveryBranchingLevel) {
    const Topology t = Topology::from_synthetic("pack:2 core:2 pu:2");
    EXPECT_EQ(t.pu_count(), 8u);
    EXPECT_EQ(t.describe(), "Machine:2 Package:2 Core:2 PU");
    EXPECT_TRUE(t.is_symmetric());
    EXPECT_EQ(t.common_level(0, 1), 2u);  // SMT siblings meet at the core
    EXPECT_EQ(t.common_level(0, 2), 1u);  // other core, same package
    EXPECT_EQ(t.common_level(0, 4), 0u);  // other package
    EXPECT_EQ(t.common_level(5, 5), 3u);
}

TEST(Topology, LevelsThatDoNotBranchCollapse) {
    // One L3 per package and one PU per core: the package and core levels add nothing.
    const Topology t = Topology::from_synthetic("pack:2 l3:1 core:4 pu:1");
    EXPECT_EQ(t.describe(), "Machine:2 L3:4 PU");
    // One package only: the machine level is the package's L3.
    EXPECT_EQ(Topology::from_synthetic("pack:1 l3:1 core:4 pu:2").describe(), "L3:4 Core:2 PU");
    EXPECT_EQ(Topology::from_synthetic("pack:1 core:1 pu:1").describe(), "PU");
}

TEST(Topology, XmlKeepsOsAndLogicalIndicesApart) {
    const Topology t = machine("16em64t-4s2c2t.xml");
    ASSERT_EQ(t.pu_count(), 16u);
    EXPECT_EQ(t.describe(), "Machine:4 L3:2 Core:2 PU");
    // SMT siblings are logical 0 and 1 but OS 0 and 8.
    EXPECT_EQ(t.pu(0).logical_index, 0u);
    EXPECT_EQ(t.pu(0).os_index, 0u);
    EXPECT_EQ(t.pu(1).logical_index, 1u);
    EXPECT_EQ(t.pu(1).os_index, 8u);
    EXPECT_EQ(t.common_level(0, 1), t.level_count() - 2);
    EXPECT_EQ(t.find_os_index(8), PuId{1});
    EXPECT_EQ(t.find_os_index(1), PuId{4});  // OS 1 is on the second package
    EXPECT_EQ(t.find_os_index(99), std::nullopt);

    const Topology big = machine("32em64t-2n8c2t-pci-noio.xml");
    EXPECT_EQ(big.pu_count(), 32u);
    EXPECT_EQ(big.pu(1).os_index, 16u);
    EXPECT_EQ(big.describe(), "Machine:2 L3:8 Core:2 PU");
    EXPECT_EQ(machine("24em64t-2n6c2t-pci.xml").describe(), "Machine:2 L3:6 Core:2 PU");
}

TEST(Topology, RestrictedCpusetGivesAnAsymmetricTree) {
    // The XML's allowed cpuset keeps 10 of 16 PUs; two packages keep a single core.
    const Topology t = machine("16amd64-8n2c-cpusets.xml");
    ASSERT_EQ(t.pu_count(), 10u);
    std::set<std::uint32_t> os;
    for (const Pu& pu : t.pus()) os.insert(pu.os_index);
    EXPECT_EQ(os, (std::set<std::uint32_t>{0, 1, 2, 3, 5, 6, 12, 13, 14, 15}));
    EXPECT_FALSE(t.is_symmetric());
    EXPECT_EQ(t.describe(), "Machine:6 Package:1-2 PU");
    EXPECT_EQ(t.common_level(*t.find_os_index(0), *t.find_os_index(1)), 1u);
    EXPECT_EQ(t.common_level(*t.find_os_index(5), *t.find_os_index(6)), 0u);
}

TEST(Topology, RestrictingToCpusRebuildsTheHierarchy) {
    const Topology t = machine("32em64t-2n8c2t-pci-noio.xml");
    // Two cores (OS 0/16 and 1/17) of the first package.
    const std::uint32_t cpus[] = {0, 16, 1, 17};
    const Topology r = t.restricted_to(cpus);
    EXPECT_EQ(r.pu_count(), 4u);
    EXPECT_EQ(r.describe(), "L3:2 Core:2 PU");
    EXPECT_EQ(r.pu(1).os_index, 16u);
    // One PU on each of two cores of both packages: the core level collapses.
    const std::uint32_t spread[] = {0, 1, 8, 9};
    EXPECT_EQ(t.restricted_to(spread).describe(), "Machine:2 L3:2 PU");
    const std::uint32_t none[] = {99};
    EXPECT_THAT(error_of([&] { (void)t.restricted_to(none); }), HasSubstr("none of the 1"));
}

TEST(Topology, RunningMachineHasOnlyOnlinePus) {
    const Topology t = Topology::from_system();
    ASSERT_GE(t.pu_count(), 1u);
    std::set<std::uint32_t> os;
    for (const Pu& pu : t.pus()) {
        EXPECT_TRUE(os.insert(pu.os_index).second);
        std::ifstream online("/sys/devices/system/cpu/cpu" + std::to_string(pu.os_index) +
                             "/online");
        int flag = 1;  // cpu0 often has no "online" file: it cannot go offline
        if (online) online >> flag;
        EXPECT_EQ(flag, 1) << "PU with OS index " << pu.os_index << " is offline";
    }
}

TEST(Topology, APathListsAPusAncestorsDownToItself) {
    for (const Topology& t : {Topology::from_synthetic("pack:2 l3:2 core:2 pu:2"),
                              machine("16amd64-8n2c-cpusets.xml")}) {
        for (PuId pu = 0; pu < t.pu_count(); ++pu) {
            const auto path = t.path(pu);
            ASSERT_EQ(path.size(), t.level_count());
            for (std::size_t level = 0; level < t.level_count(); ++level)
                EXPECT_EQ(path[level], t.ancestor(pu, level));
            EXPECT_EQ(path.back(), pu);  // the last level's node of PU k is node k
            EXPECT_EQ(path.front(), 0u);
        }
        EXPECT_THAT(error_of([&] { (void)t.path(static_cast<PuId>(t.pu_count())); }),
                    HasSubstr("out of range"));
    }
}

// The machine hwloc builds from a synthetic description, read back from its XML export.
Topology built_by_hwloc(const std::string& description) {
    hwloc_topology_t raw = nullptr;
    EXPECT_EQ(hwloc_topology_init(&raw), 0);
    EXPECT_EQ(hwloc_topology_set_synthetic(raw, description.c_str()), 0) << description;
    EXPECT_EQ(hwloc_topology_load(raw), 0) << description;
    char* xml = nullptr;
    int length = 0;
    EXPECT_EQ(hwloc_topology_export_xmlbuffer(raw, &xml, &length, 0), 0) << description;
    const std::string text(xml, static_cast<std::size_t>(std::max(length - 1, 0)));
    hwloc_free_xmlbuffer(raw, xml);
    hwloc_topology_destroy(raw);
    return Topology::from_xml_string(text, description);
}

// Plain descriptions are built without hwloc (topology_hwloc.cpp): the same machine, level by
// level and PU by PU, as hwloc's, for every type that path takes and for descriptions it leaves
// to hwloc.
TEST(Topology, SyntheticMachinesAreTheOnesHwlocBuilds) {
    for (const std::string description :
         {"pack:2 core:2 pu:2", "pack:2 l3:1 core:32 pu:2", "pack:4 l3:2 core:8 pu:2", "pu:1",
          "pu:7", "core:3 pu:2", "socket:2 die:2 l3:1 l2:2 core:2 pu:2", "package:3 pu:5",
          "pack:1 l3:1 core:4 pu:2", "pack:2 core:1 pu:1", "pack:2\ncore:3 pu:2",
          "pack:2 core:1024 pu:2", "Pack:2 PU:2", "pack:2 [numa] core:2 pu:2", "2 3 2",
          "pack:2  core:2 pu:2", "pack:0x2 core:2 pu:2", "pack:2 l1:1 core:2 pu:2"}) {
        const Topology mine = Topology::from_synthetic(description);
        const Topology theirs = built_by_hwloc(description);
        EXPECT_EQ(mine.describe(), theirs.describe()) << description;
        ASSERT_EQ(mine.level_count(), theirs.level_count()) << description;
        for (std::size_t level = 0; level < mine.level_count(); ++level) {
            EXPECT_EQ(mine.level_kind(level), theirs.level_kind(level)) << description;
            EXPECT_EQ(mine.node_count(level), theirs.node_count(level)) << description;
        }
        ASSERT_EQ(mine.pu_count(), theirs.pu_count()) << description;
        for (PuId pu = 0; pu < mine.pu_count(); ++pu) {
            EXPECT_EQ(mine.pu(pu).logical_index, theirs.pu(pu).logical_index) << description;
            EXPECT_EQ(mine.pu(pu).os_index, theirs.pu(pu).os_index) << description;
            const auto a = mine.path(pu), b = theirs.path(pu);
            EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()))
                << description << " PU " << pu;
        }
    }
}

// What a test compares of two topologies: levels, PUs and every PU's ancestors.
std::string shape_of(const Topology& t) {
    std::string out = t.describe();
    for (PuId pu = 0; pu < t.pu_count(); ++pu) {
        out += " | " + std::to_string(t.pu(pu).logical_index) + "/" +
               std::to_string(t.pu(pu).os_index) + ":";
        for (std::uint32_t node : t.path(pu)) out += " " + std::to_string(node);
    }
    return out;
}

// The test below, in its child process: reads the test machines with and then without
// libxml2's reader and returns how many checks failed.
int read_without_libxml() {
    unsetenv("HWLOC_PLUGINS_BLACKLIST");
    const char* files[] = {"16amd64-8n2c-cpusets.xml", "16em64t-4s2c2t.xml",
                           "24em64t-2n6c2t-pci.xml", "32em64t-2n8c2t-pci-noio.xml"};
    std::vector<std::string> with_libxml;
    for (const char* f : files) with_libxml.push_back(shape_of(machine(f)));
    Topology::skip_io_plugins(false);
    int wrong = 0;
    for (std::size_t k = 0; k < std::size(files); ++k) {
        const std::string shape = shape_of(machine(files[k]));
        if (shape != with_libxml[k]) {
            std::fprintf(stderr, "%s: %s\nnot %s\n", files[k], shape.c_str(),
                         with_libxml[k].c_str());
            ++wrong;
        }
    }
    // Still without libxml2's reader: hwloc's own read all four (comment lines and all).
    const char* blacklist = std::getenv("HWLOC_PLUGINS_BLACKLIST");
    if (blacklist == nullptr ||
        std::string(blacklist).find("hwloc_xml_libxml") == std::string::npos) {
        std::fprintf(stderr, "libxml2's reader was loaded\n");
        ++wrong;
    }
    // Single-quoted attributes: hwloc's own reader rejects them, libxml2's reads them.
    std::ifstream in(test::data_path("topologies/16em64t-4s2c2t.xml"));
    std::string quoted((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(quoted.begin(), quoted.end(), '"', '\'');
    if (shape_of(Topology::from_xml_string(quoted, "quoted.xml")) != with_libxml[1]) {
        std::fprintf(stderr, "quoted.xml is another machine\n");
        ++wrong;
    }
    if (std::string(std::getenv("HWLOC_PLUGINS_BLACKLIST")).find("hwloc_xml_libxml") !=
        std::string::npos) {
        std::fprintf(stderr, "quoted.xml was not read again by libxml2's reader\n");
        ++wrong;
    }
    // Bad XML is read again by libxml2's reader, whose message names the document.
    const std::string bad =
        error_of([] { (void)Topology::from_xml_string("<topology><object", "bad.xml"); });
    if (bad.find("bad.xml: hwloc") == std::string::npos) {
        std::fprintf(stderr, "bad XML: %s\n", bad.c_str());
        ++wrong;
    }
    std::fprintf(stderr, "wrong: %d\n", wrong);
    return wrong;
}

// Without libxml2's reader (skip_io_plugins(false), as cdsmctl asks), XML machines are read by
// hwloc's own reader, comments and all, into the same machines as libxml2's reads; what that
// reader rejects is read again by libxml2's. In a child process: the plugin list is the
// process's.
TEST(Topology, XmlMachinesReadWithoutLibxmlAreTheSame) {
    EXPECT_EXIT(std::exit(read_without_libxml()), ::testing::ExitedWithCode(0), "wrong: 0");
}

TEST(Topology, BadInputsNameTheInput) {
    EXPECT_THAT(error_of([] { (void)Topology::from_synthetic("pack:2 bogus:3"); }),
                HasSubstr("synthetic topology 'pack:2 bogus:3'"));
    EXPECT_THAT(error_of([] { (void)Topology::from_xml_file("/nonexistent/m.xml"); }),
                HasSubstr("/nonexistent/m.xml: cannot be opened"));
    EXPECT_THAT(error_of([] { (void)Topology::from_xml_string("<topology><object", "bad.xml"); }),
                HasSubstr("bad.xml: hwloc"));
    EXPECT_THAT(error_of([] { (void)Topology::from_xml_string("hello", "text.xml"); }),
                HasSubstr("text.xml: is not an hwloc XML topology"));
}

// Found by tests/fuzz/fuzz_topology: hwloc builds whatever a description asks for, and
// `--topology "core:99999996 pu:2"` kept cdsmctl busy for minutes and gigabytes.
TEST(Topology, SyntheticMachinesWithMorePusThanAKernelRunsAreRefused) {
    for (const char* description : {"pack:2 core:4097 pu:1", "core:100000 pu:2",
                                    "pack:2 [numa] core:2(memory=1GB) 3000 pu:2x"}) {
        EXPECT_THAT(error_of([description] { (void)Topology::from_synthetic(description); }),
                    HasSubstr("more than 8192 PUs"))
            << description;
    }
    EXPECT_EQ(Topology::from_synthetic("pack:4 core:1024 pu:2").pu_count(), 8192u);
    // Found by a CI run of fuzz_topology (14 s in hwloc): hwloc reads "555555" up to the NUL
    // byte, the count read one level "...:2"; and a bare count followed by junk and a colon.
    using namespace std::string_literals;
    EXPECT_THAT(error_of([] { (void)Topology::from_synthetic("555555\0\xff#9st:2"s); }),
                HasSubstr("contains a NUL byte"));
    EXPECT_THAT(error_of([] { (void)Topology::from_synthetic("555555\xff#9st:2"); }),
                ::testing::Not(HasSubstr("hwloc could not load")));
    // Found by CI's fuzz_topology (15 s in hwloc, under the sanitizers): hwloc needs no space
    // between levels ("core:45pu:1555" is 45 cores of 1555 PUs) and reads numbers in hex and
    // octal too; the count read one level of 45.
    for (const char* description :
         {"node:2 pack:1 core:45pu:1555", "pack:0x10 core:0x400 pu:2", "pack:2 core:020000 pu:1",
          "(memory=1GB) pack:2\ncore:4097 pu:1", "pack:2 core:3(memory=1GB)pu:2000"}) {
        EXPECT_THAT(error_of([description] { (void)Topology::from_synthetic(description); }),
                    HasSubstr("more than 8192 PUs"))
            << description;
    }
    EXPECT_EQ(Topology::from_synthetic("pack:0x2 core:2pu:2").pu_count(), 8u);
    // A caller's own lower limit (the fuzzer's: hwloc takes seconds for 8152 PUs in one level).
    EXPECT_THAT(error_of([] { (void)Topology::from_synthetic("pack:2 core:513 pu:1", 1024); }),
                HasSubstr("describes more than 1024 PUs"));
    EXPECT_EQ(Topology::from_synthetic("pack:2 core:256 pu:2", 1024).pu_count(), 1024u);
}

TEST(TopologyJson, TheSchemaHasEveryField) {
    const Topology t = Topology::from_synthetic("pack:2 core:2 pu:2");
    const nlohmann::json j = topology_json(t, Distances(t));
    EXPECT_EQ(j.at("schema"), kTopologySchema);
    EXPECT_EQ(j.at("pu_count"), 8);
    EXPECT_EQ(j.at("symmetric"), true);
    EXPECT_EQ(j.at("pus").size(), 8u);
    EXPECT_EQ(j.at("distances").size(), 8u);
    ASSERT_EQ(j.at("levels").size(), t.level_count());
    const auto& top = j.at("levels").at(0);
    for (const char* key : {"depth", "kind", "nodes", "arity_min", "arity_max", "cost"})
        EXPECT_TRUE(top.contains(key)) << key;
    EXPECT_EQ(j.at("pus").at(1).at("os_index"), t.pu(1).os_index);
}

}  // namespace
}  // namespace cdsm
