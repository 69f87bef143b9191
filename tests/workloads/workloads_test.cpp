// SPDX-License-Identifier: GPL-2.0
// Runs every workload briefly and checks its truth files, its own verdict and its exit codes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/pairing.hpp"
#include "common/placement.hpp"

namespace fs = std::filesystem;
using namespace cdsm::workloads;

namespace {

using Truth = std::vector<std::vector<pid_t>>;  ///< per line: the tid, then its partners

Truth read_truth(const fs::path& file) {
    std::ifstream in(file);
    Truth truth;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::vector<pid_t> ids;
        for (pid_t id; fields >> id;) ids.push_back(id);
        EXPECT_TRUE(fields.eof()) << "not a list of tids: '" << line << "'";
        truth.push_back(ids);
    }
    return truth;
}

/// The partners of each line as line indices; fails the test for tids not in the file.
std::vector<std::vector<int>> partner_indices(const Truth& truth) {
    std::vector<pid_t> tids;
    for (const auto& line : truth) tids.push_back(line.at(0));
    std::vector<std::vector<int>> result;
    for (const auto& line : truth) {
        std::vector<int> partners;
        for (std::size_t k = 1; k < line.size(); ++k) {
            const auto it = std::find(tids.begin(), tids.end(), line[k]);
            EXPECT_NE(it, tids.end()) << "partner " << line[k] << " has no line";
            partners.push_back(static_cast<int>(it - tids.begin()));
        }
        result.push_back(partners);
    }
    return result;
}

/// Checks a pairs truth file: `n` distinct tids, one partner each, an involution without
/// neighbours. Returns the pairing by index.
std::vector<int> expect_pairing(const fs::path& file, int n) {
    const Truth truth = read_truth(file);
    EXPECT_EQ(truth.size(), static_cast<std::size_t>(n)) << file;
    std::set<pid_t> tids;
    for (const auto& line : truth) {
        EXPECT_EQ(line.size(), 2u) << "one partner per task";
        EXPECT_GT(line.at(0), 0);
        tids.insert(line.at(0));
    }
    EXPECT_EQ(tids.size(), truth.size()) << "tids are distinct";
    std::vector<int> partner;
    for (const auto& p : partner_indices(truth)) partner.push_back(p.at(0));
    for (int i = 0; i < static_cast<int>(partner.size()); ++i) {
        EXPECT_NE(partner[i], i);
        EXPECT_EQ(partner.at(partner[i]), i) << "pairing is symmetric";
        EXPECT_FALSE(are_neighbours(i, partner[i], n))
            << i << " paired with neighbour " << partner[i];
    }
    return partner;
}

struct Outcome {
    int status;  ///< exit code, or 128 + signal
    std::string out;
    std::string err;
};

class WorkloadTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string tmpl = (fs::temp_directory_path() / "cdsm-workloads-XXXXXX").string();
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { fs::remove_all(dir_); }

    fs::path file(const std::string& name) const { return dir_ / name; }

    pid_t spawn(const std::vector<std::string>& args) {
        const pid_t pid = fork();
        if (pid == 0) {
            const int out = open(file("stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            const int err = open(file("stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(126);
            std::vector<char*> argv;
            for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            execvp(argv[0], argv.data());
            _exit(127);
        }
        return pid;
    }

    Outcome wait(pid_t pid) {
        int status = 0;
        EXPECT_EQ(waitpid(pid, &status, 0), pid);
        const auto slurp = [](const fs::path& p) {
            std::ifstream in(p);
            return std::string(std::istreambuf_iterator<char>(in), {});
        };
        return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                slurp(file("stdout")), slurp(file("stderr"))};
    }

    Outcome run(const std::vector<std::string>& args) { return wait(spawn(args)); }

    /// Waits up to 10 s for `path` to appear.
    static bool wait_for(const fs::path& path) {
        for (int i = 0; i < 1000 && !fs::exists(path); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return fs::exists(path);
    }

    fs::path dir_;
};

// --- The pairing itself -----------------------------------------------------------------------

TEST(Pairing, IsANonNeighbourInvolutionForEverySizeAndSeed) {
    for (int n = 4; n <= 66; n += 2) {
        for (std::uint64_t seed = 0; seed < 20; ++seed) {
            const auto p = make_pairing(n, seed);
            for (int i = 0; i < n; ++i) {
                ASSERT_EQ(p[p[i]], i);
                ASSERT_NE(p[i], i);
                ASSERT_FALSE(are_neighbours(i, p[i], n)) << "n=" << n << " seed=" << seed;
            }
            if (n < 6) continue;
            const auto [first, second] = make_disjoint_pairings(n, seed);
            for (int i = 0; i < n; ++i) {
                ASSERT_EQ(second[second[i]], i);
                ASSERT_NE(second[i], first[i]) << "second pairing reuses a pair";
                ASSERT_FALSE(are_neighbours(i, first[i], n));
                ASSERT_FALSE(are_neighbours(i, second[i], n));
            }
        }
    }
}

TEST(Pairing, DependsOnTheSeedOnly) {
    EXPECT_EQ(make_pairing(64, 7), make_pairing(64, 7));
    EXPECT_NE(make_pairing(64, 7), make_pairing(64, 8));
    EXPECT_EQ(make_pairing(4, 3), (std::vector<int>{2, 3, 0, 1}));  // the only one for 4
}

TEST(Pairing, RejectsImpossibleSizes) {
    EXPECT_THROW(make_pairing(2, 1), std::runtime_error);
    EXPECT_THROW(make_pairing(7, 1), std::runtime_error);
    EXPECT_THROW(make_disjoint_pairings(4, 1), std::runtime_error);
}

// --- Placement --------------------------------------------------------------------------------

TEST(Placement, ParsesCpuLists) {
    EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
    EXPECT_THROW(parse_cpu_list("3-1"), std::runtime_error);
    EXPECT_THROW(parse_cpu_list("a"), std::runtime_error);
    EXPECT_THROW(parse_cpu_list("1,,2"), std::runtime_error);
}

TEST(Placement, BadPlacementPutsPartnersOnDifferentPackagesEvenly) {
    // 2 packages x 2 cores x 2 PUs with Linux-like numbering: SMT siblings are 0/4, 1/5, ...
    std::vector<Cpu> cpus;
    for (int c = 0; c < 8; ++c) cpus.push_back({c, (c / 2) % 2, c % 2});
    const auto pairing = make_pairing(8, 1);
    const auto placement = bad_placement(pairing_graph(pairing), cpus);
    ASSERT_EQ(placement.size(), 8u);
    EXPECT_EQ(std::set<int>(placement.begin(), placement.end()).size(), 8u) << "one task per CPU";
    for (int i = 0; i < 8; ++i) {
        EXPECT_NE(cpus[placement[i]].package, cpus[placement[pairing[i]]].package);
    }
}

TEST(Placement, BadPlacementUsesCoresOnOnePackage) {
    const std::vector<Cpu> cpus = {{0, 0, 0}, {1, 0, 1}, {2, 0, 0}, {3, 0, 1}};
    const auto pairing = make_pairing(8, 3);
    const auto placement = bad_placement(pairing_graph(pairing), cpus);
    for (int i = 0; i < 8; ++i) {
        EXPECT_NE(cpus[placement[i]].core, cpus[placement[pairing[i]]].core);
    }
}

// --- cdsm-pairs-threads -----------------------------------------------------------------------

TEST_F(WorkloadTest, PairsThreadsWritesTheNonNeighbourPairing) {
    const auto r = run({CDSM_PAIRS_THREADS, "--seconds", "0.2", "--truth", file("truth")});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(": OK:"), std::string::npos) << r.out;
    expect_pairing(file("truth"), 8);
    EXPECT_FALSE(fs::exists(file("truth.tmp")));
}

