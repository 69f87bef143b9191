// SPDX-License-Identifier: GPL-2.0
// cdsmctl calibrate on this machine: pinned ping-pongs through shared memory write a model file
// that libcdsm's reader takes, with positive figures; bad model files are refused clearly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <thread>

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

// A port nothing listens on now (the kernel's choice for a socket bound to port 0).
int free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
}

// Between two nodes: --peer measures the network against --serve (here both on this machine,
// through the loopback), the other figures measured or kept as without it.
TEST(Calibrate, MeasuresTheNetworkAgainstAServingPeer) {
    TempDir dir;
    const std::string address = "127.0.0.1:" + std::to_string(free_port());
    Result served;
    std::thread server([&] {
        served = cdsmctl({"calibrate", "--serve", address, "--serve-timeout", "60"});
    });
    const std::string path = (dir.path() / "model.json").string();
    const Result r = cdsmctl({"calibrate", "--peer", address, "--output", path, "--round-trips",
                              "100", "--bytes", "65536", "--streams", "3"});
    server.join();
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_EQ(served.status, 0) << served.err;
    EXPECT_THAT(served.out, HasSubstr("answered 90 round trips and 8 copies of 65536 bytes, then "
                                      "3 streams of 8 copies at once"));
    EXPECT_THAT(r.out, HasSubstr("network peer " + address + " (TCP): "));
    EXPECT_THAT(r.out, HasSubstr("inject  peer " + address + ", 3 streams at once: "));
    const cdsm::TimeModel model = cdsm::TimeModel::from_file(path);
    EXPECT_GT(model.network.latency_us, 0);
    EXPECT_GT(model.network.rate_gbs, 0);
    std::ifstream in(path);
    const auto levels = nlohmann::json::parse(in).at("calibrated").at("levels");
    const auto& network = levels.at("network");
    EXPECT_EQ(network.at("peer"), address);
    EXPECT_EQ(network.at("latency_us"), model.network.latency_us);
    EXPECT_EQ(network.at("round_trips"), 10);
    // The injection rate: what the three streams sent together, the model's max-rate cap.
    const auto& injection = levels.at("injection");
    EXPECT_EQ(injection.at("streams"), 3);
    // The model's cap: what they reached together, or one stream's rate if that was more.
    EXPECT_EQ(std::max(injection.at("gbs").get<double>(), model.network.rate_gbs),
              model.injection_gbs);
    EXPECT_GT(injection.at("gbs").get<double>(), 0);
    EXPECT_NE(model.injection_gbs, cdsm::TimeModel{}.injection_gbs);
    EXPECT_TRUE(injection.at("saturated").is_boolean());
}

TEST(Calibrate, NetworkErrorsAreClear) {
    TempDir dir;
    const std::string path = (dir.path() / "model.json").string();
    const std::string address = "127.0.0.1:" + std::to_string(free_port());
    const Result refused = cdsmctl({"calibrate", "--peer", address, "--output", path,
                                    "--round-trips", "10", "--bytes", "4096"});
    EXPECT_EQ(refused.status, 1);
    EXPECT_THAT(refused.err, HasSubstr("--peer " + address +
                                       ": Connection refused (is cdsmctl "
                                       "calibrate --serve running there?)"));
    EXPECT_FALSE(std::filesystem::exists(path));  // nothing written
    const Result bad = cdsmctl({"calibrate", "--peer", "nohost", "--output", path});
    EXPECT_EQ(bad.status, 1);
    EXPECT_THAT(bad.err, HasSubstr("--peer: 'nohost' is not HOST:PORT"));
    const Result lonely = cdsmctl({"calibrate", "--serve", address, "--serve-timeout", "1"});
    EXPECT_EQ(lonely.status, 1);
    EXPECT_THAT(lonely.err, HasSubstr("no peer connected within 1 s"));
    const Result both = cdsmctl({"calibrate", "--serve", "1", "--peer", "a:1"});
    EXPECT_EQ(both.status, 2);
    EXPECT_THAT(both.err, HasSubstr("--peer excludes --serve"));
    const Result streams = cdsmctl({"calibrate", "--streams", "4"});
    EXPECT_EQ(streams.status, 2);
    EXPECT_THAT(streams.err, HasSubstr("--streams requires --peer"));
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
