// SPDX-License-Identifier: GPL-2.0
#include "procfs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <sstream>

namespace cdsm::cdsmd::procfs {

namespace {

// Reads a file of /proc again from its start (the text is made anew at each read). `whole_reads`:
// a read that returns less than asked for returned the rest of the file (true of files made by
// one seq_file show, such as stat and schedstat; not of environ, read a page at a time): one
// read instead of two, the second of which would make the whole text again to find its end.
// At most `max_bytes` are read (a prefix).
std::optional<std::string> read_from_start(int fd, bool whole_reads = false,
                                           std::size_t max_bytes = SIZE_MAX) {
    std::string text;
    char buf[4096];
    while (text.size() < max_bytes) {
        const ssize_t n = ::pread(fd, buf, std::min(sizeof(buf), max_bytes - text.size()),
                                  static_cast<off_t>(text.size()));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::nullopt;
        text.append(buf, static_cast<std::size_t>(n));
        if (n == 0 || (whole_reads && std::size_t(n) < sizeof(buf))) return text;
    }
    return text;
}

Fd open_file(const std::string& path) {
    return Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
}

std::optional<std::string> read_file(const std::string& path, bool whole_reads = false,
                                     std::size_t max_bytes = SIZE_MAX) {
    const Fd fd = open_file(path);
    if (!fd) return std::nullopt;
    return read_from_start(fd.get(), whole_reads, max_bytes);
}

// The text of a task's file through `fd`, opened by its path first (or again) when it is not
// open or cannot be read (the task it was opened for exited); nothing when neither works.
// `reopened`: set when the text comes from a newly opened file.
std::optional<std::string> read_open(Fd& fd, pid_t tgid, pid_t tid, std::string_view name,
                                     bool& reopened) {
    if (fd) {
        auto text = read_from_start(fd.get(), true);
        if (text && !text->empty()) return text;
    }
    fd = open_file(fmt::format("/proc/{}/task/{}/{}", tgid, tid, name));
    reopened = true;
    if (!fd) return std::nullopt;
    auto text = read_from_start(fd.get(), true);
    if (!text || text->empty()) {
        fd.reset();
        return std::nullopt;
    }
    return text;
}

template <typename T>
bool parse_number(std::string_view text, T& out, int base = 10) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, base);
    return ec == std::errc() && end == text.data() + text.size();
}

// A task's runnable time and slices from its schedstat, or its CPU time when that is unreadable.
void set_runnable(TaskStat& stat, const std::optional<Schedstat>& sched) {
    stat.runnable_ns =
        sched ? sched->runnable_ns : stat.cpu_ticks * (1000000000u / ticks_per_second());
    if (sched) stat.slices = sched->slices;
}

}  // namespace

std::optional<TaskStat> parse_stat(std::string_view text) {
    // "pid (comm) S ppid ...": fields after the last ')' are space-separated; field 3 is the
    // state, 14/15 utime/stime, 22 starttime, 39 processor (numbered from 1 as in proc(5)).
    const auto close = text.rfind(')');
    if (close == std::string_view::npos) return std::nullopt;
    std::vector<std::string_view> f;
    std::string_view rest = text.substr(close + 1);
    while (!rest.empty()) {
        const auto start = rest.find_first_not_of(" \n");
        if (start == std::string_view::npos) break;
        rest.remove_prefix(start);
        const auto end = rest.find_first_of(" \n");
        f.push_back(rest.substr(0, end));
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
    }
    // f[0] is field 3.
    if (f.size() < 37 || f[0].size() != 1) return std::nullopt;
    TaskStat s;
    s.state = f[0][0];
    std::uint64_t utime = 0, stime = 0;
    if (!parse_number(f[11], utime) || !parse_number(f[12], stime) ||
        !parse_number(f[19], s.start_ticks) || !parse_number(f[36], s.processor)) {
        return std::nullopt;
    }
    s.cpu_ticks = utime + stime;
    return s;
}

std::optional<Schedstat> parse_schedstat(std::string_view text) {
    const auto space = text.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    const std::string_view rest = text.substr(space + 1);
    const auto second = rest.find(' ');
    if (second == std::string_view::npos) return std::nullopt;
    std::uint64_t run = 0, wait = 0, slices = 0;
    const std::string_view third = rest.substr(second + 1);
    if (!parse_number(text.substr(0, space), run) || !parse_number(rest.substr(0, second), wait) ||
        !parse_number(third.substr(0, third.find_first_of(" \n")), slices)) {
        return std::nullopt;
    }
    if (run == 0 && wait == 0) return std::nullopt;  // no scheduler statistics kept
    return Schedstat{run + wait, slices};
}

std::optional<TaskStat> task_stat(pid_t tgid, pid_t tid) {
    const std::string dir = fmt::format("/proc/{}/task/{}/", tgid, tid);
    auto text = read_file(dir + "stat", true);
    if (!text) return std::nullopt;
    auto stat = parse_stat(*text);
    if (!stat) return stat;
    const auto sched = read_file(dir + "schedstat", true);
    set_runnable(*stat, sched ? parse_schedstat(*sched) : std::nullopt);
    return stat;
}

