// SPDX-License-Identifier: GPL-2.0
// A Slurm job step from its cgroup v2 path, as Slurm 22.05's cgroup/v2 plugin makes it, and an
// application's step: of the cgroup it was tracked for, or of its first task's.
#include "slurm_step.hpp"

#include <gtest/gtest.h>

#include <map>

#include "app_state.hpp"
#include "sources.hpp"

namespace cdsm::cdsmd {
namespace {

TEST(SlurmStep, BatchExternInteractiveAndNumberedSteps) {
    const std::string scope = "/system.slice/slurmstepd.scope";
    EXPECT_EQ(slurm_step(scope + "/job_7/step_batch/user"), (SlurmStep{7, "batch"}));
    EXPECT_EQ(slurm_step(scope + "/job_7/step_extern/user"), (SlurmStep{7, "extern"}));
    EXPECT_EQ(slurm_step(scope + "/job_12/step_interactive/user/task_0"),
              (SlurmStep{12, "interactive"}));
    EXPECT_EQ(slurm_step(scope + "/job_4294967296/step_0/user"), (SlurmStep{4294967296, "0"}));
    EXPECT_EQ(slurm_step(scope + "/job_3/step_15"), (SlurmStep{3, "15"}));
    EXPECT_EQ(slurm_step(scope + "/job_3/step_2.1/user/task_3"), (SlurmStep{3, "2.1"}));
    EXPECT_EQ(slurm_step("job_5/step_1/"), (SlurmStep{5, "1"}));
    // A node's own slice naming: whatever is above the job.
    EXPECT_EQ(slurm_step("/host-node1_slurmstepd.scope/job_9/step_0/user"), (SlurmStep{9, "0"}));
}

TEST(SlurmStep, PathsOfNoStep) {
    for (const char* path :
         {"", "/", "/system.slice/slurmstepd.scope/job_7", "/system.slice/slurmstepd.scope",
          "/user.slice/user-1000.slice/session-3.scope", "/batch/job", "/job_7/user/step_0",
          "/job_/step_0", "/job_7x/step_0", "/job_7/step_", "/job_7/step_x", "/job_7/step_1.",
          "/job_7/step_.1", "/job_-1/step_0", "/job_99999999999999999999/step_0", "/job_7/steps_0",
          "/myjob_7/step_0"}) {
        EXPECT_EQ(slurm_step(path), std::nullopt) << path;
    }
}

// Processes' cgroups from memory; asked only for cgroups.
class CgroupsOnly final : public ProcSource {
  public:
    std::optional<std::string> comm(pid_t) override { return std::nullopt; }
    std::optional<std::map<std::string, std::string>> environ(pid_t) override {
        return std::nullopt;
    }
    std::optional<procfs::TaskStat> task_stat(pid_t, pid_t) override { return std::nullopt; }
    std::optional<std::vector<std::uint32_t>> affinity(pid_t) override { return std::nullopt; }
    std::optional<std::vector<std::uint32_t>> cpuset(pid_t) override { return std::nullopt; }
    std::optional<std::string> cgroup(pid_t pid) override {
        asked.push_back(pid);
        const auto it = cgroups.find(pid);
        return it == cgroups.end() ? std::nullopt : std::optional(it->second);
    }
    std::uint64_t now_ns() override { return 0; }
    std::uint64_t ticks_per_second() override { return 100; }

    std::map<pid_t, std::string> cgroups;
    std::vector<pid_t> asked;
};

AppState app_of(std::uint32_t kind, pid_t root) {
    AppState app;
    app.info.kind = kind;
    app.info.root_pid = root;
    return app;
}

TEST(SlurmStep, AProcessTrackedInsideAStepCarriesItsStep) {
    CgroupsOnly proc;
    proc.cgroups = {{100, "/system.slice/slurmstepd.scope/job_7/step_batch/user/task_0"},
                    {200, "/system.slice/slurmstepd.scope/job_8/step_0/user/task_3"},
                    {300, "/user.slice/user-1000.slice/session-2.scope"}};
    // mpirun in a batch script, tracked by pid; a rank that auto mode tracked.
    AppState by_pid = app_of(CDSM_TRACK_PID, 100), by_auto = app_of(CDSM_TRACK_AUTO, 200);
    read_task_cgroup(by_pid, proc);
    read_task_cgroup(by_auto, proc);
    EXPECT_EQ(by_pid.task_cgroup, proc.cgroups[100]);
    EXPECT_EQ(slurm_step(by_pid), (SlurmStep{7, "batch"}));
    EXPECT_EQ(slurm_step(by_auto), (SlurmStep{8, "0"}));
    // Outside Slurm, or the root process gone before cdsmd looked: no step.
    AppState outside = app_of(CDSM_TRACK_PID, 300), gone = app_of(CDSM_TRACK_PID, 400);
    read_task_cgroup(outside, proc);
    read_task_cgroup(gone, proc);
    EXPECT_EQ(slurm_step(outside), std::nullopt);
    EXPECT_EQ(gone.task_cgroup, "");
    EXPECT_EQ(slurm_step(gone), std::nullopt);
    EXPECT_EQ(proc.asked, (std::vector<pid_t>{100, 200, 300, 400}));
}

TEST(SlurmStep, ACgroupApplicationKeepsTheCgroupItWasTrackedFor) {
    CgroupsOnly proc;
    AppState step = app_of(CDSM_TRACK_CGROUP, 0);
    step.cgroup = "/system.slice/slurmstepd.scope/job_9/step_2/user";
    read_task_cgroup(step, proc);
    EXPECT_TRUE(proc.asked.empty());  // a cgroup application has no root process to read
    EXPECT_EQ(slurm_step(step), (SlurmStep{9, "2"}));
    // Its own cgroup wins over any task's.
    step.task_cgroup = "/system.slice/slurmstepd.scope/job_1/step_0/user";
    EXPECT_EQ(slurm_step(step), (SlurmStep{9, "2"}));
}

}  // namespace
}  // namespace cdsm::cdsmd
