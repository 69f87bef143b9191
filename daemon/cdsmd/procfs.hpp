// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <cdsm/fd.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

/// What cdsmd reads about tasks from /proc, and their affinity. Every reader returns nothing
/// when the task is gone or unreadable: tasks exit at any moment, and that is not an error.
namespace cdsm::cdsmd::procfs {

/// From /proc/PID/task/TID/stat and .../schedstat.
struct TaskStat {
    char state = '?';
    std::uint64_t cpu_ticks = 0;    ///< utime + stime, in clock ticks
    std::uint64_t start_ticks = 0;  ///< since boot, in clock ticks
    int processor = -1;             ///< CPU it last ran on
    /// Time it ran plus time it waited on a run queue (schedstat), in ns; from cpu_ticks when
    /// schedstat cannot be read. A busy task on a crowded CPU waits more than it runs: its
    /// CPU time alone would make it look idle.
    std::uint64_t runnable_ns = 0;
    /// Times it was given a CPU (schedstat's third field), when schedstat could be read. The
    /// kernel adds a task's wait to runnable_ns only when the task next gets its CPU: a task that
    /// has waited all along and not run yet shows neither run nor wait (`state` 'R' and the
    /// same count tell it from a sleeping one).
    std::optional<std::uint64_t> slices;
};
std::optional<TaskStat> task_stat(pid_t tgid, pid_t tid);

/// task_stat() for the tasks a mapping pass reads again and again, at a fraction of its cost:
/// the tasks' schedstat and stat files stay open and are read again from offset 0 (opening a
/// file in /proc walks the path and allocates; reading it again only formats it), and a task
/// whose affinity holds one CPU is not asked for its stat at all (it can run only there, and
/// its start time does not change; cdsmd binds the tasks it places to one CPU each), unless it
/// has not been given a CPU since the last read: then its state tells waiting from asleep. A file
/// is opened by its path when the task is new, when the open one fails (a task that exited: its tid
/// may come back as another task) and for tasks beyond `max_tasks`.
class TaskFiles {
  public:
    /// Keeps the files of at most `max_tasks` tasks open (two descriptors each); files unread for
    /// `unread_after` are closed.
    explicit TaskFiles(std::size_t max_tasks,
                       std::chrono::seconds unread_after = std::chrono::seconds(60))
        : max_tasks_(max_tasks), unread_after_(unread_after) {}
    /// As task_stat(); `affinity` is the task's mask if the caller has it (a one-CPU mask says
    /// where it runs), else empty.
    std::optional<TaskStat> read(pid_t tgid, pid_t tid, const std::vector<std::uint32_t>& affinity);
    /// Closes the files of `tid` (it exited).
    void forget(pid_t tid) { files_.erase(tid); }
    /// Tasks whose files are open.
    std::size_t size() const { return files_.size(); }

  private:
    using Clock = std::chrono::steady_clock;
    struct Files {
        pid_t tgid = 0;
        Fd schedstat, stat;
        std::optional<std::uint64_t> start_ticks;  ///< of the task the files are open for
        std::optional<std::uint64_t> slices;       ///< at the last read
        std::uint64_t runnable_ns = 0;             ///< at the last read
        Clock::time_point read_at;
    };
    std::map<pid_t, Files> files_;
    std::size_t max_tasks_;
    Clock::duration unread_after_;
    Clock::time_point swept_at_ = Clock::now();
};

/// Parses the text of a stat file (the comm may hold spaces and parentheses).
std::optional<TaskStat> parse_stat(std::string_view text);
/// A schedstat file: run + wait in ns, and the times the task was given a CPU.
struct Schedstat {
    std::uint64_t runnable_ns = 0;
    std::uint64_t slices = 0;
};
/// Parses a schedstat file ("run_ns wait_ns timeslices"); nothing for "0 0" (kernels without
/// scheduler statistics).
std::optional<Schedstat> parse_schedstat(std::string_view text);

/// Clock ticks since boot now (CLOCK_BOOTTIME), and ticks per second.
std::uint64_t now_ticks();
std::uint64_t ticks_per_second();
/// Nanoseconds since boot now (CLOCK_BOOTTIME).
std::uint64_t now_ns();

/// /proc/PID/comm without the newline.
std::optional<std::string> comm(pid_t pid);

/// How much of /proc/PID/environ cdsmd reads: its user writes there what it likes (a process may
/// join its whole environment area, megabytes, into one value after its exec). Variables beyond
/// the prefix are not seen.
inline constexpr std::size_t kEnvironPrefix = 256 * 1024;
/// Longer values are ignored (the variable counts as absent): cdsmd reads numbers and flags.
inline constexpr std::size_t kMaxEnvironValue = 64;
/// The values of the given variables in the first kEnvironPrefix bytes of /proc/PID/environ
/// (missing ones, and values over kMaxEnvironValue bytes, are absent); nullopt when it cannot be
/// read or is empty (mid-exec). Reading another user's environment needs CAP_SYS_PTRACE.
std::optional<std::map<std::string, std::string>> environ(pid_t pid,
                                                          const std::vector<std::string>& names);
/// Parses NUL-separated NAME=VALUE entries (values over kMaxEnvironValue bytes left out).
std::map<std::string, std::string> parse_environ(std::string_view text,
                                                 const std::vector<std::string>& names);

/// Real uid and thread count from /proc/PID/status.
struct Status {
    uid_t uid = 0;
    std::uint32_t threads = 0;
};
std::optional<Status> status(pid_t pid);

/// The cgroup v2 path of a process ("0::/path"), relative to the cgroup2 root.
std::optional<std::string> cgroup(pid_t pid);

/// Every process id in /proc.
std::vector<pid_t> processes();

/// Every directory of the cgroup v2 tree under `root` (default /sys/fs/cgroup), as paths relative
/// to it that start with '/' ("/" itself excluded), sorted; nullopt when the walk failed (a
/// directory removed while it was read).
std::optional<std::vector<std::string>> cgroup_directories(
    const std::string& root = "/sys/fs/cgroup");

/// The OS CPUs in a task's affinity mask, in increasing order.
std::optional<std::vector<std::uint32_t>> affinity(pid_t tid);

}  // namespace cdsm::cdsmd::procfs
