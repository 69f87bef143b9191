// SPDX-License-Identifier: GPL-2.0
// The control socket's commands (commands.hpp) on the host: Commands over cdsmd's state with a
// module that answers from memory (FakeKernel), the tasks' /proc facts from memory, and the
// daemon's operations (adopt, forget, save, map...) recorded. Rights, lookups and what each
// command reads and changes; the socket itself is server_test's, the whole daemon the VM tests'.
#include "commands.hpp"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <set>

#include "server.hpp"
#include "service.hpp"

namespace cdsm::cdsmd {
namespace {

using control::Json;
using control::PeerCredentials;

cdsm_app_info app_info(std::uint32_t id, uid_t uid, const char* comm, pid_t root) {
    cdsm_app_info i{};
    i.app_id = id;
    i.uid = uid;
    i.root_pid = root;
    i.kind = CDSM_TRACK_PID;
    i.nr_tasks = 2;
    std::string(comm).copy(i.comm, sizeof(i.comm) - 1);
    return i;
}

class FakeKernel final : public Kernel {
  public:
    std::vector<cdsm_task_info> tasks(std::uint32_t) override { return task_list; }
    // The aged matrix has 5 events left of the whole run's 9.
    kernel::MatrixSnapshot matrix(std::uint32_t, kernel::MatrixView view) override {
        kernel::MatrixSnapshot m;
        m.matrix = CommMatrix(2);
        m.matrix.set(0, 1, view == kernel::MatrixView::whole ? 9 : 5);
        m.events = 9;
        return m;
    }
    void age(std::uint32_t id) override { calls.push_back("age " + std::to_string(id)); }
    int abi_version() override { return CDSM_ABI_VERSION; }
    std::vector<cdsm_app_info> list_apps() override { return apps; }
    std::uint32_t track_pid(pid_t pid) override {
        apps.push_back(app_info(next_id, 0, "tracked", pid));
        return next_id++;
    }
    std::uint32_t track_cgroup(std::string_view path) override {
        if (path == "/busy") throw SystemError(EEXIST, "CDSM_IOC_TRACK_CGROUP (/busy)");
        apps.push_back(app_info(next_id, kNoOwner, "", 0));
        apps.back().kind = CDSM_TRACK_CGROUP;
        return next_id++;
    }
    void untrack(std::uint32_t id) override { calls.push_back("untrack " + std::to_string(id)); }
    void reset(std::uint32_t id) override { calls.push_back("reset " + std::to_string(id)); }
    void release(std::uint32_t id) override { calls.push_back("release " + std::to_string(id)); }
    cdsm_counters counters() override {
        cdsm_counters c{};
        c.faults = 42;
        return c;
    }

    std::vector<cdsm_app_info> apps;
    std::vector<cdsm_task_info> task_list;
    std::vector<std::string> calls;
    std::uint32_t next_id = 10;
};

class FakeProc final : public ProcSource {
  public:
    std::optional<std::string> comm(pid_t pid) override {
        if (gone.count(pid)) return std::nullopt;
        const auto it = comms.find(pid);
        return it == comms.end() ? "worker" : it->second;
    }
    std::optional<std::map<std::string, std::string>> environ(pid_t pid) override {
        if (gone.count(pid)) return std::nullopt;
        return std::map<std::string, std::string>{{"OMPI_COMM_WORLD_RANK", std::to_string(pid)}};
    }
    std::optional<procfs::TaskStat> task_stat(pid_t, pid_t tid) override {
        if (tid == 502) return std::nullopt;  // exited since the module listed it
        procfs::TaskStat s;
        s.processor = 3;
        return s;
    }
    std::optional<std::vector<std::uint32_t>> affinity(pid_t) override {
        return std::vector<std::uint32_t>{3};
    }
    std::optional<std::vector<std::uint32_t>> cpuset(pid_t) override { return std::nullopt; }
    std::optional<std::string> cgroup(pid_t) override { return std::nullopt; }
    std::uint64_t now_ns() override { return 0; }
    std::uint64_t ticks_per_second() override { return 100; }

