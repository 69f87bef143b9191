// SPDX-License-Identifier: GPL-2.0
// A job's whole matrix (issue 29): Open MPI's monitoring files captured from Debian's Open MPI
// 4.1.4 merged with nodes' matrices as cdsmd sends them.
#include "cdsm/job_matrix.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "cdsm/error.hpp"
#include "cdsm/matrix_io.hpp"
#include "cdsm/monitoring.hpp"

namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const std::filesystem::path kMonitoringDir =
    std::filesystem::path(CDSM_TEST_DATA_DIR) / "monitoring";

json rank_task(int index, int tid, int pid, json rank, json cpu) {
    return {{"index", index}, {"tid", tid}, {"pid", pid}, {"rank", rank}, {"cpu", cpu}};
}

// cdsmd's matrix reply for a node with ranks a and b (b's task listed first) and a thread of a.
json node_matrix_reply(int a, int b, int cpu_a, int cpu_b) {
    return {{"app_id", 1},
            {"dim", 3},
            {"cells", {{0, 9, 4}, {9, 0, 5}, {4, 5, 0}}},
            {"tasks",
             {rank_task(0, 200, 200, b, cpu_b), rank_task(1, 100, 100, a, cpu_a),
              rank_task(2, 101, 100, a, 7)}}};
}

