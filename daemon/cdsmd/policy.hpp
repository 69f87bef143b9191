// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cdsm/control.hpp"
#include "config.hpp"
#include "procfs.hpp"

/// cdsmd's decisions that need no kernel: which processes to track, which tasks to place, who
/// may see and control what. Pure functions, unit-tested on the host.
namespace cdsm::cdsmd {

/// What a process looks like to the tracking rules.
struct ProcessFacts {
    std::string comm;
    uid_t uid = 0;
    std::string cgroup;
    std::uint32_t threads = 0;
};

/// Every condition the rule sets holds for the process (globs as fnmatch; cgroup with
/// FNM_PATHNAME, so '*' stays inside one directory level).
bool rule_matches(const TrackRule& rule, const ProcessFacts& process);
/// A cgroup-only rule's glob matches the cgroup path.
bool cgroup_matches(const TrackRule& rule, std::string_view cgroup_path);

/// Why a task of a tracked application is or is not placed.
enum class TaskRole {
    kPlace,     ///< runnable: gets a PU
    kExited,    ///< gone
    kLauncher,  ///< its process is a launcher helper (mpirun, orted, prted, slurmstepd...)
    kForeign,   ///< its affinity is not the one cdsmd set: something else binds it
    kIdle,      ///< runnable less than mapping.idle_cpu of the time (sleeps: helper threads)
    kChanging,  ///< off the CPU cdsmd bound it to, not yet for kConfirmSeconds
};
/// "placed", "exited", "launcher", "affinity changed by another program", "idle",
/// "affinity changing".
std::string_view to_string(TaskRole role) noexcept;
/// True for roles that cdsmd reports as "left alone" (it would otherwise place the task).
inline bool left_alone(TaskRole role) noexcept {
    return role == TaskRole::kForeign;
}

/// What classify() looks at.
struct TaskFacts {
    bool exited = false;
    std::string process_comm;  ///< comm of the task's process (thread group)
    double runnable = 0;  ///< share of one CPU it ran or waited for, recently (the larger of two)
    /// The smaller of its shares over the last two windows (unset: as `runnable`).
    std::optional<double> runnable_min;
    bool busy_before = false;                ///< classified kPlace at the previous pass
    std::vector<std::uint32_t> affinity;     ///< OS CPUs of its mask now
    std::optional<std::uint32_t> bound_cpu;  ///< the CPU cdsmd bound it to, if any
    bool foreign_before = false;             ///< classified kForeign earlier (sticky)
    double age_s = 1e9;                      ///< seconds since the task started
    /// Seconds the task has been off the CPU cdsmd bound it to (0: not off, or just now).
    double changed_for_s = 0;
    /// Its mask now is one it had before cdsmd first bound it (its launcher's binding).
    bool launch_mask = false;
};
/// A task whose mask changed (after cdsmd bound it) when it was younger than this was still
/// starting: its runtime applying the launcher's binding (an MPI rank in MPI_Init) is the start
/// cdsmd improves on, not another program taking over. So is a change back to a mask the task had
/// before cdsmd bound it, at any age (under emulation MPI_Init can take a minute, and libpsm2
/// restores the mask it saved before cdsmd moved the rank).
inline constexpr double kStartupSeconds = 5;
/// A task off the CPU cdsmd bound it to is another program's only once it has stayed off this
/// long (over at least two passes). Shorter changes are transient: Open MPI's MPI_Init loads
/// libpsm2, whose constructor binds the rank to CPU 0 for a moment and then restores its mask
/// (up to 0.85 s in the VM lab under load).
inline constexpr double kConfirmSeconds = 3;
TaskRole classify(const TaskFacts& task, const Config& config);

/// The share of the time a task was runnable (running or waiting on a run queue) from successive
/// samples of TaskStat::runnable_ns: first its average over its lifetime, then the larger of its
/// shares over the last two windows of at least `window_ns`. Unlike its CPU share it stays near 1
/// for a busy task however crowded its CPU is, so that busy tasks sharing PUs are never taken for
/// idle ones (and dropped from the placement one pass, back the next); and one window in which
/// its run time did not advance (a task's run time is only updated when its CPU takes a tick: a
/// starved virtual CPU) does not make it idle either. The kernel adds a task's wait only when the
/// task gets its CPU: on a CPU crowded by more tasks than its slices fit in a window (about 60
/// busy tasks per CPU for 200 ms), a waiting task shows neither run nor wait for a window or more.
/// A task that was given no CPU in the whole window (`slices`, schedstat's count, unchanged, and
/// no run or wait added) and is runnable at its end (`state` 'R') is taken as runnable all
/// along: share 1. A task asleep at the window's start and woken late in it, still waiting, is
/// taken so too; two windows in a row are needed to be busy.
class RunnableShare {
  public:
    explicit RunnableShare(std::uint64_t window_ns) : window_ns_(window_ns) {}
    double update(std::uint64_t runnable_ns, std::uint64_t start_ns, std::uint64_t now_ns,
                  std::optional<std::uint64_t> slices = std::nullopt, char state = '?');
    double value() const noexcept { return std::max(share_, last_share_); }
    /// The smaller of the two shares: busy in both windows.
    double steady() const noexcept { return std::min(share_, last_share_); }

