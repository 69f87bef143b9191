// SPDX-License-Identifier: GPL-2.0
// Which processes are tracked, which tasks are placed, who may see and control what, and the
// /proc parsers those decisions rest on.
#include "policy.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include "procfs.hpp"

namespace cdsm::cdsmd {
namespace {

TEST(Rules, EveryConditionSetMustHold) {
    TrackRule r;
    r.comm = "lulesh*";
    r.uid = 1000;
    r.min_threads = 4;
    EXPECT_TRUE(rule_matches(r, {"lulesh2.0", 1000, "/user.slice", 8}));
    EXPECT_FALSE(rule_matches(r, {"lulesh2.0", 1001, "/user.slice", 8}));
    EXPECT_FALSE(rule_matches(r, {"lulesh2.0", 1000, "/user.slice", 3}));
    EXPECT_FALSE(rule_matches(r, {"bash", 1000, "/user.slice", 8}));
}

TEST(Rules, CgroupGlobsStayWithinOneLevel) {
    TrackRule r;
    r.cgroup = "/system.slice/slurmstepd.scope/job_*";
    EXPECT_TRUE(r.cgroup_only());
    EXPECT_TRUE(cgroup_matches(r, "/system.slice/slurmstepd.scope/job_42"));
    EXPECT_FALSE(cgroup_matches(r, "/system.slice/slurmstepd.scope/job_42/step_0"));
    EXPECT_FALSE(cgroup_matches(r, "/user.slice/job_42"));
    r.comm = "a.out";
    EXPECT_FALSE(r.cgroup_only());
    EXPECT_TRUE(rule_matches(r, {"a.out", 0, "/system.slice/slurmstepd.scope/job_7", 1}));
}

TaskFacts busy() {
    TaskFacts t;
    t.process_comm = "app";
    t.runnable = 0.9;
    t.affinity = {0, 1, 2, 3};
    return t;
}

TEST(Classify, BusyTasksArePlaced) {
    EXPECT_EQ(classify(busy(), Config{}), TaskRole::kPlace);
}

TEST(Classify, ExitedLauncherAndIdleTasksAreNot) {
    const Config c;
    TaskFacts t = busy();
    t.exited = true;
    EXPECT_EQ(classify(t, c), TaskRole::kExited);
    for (const char* launcher : {"mpirun", "orted", "prted", "slurmstepd"}) {
        t = busy();
        t.process_comm = launcher;
        EXPECT_EQ(classify(t, c), TaskRole::kLauncher) << launcher;
    }
    t = busy();
    t.runnable = 0.05;
    EXPECT_EQ(classify(t, c), TaskRole::kIdle);
}

TEST(Classify, BusyAndIdleWithHysteresis) {
    // A helper thread whose share hovers around idle_cpu (0.10) must not enter and leave the
    // placement pass after pass: it becomes busy when busy in both of its last two windows, and
    // idle again only below half of idle_cpu in both.
    const Config c;
    TaskFacts t = busy();
    t.runnable = 0.3;       // the larger of its two windows
    t.runnable_min = 0.05;  // one window nearly idle
    EXPECT_EQ(classify(t, c), TaskRole::kIdle);
    t.runnable_min = 0.12;
    EXPECT_EQ(classify(t, c), TaskRole::kPlace);
    t.busy_before = true;
    t.runnable = 0.07;  // below idle_cpu, above half of it: still busy
    t.runnable_min = 0.02;
    EXPECT_EQ(classify(t, c), TaskRole::kPlace);
    t.runnable = 0.04;
    EXPECT_EQ(classify(t, c), TaskRole::kIdle);
}

TEST(Classify, AMaskSomeoneElseChangedMeansLeaveItAlone) {
    const Config c;
    TaskFacts t = busy();
    t.bound_cpu = 3;
    t.affinity = {3};
    EXPECT_EQ(classify(t, c), TaskRole::kPlace);  // still the mask cdsmd set
    t.affinity = {5};
    EXPECT_EQ(classify(t, c), TaskRole::kChanging);  // read once: maybe a transient change
    t.changed_for_s = kConfirmSeconds / 2;
    EXPECT_EQ(classify(t, c), TaskRole::kChanging);
    EXPECT_FALSE(left_alone(TaskRole::kChanging));
    t.changed_for_s = kConfirmSeconds;  // still off cdsmd's CPU: another program's binding
    EXPECT_EQ(classify(t, c), TaskRole::kForeign);
    t.affinity = {0, 1, 2, 3, 4, 5, 6, 7};
    EXPECT_EQ(classify(t, c), TaskRole::kForeign);
    t.runnable = 0;  // even when idle, it is reported as left alone
    EXPECT_EQ(classify(t, c), TaskRole::kForeign);
    // Once foreign, always foreign: a mask that happens to match again is not cdsmd's.
    t = busy();
    t.bound_cpu = 3;
    t.affinity = {3};
    t.foreign_before = true;
    EXPECT_EQ(classify(t, c), TaskRole::kForeign);
    EXPECT_TRUE(left_alone(TaskRole::kForeign));
    EXPECT_FALSE(left_alone(TaskRole::kIdle));
}

TEST(Classify, AChangeInTheTaskStartUpIsPlacedAgainOnceConfirmed) {
    const Config c;
    TaskFacts t = busy();
    t.bound_cpu = 3;
    t.affinity = {5};
    t.age_s = kStartupSeconds - 1;
    EXPECT_EQ(classify(t, c), TaskRole::kChanging);  // even in the start-up: maybe transient
    t.changed_for_s = kConfirmSeconds;  // its runtime's binding, made 1 s into its life
    EXPECT_EQ(classify(t, c), TaskRole::kPlace);
    t.age_s = kStartupSeconds + kConfirmSeconds - 0.5;  // confirmed after the start-up ended
    EXPECT_EQ(classify(t, c), TaskRole::kPlace);
    t.age_s = kStartupSeconds + kConfirmSeconds;  // changed at 5 s: no longer the start-up
    EXPECT_EQ(classify(t, c), TaskRole::kForeign);
    t.launch_mask = true;  // unless it is back on its launcher's binding: placed again
    EXPECT_EQ(classify(t, c), TaskRole::kPlace);
    t.changed_for_s = 0;  // after the confirmation only
    EXPECT_EQ(classify(t, c), TaskRole::kChanging);
}

TEST(Classify, AMaskNobodyBoundIsNotForeign) {
    // Tasks that bind themselves before cdsmd ever bound them are placed (the bad start).
    TaskFacts t = busy();
    t.affinity = {6};
    EXPECT_EQ(classify(t, Config{}), TaskRole::kPlace);
}

TEST(RunnableShare, LifetimeFirstThenWindows) {
    RunnableShare s(40);
    EXPECT_DOUBLE_EQ(s.update(50, 1000, 1100), 0.5);  // 50 of 100 ns since start
    EXPECT_DOUBLE_EQ(s.update(60, 1000, 1120), 0.5);  // window too short: unchanged
    EXPECT_DOUBLE_EQ(s.update(60, 1000, 1140), 0.5);  // 10 ns in 40, but 0.5 the window before
    EXPECT_DOUBLE_EQ(s.update(100, 1000, 1180), 1.0);
    EXPECT_DOUBLE_EQ(s.update(100, 1000, 1220), 1.0);  // one window without progress: still busy
    EXPECT_DOUBLE_EQ(s.update(100, 1000, 1260), 0.0);  // two: idle
    EXPECT_DOUBLE_EQ(s.update(102, 1000, 1300), 0.05);
}

// 256 busy threads on one CPU: each waits 0.77 s between its slices, and the kernel adds the wait
// only when the slice comes. Windows without a slice show no progress; runnable ('R') with the
// same slice count, the task waited all along.
TEST(RunnableShare, ACrowdedTaskWaitingThroughAWindowIsBusy) {
    RunnableShare crowded(40);
    EXPECT_DOUBLE_EQ(crowded.update(100, 1000, 1100, 7, 'R'), 1.0);
    EXPECT_DOUBLE_EQ(crowded.update(100, 1000, 1140, 7, 'R'), 1.0);
    EXPECT_DOUBLE_EQ(crowded.update(100, 1000, 1180, 7, 'R'), 1.0);
    EXPECT_DOUBLE_EQ(crowded.steady(), 1.0);
    // Its slice came: the wait before it is counted at once (here more than the window).
    EXPECT_DOUBLE_EQ(crowded.update(190, 1000, 1220, 8, 'R'), 1.0);
    // The same windows asleep ('S'), or without a slice count (no schedstat): no progress, idle.
    RunnableShare asleep(40), unknown(40);
    asleep.update(100, 1000, 1100, 7, 'S');
    unknown.update(100, 1000, 1100, std::nullopt, 'R');
    for (std::uint64_t now : {1140, 1180}) {
        asleep.update(100, 1000, now, 7, 'S');
        unknown.update(100, 1000, now, std::nullopt, 'R');
    }
    EXPECT_DOUBLE_EQ(asleep.value(), 0.0);
    EXPECT_DOUBLE_EQ(unknown.value(), 0.0);
    // Given a CPU in the window (the count moved) without run time to show: the share is what
    // schedstat says, not 1.
    RunnableShare ran(40);
    ran.update(100, 1000, 1100, 7, 'R');
    ran.update(100, 1000, 1140, 8, 'R');
    EXPECT_DOUBLE_EQ(ran.update(100, 1000, 1180, 9, 'R'), 0.0);
}

TEST(Schedstat, RunPlusWait) {
    const auto s = procfs::parse_schedstat("1500 2500 7\n");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->runnable_ns, 4000u);
    EXPECT_EQ(s->slices, 7u);
    EXPECT_EQ(procfs::parse_schedstat("garbage"), std::nullopt);
    EXPECT_EQ(procfs::parse_schedstat("1500 2500\n"), std::nullopt);
    EXPECT_EQ(procfs::parse_schedstat("1500 2500 x\n"), std::nullopt);
    // Kernels that do not keep scheduler statistics show zeros: not a task that never ran.
    EXPECT_EQ(procfs::parse_schedstat("0 0 12\n"), std::nullopt);
}

TEST(Environment, OptOutAndRanks) {
    EXPECT_TRUE(opts_out({{"CDSM_DISABLE", "1"}}));
    EXPECT_FALSE(opts_out({{"CDSM_DISABLE", "0"}}));
    EXPECT_FALSE(opts_out({}));
    EXPECT_EQ(mpi_rank({{"OMPI_COMM_WORLD_RANK", "3"}, {"SLURM_PROCID", "9"}}), 3);
    EXPECT_EQ(mpi_rank({{"SLURM_PROCID", "9"}}), 9);
    EXPECT_EQ(mpi_rank({{"PMI_RANK", "x"}}), std::nullopt);
    EXPECT_EQ(mpi_rank({}), std::nullopt);
}

TEST(Environment, ThreadsAnnouncedByOmpNumThreads) {
    EXPECT_EQ(expected_threads({{"OMP_NUM_THREADS", "4"}}), 4u);
    EXPECT_EQ(expected_threads({{"OMP_NUM_THREADS", "4,2"}}), 4u);  // nested: the outer level
    EXPECT_EQ(expected_threads({{"OMP_NUM_THREADS", "1"}}), 1u);
    EXPECT_EQ(expected_threads({{"OMP_NUM_THREADS", "4096"}}), 4096u);
    for (const char* bad : {"", "0", "-2", "x", "4x", " 4", "4097", "99999999999"})
        EXPECT_EQ(expected_threads({{"OMP_NUM_THREADS", bad}}), std::nullopt) << bad;
    EXPECT_EQ(expected_threads({}), std::nullopt);
}

TEST(Credentials, UnprivilegedPeersSeeTheirOwnAndControlNothing) {
    const Peer root{1, 0, true}, alice{2, 1000, false};
    EXPECT_TRUE(may_see(root, 1000));
    EXPECT_TRUE(may_see(alice, 1000));
    EXPECT_FALSE(may_see(alice, 1001));
    EXPECT_FALSE(may_see(alice, 0));
    // A cgroup application no task joined yet has no owner (uid (__u32)-1): admins only, even
    // for a peer whose uid would read as the same number.
    const Peer no_one{3, kNoOwner, false};
    EXPECT_TRUE(may_see(root, kNoOwner));
    EXPECT_FALSE(may_see(alice, kNoOwner));
    EXPECT_FALSE(may_see(no_one, kNoOwner));
    for (const char* c : {"track", "untrack", "age", "reset", "release", "set", "reload"}) {
        EXPECT_TRUE(is_control_request(c, false)) << c;
        EXPECT_TRUE(is_control_request(c, true)) << c;
    }
    EXPECT_TRUE(is_control_request("map", false));
    EXPECT_FALSE(is_control_request("map", true));
    for (const char* c : {"list", "tasks", "matrix", "show", "stats", "topology", "ping"}) {
        EXPECT_FALSE(is_control_request(c, false)) << c;
    }
}

TEST(Credentials, RightsComeFromTheConnectCredentialsAlone) {
    // pid, uid, gid, supplementary groups as SO_PEERCRED/SO_PEERGROUPS report them.
    const control::PeerCredentials root{1, 0, 0, {}}, alice{2, 1000, 1000, {100, 27}},
        admin{3, 1001, 1001, {100, 990}}, primary{4, 1002, 990, {}};
    EXPECT_TRUE(peer_rights(root, std::nullopt).privileged);
    EXPECT_TRUE(peer_rights(root, 990).privileged);
    EXPECT_FALSE(peer_rights(alice, std::nullopt).privileged);
    EXPECT_FALSE(peer_rights(alice, 990).privileged);
    EXPECT_FALSE(peer_rights(admin, std::nullopt).privileged);
    EXPECT_TRUE(peer_rights(admin, 990).privileged);
    EXPECT_TRUE(peer_rights(primary, 990).privileged);
    EXPECT_EQ(peer_rights(alice, 990).uid, 1000u);
    EXPECT_EQ(peer_rights(alice, 990).pid, 2);
    // The peer's own process counts for nothing (this process may have any capabilities).
    const control::PeerCredentials me{::getpid(), 4242, 4242, {}};
    EXPECT_FALSE(peer_rights(me, std::nullopt).privileged);
}

TEST(Procfs, ParsesStatWithAwkwardCommands) {
    // Fields: pid (comm) state ppid ... utime=14 stime=15 ... starttime=22 ... processor=39.
    std::string fields;
    for (int f = 4; f <= 52; ++f) {
        const int v = f == 14 ? 7 : f == 15 ? 3 : f == 22 ? 12345 : f == 39 ? 5 : 0;
        fields += " " + std::to_string(v);
    }
    const auto s = procfs::parse_stat("42 (a) b) (c) R" + fields + "\n");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->state, 'R');
    EXPECT_EQ(s->cpu_ticks, 10u);
    EXPECT_EQ(s->start_ticks, 12345u);
    EXPECT_EQ(s->processor, 5);
    EXPECT_FALSE(procfs::parse_stat("42 (x) R 1 2"));
    EXPECT_FALSE(procfs::parse_stat("garbage"));
}