    std::map<pid_t, std::string> comms;  ///< a process's command (default "worker")
    std::set<pid_t> gone;                ///< processes whose /proc files are no longer there
};

PeerCredentials root() {
    return {100, 0, 0, {}};
}
PeerCredentials user(uid_t uid) {
    return {200, uid, uid, {}};
}

class ControlTest : public ::testing::Test {
  protected:
    void SetUp() override {
        spdlog::set_level(spdlog::level::off);
        for (const auto& info : {app_info(1, 0, "pairs", 1001), app_info(2, 1000, "ring", 1002)}) {
            kernel.apps.push_back(info);
            adopt(info, info.app_id == 2 ? "job 42" : "");
        }
    }

    AppState& adopt(const cdsm_app_info& info, const std::string& name) {
        adopted.push_back(info.app_id);
        AppState& app = apps[info.app_id];
        app.info = info;
        app.name = name.empty() ? std::string(info.comm) : name;
        return app;
    }

    // As the socket passes it: parsed from its text (whole numbers are unsigned).
    Json ask(const Json& request, const PeerCredentials& peer = root()) {
        return commands.handle(control::parse_line(request.dump()), peer);
    }
    // The error code a request is answered as the socket answers it ("ok" when it is not).
    std::string refusal(const Json& request, const PeerCredentials& peer) {
        const Json reply = ControlServer::answer(
            [this](const Json& r, const PeerCredentials& p) { return commands.handle(r, p); },
            request.dump(), peer);
        return reply["ok"].get<bool>() ? "ok" : reply["code"].get<std::string>();
    }