  private:
    std::uint64_t window_ns_;
    bool valid_ = false;
    std::uint64_t runnable_ns_ = 0;
    std::optional<std::uint64_t> slices_;  ///< at the window's start
    std::uint64_t at_ns_ = 0;
    double share_ = 0;       ///< over the last window (or the lifetime)
    double last_share_ = 0;  ///< over the window before
};

/// The environment variables cdsmd reads from a task's process.
const std::vector<std::string>& environment_names();
/// What cdsmd keeps of a process's environment: the facts read from it, never the values (a
/// process's /proc/PID/environ is whatever it writes there, megabytes if it likes).
struct EnvFacts {
    bool opts_out = false;                 ///< opts_out()
    std::optional<int> rank;               ///< mpi_rank()
    std::optional<std::uint32_t> threads;  ///< expected_threads()
    bool operator==(const EnvFacts&) const = default;
};
EnvFacts env_facts(const std::map<std::string, std::string>& env);
/// A process whose command is one of [mapping] launchers (mpirun, orted, srun ...): never
/// placed, and without an MPI rank whatever its environment says.
bool is_launcher(std::string_view comm, std::span<const std::string> launchers);
/// CDSM_DISABLE=1 (or true/yes) in the environment: the application opts out.
bool opts_out(const std::map<std::string, std::string>& env);
/// The MPI rank from OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID, in that order.
std::optional<int> mpi_rank(const std::map<std::string, std::string>& env);
/// The threads a process says it will run: OMP_NUM_THREADS, its first value (a nested list
/// "4,2" gives 4), when that is a count from 1 to 4096; unset otherwise.
std::optional<std::uint32_t> expected_threads(const std::map<std::string, std::string>& env);

/// A control-socket peer and its rights.
struct Peer {
    pid_t pid = 0;
    uid_t uid = 0;
    bool privileged = false;
};
/// A peer's rights, from the credentials it connected with and nothing else: privileged when its
/// uid is 0, or when `admin_gid` is its gid or one of its supplementary groups. Capabilities
/// do not count: a user has them all inside a user namespace of its own, and in a setuid
/// program it execs after connecting; the credentials recorded at connect() see through both.
Peer peer_rights(const control::PeerCredentials& creds, std::optional<gid_t> admin_gid);
/// cdsm_app_info.uid of a cgroup application no task joined yet: it has no owner.
inline constexpr uid_t kNoOwner = static_cast<uid_t>(-1);
/// An unprivileged peer sees only applications whose uid is its own: the module's
/// cdsm_app_info.uid, the effective uid of the application's first task. An application
/// without an owner (kNoOwner) is visible to privileged peers alone.
inline bool may_see(const Peer& peer, uid_t app_uid) noexcept {
    return peer.privileged || (app_uid != kNoOwner && peer.uid == app_uid);
}
/// The share of cdsmd's time that unprivileged peers' requests may take with the work they cause
/// (a "map" dry run: a whole mapping pass with every baseline), as leaky buckets: one per uid
/// and one for all of them together. A bucket fills by each request's time and drains at
/// `share` of the wall-clock time; a request waits (EAGAIN) while its uid's bucket or the
/// common one holds more than `burst`. cdsmd is single-threaded: without it, requests pipelined
/// on many connections (and many uids) would keep its own passes and every other client waiting.
class WorkBudget {
  public:
    using Clock = std::chrono::steady_clock;
    struct Limits {
        double share_per_uid = 0.1;  ///< of wall-clock time, per uid
        double share_all = 0.25;     ///< of wall-clock time, every unprivileged uid together
        std::chrono::nanoseconds burst = std::chrono::milliseconds(250);
    };
    WorkBudget() = default;
    explicit WorkBudget(Limits limits) : limits_(limits) {}
    /// Nothing when uid may start a request at `now`, else how long it has to wait.
    std::optional<std::chrono::nanoseconds> wait(uid_t uid, Clock::time_point now);
    /// A request of uid took `took`, ending at `now`.
    void spend(uid_t uid, std::chrono::nanoseconds took, Clock::time_point now);
    /// Uids with time still owed (the map's size: drained buckets are dropped).
    std::size_t owing() const noexcept { return per_uid_.size(); }

  private:
    struct Bucket {
        std::chrono::nanoseconds level{0};
        Clock::time_point at{};
        void drain(Clock::time_point now, double share);
    };
    Limits limits_;
    std::map<uid_t, Bucket> per_uid_;
    Bucket all_;
};

/// Commands that change something (track, untrack, age, reset, release, set, reload, and map
/// unless dry_run) need a privileged peer.
bool is_control_request(std::string_view cmd, bool dry_run);

}  // namespace cdsm::cdsmd