TEST(Procfs, ReadsItsOwnTask) {
    const auto s = procfs::task_stat(::getpid(), ::getpid());
    ASSERT_TRUE(s);
    EXPECT_GE(s->processor, 0);
    EXPECT_LE(s->start_ticks, procfs::now_ticks());
    const auto st = procfs::status(::getpid());
    ASSERT_TRUE(st);
    EXPECT_EQ(st->uid, ::getuid());
    EXPECT_GE(st->threads, 1u);
    EXPECT_TRUE(procfs::affinity(0));
    EXPECT_FALSE(procfs::task_stat(::getpid(), 0x3fffffff));
}

// A thread that waits until told to exit, and its tid.
class Waiter {
  public:
    Waiter() : thread_([this] { run(); }) {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return tid_ != 0; });
    }
    ~Waiter() { stop(); }
    pid_t tid() const { return tid_; }
    void stop() {
        {
            const std::lock_guard lock(mutex_);
            stop_ = true;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
    }

  private:
    void run() {
        std::unique_lock lock(mutex_);
        tid_ = ::gettid();
        cv_.notify_all();
        cv_.wait(lock, [this] { return stop_; });
    }
    std::mutex mutex_;
    std::condition_variable cv_;
    pid_t tid_ = 0;
    bool stop_ = false;
    std::thread thread_;
};