TEST_F(WorkloadTest, PairsThreadsSwitchesToADisjointPairing) {
    const auto r = run({CDSM_PAIRS_THREADS, "--threads", "10", "--seconds", "0.4", "--switch-after",
                        "0.2", "--truth", file("t1"), "--truth2", file("t2")});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto p1 = expect_pairing(file("t1"), 10);
    const auto p2 = expect_pairing(file("t2"), 10);
    for (int i = 0; i < 10; ++i) EXPECT_NE(p1[i], p2[i]) << "task " << i << " kept its partner";
    const Truth t1 = read_truth(file("t1")), t2 = read_truth(file("t2"));
    for (std::size_t i = 0; i < t1.size(); ++i) EXPECT_EQ(t1[i][0], t2[i][0]) << "same tasks";
}

// --switch-on-signal: the first pairing lasts until SIGUSR2 however long that is, the second
// begins then (its truth file written), and SIGUSR1 ends the run as usual.
TEST_F(WorkloadTest, PairsThreadsSwitchesOnSignal) {
    const pid_t pid = spawn({CDSM_PAIRS_THREADS, "--threads", "6", "--seconds", "120",
                             "--switch-on-signal", "--truth", file("t1"), "--truth2", file("t2")});
    ASSERT_TRUE(wait_for(file("t1")));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_FALSE(fs::exists(file("t2"))) << "switched without the signal";
    ASSERT_EQ(kill(pid, SIGUSR2), 0);
    ASSERT_TRUE(wait_for(file("t2")));
    ASSERT_EQ(kill(pid, SIGUSR1), 0);
    const auto r = wait(pid);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("2 phases"), std::string::npos) << r.out;
    const auto p1 = expect_pairing(file("t1"), 6);
    const auto p2 = expect_pairing(file("t2"), 6);
    for (int i = 0; i < 6; ++i) EXPECT_NE(p1[i], p2[i]) << "task " << i << " kept its partner";
}

TEST_F(WorkloadTest, PairsThreadsWorkModeReportsMedianRunTime) {
    const auto r = run({CDSM_PAIRS_THREADS, "--threads", "4", "--work", "--iterations", "3",
                        "--repeat", "3", "--private-kib", "64", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("run_seconds").size(), 3u);
    EXPECT_GT(j.at("median_seconds").get<double>(), 0.0);
    EXPECT_EQ(j.at("cpu_seconds").size(), 3u);
    EXPECT_GT(j.at("median_cpu_seconds").get<double>(), 0.0);
    EXPECT_TRUE(j.at("data_ok").get<bool>());
}

TEST_F(WorkloadTest, PairsThreadsPauseSleepsAfterEachSweep) {
    // 0.5 s with a 100-ms pause after each sweep: 5 or 6 sweeps per thread (the first before any
    // pause), where the same run without a pause makes thousands.
    const auto r =
        run({CDSM_PAIRS_THREADS, "--threads", "4", "--seconds", "0.5", "--pause-ms", "100"});
    ASSERT_EQ(r.status, 0) << r.err;
    const std::regex summary(R"(: OK: 4 threads, 1 phase, passes per thread (\d+)\.\.(\d+), )");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, summary)) << r.out;
    EXPECT_GE(std::stoi(m[1]), 4) << r.out;
    EXPECT_LE(std::stoi(m[2]), 6) << r.out;
}

/// The CPU a task is bound to, from its allowed list (-1 when it may run on several).
int bound_cpu(pid_t pid, pid_t tid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("Cpus_allowed_list:", 0) == 0) {
            const auto cpus = parse_cpu_list(line.substr(line.find_first_not_of(" \t", 18)));
            return cpus.size() == 1 ? cpus[0] : -1;
        }
    }
    return -1;
}