std::string merge_error(const auto& call) {
    try {
        call();
    } catch (const cdsm::Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(JobMatrix, MergesMonitoringWithTwoNodes) {
    const cdsm::RankTraffic ring = cdsm::read_monitoring(kMonitoringDir / "ring4");
    std::vector<cdsm::NodeMatrix> nodes{
        cdsm::node_matrix_from_json(node_matrix_reply(0, 1, 0, 1), "n1", "n1.json"),
        cdsm::node_matrix_from_json(node_matrix_reply(2, 3, 0, 1), "n2", "n2.json")};
    nodes[0].topology = cdsm::Topology::from_synthetic("pack:2 core:2 pu:2");
    nodes[1].topology = cdsm::Topology::from_synthetic("pack:2 l3:2 core:2 pu:1");
    const cdsm::JobMatrix job = cdsm::merge_job_matrix(&ring, nodes);
    ASSERT_EQ(job.ranks, 4u);
    EXPECT_EQ(job.node_of_rank, (std::vector<std::string>{"n1", "n1", "n2", "n2"}));
    // Rank 0's CPU is its main thread's (tid 100 = pid), not its other thread's (CPU 7).
    EXPECT_EQ(job.cpu_of_rank[0], 0u);
    EXPECT_EQ(job.level(0, 1), cdsm::PairLevel::kCore);  // PUs 0 and 1: SMT siblings
    EXPECT_EQ(job.level(2, 3), cdsm::PairLevel::kL3);    // two cores of one L3
    EXPECT_EQ(job.level(1, 2), cdsm::PairLevel::kNetwork);
    EXPECT_EQ(job.level(3, 3), cdsm::PairLevel::kSelf);
    // The captured files: E 0 1 and E 1 0 of 41120 bytes in 10 messages, I 0 1 and I 1 0 of 24
    // in 2; pair 0-2 only I lines.
    EXPECT_EQ(job.bytes->at(0, 1), 2u * 41120 + 2 * 24);
    EXPECT_EQ(job.messages->at(0, 1), 24u);
    EXPECT_EQ(job.bytes->at(0, 2), 48u);
    // Shared memory: rank b's row with rank a's (9) and a's thread (4); the thread's events
    // with its own rank (5) are no pair.
    EXPECT_EQ(job.shared_memory.at(0, 1), 9u + 4);
    EXPECT_EQ(job.shared_memory.at(2, 3), 13u);
    EXPECT_EQ(job.shared_memory.at(1, 2), 0u);
    EXPECT_TRUE(job.missing.empty()) << job.missing.front();

    const json doc = cdsm::job_matrix_json(job, "ring");
    EXPECT_EQ(doc.at("schema"), "cdsm-matrix/1");
    EXPECT_EQ(doc.at("unit"), "bytes");
    EXPECT_EQ(doc.at("matrix"), doc.at("bytes"));
    EXPECT_EQ(doc.at("levels")[1][2], "network");
    EXPECT_EQ(doc.at("nodes")[3], "n2");
    // Between nodes: pairs 0-3 and 1-2 (E lines both ways) and 0-2, 1-3 (I lines).
    EXPECT_EQ(doc.at("totals").at("inter_node").at("bytes"), 4u * 41120 + 4 * 24);
    EXPECT_EQ(doc.at("totals").at("inter_node").at("messages"), 48u);
    EXPECT_EQ(doc.at("totals").at("nodes")[0].at("node"), "n1");
    EXPECT_EQ(doc.at("totals").at("nodes")[0].at("bytes"), 2u * 41120 + 2 * 24);
    EXPECT_EQ(doc.at("totals").at("nodes")[1].at("shared_memory_events"), 13u);
    // libcdsm's matrix reader takes the document as it is.
    EXPECT_EQ(cdsm::matrix_from_json(doc, "doc"), *job.bytes);
    EXPECT_THAT(cdsm::job_matrix_pairs_csv(job), HasSubstr("\n1,2,n1,n2,network,82240,20,0\n"));
}

TEST(JobMatrix, WithoutMonitoringKeepsTheNodesAndSaysWhatIsMissing) {
    const std::vector<cdsm::NodeMatrix> nodes{
        cdsm::node_matrix_from_json(node_matrix_reply(0, 2, 0, 4), "n1", "n1.json")};
    const cdsm::JobMatrix job = cdsm::merge_job_matrix(nullptr, nodes);
    ASSERT_EQ(job.ranks, 3u);  // ranks 0 and 2 seen: 3 ranks at least
    EXPECT_FALSE(job.bytes.has_value());
    EXPECT_EQ(job.primary().at(0, 2), 13u);
    EXPECT_EQ(job.level(0, 2), cdsm::PairLevel::kNode);  // no topology: the node only
    EXPECT_EQ(job.level(0, 1), cdsm::PairLevel::kUnknown);
    ASSERT_EQ(job.missing.size(), 2u);
    EXPECT_THAT(job.missing[0], HasSubstr("no Open MPI monitoring"));
    EXPECT_THAT(job.missing[1], HasSubstr("rank(s) 1 are on no node's matrix"));
    EXPECT_EQ(cdsm::job_matrix_json(job, "x").at("unit"), "events");
}

TEST(JobMatrix, CpusUnknownAfterTheTasksExitedAreSaid) {
    auto reply = node_matrix_reply(0, 1, 0, 1);
    for (auto& t : reply["tasks"]) t["cpu"] = nullptr;
    std::vector<cdsm::NodeMatrix> nodes{cdsm::node_matrix_from_json(reply, "n1", "n1.json")};
    nodes[0].topology = cdsm::Topology::from_synthetic("pack:2 core:2 pu:2");
    const cdsm::JobMatrix job = cdsm::merge_job_matrix(nullptr, nodes);
    EXPECT_EQ(job.level(0, 1), cdsm::PairLevel::kNode);
    EXPECT_THAT(job.missing.back(), HasSubstr("2 rank(s) have no known CPU"));
}

TEST(JobMatrix, AnEndedStepsRanksAreWhereCdsmdLastSawThem) {
    // A Slurm report's matrix, taken after the step ended: no task runs (cpu null), cdsmd's
    // last_cpu says where each ran; a live task's cpu wins over it.
    auto reply = node_matrix_reply(0, 1, 0, 1);
    for (auto& t : reply["tasks"]) t["last_cpu"] = t["cpu"], t["cpu"] = nullptr;
    reply["tasks"][0]["cpu"] = 2;  // rank 1 runs: its cpu, not its last_cpu (1)
    std::vector<cdsm::NodeMatrix> nodes{cdsm::node_matrix_from_json(reply, "n1", "n1.json")};
    nodes[0].topology = cdsm::Topology::from_synthetic("pack:2 core:2 pu:2");
    const cdsm::JobMatrix job = cdsm::merge_job_matrix(nullptr, nodes);
    EXPECT_EQ(job.cpu_of_rank, (std::vector<std::optional<std::uint32_t>>{0u, 2u}));
    EXPECT_EQ(job.level(0, 1), cdsm::PairLevel::kPackage);  // PUs 0 and 2: two cores of one
    EXPECT_EQ(cdsm::job_matrix_json(job, "x").at("cpus"), json::parse("[0,2]"));
}

TEST(JobMatrix, BadInputIsRefused) {
    const cdsm::RankTraffic ring = cdsm::read_monitoring(kMonitoringDir / "ring4");
    // Rank 1 on two nodes.
    EXPECT_THAT(merge_error([&] {
                    cdsm::merge_job_matrix(
                        &ring,
                        {cdsm::node_matrix_from_json(node_matrix_reply(0, 1, 0, 1), "n1", "a"),
                         cdsm::node_matrix_from_json(node_matrix_reply(2, 1, 0, 1), "n2", "b")});
                }),
                HasSubstr("rank 1 is also on node n1"));
    // A rank the monitoring does not have.
    EXPECT_THAT(merge_error([&] {
                    cdsm::merge_job_matrix(&ring, {cdsm::node_matrix_from_json(
                                                      node_matrix_reply(0, 9, 0, 1), "n1", "a")});
                }),
                HasSubstr("rank 9 is beyond the job's 4 ranks"));
    auto reply = node_matrix_reply(0, 1, 0, 1);
    reply["tasks"][2]["index"] = 3;
    EXPECT_THAT(merge_error([&] { cdsm::node_matrix_from_json(reply, "n1", "n1.json"); }),
                HasSubstr("n1.json: task 2's index 3 is not a row of the 3x3 matrix"));
    reply["tasks"][2].erase("index");
    EXPECT_THAT(merge_error([&] { cdsm::node_matrix_from_json(reply, "n1", "n1.json"); }),
                HasSubstr("task 2 has no \"index\""));
    EXPECT_THAT(merge_error([&] {
                    cdsm::node_matrix_from_json(json{{"x", 1}}, "n1", "n1.json");
                }),
                HasSubstr("n1.json"));
}

}  // namespace
