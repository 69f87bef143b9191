// SPDX-License-Identifier: GPL-2.0
// A job's whole matrix (issue 29): `cdsmctl job-matrix` on captured monitoring files and node
// matrices, and `cdsmctl run` of a real mpirun (Open MPI's monitoring turned on by cdsmctl)
// against a fake cdsmd.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "fake_cdsmd.hpp"
#include "support.hpp"

namespace cdsm::cdsmctl::test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const std::string kRingFiles = std::string(CDSM_TEST_DATA_DIR) + "/monitoring/ring4";

json rank_task(int index, int tid, int rank, json cpu) {
    return {{"index", index}, {"tid", tid}, {"pid", tid}, {"rank", rank}, {"cpu", cpu}};
}

// A node's matrix as cdsmd answers it: ranks a and b, `events` between them.
json node_json(int a, int b, int events) {
    return {{"app_id", 3},
            {"dim", 2},
            {"cells", {{0, events}, {events, 0}}},
            {"tasks", {rank_task(0, 100 + a, a, 2 * a), rank_task(1, 100 + b, b, 2 * b)}}};
}

TEST(JobMatrix, MergesMonitoringAndNodesIntoOneMatrix) {
    TempDir dir;
    const auto n1 = dir.write("n1.json", node_json(0, 1, 70).dump());
    const auto n2 = dir.write("n2.json", node_json(2, 3, 30).dump());
    const Result r = cdsmctl({"job-matrix", "--monitoring", kRingFiles, "--node-matrix", "n1=" + n1,
                              "--node-matrix", "n2=" + n2, "--node-topology", "pack:2 core:2 pu:2",
                              "--format", "json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const json doc = json::parse(r.out);
    EXPECT_EQ(doc.at("schema"), "cdsm-matrix/1");
    EXPECT_EQ(doc.at("unit"), "bytes");
    EXPECT_EQ(doc.at("nodes"), json({"n1", "n1", "n2", "n2"}));
    // Ranks 0 and 1 on CPUs 0 and 2: two cores of one package; 2 and 3 on CPUs 4 and 6.
    EXPECT_EQ(doc.at("levels")[0][1], "package");
    EXPECT_EQ(doc.at("levels")[1][2], "network");
    EXPECT_EQ(doc.at("shared_memory")[2][3], 30);
    EXPECT_EQ(doc.at("matrix")[0][3], 2 * 41120);
    EXPECT_EQ(doc.at("totals").at("inter_node").at("bytes"), 4 * 41120 + 4 * 24);
    EXPECT_EQ(r.err, "");

    // The heatmap draws the node boundary between ranks 1 and 2, and the totals.
    const Result text =
        cdsmctl({"job-matrix", "--monitoring", kRingFiles, "--node-matrix", "n1=" + n1,
                 "--node-matrix", "n2=" + n2, "--charset", "ascii", "--colour", "never"});
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_THAT(text.out, HasSubstr("\n   +----+----+\n"));
    EXPECT_THAT(text.out, HasSubstr("bytes per pair"));
    EXPECT_THAT(text.out, HasSubstr("between nodes"));
    EXPECT_THAT(text.out, HasSubstr("164576"));  // 4 x 41120 + 4 x 24 bytes between n1 and n2
}

TEST(JobMatrix, WithoutMonitoringSaysWhatIsMissing) {
    TempDir dir;
    const auto n1 = dir.write("n1.json", node_json(0, 1, 70).dump());
    std::filesystem::create_directory(dir.path() / "empty");
    const Result r = cdsmctl({"job-matrix", "--monitoring", (dir.path() / "empty").string(),
                              "--node-matrix", "n1=" + n1, "--format", "csv"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "0,70\n70,0\n");
    EXPECT_THAT(r.err, HasSubstr("missing: Open MPI wrote no monitoring file into"));
    const Result bad = cdsmctl({"job-matrix", "--node-matrix", "n1"});
    EXPECT_EQ(bad.status, 2);
    EXPECT_THAT(bad.err, HasSubstr("--node-matrix n1: expected HOST=FILE"));
    const Result twice = cdsmctl({"job-matrix", "--monitoring", kRingFiles, "--node-matrix",
                                  "n1=" + n1, "--node-matrix", "n2=" + n1});
    EXPECT_EQ(twice.status, 1);
    EXPECT_THAT(twice.err, HasSubstr("rank 0 is also on node n1"));
}

#ifdef CDSM_MPI_RING
// cdsmctl run of a real mpirun: the ranks get Open MPI's monitoring through the environment,
// and the job's matrix counts every pair exactly.
TEST(JobMatrix, RunOfMpirunCountsEveryPairExactly) {
    TempDir dir;
    const std::string host = [] {
        char h[256] = "";
        gethostname(h, sizeof(h) - 1);
        return std::string(h);
    }();
    FakeCdsmd daemon([](const json& request) -> json {
        const auto cmd = request.at("cmd").get<std::string>();
        if (cmd == "track") return {{"app_id", 5}};
        // While it runs, the ranks' CPUs; after, cdsmd no longer knows them (exited).
        if (cmd == "tasks")
            return {{"tasks",
                     {rank_task(0, 10, 0, 0), rank_task(1, 11, 1, 0), rank_task(2, 12, 2, 0),
                      rank_task(3, 13, 3, 0)}}};
        if (cmd == "matrix")
            return {{"app_id", 5},
                    {"dim", 4},
                    {"cells", {{0, 9, 0, 9}, {9, 0, 9, 0}, {0, 9, 0, 9}, {9, 0, 9, 0}}},
                    {"tasks",
                     {rank_task(0, 10, 0, nullptr), rank_task(1, 11, 1, nullptr),
                      rank_task(2, 12, 2, nullptr), rank_task(3, 13, 3, nullptr)}}};
        return refusal("unexpected", "EINVAL");
    });
    const std::string mon = (dir.path() / "mon").string(), out = (dir.path() / "job.json").string();
    const Result r = cdsmctl({"--socket",
                              daemon.path(),
                              "run",
                              "--monitoring-dir",
                              mon,
                              "--job-matrix",
                              out,
                              "--",
                              CDSM_MPIEXEC,
                              "--oversubscribe",
                              "--allow-run-as-root",
                              "-np",
                              "4",
                              "--mca",
                              "btl",
                              "self,vader",
                              CDSM_MPI_RING,
                              "--pattern",
                              "ring",
                              "--iterations",
                              "10",
                              "--bytes",
                              "4096"},
                             {"OMPI_MCA_pml=ob1"});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr("cdsmctl: job matrix (4 ranks, "));
    std::ifstream in(out);
    const json doc = json::parse(in);
    EXPECT_EQ(doc.at("unit"), "bytes");
    EXPECT_EQ(doc.at("nodes"), json({host, host, host, host}));
    EXPECT_EQ(doc.at("cpus"), json({0, 0, 0, 0}));  // seen while it ran
    EXPECT_EQ(doc.at("levels")[0][2], "core");      // one CPU: the same core
    EXPECT_EQ(doc.at("shared_memory")[1][2], 9);
    EXPECT_EQ(doc.at("totals").at("inter_node").at("bytes"), 0);

    // The application's messages alone, every pair: a ring neighbour 10 messages of 4096 + 16
    // bytes (the ring's header) each way, the others none.
    const Result app =
        cdsmctl({"job-matrix", "--monitoring", mon, "--application-only", "--format", "json"});
    ASSERT_EQ(app.status, 0) << app.err;
    const json a = json::parse(app.out);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            const bool neighbours = (i + 1) % 4 == j || (j + 1) % 4 == i;
            EXPECT_EQ(a.at("bytes")[i][j], neighbours ? 2 * 10 * 4112 : 0) << i << "," << j;
            EXPECT_EQ(a.at("messages")[i][j], neighbours ? 20 : 0) << i << "," << j;
        }
    // Open MPI's internal messages (the final Allreduce) come on top in the run's matrix.
    EXPECT_GE(doc.at("bytes")[0][1].get<long>(), 2 * 10 * 4112);
}

TEST(JobMatrix, RunRefusesAMonitoringDirectoryInUse) {
    TempDir dir;
    FakeCdsmd daemon([](const json&) -> json { return {{"app_id", 5}}; });
    dir.write("prof.0.prof", "# POINT TO POINT\n");
    const Result r = cdsmctl({"--socket", daemon.path(), "run", "--monitoring-dir",
                              dir.path().string(), "--", CDSM_MPIEXEC, "--version"});
    EXPECT_EQ(r.status, 1);
    EXPECT_THAT(r.err, HasSubstr("is not empty"));
    EXPECT_TRUE(daemon.requests().empty());
}
#endif

}  // namespace
}  // namespace cdsm::cdsmctl::test