TEST_F(WorkloadTest, PairsThreadsPinBadSeparatesPartners) {
    const auto cpus = allowed_cpus();
    if (cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
    const pid_t pid =
        spawn({CDSM_PAIRS_THREADS, "--seconds", "0.5", "--pin-bad", "--truth", file("truth")});
    ASSERT_TRUE(wait_for(file("truth")));
    const Truth truth = read_truth(file("truth"));
    for (const auto& line : truth) {
        const int a = bound_cpu(pid, line[0]), b = bound_cpu(pid, line[1]);
        ASSERT_GE(a, 0);
        ASSERT_GE(b, 0);
        const auto cpu = [&](int os) {
            return *std::find_if(cpus.begin(), cpus.end(),
                                 [os](const Cpu& c) { return c.os_index == os; });
        };
        EXPECT_TRUE(cpu(a).package != cpu(b).package || cpu(a).core != cpu(b).core)
            << "partners " << line[0] << " and " << line[1] << " on CPUs " << a << " and " << b;
    }
    EXPECT_EQ(wait(pid).status, 0);
}

TEST_F(WorkloadTest, PairsThreadsStartCpusPinsEveryThread) {
    const int first = allowed_cpus().at(0).os_index;
    const pid_t pid = spawn({CDSM_PAIRS_THREADS, "--threads", "4", "--seconds", "0.5",
                             "--start-cpus", std::to_string(first), "--truth", file("truth")});
    ASSERT_TRUE(wait_for(file("truth")));
    for (const auto& line : read_truth(file("truth"))) EXPECT_EQ(bound_cpu(pid, line[0]), first);
    EXPECT_EQ(wait(pid).status, 0);
}

TEST_F(WorkloadTest, TruthFileThatCannotBeWrittenFails) {
    const auto r = run({CDSM_PAIRS_THREADS, "--iterations", "2", "--truth", file("no/such/dir/t")});
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("cannot create"), std::string::npos) << r.err;
}

/// The tids of all threads of process `pid`.
std::set<pid_t> tasks_of(pid_t pid) {
    std::set<pid_t> tids;
    for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
        tids.insert(std::stoi(e.path().filename().string()));
    }
    return tids;
}

std::set<pid_t> truth_tids(const fs::path& file) {
    std::set<pid_t> tids;
    for (const auto& line : read_truth(file)) tids.insert(line.at(0));
    return tids;
}

TEST_F(WorkloadTest, PairsThreadsTruthListsEveryTaskOfTheProcess) {
    const pid_t pid = spawn({CDSM_PAIRS_THREADS, "--seconds", "0.3", "--truth", file("truth")});
    ASSERT_TRUE(wait_for(file("truth")));
    EXPECT_EQ(truth_tids(file("truth")), tasks_of(pid));
    EXPECT_EQ(wait(pid).status, 0);
}

// --- cdsm-pairs-omp ---------------------------------------------------------------------------

#ifdef CDSM_PAIRS_OMP
TEST_F(WorkloadTest, PairsOmpWritesTheNonNeighbourPairing) {
    const auto r =
        run({CDSM_PAIRS_OMP, "--threads", "6", "--iterations", "50", "--truth", file("truth")});
    EXPECT_EQ(r.status, 0) << r.err;
    expect_pairing(file("truth"), 6);
}

TEST_F(WorkloadTest, PairsOmpSwitchesAndListsEveryTask) {
    const pid_t pid = spawn({CDSM_PAIRS_OMP, "--seconds", "0.5", "--switch-after", "0.25",
                             "--truth", file("t1"), "--truth2", file("t2")});
    ASSERT_TRUE(wait_for(file("t1")));
    EXPECT_EQ(truth_tids(file("t1")), tasks_of(pid));
    EXPECT_EQ(wait(pid).status, 0);
    const auto p1 = expect_pairing(file("t1"), 8);
    const auto p2 = expect_pairing(file("t2"), 8);
    for (int i = 0; i < 8; ++i) EXPECT_NE(p1[i], p2[i]);
}
#endif

// --- cdsm-pairs-procs -------------------------------------------------------------------------

std::set<std::string> shm_entries(const std::string& prefix = "cdsm-pairs-") {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator("/dev/shm")) {
        if (e.path().filename().string().rfind(prefix, 0) == 0) names.insert(e.path());
    }
    return names;
}

