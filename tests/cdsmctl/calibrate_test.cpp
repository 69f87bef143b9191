// SPDX-License-Identifier: GPL-2.0
// cdsmctl calibrate on this machine: pinned ping-pongs through shared memory write a model file
// that libcdsm's reader takes, with positive figures; bad model files are refused clearly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "cdsm/error.hpp"
#include "cdsm/time_model.hpp"
#include "support.hpp"

namespace cdsm::cdsmctl::test {
namespace {

using ::testing::HasSubstr;

TEST(Calibrate, WritesAModelTheReaderTakes) {
    TempDir dir;
    const std::string path = (dir.path() / "etc" / "time-model.json").string();
    const Result r =
        cdsmctl({"calibrate", "--output", path, "--round-trips", "100", "--bytes", "65536"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("written: " + path));
    const cdsm::TimeModel model = cdsm::TimeModel::from_file(path);
    EXPECT_GT(model.socket.latency_us, 0);
    EXPECT_GT(model.socket.rate_gbs, 0);
    EXPECT_GT(model.node.latency_us, 0);
    // What was measured, and where.
    std::ifstream in(path);
    const auto doc = nlohmann::json::parse(in);
    const auto& levels = doc.at("calibrated").at("levels");
    ASSERT_TRUE(levels.contains("socket")) << doc.dump();  // any machine of 2 cores
    EXPECT_EQ(levels.at("socket").at("latency_us"), model.socket.latency_us);
    EXPECT_EQ(levels.at("socket").at("cpus").size(), 2u);
    // The network's figures are the defaults: nothing between nodes is measured here.
    EXPECT_EQ(model.network.latency_us, cdsm::TimeModel{}.network.latency_us);
    // cluster-map takes the file.
    const Result map = cdsmctl({"cluster-map", "--matrix", dir.write("m.csv", "0,5\n5,0\n"),
                                "--nodes", "n[1-2]", "--node-topology", "pack:1 core:2 pu:1",
                                "--time-model", path, "--format", "json"});
    ASSERT_EQ(map.status, 0) << map.err;
    EXPECT_EQ(nlohmann::json::parse(map.out).at("time_model").at("socket").at("latency_us"),
              model.socket.latency_us);
}

TEST(Calibrate, KeepsTheBaseModelsOtherFiguresAndRefusesBadOnes) {
    TempDir dir;
    const auto base = dir.write("base.json", R"({"network": {"latency_us": 1.5, "rate_gbs": 12}})");
    const std::string path = (dir.path() / "out.json").string();
    const Result r = cdsmctl({"calibrate", "--time-model", base, "--output", path, "--round-trips",
                              "50", "--bytes", "4096"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(cdsm::TimeModel::from_file(path).network.rate_gbs, 12);
    const auto bad = dir.write("bad.json", R"({"socket": {"latency_us": -1}})");
    const Result refused = cdsmctl({"calibrate", "--time-model", bad, "--output", path});
    EXPECT_EQ(refused.status, 1);
    EXPECT_THAT(refused.err, HasSubstr(bad + ": socket: latency_us must be 0 or more"));
    const auto broken = dir.write("broken.json", "{");
    const Result unparsed =
        cdsmctl({"cluster-map", "--matrix", dir.write("m.csv", "0,5\n5,0\n"), "--nodes", "n1",
                 "--node-topology", "pack:1 core:2 pu:1", "--time-model", broken});
    EXPECT_EQ(unparsed.status, 1);
    EXPECT_THAT(unparsed.err, HasSubstr(broken + ": is not valid JSON"));
}

// The node-level map shows the model's time beside the cost: each event a short message at its
// level's latency, the busiest task's sum.
TEST(Calibrate, MapShowsThePredictedTime) {
    TempDir dir;
    const auto model = dir.write("model.json", R"({"socket": {"latency_us": 1, "rate_gbs": 4},
        "node": {"latency_us": 2, "rate_gbs": 4}})");
    const auto matrix = dir.write("m.csv", "0,5\n5,0\n");
    // Balanced: one task per package, so the node's latency: 5 x 2 us.
    const Result r =
        cdsmctl({"map", "--matrix", matrix, "--topology", "pack:2 core:2 pu:1", "--time-model",
                 model, "--json", "--current", "0,1", "--spread", "balanced"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    EXPECT_DOUBLE_EQ(doc.at("time_s").get<double>(), 10e-6);
    EXPECT_DOUBLE_EQ(doc.at("time_s_current").get<double>(), 5e-6);  // CPUs 0, 1: one package
    const Result text = cdsmctl({"map", "--matrix", matrix, "--topology", "pack:2 core:2 pu:1",
                                 "--time-model", model, "--spread", "pack"});
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_THAT(text.out, HasSubstr("time (model, 1 event = 1 short message): 5e-06 s"));
}

}  // namespace
}  // namespace cdsm::cdsmctl::test
