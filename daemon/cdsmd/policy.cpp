// SPDX-License-Identifier: GPL-2.0
#include "policy.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <charconv>

namespace cdsm::cdsmd {

bool rule_matches(const TrackRule& rule, const ProcessFacts& p) {
    if (!rule.comm.empty() && ::fnmatch(rule.comm.c_str(), p.comm.c_str(), 0) != 0) return false;
    if (rule.uid && *rule.uid != p.uid) return false;
    if (!rule.cgroup.empty() && !cgroup_matches(rule, p.cgroup)) return false;
    return p.threads >= rule.min_threads;
}

bool cgroup_matches(const TrackRule& rule, std::string_view cgroup_path) {
    const std::string path(cgroup_path);
    return ::fnmatch(rule.cgroup.c_str(), path.c_str(), FNM_PATHNAME) == 0;
}

std::string_view to_string(TaskRole role) noexcept {
    switch (role) {
        case TaskRole::kPlace:
            return "placed";
        case TaskRole::kExited:
            return "exited";
        case TaskRole::kLauncher:
            return "launcher";
        case TaskRole::kForeign:
            return "affinity changed by another program";
        case TaskRole::kIdle:
            return "idle";
        case TaskRole::kChanging:
            return "affinity changing";
    }
    return "unknown";
}

TaskRole classify(const TaskFacts& t, const Config& config) {
    if (t.exited) return TaskRole::kExited;
    if (is_launcher(t.process_comm, config.launchers)) return TaskRole::kLauncher;
    // Once something else has bound a task, it stays its business (DESIGN §6).
    if (t.foreign_before) return TaskRole::kForeign;
    if (t.bound_cpu && t.affinity != std::vector<std::uint32_t>{*t.bound_cpu}) {
        // Off the CPU cdsmd bound it to: transient until it has stayed off for kConfirmSeconds;
        // then another program's binding, unless the change came in the task's start-up or went
        // back to a mask it had before cdsmd bound it (its launcher's binding, reapplied or
        // restored), which cdsmd places again.
        if (t.changed_for_s < kConfirmSeconds) return TaskRole::kChanging;
        if (t.age_s - t.changed_for_s >= kStartupSeconds && !t.launch_mask) {
            return TaskRole::kForeign;
        }
    }
    // With hysteresis, so that a helper thread whose share hovers around idle_cpu does not enter
    // and leave the placement pass after pass (each time changing everyone's placement): a task
    // becomes busy when it was runnable at least idle_cpu of the time in both of its last two
    // windows, and idle again only when it was runnable less than half of that in both.
    if (t.busy_before) return t.runnable < config.idle_cpu / 2 ? TaskRole::kIdle : TaskRole::kPlace;
    return t.runnable_min.value_or(t.runnable) < config.idle_cpu ? TaskRole::kIdle
                                                                 : TaskRole::kPlace;
}

double RunnableShare::update(std::uint64_t runnable_ns, std::uint64_t start_ns,
                             std::uint64_t now_ns, std::optional<std::uint64_t> slices,
                             char state) {
    if (!valid_) {
        const std::uint64_t life = now_ns > start_ns ? now_ns - start_ns : 0;
        share_ = std::min(life ? double(runnable_ns) / double(life) : 0, 1.0);
        last_share_ = share_;
    } else if (now_ns >= at_ns_ + window_ns_) {
        const std::uint64_t used = runnable_ns >= runnable_ns_ ? runnable_ns - runnable_ns_ : 0;
        last_share_ = share_;
        share_ = std::min(double(used) / double(now_ns - at_ns_), 1.0);
        if (used == 0 && slices && slices == slices_ && state == 'R') share_ = 1.0;  // waited
    } else {
        return value();  // too short a window: a share over a few ms says little
    }
    valid_ = true;
    runnable_ns_ = runnable_ns;
    slices_ = slices;
    at_ns_ = now_ns;
    return value();
}

const std::vector<std::string>& environment_names() {
    static const std::vector<std::string> names = {"CDSM_DISABLE", "OMPI_COMM_WORLD_RANK",
                                                   "PMI_RANK",     "PMIX_RANK",
                                                   "SLURM_PROCID", "OMP_NUM_THREADS"};
    return names;
}

EnvFacts env_facts(const std::map<std::string, std::string>& env) {
    return {opts_out(env), mpi_rank(env), expected_threads(env)};
}

bool is_launcher(std::string_view comm, std::span<const std::string> launchers) {
    return std::find(launchers.begin(), launchers.end(), comm) != launchers.end();
}

bool opts_out(const std::map<std::string, std::string>& env) {
    const auto it = env.find("CDSM_DISABLE");
    if (it == env.end()) return false;
    const std::string& v = it->second;
    return v == "1" || v == "true" || v == "yes";
}

std::optional<int> mpi_rank(const std::map<std::string, std::string>& env) {
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
        const auto it = env.find(name);
        if (it == env.end()) continue;
        int rank = -1;
        const std::string& v = it->second;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), rank);
        if (ec == std::errc() && end == v.data() + v.size() && rank >= 0) return rank;
    }
    return std::nullopt;
}