TEST_F(WorkloadTest, PairsProcsWritesOneLinePerProcess) {
    const auto before = shm_entries();
    const pid_t pid = spawn({CDSM_PAIRS_PROCS, "--seconds", "0.3", "--truth", file("truth")});
    ASSERT_TRUE(wait_for(file("truth")));
    const auto r = wait(pid);
    EXPECT_EQ(r.status, 0) << r.err;
    expect_pairing(file("truth"), 8);
    EXPECT_EQ(read_truth(file("truth")).at(0).at(0), pid) << "the first process is task 0";
    EXPECT_EQ(shm_entries(), before) << "shared memory left behind";
}

TEST_F(WorkloadTest, PairsProcsStopsAllProcessesOnSigterm) {
    const pid_t pid =
        spawn({CDSM_PAIRS_PROCS, "--procs", "4", "--seconds", "30", "--truth", file("truth")});
    ASSERT_TRUE(wait_for(file("truth")));
    ASSERT_EQ(kill(pid, SIGTERM), 0);
    EXPECT_EQ(wait(pid).status, 128 + SIGTERM);
    for (const auto& line : read_truth(file("truth"))) {
        bool gone = false;
        for (int i = 0; i < 200 && !gone; ++i) {
            std::ifstream stat("/proc/" + std::to_string(line[0]) + "/stat");
            std::string state;
            gone = !(stat >> state >> state >> state) || state == "Z";
            if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        EXPECT_TRUE(gone) << "process " << line[0] << " still runs";
    }
}

// SIGUSR1 ends a run started with a long --seconds early, as if its time were up: the program
// finishes normally, its own checks pass (exit 0, "OK") and every process of it is gone.
class EarlyStopTest : public WorkloadTest,
                      public ::testing::WithParamInterface<std::vector<std::string>> {};

TEST_P(EarlyStopTest, Sigusr1EndsTheRunAsAtItsDeadline) {
    std::vector<std::string> args = GetParam();
    args.insert(args.end(), {"--seconds", "120", "--truth", file("truth")});
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = spawn(args);
    ASSERT_TRUE(wait_for(file("truth")));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // into the run
    ASSERT_EQ(kill(pid, SIGUSR1), 0);
    const auto r = wait(pid);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("OK"), std::string::npos) << r.out;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60))
        << "the run did not end early";
    for (const auto& line : read_truth(file("truth"))) {
        std::ifstream stat("/proc/" + std::to_string(line[0]) + "/stat");
        std::string state;
        EXPECT_TRUE(!(stat >> state >> state >> state) || state == "Z")
            << "task " << line[0] << " still runs";
    }
}

std::vector<std::vector<std::string>> early_stop_programs() {
    std::vector<std::vector<std::string>> programs = {
        {CDSM_PAIRS_THREADS, "--threads", "4", "--pages", "8"},
        {CDSM_PAIRS_PROCS, "--procs", "4", "--pages", "8"},
        {CDSM_SHM_RING, "--procs", "3"},
    };
#ifdef CDSM_MPI_RING
    programs.push_back({CDSM_MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-np", "4", "--mca",
                        "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none",
                        CDSM_MPI_RING, "--pattern", "ring"});
#endif
    return programs;
}

// Named after the workload (cdsm_mpi_ring under mpiexec: the sanitizer run leaves it out, as the
// other tests of it, tests/fuzz/ci.cmake).
std::string early_stop_name(const ::testing::TestParamInfo<std::vector<std::string>>& info) {
    for (const auto& arg : info.param) {
        std::string name = fs::path(arg).filename().string();
        if (name.rfind("cdsm-", 0) != 0) continue;
        std::replace(name.begin(), name.end(), '-', '_');
        return name;
    }
    return "program_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Programs, EarlyStopTest, ::testing::ValuesIn(early_stop_programs()),
                         early_stop_name);

