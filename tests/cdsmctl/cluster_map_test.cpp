// SPDX-License-Identifier: GPL-2.0
// cdsmctl cluster-map, the real binary on Open MPI monitoring files captured here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support.hpp"

namespace cdsm::cdsmctl::test {
namespace {

using ::testing::HasSubstr;

const std::string kRing4 = std::string(CDSM_TEST_DATA_DIR) + "/monitoring/ring4";

std::string slurp(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST(ClusterMap, RingFromMonitoringFiles) {
    TempDir dir;
    const auto hosts = dir.path() / "hosts", ranks = dir.path() / "ranks";
    const Result r = cdsmctl({"cluster-map", "--monitoring", kRing4, "--nodes", "n[1-2]",
                              "--node-topology", "pack:1 core:2 pu:2", "--current", "cyclic",
                              "--hostfile", hosts, "--rankfile", ranks, "--format", "json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    // 4 ranks in a ring, each sending 41120 bytes in 10 messages to both neighbours, and Open
    // MPI's internal 24 bytes in 2 messages to two others. Cyclic cuts all 4 ring links (and 4
    // of the 8 internal flows); two neighbours per node cut 2.
    EXPECT_EQ(j["before"]["inter_node_bytes"], 8 * 41120 + 4 * 24);
    EXPECT_EQ(j["before"]["inter_node_messages"], 8 * 10 + 4 * 2);
    EXPECT_EQ(j["after"]["inter_node_bytes"], 4 * 41120 + 4 * 24);
    EXPECT_EQ(j["after"]["inter_node_messages"], 4 * 10 + 4 * 2);
    EXPECT_LT(j["after"]["time_s"].get<double>(), j["before"]["time_s"].get<double>());
    // The files: one host per rank, two ranks per node, ring neighbours together.
    const std::string hostfile = slurp(hosts);
    std::vector<std::string> node;
    std::istringstream lines(hostfile);
    for (std::string line; std::getline(lines, line);) node.push_back(line);
    ASSERT_EQ(node.size(), 4u);
    EXPECT_NE(node[0], node[2]);
    EXPECT_NE(node[1], node[3]);
    EXPECT_THAT(slurp(ranks), HasSubstr("rank 0=" + node[0] + " slot=0:"));
}

TEST(ClusterMap, ClearErrors) {
    Result r = cdsmctl({"cluster-map", "--nodes", "n1", "--node-topology", "pack:1 core:2 pu:1"});
    EXPECT_EQ(r.status, 2);
    EXPECT_THAT(r.err, HasSubstr("give --monitoring DIR or --matrix FILE"));
    r = cdsmctl({"cluster-map", "--monitoring", kRing4, "--node-topology", "pack:1 core:2 pu:1"});
    EXPECT_EQ(r.status, 2);
    EXPECT_THAT(r.err, HasSubstr("--nodes is required"));
    r = cdsmctl({"cluster-map", "--monitoring", kRing4, "--nodes", "n1", "--node-topology",
                 "pack:1 core:2 pu:1"});
    EXPECT_EQ(r.status, 1);
    EXPECT_THAT(r.err, HasSubstr("4 ranks do not fit on 1 nodes of 2 cores"));
    TempDir dir;
    r = cdsmctl({"cluster-map", "--monitoring", kRing4, "--nodes", "n[1-2]", "--node-topology",
                 "pack:1 core:2 pu:1", "--current", dir.write("h", "n1\nn3\nn2\nn2\n")});
    EXPECT_EQ(r.status, 1);
    EXPECT_THAT(r.err, HasSubstr("h:2: 'n3' is not one of the job's nodes"));
    r = cdsmctl({"cluster-map", "--monitoring", kRing4, "--nodes", "n[1-2]", "--node-topology",
                 "pack:1 core:2 pu:1", "--time-model", dir.write("m.json", "{\"node\": 1}")});
    EXPECT_EQ(r.status, 1);
    EXPECT_THAT(r.err, HasSubstr("m.json: node: must be an object"));
}

}  // namespace
}  // namespace cdsm::cdsmctl::test
