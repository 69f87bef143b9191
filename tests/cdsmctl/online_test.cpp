// SPDX-License-Identifier: GPL-2.0
// The subcommands that talk to cdsmd, against a fake cdsmd speaking the protocol: what they
// send, how they print the replies, and how they report refusals and broken replies.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>

#include "fake_cdsmd.hpp"
#include "labelled_matrix.hpp"
#include "support.hpp"

namespace cdsm::cdsmctl::test {
namespace {

using nlohmann::json;

json task(int index, int tid, json rank, int cpu) {
    return {{"index", index},
            {"tid", tid},
            {"pid", 1000},
            {"rank", rank},
            {"comm", "solver"},
            {"cpu", cpu},
            {"affinity", {0, 1, 2, 3, 8}},
            {"exited", false},
            {"placed_pu", cpu},
            {"left_alone", false},
            {"reason", nullptr}};
}

// Four tasks: matrix rows 0..3 have MPI ranks 2, 0, 3, 1; rows 0 and 2 talk most.
json four_tasks() {
    return json::array(
        {task(0, 1002, 2, 0), task(1, 1003, 0, 1), task(2, 1004, 3, 2), task(3, 1005, 1, 3)});
}

json matrix_reply() {
    return {{"app_id", 7},
            {"dim", 4},
            {"cells", {{0, 5, 90, 1}, {5, 0, 2, 30}, {90, 2, 0, 4}, {1, 30, 4, 0}}},
            {"tasks", four_tasks()}};
}

json app_entry() {
    return {{"app_id", 7},           {"name", "solver"},      {"comm", "solver"},
            {"kind", "pid"},         {"uid", 1000},           {"root_pid", 1000},
            {"nr_tasks", 4},         {"nr_live_tasks", 4},    {"ended", false},
            {"start_ns", 1e9},       {"end_ns", 0},           {"events", 12345},
            {"cost_current", 310},   {"cost_best", 250},      {"migrations", 2},
            {"interval_ms", 150},    {"last_mapped_ns", 2e9}, {"time_current_s", 1.5e-4},
            {"time_best_s", 1.25e-4}};
}

// A fake cdsmd that knows application 7, "solver", and nothing else.
json solver_cdsmd(const json& request) {
    const auto cmd = request.at("cmd").get<std::string>();
    if (request.contains("app") && request["app"] != 7 && request["app"] != "solver")
        return refusal("application '" + request["app"].dump() + "' not found", "ENOENT");
    if (cmd == "list") return {{"apps", {app_entry()}}};
    if (cmd == "tasks") return {{"tasks", four_tasks()}};
    if (cmd == "matrix") return matrix_reply();
    if (cmd == "map")
        return {
            {"placement", {0, 2, 1, 3}},
            {"cost_before", 310},
            {"cost_after", 250},
            {"time_before_s", 1.5e-4},
            {"time_after_s", 1.25e-4},
            {"baselines", {{"compact", 310}, {"scatter", 400}, {"random", 380}, {"scotch", 250}}},
            {"moved", {{{"tid", 1003}, {"from", {0, 1, 2, 3}}, {"to", 2}}}},
            {"failed", {{{"tid", 1004}, {"error", "No such process"}}}},
            {"applied", !request.at("dry_run").get<bool>()}};
    if (cmd == "stats")
        return {{"kernel", {{"faults", 42}, {"status", {{"rearm_available", true}}}}},
                {"daemon", {{"uptime_s", 12}, {"apps", 1}}}};
    if (cmd == "topology")  // as cdsmd sent it before cdsm-topology/1 (no depth, arities)
        return {{"source", "this machine"},
                {"summary", "Machine:2 PU"},
                {"levels", json::array({{{"kind", "Machine"}, {"nodes", 1}, {"cost", 10}},
                                        {{"kind", "PU"}, {"nodes", 2}, {"cost", 0}}})},
                {"pus", json::array({{{"id", 0}, {"os_index", 0}, {"logical_index", 0}},
                                     {{"id", 1}, {"os_index", 4}, {"logical_index", 1}}})},
                {"distances", {{0, 10}, {10, 0}}}};
    if (cmd == "track") return {{"app_id", 8}};
    if (cmd == "untrack") return json::object();
    return refusal("unknown command '" + cmd + "'", "EINVAL");
}

Result ask(const FakeCdsmd& daemon, std::vector<std::string> args) {
    args.insert(args.begin(), {"--socket", daemon.path()});
    return cdsmctl(args);
}

TEST(Online, ListAsTableAndAsJson) {
    FakeCdsmd daemon(solver_cdsmd);
    const Result text = ask(daemon, {"list"});
    ASSERT_EQ(text.status, 0) << text.err;
    const auto rows = lines(text.out);
    ASSERT_EQ(rows.size(), 2u) << text.out;
    EXPECT_EQ(rows[0].rfind("ID", 0), 0u);
    for (const char* cell : {"7", "solver", "pid", "4/4", "12345", "310", "250", "0.00015/0.000125",
                             "150ms", "running"})
        EXPECT_NE(rows[1].find(cell), std::string::npos) << cell << " in " << rows[1];
    EXPECT_NE(rows[0].find(" TIME_S "), std::string::npos) << rows[0];

    const Result j = ask(daemon, {"list", "--json"});
    ASSERT_EQ(j.status, 0) << j.err;
    EXPECT_EQ(json::parse(j.out), json({{"apps", {app_entry()}}}));
    EXPECT_EQ(daemon.requests().back(), json({{"cmd", "list"}}));
}

TEST(Online, ListShowsTheCgroupOfACgroupApplication) {
    json step = app_entry();
    step["kind"] = "cgroup";
    step["root_pid"] = 0;
    step["cgroup"] = "/system.slice/slurmstepd.scope/job_7/step_0";
    step["mode"] = "detect";
    step["slurm"] = {{"job_id", 7}, {"step", "0"}, {"user", "alice"}};
    FakeCdsmd daemon([&](const json& request) -> json {
        if (request.at("cmd") == "list") return {{"apps", {app_entry(), step}}};
        return solver_cdsmd(request);
    });
    const Result text = ask(daemon, {"list"});
    ASSERT_EQ(text.status, 0) << text.err;
    const auto rows = lines(text.out);
    ASSERT_EQ(rows.size(), 3u) << text.out;
    EXPECT_NE(rows[0].find("PID/CGROUP"), std::string::npos) << rows[0];
    EXPECT_NE(rows[1].find(" 1000 "), std::string::npos) << rows[1];
    EXPECT_NE(rows[2].find(" /system.slice/slurmstepd.scope/job_7/step_0 "), std::string::npos)
        << rows[2];
    // Its Slurm job and step, and its mode.
    EXPECT_NE(rows[0].find(" JOB "), std::string::npos) << rows[0];
    EXPECT_NE(rows[2].find(" 7.0 "), std::string::npos) << rows[2];
    EXPECT_NE(rows[2].find(" detect "), std::string::npos) << rows[2];
}

TEST(Online, TasksShowRankCpuAndAffinity) {
    FakeCdsmd daemon(solver_cdsmd);
    const Result r = ask(daemon, {"tasks", "solver"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(daemon.requests().back(), json({{"cmd", "tasks"}, {"app", "solver"}}));
    const auto rows = lines(r.out);
    ASSERT_EQ(rows.size(), 5u) << r.out;
    EXPECT_NE(rows[0].find("RANK"), std::string::npos);
    EXPECT_NE(rows[1].find("1002"), std::string::npos);
    EXPECT_NE(rows[1].find("0-3,8"), std::string::npos) << rows[1];

    const Result j = ask(daemon, {"tasks", "7", "--json"});
    ASSERT_EQ(j.status, 0) << j.err;
    EXPECT_EQ(daemon.requests().back(), json({{"cmd", "tasks"}, {"app", 7}}));
    EXPECT_EQ(json::parse(j.out).at("tasks"), four_tasks());
}

TEST(Online, ShowByRankReordersRowsAndColumns) {
    FakeCdsmd daemon(solver_cdsmd);
    const Result r = ask(daemon, {"show", "7", "--by", "rank", "--format", "json"});
    ASSERT_EQ(r.status, 0) << r.err;
    // The whole run unless --view aged.
    EXPECT_EQ(daemon.requests().back(), json({{"cmd", "matrix"}, {"app", 7}, {"view", "whole"}}));
    const auto shown = json::parse(r.out);
    EXPECT_EQ(shown.at("labels"), (std::vector<std::string>{"0", "1", "2", "3"}));
    // Ranks 0..3 are rows 1, 3, 0, 2 of cdsmd's matrix.
    const std::vector<std::size_t> row_of_rank{1, 3, 0, 2};
    const auto cells = matrix_reply().at("cells");
    for (std::size_t a = 0; a < 4; ++a)
        for (std::size_t b = 0; b < 4; ++b)
            EXPECT_EQ(shown.at("matrix")[a][b], cells[row_of_rank[a]][row_of_rank[b]]);
    EXPECT_EQ(shown.at("tasks"), (std::vector<int>{1003, 1005, 1002, 1004}));
    EXPECT_EQ(shown.at("task_info")[0].at("rank"), 0);
    // This cdsmd sent no "view": one that old had the aged matrix only, and the output says so.
    EXPECT_EQ(shown.at("view"), "aged");
    EXPECT_EQ(shown.at("title"), "application 7, aged");
}

TEST(Online, ShowAsksForTheViewAndSaysWhichItShows) {
    FakeCdsmd daemon([](const json& request) {
        json reply = matrix_reply();
        reply["view"] = request.value("view", "aged");
        return request.at("cmd") == "matrix" ? reply : refusal("no", "EINVAL");
    });
    const Result whole = ask(daemon, {"show", "7", "--format", "json"});
    ASSERT_EQ(whole.status, 0) << whole.err;
    EXPECT_EQ(json::parse(whole.out).at("view"), "whole");
    EXPECT_EQ(json::parse(whole.out).at("title"), "application 7, whole run");
    const Result aged = ask(daemon, {"show", "7", "--view", "aged", "--format", "json"});
    ASSERT_EQ(aged.status, 0) << aged.err;
    EXPECT_EQ(daemon.requests().back(), json({{"cmd", "matrix"}, {"app", 7}, {"view", "aged"}}));
    EXPECT_EQ(json::parse(aged.out).at("view"), "aged");
    EXPECT_EQ(json::parse(aged.out).at("title"), "application 7, aged");
    const Result bad = ask(daemon, {"show", "7", "--view", "recent"});
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("recent"), std::string::npos) << bad.err;
}

TEST(Online, ShowByRankLabelsAHybridCodesThreads) {
    // Two ranks of two processes (pids 2000, 3000), each with a main thread and a second thread;
    // rank 1's second thread joined first.
    auto t = [](int index, int tid, int pid, int rank) {
        json j = task(index, tid, rank, index);
        j["pid"] = pid;
        return j;
    };
    FakeCdsmd daemon([&](const json& request) {
        json reply = matrix_reply();
        reply["tasks"] = json::array(
            {t(0, 3001, 3000, 1), t(1, 2000, 2000, 0), t(2, 3000, 3000, 1), t(3, 2001, 2000, 0)});
        return request.at("cmd") == "matrix" ? reply : refusal("no", "EINVAL");
    });
    const Result r = ask(daemon, {"show", "7", "--by", "rank", "--format", "json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto shown = json::parse(r.out);
    EXPECT_EQ(shown.at("labels"), (std::vector<std::string>{"0", "0.1", "1", "1.1"}));
    EXPECT_EQ(shown.at("tasks"), (std::vector<int>{2000, 2001, 3000, 3001}));
}

TEST(Online, ShowHeatmapOfAnApplication) {
    FakeCdsmd daemon(solver_cdsmd);
    const Result r = ask(daemon, {"show", "solver", "--charset", "ascii", "--by", "tid"});
    ASSERT_EQ(r.status, 0) << r.err;
    std::size_t rows = 0;
    for (const auto& line : lines(r.out)) rows += line.find('|') != std::string::npos;
    EXPECT_EQ(rows, 4u) << r.out;
    EXPECT_NE(r.out.find("1005"), std::string::npos) << r.out;
}

TEST(Online, ShowByRankWithoutRanksIsAnError) {
    FakeCdsmd daemon([](const json& request) {
        json reply = matrix_reply();
        for (auto& t : reply["tasks"]) t["rank"] = nullptr;
        return request.at("cmd") == "matrix" ? reply : refusal("no", "EINVAL");
    });
    const Result r = ask(daemon, {"show", "7", "--by", "rank"});
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("no task has an MPI rank"), std::string::npos) << r.err;
}

TEST(Online, MapSendsDryRunAndAlgorithmAndPrintsTheOutcome) {
    FakeCdsmd daemon(solver_cdsmd);
    const Result r = ask(daemon, {"map", "solver", "--dry-run", "-a", "scatter"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(
        daemon.requests().back(),
        json({{"cmd", "map"}, {"app", "solver"}, {"dry_run", true}, {"algorithm", "scatter"}}));
    EXPECT_NE(r.out.find("placement (OS PU of task 0..3): 0 2 1 3"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("cost: 310 before, 250 after"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("time (model, 1 event = 1 short message): 0.00015 s before, 0.000125 s "
                         "after"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("tid 1003: CPUs 0-3 -> 2"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tid 1004: No such process"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("applied: no"), std::string::npos) << r.out;

    const Result j = ask(daemon, {"map", "7", "--json"});
    ASSERT_EQ(j.status, 0) << j.err;
    EXPECT_EQ(daemon.requests().back().at("dry_run"), false);
    EXPECT_EQ(daemon.requests().back().at("algorithm"), "scotch");
    EXPECT_EQ(json::parse(j.out).at("applied"), true);
}

TEST(Online, StatsAndTopology) {
    FakeCdsmd daemon(solver_cdsmd);
    const Result s = ask(daemon, {"stats"});
    ASSERT_EQ(s.status, 0) << s.err;
    EXPECT_NE(s.out.find("kernel.faults"), std::string::npos) << s.out;
    EXPECT_NE(s.out.find("kernel.status.rearm_available"), std::string::npos) << s.out;
    EXPECT_NE(s.out.find("daemon.uptime_s"), std::string::npos) << s.out;
    const Result sj = ask(daemon, {"stats", "--json"});
    EXPECT_EQ(json::parse(sj.out).at("kernel").at("faults"), 42);

    const Result t = ask(daemon, {"topology"});
    ASSERT_EQ(t.status, 0) << t.err;
    EXPECT_NE(t.out.find("this machine: Machine:2 PU (2 PUs)"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("logical order: 0 4\n"), std::string::npos) << t.out;
}

TEST(Online, TrackAndUntrack) {
    FakeCdsmd daemon(solver_cdsmd);
    const Result t = ask(daemon, {"track", "--pid", "4242", "--name", "job"});
    ASSERT_EQ(t.status, 0) << t.err;
    EXPECT_EQ(t.out, "application 8\n");
    EXPECT_EQ(daemon.requests().back(), json({{"cmd", "track"}, {"pid", 4242}, {"name", "job"}}));
    const Result c = ask(daemon, {"track", "--cgroup", "/sys/fs/cgroup/job", "--json"});
    ASSERT_EQ(c.status, 0) << c.err;
    EXPECT_EQ(json::parse(c.out), json({{"app_id", 8}}));
    EXPECT_EQ(daemon.requests().back(), json({{"cmd", "track"}, {"cgroup", "/sys/fs/cgroup/job"}}));
    const Result d = ask(daemon, {"track", "--cgroup", "/job", "--mode", "detect"});
    ASSERT_EQ(d.status, 0) << d.err;
    EXPECT_EQ(daemon.requests().back(),
              json({{"cmd", "track"}, {"cgroup", "/job"}, {"mode", "detect"}}));
    const std::size_t asked = daemon.requests().size();
    EXPECT_NE(ask(daemon, {"track", "--pid", "1", "--mode", "off"}).status, 0);
    EXPECT_EQ(daemon.requests().size(), asked);  // refused by cdsmctl
    const Result u = ask(daemon, {"untrack", "solver"});
    EXPECT_EQ(u.status, 0) << u.err;
    EXPECT_EQ(daemon.requests().back(), json({{"cmd", "untrack"}, {"app", "solver"}}));
}

TEST(Online, RefusalsAreOneLineAndExitWithOne) {
    FakeCdsmd daemon(solver_cdsmd);
    const Result unknown = ask(daemon, {"show", "nosuchapp"});
    EXPECT_EQ(unknown.status, 1);
    EXPECT_EQ(unknown.out, "");
    EXPECT_EQ(unknown.err, "cdsmctl: application '\"nosuchapp\"' not found\n");

    FakeCdsmd strict([](const json&) { return refusal("untrack needs root", "EPERM"); });
    const Result denied = ask(strict, {"untrack", "7"});
    EXPECT_EQ(denied.status, 1);
    EXPECT_EQ(denied.err, "cdsmctl: untrack needs root\n");
}

TEST(Online, BrokenRepliesAreReported) {
    FakeCdsmd garbage([](const json&) { return json{{"_raw", "hello\n"}}; });
    const Result g = ask(garbage, {"list"});
    EXPECT_EQ(g.status, 1);
    EXPECT_NE(g.err.find("cdsmd at " + garbage.path() + " sent a broken reply"), std::string::npos)
        << g.err;
    EXPECT_TRUE(one_line(g.err)) << g.err;

    FakeCdsmd closing([](const json&) { return json{{"_close", true}}; });
    const Result c = ask(closing, {"stats"});
    EXPECT_EQ(c.status, 1);
    EXPECT_NE(c.err.find("closed the connection"), std::string::npos) << c.err;

    FakeCdsmd bad_matrix([](const json&) {
        return json{{"app_id", 1}, {"dim", 2}, {"cells", {{0, 1}, {2}}}};
    });
    const Result m = ask(bad_matrix, {"show", "1"});
    EXPECT_EQ(m.status, 1);
    EXPECT_NE(m.err.find("matrix reply"), std::string::npos) << m.err;
}

TEST(Online, SocketFromTheEnvironment) {
    FakeCdsmd daemon(solver_cdsmd);
    const Result r = cdsmctl({"list", "--json"}, {"CDSM_SOCKET=" + daemon.path()});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(daemon.requests().size(), 1u);
}

TEST(Run, TracksTheChildBeforeItRunsAndExitsWithItsStatus) {
    FakeCdsmd daemon(solver_cdsmd);
    TempDir dir;
    const auto marker = (dir.path() / "pid").string();
    // The command records its pid; it must be the pid cdsmd was asked to track.
    const Result r =
        ask(daemon, {"run", "--name", "job", "--", "sh", "-c", "echo $$ > " + marker + "; exit 3"});
    EXPECT_EQ(r.status, 3) << r.err;
    const auto requests = daemon.requests();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0].at("cmd"), "track");
    EXPECT_EQ(requests[0].at("name"), "job");
    std::ifstream in(marker);
    int pid = 0;
    in >> pid;
    EXPECT_EQ(requests[0].at("pid"), pid);
}

TEST(Run, NamesTheApplicationAfterTheCommandAndPassesItsOutput) {
    FakeCdsmd daemon(solver_cdsmd);
    const Result r = ask(daemon, {"run", "-v", "--", "/bin/echo", "hello", "-n"});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "hello -n\n");
    EXPECT_NE(r.err.find("is application 8"), std::string::npos) << r.err;
    EXPECT_EQ(daemon.requests().at(0).at("name"), "echo");
}

TEST(Run, WordsOfTheCommandAreNeverCdsmctlsOptions) {
    FakeCdsmd daemon(solver_cdsmd);
    const Result bare = ask(daemon, {"run", "printf", "[%s]", "-v", "--name", "--"});
    EXPECT_EQ(bare.status, 0) << bare.err;
    EXPECT_EQ(bare.out, "[-v][--name][--]");
    EXPECT_EQ(bare.err, "");
    const Result dashed = ask(daemon, {"run", "--name", "p", "--", "printf", "[%s]", "--", "x"});
    EXPECT_EQ(dashed.status, 0) << dashed.err;
    EXPECT_EQ(dashed.out, "[--][x]");
    EXPECT_EQ(daemon.requests().back().at("name"), "p");
    const Result detect = ask(daemon, {"run", "--mode", "detect", "printf", "[%s]", "--mode"});
    EXPECT_EQ(detect.status, 0) << detect.err;
    EXPECT_EQ(detect.out, "[--mode]");
    EXPECT_EQ(daemon.requests().back().at("mode"), "detect");
}

TEST(Run, KilledCommandGives128PlusSignal) {
    FakeCdsmd daemon(solver_cdsmd);
    const Result r = ask(daemon, {"run", "--", "sh", "-c", "kill -TERM $$"});
    EXPECT_EQ(r.status, 128 + SIGTERM) << r.err;
}

TEST(Run, CommandNotFoundGives127) {
    FakeCdsmd daemon(solver_cdsmd);
    const Result r = ask(daemon, {"run", "--", "/nonexistent/program"});
    EXPECT_EQ(r.status, 127);
    EXPECT_NE(r.err.find("cannot run '/nonexistent/program'"), std::string::npos) << r.err;
}

TEST(Run, DoesNotRunTheCommandWhenTrackingFails) {
    TempDir dir;
    const auto marker = (dir.path() / "ran").string();
    const Result nodaemon =
        cdsmctl({"--socket", (dir.path() / "none.sock").string(), "run", "--", "touch", marker});
    EXPECT_EQ(nodaemon.status, 1);
    EXPECT_NE(nodaemon.err.find("is cdsmd running?"), std::string::npos) << nodaemon.err;
    FakeCdsmd refusing([](const json&) { return refusal("track needs root", "EPERM"); });
    const Result denied = ask(refusing, {"run", "--", "touch", marker});
    EXPECT_EQ(denied.status, 1);
    EXPECT_EQ(denied.err, "cdsmctl: track needs root\n");
    EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(LabelledMatrix, RowsWithoutRankSortLastAndAreMarked) {
    json reply = matrix_reply();
    reply["tasks"][1]["rank"] = nullptr;  // e.g. mpirun itself
    const auto m = from_cdsmd_matrix(reply, Axis::kRank, "t");
    EXPECT_EQ(m.labels, (std::vector<std::string>{"1", "2", "3", "-"}));
    EXPECT_EQ(m.tids, (std::vector<std::int64_t>{1005, 1002, 1004, 1003}));
    EXPECT_EQ(m.matrix.at(1, 2), 90u);  // ranks 2 and 3: rows 0 and 2
}

}  // namespace
}  // namespace cdsm::cdsmctl::test