// --- cdsm-shm-ring ----------------------------------------------------------------------------

TEST_F(WorkloadTest, ShmRingWritesTheRingAndChecksEveryMessage) {
    const auto before = shm_entries("cdsm-shm-ring-");
    const pid_t pid =
        spawn({CDSM_SHM_RING, "--procs", "5", "--iterations", "300", "--truth", file("truth")});
    ASSERT_TRUE(wait_for(file("truth")));
    const auto r = wait(pid);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("3000 messages sent, 3000 received, 0 wrong words"), std::string::npos)
        << r.out;
    const Truth truth = read_truth(file("truth"));
    ASSERT_EQ(truth.size(), 5u);
    EXPECT_EQ(truth[0][0], pid) << "the first process is task 0";
    for (std::size_t i = 0; i < 5; ++i) {
        std::set<pid_t> partners(truth[i].begin() + 1, truth[i].end());
        EXPECT_EQ(partners, (std::set<pid_t>{truth[(i + 4) % 5][0], truth[(i + 1) % 5][0]}));
    }
    EXPECT_EQ(shm_entries("cdsm-shm-ring-"), before) << "shared memory left behind";
}

// --- cdsm-mpi-ring ----------------------------------------------------------------------------

#ifdef CDSM_MPI_RING
class MpiRingTest : public WorkloadTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(MpiRingTest, TruthListsEachRanksMessagePartners) {
    const std::string pattern = GetParam();
    const auto r =
        run({CDSM_MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-np", "4", "--mca", "btl",
             "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none", CDSM_MPI_RING,
             "--pattern", pattern, "--seconds", "0.3", "--truth", file("truth")});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(": OK:"), std::string::npos) << r.out;
    const Truth truth = read_truth(file("truth"));
    ASSERT_EQ(truth.size(), 4u);
    // Ring: rank r's partners are r-1 and r+1. A 2x2 grid: r^1 (same row), r^2 (same column).
    const std::vector<std::vector<int>> expected =
        pattern == "ring" ? std::vector<std::vector<int>>{{1, 3}, {0, 2}, {1, 3}, {0, 2}}
                          : std::vector<std::vector<int>>{{1, 2}, {0, 3}, {0, 3}, {1, 2}};
    EXPECT_EQ(partner_indices(truth), expected);
}

INSTANTIATE_TEST_SUITE_P(Patterns, MpiRingTest, ::testing::Values("ring", "halo2d"));

TEST_F(WorkloadTest, MpiRingFollowsTheRingOrder) {
    const auto r =
        run({CDSM_MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-np", "4", "--mca", "btl",
             "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none", CDSM_MPI_RING,
             "--ring-order", "0,2,1,3", "--iterations", "3", "--truth", file("truth")});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(": OK:"), std::string::npos) << r.out;
    // The ring 0-2-1-3-0: rank 0's neighbours are 2 and 3, rank 2's 0 and 1.
    EXPECT_EQ(partner_indices(read_truth(file("truth"))),
              (std::vector<std::vector<int>>{{2, 3}, {2, 3}, {0, 1}, {0, 1}}));
}