std::optional<std::uint32_t> expected_threads(const std::map<std::string, std::string>& env) {
    const auto it = env.find("OMP_NUM_THREADS");
    if (it == env.end()) return std::nullopt;
    const std::string& v = it->second;
    std::uint32_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || (end != v.data() + v.size() && *end != ',') || n < 1 || n > 4096)
        return std::nullopt;
    return n;
}

Peer peer_rights(const control::PeerCredentials& creds, std::optional<gid_t> admin_gid) {
    const bool admin =
        admin_gid && (creds.gid == *admin_gid || std::find(creds.groups.begin(), creds.groups.end(),
                                                           *admin_gid) != creds.groups.end());
    return {creds.pid, creds.uid, creds.uid == 0 || admin};
}

void WorkBudget::Bucket::drain(Clock::time_point now, double share) {
    if (now > at) {
        const auto drained = std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::duration<double, std::nano>(double((now - at).count()) * share));
        level = std::max(std::chrono::nanoseconds(0), level - drained);
    }
    at = std::max(at, now);
}

std::optional<std::chrono::nanoseconds> WorkBudget::wait(uid_t uid, Clock::time_point now) {
    all_.drain(now, limits_.share_all);
    std::chrono::nanoseconds over = all_.level - limits_.burst;
    double share = limits_.share_all;
    if (const auto it = per_uid_.find(uid); it != per_uid_.end()) {
        it->second.drain(now, limits_.share_per_uid);
        if (it->second.level == std::chrono::nanoseconds(0)) {
            per_uid_.erase(it);
        } else if (const auto mine = it->second.level - limits_.burst;
                   double(mine.count()) * limits_.share_all >
                   double(over.count()) * limits_.share_per_uid) {
            over = mine;
            share = limits_.share_per_uid;
        }
    }
    if (over <= std::chrono::nanoseconds(0)) return std::nullopt;
    return std::chrono::nanoseconds(std::int64_t(double(over.count()) / share) + 1);
}

void WorkBudget::spend(uid_t uid, std::chrono::nanoseconds took, Clock::time_point now) {
    // Drained buckets of other uids go: the map holds only uids that still owe time.
    for (auto it = per_uid_.begin(); it != per_uid_.end();) {
        it->second.drain(now, limits_.share_per_uid);
        if (it->first != uid && it->second.level == std::chrono::nanoseconds(0))
            it = per_uid_.erase(it);
        else
            ++it;
    }
    Bucket& mine = per_uid_[uid];
    mine.drain(now, limits_.share_per_uid);
    mine.level += took;
    all_.drain(now, limits_.share_all);
    all_.level += took;
}

bool is_control_request(std::string_view cmd, bool dry_run) {
    for (std::string_view c : {"track", "untrack", "age", "reset", "release", "set", "reload"}) {
        if (cmd == c) return true;
    }
    return cmd == "map" && !dry_run;
}

}  // namespace cdsm::cdsmd
