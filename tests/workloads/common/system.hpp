// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace cdsm::workloads {

/// Throws std::system_error for errno, naming what failed.
[[noreturn]] void throw_errno(const std::string& what);

/// The calling thread's Linux thread id, as gettid() returns.
pid_t current_tid();

/// An owned file descriptor, closed on destruction.
class UniqueFd {
  public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept;
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd();

    int get() const { return fd_; }
    int release();

  private:
    int fd_ = -1;
};

using Clock = std::chrono::steady_clock;

/// Seconds from `start` to now.
double seconds_since(Clock::time_point start);
/// CPU time of the whole process (every thread, user and system) so far, in seconds; NaN if the
/// clock cannot be read. Does not throw: the pairs team's members call it between barriers.
double process_cpu_seconds() noexcept;

/// The time `seconds` after `start`.
inline Clock::time_point after_seconds(Clock::time_point start, double seconds) {
    return start +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

/// Makes SIGUSR1 end the program's timed run early, as if its time were up: the program then
/// finishes as at its deadline, runs its own data checks and exits by them. Lets a test stop a
/// program it started with a generous --seconds once it has seen what it waited for. Called by
/// run_workload() before the program runs.
void stop_early_on_sigusr1();

/// True once SIGUSR1 asked for an early end (async-signal-safe).
bool stop_requested();

/// Records an early end, as SIGUSR1 does (async-signal-safe: for signal handlers).
void request_stop();

/// Makes SIGUSR2 a cue to switch to the next phase (a program whose phases a test drives).
void switch_on_sigusr2();

/// True once SIGUSR2 asked for the next phase (async-signal-safe).
bool switch_requested();

/// When a task stops making passes: at a deadline (or an early end, stop_requested()), or after a
/// number of passes.
class StopRule {
  public:
    static StopRule at(Clock::time_point deadline) { return {deadline, 0}; }
    static StopRule after(std::uint64_t passes) { return {{}, passes}; }
    /// At a deadline, an early end, or SIGUSR2's cue to switch (switch_on_sigusr2()).
    static StopRule until_switch(Clock::time_point deadline) { return {deadline, 0, true}; }
    /// True once `passes_made` reached the limit, or the deadline passed or an early end (or,
    /// for until_switch(), the switch) was asked.
    bool done(std::uint64_t passes_made) const {
        return max_passes_ != 0 ? passes_made >= max_passes_
                                : Clock::now() >= deadline_ || stop_requested() ||
                                      (on_switch_ && switch_requested());
    }

  private:
    StopRule(Clock::time_point deadline, std::uint64_t max_passes, bool on_switch = false)
        : deadline_(deadline), max_passes_(max_passes), on_switch_(on_switch) {}
    Clock::time_point deadline_;
    std::uint64_t max_passes_;
    bool on_switch_;
};

}  // namespace cdsm::workloads
