// SPDX-License-Identifier: GPL-2.0
#include "cdsm/migrator.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <thread>

#include "test_support.hpp"

namespace cdsm {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

pid_t gettid_() {
    return static_cast<pid_t>(syscall(SYS_gettid));
}

std::vector<std::uint32_t> affinity(pid_t tid) {
    cpu_set_t set;
    EXPECT_EQ(sched_getaffinity(tid, sizeof set, &set), 0);
    std::vector<std::uint32_t> cpus;
    for (std::uint32_t cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    return cpus;
}

// A thread that waits until told to stop, and says who it is.
class Worker {
  public:
    Worker()
        : thread_([this] {
              tid_.set_value(gettid_());
              while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }) {}
    ~Worker() {
        stop_ = true;
        thread_.join();
    }
    pid_t tid() { return future_.get(); }

  private:
    std::atomic<bool> stop_{false};
    std::promise<pid_t> tid_;
    std::shared_future<pid_t> future_ = tid_.get_future().share();
    std::thread thread_;
};

TEST(Migrator, BindsRealThreadsByOsIndex) {
    const Topology t = Topology::from_system();
    Worker a, b;
    const pid_t tids[] = {a.tid(), b.tid()};
    const PuId last = static_cast<PuId>(t.pu_count() - 1);
    const Placement placement({last, 0});
    const MigrationReport r = Migrator().apply(tids, placement, t);
    EXPECT_THAT(r.moved, ElementsAre(tids[0], tids[1]));
    EXPECT_THAT(affinity(tids[0]), ElementsAre(t.pu(last).os_index));
    EXPECT_THAT(affinity(tids[1]), ElementsAre(t.pu(0).os_index));
    // A second time nothing moves.
    const MigrationReport again = Migrator().apply(tids, placement, t);
    EXPECT_THAT(again.moved, IsEmpty());
    EXPECT_THAT(again.unchanged, ElementsAre(tids[0], tids[1]));
}

TEST(Migrator, ReportsVanishedTasks) {
    const Topology t = Topology::from_system();
    pid_t gone = 0;
    std::thread([&] { gone = gettid_(); }).join();
    const pid_t tids[] = {gone};
    const MigrationReport r = Migrator().apply(tids, Placement({0}), t);
    EXPECT_THAT(r.vanished, ElementsAre(gone));
    EXPECT_THAT(r.moved, IsEmpty());
}

TEST(Migrator, ReportsTasksItMayNotMove) {
    // A child without privileges tries to move its parent (as root: after dropping to nobody;
    // otherwise init, which belongs to root).
    const pid_t parent = getpid();
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        const pid_t target = geteuid() == 0 ? parent : 1;
        if (geteuid() == 0 && setuid(65534) != 0) _exit(2);
        const pid_t tids[] = {target};
        const MigrationReport r = Migrator().apply(tids, Placement({0}), Topology::from_system());
        _exit(r.denied.size() == 1 && r.moved.empty() ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(Migrator, ChecksSizesAndParsesCpuLists) {
    const Topology t = Topology::from_system();
    const pid_t tids[] = {getpid()};
    EXPECT_THAT(test::error_of([&] {
                    Migrator().apply(tids, Placement({0, 0}), t);
                }),
                ::testing::HasSubstr("migration of 1 tasks: the placement has 2 tasks"));
    EXPECT_THAT(parse_cpu_list("0-3,8,10-11"), ElementsAre(0, 1, 2, 3, 8, 10, 11));
    // This process's own cpuset, if it has one, contains the CPUs it runs on.
    if (const auto allowed = cgroup_allowed_cpus(getpid())) {
        for (std::uint32_t cpu : affinity(getpid())) {
            EXPECT_NE(std::find(allowed->begin(), allowed->end(), cpu), allowed->end());
        }
    }
}

// Found by tests/fuzz/fuzz_current (`cdsmctl map --current 0-4294967295` ran out of memory; the
// range's end wrapped around, so the loop never ended). A list is all CPU numbers and ranges or
// an error: no silently shortened range, no number larger than a machine has CPUs.
TEST(CpuList, FormatsSortedRunsAsRanges) {
    const std::vector<std::uint32_t> cpus{0, 1, 2, 3, 8, 10, 11},
        unsorted{11, 3, 0, 2, 1, 3, 10, 8};
    EXPECT_EQ(format_cpu_list(cpus), "0-3,8,10-11");
    EXPECT_EQ(format_cpu_list(unsorted), "0-3,8,10-11");
    EXPECT_EQ(format_cpu_list(std::vector<std::uint32_t>{5}), "5");
    EXPECT_EQ(format_cpu_list({}), "");
    EXPECT_EQ(parse_cpu_list(format_cpu_list(cpus)), cpus);
}

TEST(Migrator, CpuListsThatAreNotListsOfCpusAreErrors) {
    EXPECT_THAT(parse_cpu_list("7,0-1,"), ElementsAre(7, 0, 1));
    EXPECT_THAT(parse_cpu_list("65535"), ElementsAre(65535));
    for (const char* bad :
         {"4294967295", "0-65536", "7-0", "0-", "-3", "3x", "1-2x", "0,,1", " 1", "0-4294967295"}) {
        EXPECT_THROW(parse_cpu_list(bad), Error) << bad;
    }
}

}  // namespace
}  // namespace cdsm