TEST(Procfs, TaskFilesReadWhatTaskStatReads) {
    Waiter w;
    procfs::TaskFiles files(8);
    const auto by_path = procfs::task_stat(::getpid(), w.tid());
    const auto kept = files.read(::getpid(), w.tid(), {});
    ASSERT_TRUE(by_path && kept);
    EXPECT_EQ(kept->start_ticks, by_path->start_ticks);
    EXPECT_GE(kept->processor, 0);
    EXPECT_GE(kept->runnable_ns, by_path->runnable_ns);
    EXPECT_EQ(files.size(), 1u);
    // Read again through the open files: still the same task, never less time.
    const auto again = files.read(::getpid(), w.tid(), {});
    ASSERT_TRUE(again);
    EXPECT_EQ(again->start_ticks, kept->start_ticks);
    EXPECT_GE(again->runnable_ns, kept->runnable_ns);
    EXPECT_EQ(files.size(), 1u);
    // Another process's id with this tid: not this task.
    EXPECT_FALSE(files.read(1, w.tid(), {}));
    EXPECT_FALSE(procfs::TaskFiles(8).read(::getpid(), 0x3fffffff, {}));
}

// A task bound to one CPU has its stat (state, processor) left unread, unless it was given no CPU
// since the last read: then its state tells a task waiting for its CPU from a sleeping one.
TEST(Procfs, TaskFilesReadTheStateOfATaskThatHasNotRun) {
    Waiter w;  // asleep on a condition variable: given no CPU between the reads
    for (int i = 0; i < 1000 && procfs::task_stat(::getpid(), w.tid())->state != 'S'; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    procfs::TaskFiles files(8);
    const auto first = files.read(::getpid(), w.tid(), {});
    ASSERT_TRUE(first && first->slices);
    const std::vector<std::uint32_t> one{static_cast<std::uint32_t>(first->processor)};
    const auto second = files.read(::getpid(), w.tid(), one);
    ASSERT_TRUE(second && second->slices);
    EXPECT_EQ(*second->slices, *first->slices);
    EXPECT_EQ(second->state, 'S');
    // This thread sleeps between its reads and is given its CPU again: its stat is not read.
    const std::vector<std::uint32_t> mine{static_cast<std::uint32_t>(::sched_getcpu())};
    ASSERT_TRUE(files.read(::getpid(), ::gettid(), mine));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const auto self = files.read(::getpid(), ::gettid(), mine);
    ASSERT_TRUE(self);
    EXPECT_EQ(self->state, '?');
}

TEST(Procfs, TaskFilesTakeAOneCpuMaskAsWhereTheTaskRuns) {
    // This thread, which sleeps between the reads and so is given a CPU again each time (a task
    // that was not: TaskFilesReadTheStateOfATaskThatHasNotRun).
    const pid_t self = ::gettid();
    const auto nap = [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
    procfs::TaskFiles files(8);
    // The first read has no start time yet: the stat file says where the task last ran.
    const auto first = files.read(::getpid(), self, {4095});
    ASSERT_TRUE(first);
    EXPECT_NE(first->processor, 4095);
    // Then a task that may run on one CPU only runs there (4095: a CPU it cannot be on, to
    // see that the stat file was not read).
    nap();
    const auto then = files.read(::getpid(), self, {4095});
    ASSERT_TRUE(then);
    EXPECT_EQ(then->processor, 4095);
    EXPECT_EQ(then->start_ticks, first->start_ticks);
    // With a wider mask it is read again.
    nap();
    const auto wide = files.read(::getpid(), self, {0, 4095});
    ASSERT_TRUE(wide);
    EXPECT_NE(wide->processor, 4095);
}

TEST(Procfs, TaskFilesOfAnExitedTaskAreClosed) {
    procfs::TaskFiles files(8);
    Waiter w;
    const pid_t tid = w.tid();
    ASSERT_TRUE(files.read(::getpid(), tid, {}));
    ASSERT_TRUE(files.read(::getpid(), tid, {0}));  // the one-CPU path, from the open files
    w.stop();
    // join() returns when the thread's exit has cleared its tid word, before the kernel has
    // released the task; until then its /proc files still read (seen once in a CI run).
    const auto task_dir = "/proc/self/task/" + std::to_string(tid);
    for (int i = 0; i < 500 && ::access(task_dir.c_str(), F_OK) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_NE(::access(task_dir.c_str(), F_OK), 0) << "task " << tid << " not released in 5 s";
    EXPECT_FALSE(files.read(::getpid(), tid, {}));
    EXPECT_FALSE(files.read(::getpid(), tid, {0}));
    EXPECT_EQ(files.size(), 0u);
}

TEST(Procfs, TaskFilesStayWithinTheirLimits) {
    Waiter a, b;
    // No descriptors to keep: every read goes by the path.
    procfs::TaskFiles none(0);
    EXPECT_TRUE(none.read(::getpid(), a.tid(), {}));
    EXPECT_EQ(none.size(), 0u);
    // Files unread for longer than unread_after are closed at the next read.
    procfs::TaskFiles brief(8, std::chrono::seconds(0));
    EXPECT_TRUE(brief.read(::getpid(), a.tid(), {}));
    EXPECT_TRUE(brief.read(::getpid(), b.tid(), {}));
    EXPECT_EQ(brief.size(), 1u);
    procfs::TaskFiles kept(8);
    EXPECT_TRUE(kept.read(::getpid(), a.tid(), {}));
    EXPECT_TRUE(kept.read(::getpid(), b.tid(), {}));
    EXPECT_EQ(kept.size(), 2u);
    kept.forget(a.tid());
    EXPECT_EQ(kept.size(), 1u);
}

TEST(Procfs, Environment) {
    const std::string env("A=1\0CDSM_DISABLE=1\0PMI_RANK=2\0B", 31);
    const auto m = procfs::parse_environ(env, environment_names());
    EXPECT_EQ(m.size(), 2u);
    EXPECT_EQ(m.at("CDSM_DISABLE"), "1");
    EXPECT_EQ(m.at("PMI_RANK"), "2");
}

TEST(Procfs, OnlyAPrefixOfAnEnvironmentAndShortValuesAreRead) {
    const std::string value(64, '7'), over(65, '7');
    const std::string text = "PMI_RANK=" + value + std::string(1, '\0') + "SLURM_PROCID=" + over;
    const auto m = procfs::parse_environ(text, environment_names());
    EXPECT_EQ(m.at("PMI_RANK"), value);
    EXPECT_FALSE(m.count("SLURM_PROCID"));
    // A real process whose PMI_RANK comes after 300 KiB of other variables (each under the
    // kernel's 128 KiB per string), and one whose comes first.
    const auto spawn = [](bool rank_first) {
        std::vector<std::string> vars;
        if (rank_first) vars.push_back("PMI_RANK=3");
        for (int k = 0; k < 3; ++k)
            vars.push_back("FILL" + std::to_string(k) + "=" + std::string(100 * 1024, 'x'));
        if (!rank_first) vars.push_back("PMI_RANK=3");
        std::vector<char*> envp;
        for (auto& v : vars) envp.push_back(v.data());
        envp.push_back(nullptr);
        const pid_t pid = ::fork();
        if (pid == 0) {
            char sleep[] = "sleep", seconds[] = "30";
            char* argv[] = {sleep, seconds, nullptr};
            ::execve("/bin/sleep", argv, envp.data());
            ::_exit(127);
        }
        return pid;
    };
    const auto rank_of = [](pid_t pid) {
        for (int tries = 0; tries < 500; ++tries) {  // until the exec is done
            if (procfs::comm(pid) == "sleep") {
                if (auto env = procfs::environ(pid, environment_names()))
                    return env_facts(*env).rank;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return std::optional<int>(-1);
    };
    const pid_t late = spawn(false), early = spawn(true);
    ASSERT_GT(late, 0);
    ASSERT_GT(early, 0);
    EXPECT_EQ(rank_of(late), std::nullopt);
    EXPECT_EQ(rank_of(early), 3);
    for (pid_t pid : {late, early}) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
}

TEST(Procfs, AnEmptyEnvironmentIsUnknown) {
    // Ours has PATH; kthreadd (pid 2) has an empty one, as a process has in the middle of its
    // exec: unknown (read again later), not an environment without the variables.
    const auto own = procfs::environ(::getpid(), {"PATH"});
    ASSERT_TRUE(own);
    // (Its value is read if it is short enough.)
    const char* path = std::getenv("PATH");
    EXPECT_EQ(own->count("PATH"), path && std::strlen(path) <= procfs::kMaxEnvironValue ? 1u : 0u);
    if (::geteuid() == 0) {
        EXPECT_FALSE(procfs::environ(2, {"PATH"}));
    }
    EXPECT_FALSE(procfs::environ(0x3fffffff, {"PATH"}));
}

TEST(Procfs, CgroupDirectoriesAreRelativeAndSorted) {
    const std::filesystem::path top =
        std::filesystem::temp_directory_path() / ("cdsm-cgroups-" + std::to_string(::getpid()));
    std::filesystem::remove_all(top);
    std::filesystem::create_directories(top / "system.slice" / "job_7" / "step_0");
    std::filesystem::create_directories(top / "a");
    std::ofstream(top / "cgroup.procs") << "1\n";  // files are not directories
    const auto dirs = procfs::cgroup_directories(top.string());
    std::filesystem::remove_all(top);
    ASSERT_TRUE(dirs);
    EXPECT_EQ(*dirs, (std::vector<std::string>{"/a", "/system.slice", "/system.slice/job_7",
                                               "/system.slice/job_7/step_0"}));
    EXPECT_FALSE(procfs::cgroup_directories((top / "gone").string()));
}

}  // namespace
}  // namespace cdsm::cdsmd

namespace cdsm::cdsmd {
namespace {

TEST(WorkBudget, EachUidAndAllTogetherGetTheirShareOfTime) {
    using namespace std::chrono_literals;
    WorkBudget budget({.share_per_uid = 0.1, .share_all = 0.25, .burst = 1s});
    const WorkBudget::Clock::time_point t0{};
    // Within the burst: no wait; 3 s of work then must drain to 1 s at 10 % of the time: 20 s.
    EXPECT_FALSE(budget.wait(1000, t0));
    budget.spend(1000, 3s, t0);
    const auto wait = budget.wait(1000, t0);
    ASSERT_TRUE(wait);
    EXPECT_NEAR(std::chrono::duration<double>(*wait).count(), 20, 0.01);
    // Another uid waits for the common bucket: 3 s to 1 s at 25 %, 8 s.
    const auto other = budget.wait(1001, t0);
    ASSERT_TRUE(other);
    EXPECT_NEAR(std::chrono::duration<double>(*other).count(), 8, 0.01);
    EXPECT_FALSE(budget.wait(1001, t0 + 9s));
    EXPECT_TRUE(budget.wait(1000, t0 + 19s));
    EXPECT_FALSE(budget.wait(1000, t0 + 21s));
    // Uids whose time is paid back are forgotten.
    budget.spend(1001, 10ms, t0 + 40s);
    EXPECT_EQ(budget.owing(), 1u);
}

}  // namespace
}  // namespace cdsm::cdsmd