std::optional<TaskStat> TaskFiles::read(pid_t tgid, pid_t tid,
                                        const std::vector<std::uint32_t>& affinity) {
    const auto now = Clock::now();
    if (now - swept_at_ >= unread_after_) {
        std::erase_if(files_,
                      [&](const auto& kv) { return now - kv.second.read_at >= unread_after_; });
        swept_at_ = now;
    }
    auto it = files_.find(tid);
    if (it != files_.end() && it->second.tgid != tgid) {
        files_.erase(it);
        it = files_.end();
    }
    if (it == files_.end()) {
        if (files_.size() >= max_tasks_) return task_stat(tgid, tid);
        it = files_.try_emplace(tid).first;
        it->second.tgid = tgid;
    }
    Files& f = it->second;
    f.read_at = now;
    bool reopened = false;
    const auto sched = read_open(f.schedstat, tgid, tid, "schedstat", reopened);
    const auto runnable = sched ? parse_schedstat(*sched) : std::nullopt;
    // A new file may be another task's with the same tid: its start time is read again.
    if (reopened) f.start_ticks.reset();
    // Not given a CPU since the last read, and no run time added (a task alone on its CPU keeps
    // it without a new slice): asleep or waiting for one, which only its state tells.
    const bool not_run =
        runnable && f.slices == runnable->slices && f.runnable_ns == runnable->runnable_ns;
    f.slices = runnable ? std::optional(runnable->slices) : std::nullopt;
    f.runnable_ns = runnable ? runnable->runnable_ns : 0;
    TaskStat stat;
    if (runnable && f.start_ticks && affinity.size() == 1 && !not_run) {
        stat.start_ticks = *f.start_ticks;
        stat.processor = static_cast<int>(affinity[0]);
    } else {
        const auto text = read_open(f.stat, tgid, tid, "stat", reopened);
        auto parsed = text ? parse_stat(*text) : std::nullopt;
        if (!parsed) {
            files_.erase(it);
            return std::nullopt;
        }
        stat = *parsed;
        f.start_ticks = stat.start_ticks;
    }
    set_runnable(stat, runnable);
    return stat;
}

std::uint64_t ticks_per_second() {
    static const auto hz = static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));
    return hz;
}

std::uint64_t now_ticks() {
    timespec ts{};
    ::clock_gettime(CLOCK_BOOTTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * ticks_per_second() +
           static_cast<std::uint64_t>(ts.tv_nsec) * ticks_per_second() / 1000000000u;
}

std::uint64_t now_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_BOOTTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

std::optional<std::string> comm(pid_t pid) {
    auto text = read_file(fmt::format("/proc/{}/comm", pid));
    if (!text) return std::nullopt;
    if (!text->empty() && text->back() == '\n') text->pop_back();
    return text;
}

std::map<std::string, std::string> parse_environ(std::string_view text,
                                                 const std::vector<std::string>& names) {
    std::map<std::string, std::string> out;
    while (!text.empty()) {
        const auto end = text.find('\0');
        const std::string_view entry = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        const auto eq = entry.find('=');
        if (eq == std::string_view::npos || entry.size() - eq - 1 > kMaxEnvironValue) continue;
        const std::string name(entry.substr(0, eq));
        for (const auto& wanted : names) {
            if (name == wanted) out[name] = std::string(entry.substr(eq + 1));
        }
    }
    return out;
}

std::optional<std::map<std::string, std::string>> environ(pid_t pid,
                                                          const std::vector<std::string>& names) {
    auto text = read_file(fmt::format("/proc/{}/environ", pid), false, kEnvironPrefix);
    // Empty: a process in the middle of an exec (its new command name is set before its new
    // environment), or a kernel thread. Unknown, not an environment without the variables.
    if (!text || text->empty()) return std::nullopt;
    return parse_environ(*text, names);
}

std::optional<Status> status(pid_t pid) {
    const auto text = read_file(fmt::format("/proc/{}/status", pid));
    if (!text) return std::nullopt;
    std::istringstream in(*text);
    Status s;
    std::string line;
    bool seen_uid = false;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string key;
        ls >> key;
        if (key == "Uid:") {
            seen_uid = static_cast<bool>(ls >> s.uid);
        } else if (key == "Threads:") {
            ls >> s.threads;
        }
    }
    if (!seen_uid) return std::nullopt;
    return s;
}

std::optional<std::string> cgroup(pid_t pid) {
    const auto text = read_file(fmt::format("/proc/{}/cgroup", pid));
    if (!text) return std::nullopt;
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("0::", 0) == 0) return line.substr(3);
    }
    return std::nullopt;
}

std::optional<std::vector<std::string>> cgroup_directories(const std::string& root) {
    std::vector<std::string> dirs;
    std::error_code ec;
    const std::filesystem::path top(root);
    for (auto it = std::filesystem::recursive_directory_iterator(
             top, std::filesystem::directory_options::skip_permission_denied, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code dir_ec;
        if (it->is_directory(dir_ec)) {
            dirs.push_back("/" + it->path().lexically_relative(top).string());
        }
    }
    if (ec) return std::nullopt;
    std::sort(dirs.begin(), dirs.end());
    return dirs;
}

std::vector<pid_t> processes() {
    std::vector<pid_t> pids;
    DIR* dir = ::opendir("/proc");
    if (!dir) return pids;
    while (const dirent* e = ::readdir(dir)) {
        pid_t pid = 0;
        if (parse_number(e->d_name, pid) && pid > 0) pids.push_back(pid);
    }
    ::closedir(dir);
    return pids;
}

std::optional<std::vector<std::uint32_t>> affinity(pid_t tid) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(tid, sizeof(set), &set) != 0) return std::nullopt;
    std::vector<std::uint32_t> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &set)) cpus.push_back(static_cast<std::uint32_t>(c));
    }
    return cpus;
}

}  // namespace cdsm::cdsmd::procfs
