// SPDX-License-Identifier: GPL-2.0
// A Slurm job step from its cgroup v2 path, as Slurm 22.05's cgroup/v2 plugin makes it.
#include "slurm_step.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace cdsm::cdsmd