// --redraw: a new ring every S seconds, the same on every rank (each rank checks every word it
// receives from its ring's neighbours, so ranks that disagreed on the ring would hang or fail).
TEST_F(WorkloadTest, MpiRingRedrawsItsRing) {
    const auto r = run({CDSM_MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-np", "4", "--mca",
                        "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none",
                        CDSM_MPI_RING, "--redraw", "0.05", "--seconds", "0.6", "--bytes", "4096"});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    const std::regex result(R"(: OK: 4 ranks, ring \((\d+) rings\), 4096-byte messages, )");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, result)) << r.out;
    const int rings = std::stoi(m[1]);
    EXPECT_GE(rings, 3) << r.out;
    // "ring K from iteration I (T s): a-b-c-d", K = 1, 2, ...: each a permutation of the ranks,
    // its pairs of neighbours never all the previous ring's.
    const std::regex line(R"(ring (\d+) from iteration (\d+) \([0-9.]+ s\): (\d)-(\d)-(\d)-(\d))");
    std::vector<std::set<std::pair<int, int>>> seen;
    for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), line);
         it != std::sregex_iterator(); ++it) {
        EXPECT_EQ(std::stoi((*it)[1]), static_cast<int>(seen.size()) + 1) << r.out;
        std::vector<int> order;
        for (int k = 3; k <= 6; ++k) order.push_back(std::stoi((*it)[k]));
        std::vector<int> sorted = order;
        std::sort(sorted.begin(), sorted.end());
        EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2, 3})) << r.out;
        std::set<std::pair<int, int>> pairs;
        for (std::size_t p = 0; p < 4; ++p) {
            const int a = order[p], b = order[(p + 1) % 4];
            pairs.emplace(std::min(a, b), std::max(a, b));
        }
        if (!seen.empty()) {
            EXPECT_NE(pairs, seen.back()) << r.out;
        }
        seen.push_back(pairs);
    }
    EXPECT_EQ(static_cast<int>(seen.size()), rings) << r.out;
}

TEST_F(WorkloadTest, MpiRingRedrawNeedsFourRanks) {
    const auto r = run({CDSM_MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-np", "3", "--mca",
                        "btl", "self,vader", CDSM_MPI_RING, "--redraw", "1", "--iterations", "3"});
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("--redraw needs at least 4 ranks"), std::string::npos) << r.err;
}

TEST_F(WorkloadTest, MpiRingRedrawRefusesAFixedRingAndATruth) {
    for (const auto& [option, value, why] :
         {std::tuple{"--ring-order", "0,1,2,3", "not with --ring-order"},
          std::tuple{"--truth", "t", "not with --truth"}}) {
        const auto r = run({CDSM_MPI_RING, "--redraw", "1", option, value});
        EXPECT_EQ(r.status, 2) << option;
        EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    }
}

TEST_F(WorkloadTest, MpiRingRefusesARingOrderThatIsNoPermutation) {
    const auto r =
        run({CDSM_MPIEXEC, "--oversubscribe", "--allow-run-as-root", "-np", "4", "--mca", "btl",
             "self,vader", CDSM_MPI_RING, "--ring-order", "0,1,1,3", "--iterations", "3"});
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("not a permutation"), std::string::npos) << r.err;
}
#endif

// --- cdsm-checksum and cdsm-faultbench --------------------------------------------------------

TEST_F(WorkloadTest, ChecksumFindsEveryWordAndRssUnchanged) {
    const auto r = run({CDSM_CHECKSUM, "--mib", "6", "--threads", "2", "--seconds", "0.2", "--dir",
                        dir_.string(), "--json"});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(j.at("ok").get<bool>());
    EXPECT_EQ(j.at("wrong_words").get<std::uint64_t>(), 0u);
    EXPECT_GE(j.at("passes_min").get<std::uint64_t>(), 1u);
    EXPECT_GE(j.at("before").at("rss_kib").get<long>(), 6 * 1024);
    for (const auto& e : fs::directory_iterator(dir_)) {
        EXPECT_EQ(e.path().filename().string().rfind("cdsm-checksum-", 0), std::string::npos)
            << "file left behind: " << e.path();
    }
}

TEST_F(WorkloadTest, FaultbenchCountsOneFaultPerPage) {
    const auto r =
        run({CDSM_FAULTBENCH, "--threads", "2", "--pages", "2048", "--iterations", "3", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("repetitions").size(), 3u);
    EXPECT_EQ(j.at("bad_pages").get<std::uint64_t>(), 0u);
    EXPECT_NEAR(j.at("faults_per_page").get<double>(), 1.0, 0.1);
    EXPECT_GT(j.at("median_ns_per_fault").get<double>(), 0.0);
}

// --- Arguments --------------------------------------------------------------------------------

struct BadArgs {
    const char* program;
    std::vector<std::string> args;
};

void PrintTo(const BadArgs& bad, std::ostream* out) {
    *out << fs::path(bad.program).filename().string();
    for (const auto& a : bad.args) *out << ' ' << a;
}

class BadArgumentsTest : public WorkloadTest, public ::testing::WithParamInterface<BadArgs> {};

TEST_P(BadArgumentsTest, ExitTwoWithOneLine) {
    std::vector<std::string> argv{GetParam().program};
    argv.insert(argv.end(), GetParam().args.begin(), GetParam().args.end());
    const auto r = run(argv);
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(": error: "), std::string::npos) << r.err;
}