    std::map<std::uint32_t, AppState> apps;
    Config config;
    std::unique_ptr<Planner> planner =
        std::make_unique<Planner>(Topology::from_synthetic("pack:2 core:2 pu:2"), LevelCosts{});
    FakeKernel kernel;
    FakeProc proc;
    std::set<pid_t> untracked_pids;
    std::set<std::string> untracked_cgroups;
    ServiceCounters counters;
    bool dry_run = false;
    std::vector<std::uint32_t> adopted, forgotten;
    std::vector<std::string> maps;
    int saved = 0, params_applied = 0, reloaded = 0;
    CommandContext context() {
        return CommandContext{
            .apps = apps,
            .config = config,
            .planner = planner,
            .kernel = kernel,
            .proc = proc,
            .untracked_pids = untracked_pids,
            .untracked_cgroups = untracked_cgroups,
            .counters = counters,
            .dry_run = dry_run,
            .adopt = [this](const cdsm_app_info& info, const std::string& name) -> AppState& {
                return adopt(info, name);
            },
            .forget = [this](std::uint32_t id) { forgotten.push_back(id), apps.erase(id); },
            .save_state = [this] { ++saved; },
            .apply_kernel_params = [this] { ++params_applied; },
            .reload_config = [this] { ++reloaded; },
            .map =
                [this](AppState& app, const MapRequest& request) {
                    maps.push_back(app.name + (request.apply ? " apply " : " dry ") +
                                   request.algorithm);
                    return Json{{"app_id", app.info.app_id}};
                }};
    }
    Commands commands{context()};
};

TEST_F(ControlTest, AUserSeesOnlyItsOwnApplicationsAndOthersLookUnknown) {
    EXPECT_EQ(ask({{"cmd", "list"}})["apps"].size(), 2u);
    const Json mine = ask({{"cmd", "list"}}, user(1000))["apps"];
    ASSERT_EQ(mine.size(), 1u);
    EXPECT_EQ(mine[0]["name"], "job 42");
    EXPECT_EQ(ask({{"cmd", "list"}}, user(1001))["apps"].size(), 0u);
    // By id or by name; another user's application is answered as an unknown one.
    EXPECT_EQ(ask({{"cmd", "show"}, {"app", "job 42"}}, user(1000))["app_id"], 2);
    EXPECT_EQ(ask({{"cmd", "show"}, {"app", 2}}, user(1000))["app_id"], 2);
    EXPECT_EQ(refusal({{"cmd", "show"}, {"app", 1}}, user(1000)), "ENOENT");
    EXPECT_EQ(refusal({{"cmd", "show"}, {"app", 9}}, root()), "ENOENT");
}

TEST_F(ControlTest, CommandsThatChangeSomethingNeedAPrivilegedPeer) {
    for (const char* cmd : {"untrack", "age", "reset", "release"}) {
        EXPECT_EQ(refusal({{"cmd", cmd}, {"app", 2}}, user(1000)), "EPERM") << cmd;
    }
    EXPECT_EQ(refusal({{"cmd", "track"}, {"pid", 5}}, user(1000)), "EPERM");
    EXPECT_EQ(refusal({{"cmd", "map"}, {"app", 2}}, user(1000)), "EPERM");
    EXPECT_EQ(refusal({{"cmd", "reload"}}, user(1000)), "EPERM");
    EXPECT_TRUE(kernel.calls.empty());
    EXPECT_TRUE(maps.empty());
    // A dry-run map changes nothing: any owner may ask for one.
    ask({{"cmd", "map"}, {"app", 2}, {"dry_run", true}}, user(1000));
    EXPECT_EQ(maps, std::vector<std::string>{"job 42 dry "});
    // Members of the admin group are privileged.
    config.admin_gid = 77;
    PeerCredentials admin = user(1000);
    admin.groups = {77};
    ask({{"cmd", "age"}, {"app", 1}}, admin);
    EXPECT_EQ(kernel.calls, std::vector<std::string>{"age 1"});
}

TEST_F(ControlTest, TrackAdoptsTheNewApplicationAndUntrackKeepsTheRulesAway) {
    untracked_pids.insert(4242);
    EXPECT_EQ(ask({{"cmd", "track"}, {"pid", 4242}, {"name", "mine"}})["app_id"], 10);
    EXPECT_EQ(adopted.back(), 10u);
    EXPECT_EQ(apps.at(10).name, "mine");
    EXPECT_FALSE(untracked_pids.count(4242));
    EXPECT_EQ(saved, 1);
    EXPECT_EQ(ask({{"cmd", "track"}, {"cgroup", "/batch/job"}})["app_id"], 11);
    EXPECT_EQ(apps.at(11).cgroup, "/batch/job");
    EXPECT_EQ(refusal({{"cmd", "track"}, {"cgroup", "/busy"}}, root()), "EEXIST");
    EXPECT_EQ(refusal({{"cmd", "track"}}, root()), "EINVAL");
    EXPECT_EQ(apps.at(10).mode, AppMode::kMap);
    EXPECT_EQ(ask({{"cmd", "show"}, {"app", 11}})["mode"], "map");

    ask({{"cmd", "untrack"}, {"app", 11}});
    ask({{"cmd", "untrack"}, {"app", "mine"}});
    EXPECT_EQ(kernel.calls, (std::vector<std::string>{"untrack 11", "untrack 10"}));
    EXPECT_TRUE(untracked_cgroups.count("/batch/job"));
    EXPECT_TRUE(untracked_pids.count(4242));
    EXPECT_EQ(saved, 4);

    ask({{"cmd", "release"}, {"app", 10}});
    EXPECT_EQ(forgotten, std::vector<std::uint32_t>{10});
    EXPECT_FALSE(apps.count(10));
}

TEST_F(ControlTest, TrackInDetectModeIsShownAndAnUnknownModeIsRefused) {
    EXPECT_EQ(ask({{"cmd", "track"}, {"cgroup", "/batch/job"}, {"mode", "detect"}})["app_id"], 10);
    EXPECT_EQ(apps.at(10).mode, AppMode::kDetect);
    EXPECT_EQ(saved, 1);
    EXPECT_EQ(ask({{"cmd", "show"}, {"app", 10}})["mode"], "detect");
    const Json list = ask({{"cmd", "list"}})["apps"];
    ASSERT_EQ(list.size(), 3u);
    EXPECT_EQ(list[0]["mode"], "map");
    EXPECT_EQ(list[2]["mode"], "detect");
    // Refused before the module is asked: nothing tracked.
    const std::size_t tracked = kernel.apps.size();
    EXPECT_EQ(refusal({{"cmd", "track"}, {"pid", 77}, {"mode", "off"}}, root()), "EINVAL");
    EXPECT_EQ(refusal({{"cmd", "track"}, {"pid", 77}, {"policy", "x"}}, root()), "EINVAL");
    EXPECT_EQ(kernel.apps.size(), tracked);
    EXPECT_EQ(apps.size(), 3u);
}

// The Slurm plugin's --cdsm-smt and --cdsm-spread: rules for one application, the rest from
// [mapping]; shown in list and show; a word that is no rule is refused before tracking.
TEST_F(ControlTest, TrackTakesPlacementRulesForTheApplication) {
    EXPECT_EQ(ask({{"cmd", "track"}, {"cgroup", "/batch/job"}, {"smt", "allow"}})["app_id"], 10);
    ASSERT_TRUE(apps.at(10).rules.has_value());
    EXPECT_EQ(*apps.at(10).rules, (PlacementRules{SmtRule::kAllow, SpreadRule::kBalanced}));
    EXPECT_EQ(ask({{"cmd", "show"}, {"app", 10}})["rules"], "smt=allow spread=balanced");
    const Json list = ask({{"cmd", "list"}})["apps"];
    EXPECT_EQ(list[0]["rules"], "smt=avoid spread=balanced");  // [mapping]'s defaults
    EXPECT_FALSE(apps.at(1).rules.has_value());
    const std::size_t tracked = kernel.apps.size();
    EXPECT_EQ(refusal({{"cmd", "track"}, {"pid", 77}, {"smt", "never"}}, root()), "EINVAL");
    EXPECT_EQ(refusal({{"cmd", "track"}, {"pid", 77}, {"spread", 1}}, root()), "EINVAL");
    EXPECT_EQ(kernel.apps.size(), tracked);
}

TEST_F(ControlTest, ASlurmStepsApplicationCarriesItsJobStepAndUser) {
    apps.at(1).cgroup = "/system.slice/slurmstepd.scope/job_7/step_batch/user";
    const Json list = ask({{"cmd", "list"}})["apps"];
    EXPECT_EQ(list[0]["slurm"], (Json{{"job_id", 7}, {"step", "batch"}, {"user", "root"}}));
    EXPECT_EQ(list[1]["slurm"], nullptr);  // not tracked for a step's cgroup
    EXPECT_EQ(ask({{"cmd", "show"}, {"app", 1}})["slurm"]["job_id"], 7);
    // A process tracked by pid whose first task is in a step's cgroup carries that step.
    apps.at(2).task_cgroup = "/system.slice/slurmstepd.scope/job_8/step_0/user/task_1";
    EXPECT_EQ(ask({{"cmd", "list"}})["apps"][1]["slurm"]["job_id"], 8);
    EXPECT_EQ(ask({{"cmd", "show"}, {"app", 2}})["slurm"]["step"], "0");
}

// A launcher has no rank, whatever its environment says: in a multi-node job Open MPI's orted
// runs as srun's task 0 (SLURM_PROCID=0), and mpirun in a batch script has the script's
// SLURM_PROCID=0; either would have been rank 0 beside the real one.
TEST_F(ControlTest, ALaunchersTasksHaveNoRank) {
    cdsm_task_info rank{}, orted{};
    rank.index = 0, rank.tid = 500, rank.tgid = 500;
    orted.index = 1, orted.tid = 600, orted.tgid = 600;
    kernel.task_list = {rank, orted};
    proc.comms[600] = "orted";
    const Json tasks = ask({{"cmd", "tasks"}, {"app", 1}})["tasks"];
    ASSERT_EQ(tasks.size(), 2u);
    EXPECT_EQ(tasks[0]["rank"], 500);
    EXPECT_EQ(tasks[1]["rank"], nullptr) << tasks[1];
}

TEST_F(ControlTest, TasksShowWhatCdsmdDoesWithEachTask) {
    cdsm_task_info placed{}, helper{}, gone{}, exited{};
    placed.index = 0, placed.tid = 500, placed.tgid = 500;
    helper.index = 1, helper.tid = 501, helper.tgid = 500;
    gone.index = 2, gone.tid = 502, gone.tgid = 500;
    exited.index = 3, exited.tid = 503, exited.tgid = 500, exited.flags = CDSM_TASK_EXITED;
    kernel.task_list = {placed, helper, gone, exited};
    AppState& app = apps.at(1);
    app.tasks[500].role = TaskRole::kPlace;
    app.tasks[500].bound_cpu = 3;
    app.tasks[501].role = TaskRole::kForeign;
    const Json tasks = ask({{"cmd", "tasks"}, {"app", 1}})["tasks"];
    ASSERT_EQ(tasks.size(), 4u);
    EXPECT_EQ(tasks[0]["placed_pu"], 3);
    EXPECT_EQ(tasks[0]["reason"], nullptr);
    EXPECT_EQ(tasks[0]["rank"], 500);  // from the process's environment
    EXPECT_EQ(tasks[0]["cpu"], 3);
    EXPECT_EQ(tasks[1]["placed_pu"], nullptr);
    EXPECT_TRUE(tasks[1]["left_alone"].get<bool>());
    EXPECT_EQ(tasks[1]["reason"], "affinity changed by another program");
    for (std::size_t k : {2u, 3u}) {
        EXPECT_TRUE(tasks[k]["exited"].get<bool>()) << k;
        EXPECT_EQ(tasks[k]["reason"], "exited") << k;
    }
    const Json m = ask({{"cmd", "matrix"}, {"app", 1}});
    EXPECT_EQ(m["cells"], Json::parse("[[0,5],[5,0]]"));
    EXPECT_EQ(m["view"], "aged");
    EXPECT_EQ(m["tasks"], tasks);
    const Json whole = ask({{"cmd", "matrix"}, {"app", 1}, {"view", "whole"}});
    EXPECT_EQ(whole["cells"], Json::parse("[[0,9],[9,0]]"));
    EXPECT_EQ(whole["view"], "whole");
    EXPECT_EQ(ask({{"cmd", "matrix"}, {"app", 1}, {"view", "aged"}})["cells"], m["cells"]);
    // Where a task ran stays known after it exited (an ended Slurm step's report): last_cpu.
    EXPECT_EQ(tasks[0]["last_cpu"], 3);
    EXPECT_EQ(tasks[3]["last_cpu"], nullptr);  // never seen running
    kernel.task_list[0].flags = CDSM_TASK_EXITED;
    const Json after = ask({{"cmd", "tasks"}, {"app", 1}})["tasks"];
    EXPECT_EQ(after[0]["cpu"], nullptr);
    EXPECT_EQ(after[0]["last_cpu"], 3);
}

TEST_F(ControlTest, UsersMapRequestsHaveAShareOfCdsmdsTime) {
    // No burst and almost no share: once a user's request took any time, the next one of any
    // unprivileged uid waits; root's are not counted.
    using namespace std::chrono_literals;
    Commands strict{context(), {.share_per_uid = 1e-12, .share_all = 1e-12, .burst = 0ns}};
    const auto answer = [&](const Json& r, const PeerCredentials& p) {
        const Json reply = ControlServer::answer(
            [&](const Json& q, const PeerCredentials& c) { return strict.handle(q, c); }, r.dump(),
            p);
        return reply["ok"].get<bool>() ? std::string("ok") : reply["code"].get<std::string>();
    };
    const Json dry = {{"cmd", "map"}, {"app", 2}, {"dry_run", true}};
    EXPECT_EQ(answer(dry, user(1000)), "ok");
    EXPECT_EQ(answer(dry, user(1000)), "EAGAIN");
    apps.at(1).info.uid = 1001;  // another user's application: the common share is spent too
    EXPECT_EQ(answer({{"cmd", "map"}, {"app", 1}, {"dry_run", true}}, user(1001)), "EAGAIN");
    EXPECT_EQ(answer({{"cmd", "list"}}, user(1000)), "ok");  // only the work is budgeted
    EXPECT_EQ(answer(dry, root()), "ok");
    EXPECT_EQ(answer(dry, root()), "ok");
    EXPECT_EQ(maps.size(), 3u);
    // A user's request for an application beyond kMaxRequestTasks is refused before any work.
    apps.at(2).info.nr_live_tasks = kMaxRequestTasks + 1;
    EXPECT_EQ(refusal(dry, user(1000)), "E2BIG");
    EXPECT_EQ(maps.size(), 3u);
    apps.at(2).info.nr_live_tasks = kMaxRequestTasks;
    EXPECT_EQ(refusal(dry, user(1000)), "ok");
}

TEST_F(ControlTest, OnlyTheFactsOfLiveProcessesEnvironmentsAreKept) {
    cdsm_task_info a{}, b{};
    a.index = 0, a.tid = 500, a.tgid = 500;
    b.index = 1, b.tid = 600, b.tgid = 600;
    kernel.task_list = {a, b};
    AppState& app = apps.at(1);
    observe(app, kernel, proc);
    ASSERT_EQ(app.env_by_tgid.size(), 2u);
    EXPECT_EQ(app.env_by_tgid.at(600).facts.rank, 600);
    // Process 600 exited: its facts (a rank, not its environment) stay while the module lists
    // its tasks, so that an ended run is still shown by rank (apps-hpcc: show --by rank).
    // First gone from /proc (comm and environ unreadable) while the module still lists its
    // tasks as live: its rank stays (a GROMACS rank stopped at the run's end lost its label).
    proc.gone.insert(600);
    observe(app, kernel, proc);
    ASSERT_EQ(app.env_by_tgid.size(), 2u);
    EXPECT_EQ(app.env_by_tgid.at(600).facts.rank, 600);
    EXPECT_EQ(app.env_by_tgid.at(600).comm, "worker");
    kernel.task_list[1].flags = CDSM_TASK_EXITED;
    observe(app, kernel, proc);
    ASSERT_EQ(app.env_by_tgid.size(), 2u);
    EXPECT_EQ(app.env_by_tgid.at(600).facts.rank, 600);
    // The module no longer lists it: nothing of it is kept (it used to stay until the
    // application ended).
    kernel.task_list.pop_back();
    observe(app, kernel, proc);
    EXPECT_EQ(app.env_by_tgid.size(), 1u);
    EXPECT_TRUE(app.env_by_tgid.count(500));
}

TEST_F(ControlTest, TheStateFileIsWrittenWhateverTheNamesBytes) {
    // A process named "\xff" names its unnamed application so: the strict dump threw, and every
    // later save of every application failed.
    apps.at(2).name = "\xff";
    apps.at(2).tasks[7].bound_cpu = 3;
    std::string text;
    ASSERT_NO_THROW(text = state_file_text(apps, {42}, {"/a"}));
    const Json state = Json::parse(text);
    EXPECT_EQ(state["apps"][1]["name"], "\xef\xbf\xbd");  // U+FFFD
    EXPECT_EQ(state["apps"][1]["bound"]["7"], 3);
    EXPECT_EQ(state["apps"][0]["name"], "pairs");
    EXPECT_EQ(state["untracked_pids"], Json::parse("[42]"));
}

TEST_F(ControlTest, MapSetReloadStatsAndTopology) {
    ask({{"cmd", "map"}, {"app", 1}, {"algorithm", "pack"}});
    EXPECT_EQ(maps, std::vector<std::string>{"pairs apply pack"});
    EXPECT_EQ(refusal({{"cmd", "map"}, {"app", 1}, {"algorithm", "nope"}}, root()), "EINVAL");
    EXPECT_EQ(refusal({{"cmd", "map"}, {"app", 1}, {"algorithm", "exhaustive"}}, root()), "EINVAL");

    EXPECT_EQ(refusal({{"cmd", "set"}, {"params", {{"nope", 1}}}}, root()), "EINVAL");
    EXPECT_EQ(params_applied, 0);
    ask({{"cmd", "set"}, {"params", {{"retention_s", 7}}}});
    EXPECT_EQ(config.kernel.at("retention_s"), 7u);
    EXPECT_EQ(params_applied, 1);
    ask({{"cmd", "reload"}});
    EXPECT_EQ(reloaded, 1);

    counters.mappings = 3;
    const Json stats = ask({{"cmd", "stats"}}, user(1000));
    EXPECT_EQ(stats["kernel"]["faults"], 42);
    EXPECT_EQ(stats["daemon"]["mappings"], 3);
    EXPECT_EQ(stats["daemon"]["apps"], 2);
    const Json topo = ask({{"cmd", "topology"}}, user(1000));
    EXPECT_EQ(topo["pus"].size(), 8u);
    EXPECT_EQ(topo["distances"].size(), 8u);
    EXPECT_EQ(ask({{"cmd", "ping"}})["abi"], CDSM_ABI_VERSION);
    EXPECT_EQ(refusal({{"cmd", "frobnicate"}}, root()), "EINVAL");
}

}  // namespace
}  // namespace cdsm::cdsmd
