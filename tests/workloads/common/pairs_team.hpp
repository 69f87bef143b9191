// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "cli.hpp"
#include "memory.hpp"
#include "pair_region.hpp"
#include "placement.hpp"

namespace cdsm::workloads {

/// Options of the pairs programs whose tasks are threads of one process (pthreads, OpenMP).
struct PairsOptions {
    int tasks = 8;
    std::uint64_t seed = 1;
    std::size_t data_pages = 4;
    RunLength run;
    double switch_after = 0;        ///< 0: one phase (unless switch_on_signal)
    bool switch_on_signal = false;  ///< second phase from SIGUSR2 on
    double pause_ms = 0;            ///< sleep after each sweep (not in work mode)
    std::string truth;
    std::string truth2;
    StartPlacement start;
    bool work = false;  ///< compute-and-share mode: fixed work, timed
    std::size_t private_kib = 1024;
    unsigned repeat = 5;
    bool json = false;

    /// Adds the options; `with_work` adds the compute-and-share mode (--work and its options).
    void add_options(CLI::App& app, bool with_work);
    /// True when the run has a second pairing (--switch-after or --switch-on-signal).
    bool two_phases() const { return switch_after > 0 || switch_on_signal; }
    /// Checks combinations that the parser cannot; throws UsageError.
    void validate() const;
};

/// The pairs workload run by a team of threads: member i shares data only with member P(i) of a
/// seeded non-neighbour pairing (then P2 after --switch-after), through a PairRegion per pair.
/// The team's threading (std::thread, OpenMP) is the caller's: it calls member() from every team
/// member with a barrier for the whole team, then finish() once. Members touch only their own
/// pages and their pair's region (the truth and the summary excepted), so no page carries
/// communication between tasks that are not partners.
class PairsTeam {
  public:
    explicit PairsTeam(const PairsOptions& options);

    /// The body of member `index` (0..tasks-1). Does not throw (everything that can fail is
    /// allocated by the constructor; pinning and truth-file failures are recorded), so no member
    /// can leave the others waiting at a barrier.
    void member(int index, const std::function<void()>& barrier);

    /// After every member returned: prints the one-line summary (or JSON) to stdout, failures to
    /// stderr, and returns the exit code.
    int finish(const std::string& program);

  private:
    struct Phase {
        std::vector<int> partner;
        std::vector<Mapping> regions;  ///< indexed by the pair's lower member; others empty
    };

    static Phase make_phase(std::vector<int> partner, std::size_t data_pages);
    void exchange(const Phase& phase, int index, const StopRule& stop);
    void work(const Phase& phase, int index, const std::function<void()>& barrier);
    void write_truth_file(const Phase& phase, const std::string& file);
    void record_failure(const std::string& what);

    const PairsOptions& options_;
    Phase phase1_;
    Phase phase2_;
    std::vector<int> start_cpus_;
    std::vector<Mapping> private_data_;  ///< work mode: one mapping per member
    PerTaskPages<PairTaskResult> slots_;
    std::vector<double> run_seconds_;      ///< work mode, written by member 0 only
    std::vector<double> run_cpu_seconds_;  ///< the same: the process's CPU time (all threads)
    std::mutex failure_mutex_;
    std::string failure_;
};

}  // namespace cdsm::workloads