std::vector<BadArgs> bad_args() {
    std::vector<BadArgs> cases;
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--threads", "5"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--threads", "2"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--threads", "4", "--switch-after", "0.1"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--seconds", "1", "--switch-after", "2"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--iterations", "5", "--switch-after", "1"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--truth2", "x"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS,
                            {"--switch-on-signal", "--switch-after", "1", "--seconds", "5"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--switch-on-signal", "--iterations", "5"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--work"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--pause-ms", "-1"}});
    cases.push_back(
        BadArgs{CDSM_PAIRS_THREADS, {"--work", "--iterations", "1", "--pause-ms", "1"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--seconds", "0"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--seconds", "1", "--iterations", "1"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--start-cpus", "1-0"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--start-cpus", "4000"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--pin-bad", "--start-cpus", "0"}});
    cases.push_back(BadArgs{CDSM_PAIRS_THREADS, {"--no-such-option"}});
    cases.push_back(BadArgs{CDSM_PAIRS_PROCS, {"--procs", "7"}});
    cases.push_back(BadArgs{CDSM_PAIRS_PROCS, {"--pages", "0"}});
    cases.push_back(BadArgs{CDSM_SHM_RING, {"--procs", "2"}});
    cases.push_back(BadArgs{CDSM_SHM_RING, {"--bytes", "12"}});
    cases.push_back(BadArgs{CDSM_CHECKSUM, {"--kinds", "private,heap"}});
    cases.push_back(BadArgs{CDSM_CHECKSUM, {"--mib", "0"}});
    cases.push_back(BadArgs{CDSM_CHECKSUM, {"--dir", "/no/such/dir"}});
    cases.push_back(BadArgs{CDSM_FAULTBENCH, {"--threads", "0"}});
    cases.push_back(BadArgs{CDSM_FAULTBENCH, {"--pages", "x"}});
#ifdef CDSM_PAIRS_OMP
    cases.push_back(BadArgs{CDSM_PAIRS_OMP, {"--threads", "9"}});
#endif
#ifdef CDSM_MPI_RING
    cases.push_back(BadArgs{CDSM_MPI_RING, {"--pattern", "star"}});
    cases.push_back(BadArgs{CDSM_MPI_RING, {"--bytes", "1"}});
    cases.push_back(BadArgs{CDSM_MPI_RING, {"--pattern", "halo2d", "--ring-order", "1,0"}});
    cases.push_back(BadArgs{CDSM_MPI_RING, {"--seconds", "0.1"}});  // one rank: no partner
#endif
    return cases;
}

INSTANTIATE_TEST_SUITE_P(All, BadArgumentsTest, ::testing::ValuesIn(bad_args()),
                         [](const ::testing::TestParamInfo<BadArgs>& param_info) {
                             std::string name =
                                 fs::path(param_info.param.program).filename().string();
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name + "_" + std::to_string(param_info.index);
                         });

TEST_F(WorkloadTest, HelpExitsZero) {
    for (const char* program :
         {CDSM_PAIRS_THREADS, CDSM_PAIRS_PROCS, CDSM_SHM_RING, CDSM_CHECKSUM, CDSM_FAULTBENCH}) {
        const auto r = run({program, "--help"});
        EXPECT_EQ(r.status, 0) << program;
        EXPECT_NE(r.out.find("Usage:"), std::string::npos) << program;
    }
}

}  // namespace
