// SPDX-License-Identifier: GPL-2.0
// cdsm-query: the kernel-module tests' view of /dev/cdsm and of the netlink events
// (include/uapi/linux/cdsm.h). "cdsm-query --help" and "cdsm-query CMD --help" list everything:
//
//   cdsm-query exec [--app-file F] -- CMD...   run CMD tracked from its first instruction,
//                                              at normal scheduling priority
//   cdsm-query track PID... | track-cgroup PATH   track, print the application id(s)
//   cdsm-query untrack|release|age|reset APP
//   cdsm-query list | tasks APP | matrix APP [--view aged|whole] | counters | params
//   cdsm-query snapshots APP --gate FILE --prefix P [--every S]
//                                              the aged matrix to P.0, P.1, ... every S seconds
//                                              while FILE holds "on", until "off" or the end
//   cdsm-query views APP                       an ended application's aged and whole-run
//                                              matrices and the first version of GET_MATRIX
//   cdsm-query set NAME=VALUE...               change run-time parameters
//   cdsm-query check APP|@FILE TRUTH [--min R] [--within S] [--among-truth] [--age N]
//                    [--view aged|whole]
//       each truth task's largest partner in the matrix must be a true partner for a share
//       >= R (default 0.95) of the truth's tasks; waits for TRUTH to appear; with --within,
//       retry until S seconds after TRUTH was written (its mtime);
//       with --among-truth, only the truth's tasks are candidates for the largest partner
//       (an MPI program's matrix also holds mpirun and the ranks' runtime helper threads);
//       with --age, age the matrix N times once TRUTH appears; @FILE: wait for FILE to hold the
//       application id (so that the check can start before the workload)
//   cdsm-query detect-time APP|@FILE TRUTH [--window S] [--every S] [--among-truth]
//       time to detection: the time after TRUTH's writing from which every truth task's
//       largest partner (aged matrix) stayed a true partner until S seconds (default 6), and
//       the events of each true pair then (bench/kmod/detect)
//   cdsm-query misuse [--unprivileged]         ioctl misuse must fail cleanly
//   cdsm-query rate APP PID [--seconds S] [--tolerance T]
//       pages re-armed in APP over S seconds vs rearm_rate_bp of PID's resident pages,
//       within +-T (default 0.5)
//   cdsm-query events [--seconds S] [--ready-file F]
//       print the netlink events, one line each, for S seconds (default 10); F is written once
//       the listener is subscribed
//   cdsm-query race [--seconds S] [--spawners N]
//       a storm of forks, thread creations and exits while TRACK, UNTRACK and RELEASE loop;
//       fails on a duplicate or dangling task record (see cmd_race) or an inconsistent
//       registry (/sys/kernel/debug/cdsm/registry, when the module has it)
//   cdsm-query registry                        check /sys/kernel/debug/cdsm/registry
//   cdsm-query opener                          rights are the opener's (see cmd_opener)
//
// It reads the module through libcdsm's client (cdsm/kernel.hpp, cdsm/kernel_events.hpp), as
// cdsmd and cdsmctl do, except "misuse" and "opener": they make malformed calls (bad sizes and
// pointers, unknown commands) and use a descriptor received over SCM_RIGHTS from a process that
// changed its credentials after opening, so they call ioctl() themselves.
//
// Exit status: 0 ok, 1 check failed or error, 2 usage.
#include <fcntl.h>
#include <linux/cdsm.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cdsm/kernel.hpp>
#include <cdsm/kernel_events.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using cdsm::kernel::Device;

struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The raw device, for the calls that Device would refuse to make ("misuse", "opener").
int open_dev() {
    int fd = open("/dev/" CDSM_DEVICE_NAME, O_RDWR | O_CLOEXEC);
    if (fd < 0) throw Failure(std::string("open /dev/cdsm: ") + strerror(errno));
    return fd;
}

template <typename T>
T sized() {
    T t{};
    t.size = sizeof(T);
    return t;
}

uint32_t parse_u32(const std::string& s) {
    size_t end = 0;
    unsigned long v = std::stoul(s, &end, 0);
    if (end != s.size() || v > UINT32_MAX) throw std::invalid_argument("not a number: " + s);
    return static_cast<uint32_t>(v);
}

// Truth file: one line per task, "TID PARTNER_TID...".
std::map<pid_t, std::set<pid_t>> read_truth(const std::string& file) {
    std::ifstream in(file);
    if (!in) throw Failure("cannot read truth file " + file);
    std::map<pid_t, std::set<pid_t>> truth;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        pid_t tid, partner;
        if (!(ls >> tid)) continue;
        auto& partners = truth[tid];
        while (ls >> partner) partners.insert(partner);
    }
    if (truth.empty()) throw Failure("truth file " + file + " is empty");
    return truth;
}

// The truth tasks' part of matrix `m` (rows and columns: tid), to see where the events went.
void print_truth_matrix(const cdsm::CommMatrix& m, const std::vector<cdsm_task_info>& tasks,
                        const std::map<pid_t, uint32_t>& index,
                        const std::map<pid_t, std::set<pid_t>>& truth) {
    std::vector<uint32_t> rows;
    for (const auto& entry : truth) {
        auto it = index.find(entry.first);
        if (it != index.end() && it->second < m.size()) rows.push_back(it->second);
    }
    printf("  matrix of the truth's tasks (rows and columns: tid):\n  %7s", "");
    for (uint32_t j : rows) printf(" %7d", tasks[j].tid);
    printf("\n");
    for (uint32_t i : rows) {
        printf("  %7d", tasks[i].tid);
        for (uint32_t j : rows) printf(" %7llu", (unsigned long long)m.at(i, j));
        printf("\n");
    }
}

// Share of truth tasks whose largest partner is a true partner; prints the misses.
double check_once(const Device& dev, uint32_t app, const std::map<pid_t, std::set<pid_t>>& truth,
                  cdsm::kernel::MatrixView view, bool among_truth, bool verbose,
                  bool dump = false) {
    auto tasks = dev.tasks(app);
    const auto snapshot = dev.matrix(app, view);
    const cdsm::CommMatrix& m = snapshot.matrix;
    const auto dim = static_cast<uint32_t>(m.size());
    std::map<pid_t, uint32_t> index;
    for (const auto& t : tasks) index.emplace(t.tid, t.index);
    size_t good = 0;
    for (const auto& [tid, partners] : truth) {
        auto it = index.find(tid);
        if (it == index.end() || it->second >= dim) {
            if (verbose) printf("  task %d: not in the application\n", tid);
            continue;
        }
        uint32_t row = it->second, best_j = UINT32_MAX;
        cdsm::CommMatrix::Value best = 0;
        for (uint32_t j = 0; j < dim; j++)
            if (j != row && m.at(row, j) > best &&
                (!among_truth || (j < tasks.size() && truth.count(tasks[j].tid))))
                best = m.at(row, j), best_j = j;
        bool ok =
            best_j != UINT32_MAX && best_j < tasks.size() && partners.count(tasks[best_j].tid);
        good += ok;
        if (verbose && !ok)
            printf("  task %d (row %u): largest partner %d with %llu events, truth says %d\n", tid,
                   row, best_j == UINT32_MAX ? -1 : tasks[best_j].tid, (unsigned long long)best,
                   partners.empty() ? -1 : *partners.begin());
    }
    if (verbose)
        printf(
            "check: %zu of %zu tasks found their partner in the %s matrix, %llu events, %zu "
            "tasks\n",
            good, truth.size(), std::string(to_string(view)).c_str(),
            (unsigned long long)snapshot.events, tasks.size());
    if (dump || (verbose && good < truth.size())) print_truth_matrix(m, tasks, index, truth);
    return double(good) / double(truth.size());
}

// When the truth file was written: it appears once every task runs, which is the start that
// "detected within S seconds" counts from. Waits up to two minutes for it.
std::chrono::system_clock::time_point wait_truth(const std::string& file) {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    struct stat st {};
    while (stat(file.c_str(), &st) != 0 || st.st_size == 0) {
        if (std::chrono::steady_clock::now() > give_up)
            throw Failure("truth file " + file + " did not appear within 2 minutes");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(st.st_mtim.tv_sec) +
            std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

// An application id, or "@FILE": the id that FILE will hold (waits up to two minutes).
uint32_t app_arg(const std::string& arg) {
    if (arg.empty() || arg[0] != '@') return parse_u32(arg);
    auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    for (;;) {
        std::ifstream in(arg.substr(1));
        uint32_t id = 0;
        if (in >> id) return id;
        if (std::chrono::steady_clock::now() > give_up)
            throw Failure("no application id in " + arg.substr(1) + " within 2 minutes");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

int cmd_check(const Device& dev, const std::string& app_spec, const std::string& file, double min,
              double within, cdsm::kernel::MatrixView view, bool among_truth, unsigned age_times) {
    uint32_t app = app_arg(app_spec);
    auto written = wait_truth(file);
    auto truth = read_truth(file);
    for (unsigned i = 0; i < age_times; i++) dev.age(app);
    for (bool first = true;; first = false) {
        double age =
            std::chrono::duration<double>(std::chrono::system_clock::now() - written).count();
        if (first) printf("check: first look %.2f s after the truth file was written\n", age);
        double share = check_once(dev, app, truth, view, among_truth, false, first);
        if (share >= min || age >= within) {
            check_once(dev, app, truth, view, among_truth, true);
            printf("check: %.1f %% >= %.1f %%? %s %.2f s after the truth file was written\n",
                   share * 100, min * 100, share >= min ? "yes" : "NO", age);
            return share >= min ? 0 : 1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// The events of each true pair (a truth task and a partner of higher tid), in the truth's order.
std::vector<unsigned long long> true_pair_events(const Device& dev, uint32_t app,
                                                 const std::map<pid_t, std::set<pid_t>>& truth) {
    auto tasks = dev.tasks(app);
    const auto snapshot = dev.matrix(app, cdsm::kernel::MatrixView::aged);
    std::map<pid_t, uint32_t> index;
    for (const auto& t : tasks) index.emplace(t.tid, t.index);
    std::vector<unsigned long long> events;
    for (const auto& [tid, partners] : truth)
        for (pid_t partner : partners) {
            if (partner <= tid) continue;
            auto a = index.find(tid), b = index.find(partner);
            bool in = a != index.end() && b != index.end() && a->second < snapshot.matrix.size() &&
                      b->second < snapshot.matrix.size();
            events.push_back(in ? snapshot.matrix.at(a->second, b->second) : 0);
        }
    return events;
}

// Time to detection: polls the aged matrix every `every` seconds until `window` seconds after
// TRUTH was written and prints the time (from TRUTH's mtime) of the first poll from which every
// truth task's largest partner was a true partner at every later poll, with each true pair's
// events then; "never" if the last poll did not have them all. Exit 0 found, 1 never.
int cmd_detect_time(const Device& dev, const std::string& app_spec, const std::string& file,
                    double window, double every, bool among_truth) {
    uint32_t app = app_arg(app_spec);
    auto written = wait_truth(file);
    auto truth = read_truth(file);
    double since = -1, last = 0;
    std::vector<unsigned long long> events_then;
    unsigned polls = 0;
    for (;;) {
        double age =
            std::chrono::duration<double>(std::chrono::system_clock::now() - written).count();
        bool all =
            check_once(dev, app, truth, cdsm::kernel::MatrixView::aged, among_truth, false) >= 1.0;
        polls++;
        if (all && since < 0) since = age, events_then = true_pair_events(dev, app, truth);
        if (!all) since = -1;
        last = age;
        if (age >= window) break;
        std::this_thread::sleep_for(std::chrono::duration<double>(every));
    }
    if (since < 0) {
        printf("detect-time: never (within %.2f s, %u polls)\n", last, polls);
        check_once(dev, app, truth, cdsm::kernel::MatrixView::aged, among_truth, true, true);
        return 1;
    }
    printf("detect-time: %.3f s events-per-true-pair:", since);
    for (auto e : events_then) printf(" %llu", e);
    printf(" (window %.2f s, %u polls)\n", last, polls);
    return 0;
}

// CDSM_IOC_TRACK of a process tree on a raw descriptor ("misuse", "opener").
uint32_t track_raw(int fd, pid_t pid) {
    auto a = sized<cdsm_track>();
    a.kind = CDSM_TRACK_PID;
    a.pid = pid;
    if (ioctl(fd, CDSM_IOC_TRACK, &a) < 0)
        throw Failure(std::string("CDSM_IOC_TRACK: ") + strerror(errno));
    return a.app_id;
}

// Forks; the child waits until the parent tracked it, then runs the command.
int cmd_exec(const Device& dev, const std::string& app_file, char** argv) {
    int go[2];
    if (pipe2(go, O_CLOEXEC)) throw Failure("pipe");
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) != 1) _exit(126);
        // The tests observe at real-time priority; the program runs as programs do.
        sched_param normal{};
        sched_setscheduler(0, SCHED_OTHER, &normal);
        execvp(argv[0], argv);
        perror(argv[0]);
        _exit(127);
    }
    close(go[0]);
    uint32_t app = dev.track_pid(pid);
    if (!app_file.empty()) {
        std::ofstream(app_file) << app << "\n";
    }
    fprintf(stderr, "cdsm-query: pid %d tracked as application %u\n", pid, app);
    if (write(go[1], "g", 1) != 1) throw Failure("pipe write");
    close(go[1]);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void print_counters(const Device& dev) {
    const cdsm_counters c = dev.counters();
    printf(
        "status %u numa_normal %d rearm_available %d\nfaults %llu\ntracked_faults %llu\n"
        "comm_events %llu\nrearm_armed %llu\nrearm_taken %llu\ndropped %llu\nevictions %llu\n"
        "apps %llu\ntasks %llu\nkmem_bytes %llu\nalloc_failures %llu\nevents_lost %llu\n"
        "migrated %llu\n",
        c.status, !!(c.status & CDSM_STATUS_NUMA_BALANCING_NORMAL),
        !!(c.status & CDSM_STATUS_REARM_AVAILABLE), (unsigned long long)c.faults,
        (unsigned long long)c.tracked_faults, (unsigned long long)c.comm_events,
        (unsigned long long)c.rearm_armed, (unsigned long long)c.rearm_taken,
        (unsigned long long)c.dropped, (unsigned long long)c.evictions, (unsigned long long)c.apps,
        (unsigned long long)c.tasks, (unsigned long long)c.kmem_bytes,
        (unsigned long long)c.alloc_failures, (unsigned long long)c.events_lost,
        (unsigned long long)c.migrated);
}

#define PARAMS(X)        \
    X(block_shift)       \
    X(nr_sharers)        \
    X(hash_entries_log2) \
    X(rearm_rate_bp) X(rearm_period_ms) X(max_tasks) X(auto_threads) X(retention_s) X(age_period_ms)

void print_params(const Device& dev) {
    const cdsm_params p = dev.params();
#define PRINT(f) printf(#f " %u\n", p.f);
    PARAMS(PRINT)
#undef PRINT
}

void set_params(const Device& dev, const std::vector<std::string>& assignments) {
    cdsm_params p = dev.params();
    for (const auto& a : assignments) {
        auto eq = a.find('=');
        if (eq == std::string::npos) throw std::invalid_argument("expected NAME=VALUE, got " + a);
        std::string name = a.substr(0, eq);
        uint32_t v = parse_u32(a.substr(eq + 1));
        bool known = false;
#define SET(f)        \
    if (name == #f) { \
        p.f = v;      \
        known = true; \
    }
        PARAMS(SET)
#undef SET
        if (!known) throw std::invalid_argument("unknown parameter " + name);
    }
    dev.set_params(p);
}

// --- misuse: every bad call must fail with the documented error -----------------------------

int misuse_failures = 0;

void expect_errno(const char* what, int ret, int want) {
    int got = ret < 0 ? errno : 0;
    bool ok = ret < 0 && got == want;
    printf("misuse: %-52s -> %s (want %s) %s\n", what, ret < 0 ? strerror(got) : "success",
           strerror(want), ok ? "ok" : "FAIL");
    misuse_failures += !ok;
}

void expect_ok(const char* what, int ret) {
    printf("misuse: %-52s -> %s %s\n", what, ret < 0 ? strerror(errno) : "success",
           ret >= 0 ? "ok" : "FAIL");
    misuse_failures += ret < 0;
}

int cmd_misuse(bool unprivileged) {
    int fd = open_dev();
    void* bad = reinterpret_cast<void*>(8);  // never mapped
    // A page whose end borders an unmapped page: a struct straddling it faults.
    auto* guard = static_cast<char*>(
        mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    munmap(guard + 4096, 4096);

    expect_ok("ABI version", ioctl(fd, CDSM_IOC_ABI_VERSION) == CDSM_ABI_VERSION ? 0 : -1);
    expect_errno("unknown command number", ioctl(fd, _IO(CDSM_IOC_MAGIC, 0x7f)), ENOTTY);
    expect_errno("other ioctl type", ioctl(fd, _IO('T', 0x01)), ENOTTY);
    expect_errno("NULL argument", ioctl(fd, CDSM_IOC_GET_COUNTERS, nullptr), EFAULT);
    expect_errno("unmapped argument", ioctl(fd, CDSM_IOC_GET_COUNTERS, bad), EFAULT);
    {
        auto* c = reinterpret_cast<cdsm_counters*>(guard + 4096 - 8);
        c->size = sizeof(cdsm_counters);
        expect_errno("argument straddling an unmapped page", ioctl(fd, CDSM_IOC_GET_COUNTERS, c),
                     EFAULT);
    }
    {
        auto c = sized<cdsm_counters>();
        c.size = 4;
        expect_errno("size too small", ioctl(fd, CDSM_IOC_GET_COUNTERS, &c), EINVAL);
        c.size = 0;
        expect_errno("size zero", ioctl(fd, CDSM_IOC_GET_COUNTERS, &c), EINVAL);
    }
    {
        struct {
            cdsm_params p;
            uint64_t extra;
        } big{};
        big.p.size = sizeof(big);
        big.extra = 1;
        expect_errno("larger size with non-zero tail", ioctl(fd, CDSM_IOC_GET_PARAMS, &big), E2BIG);
        big.extra = 0;
        expect_ok("larger size with zero tail", ioctl(fd, CDSM_IOC_GET_PARAMS, &big));
        // Nothing beyond the known struct is written back.
        expect_ok("tail left untouched", big.extra == 0 ? 0 : -1);
        // A size beyond CDSM_ARG_MAX is refused before its (zero) tail is scanned.
        std::vector<uint64_t> huge(CDSM_ARG_MAX / 8 + 1);
        auto* hp = reinterpret_cast<cdsm_params*>(huge.data());
        hp->size = CDSM_ARG_MAX + 8;
        expect_errno("size above CDSM_ARG_MAX, zero tail", ioctl(fd, CDSM_IOC_GET_PARAMS, hp),
                     E2BIG);
        hp->size = 0xffffffffu;
        expect_errno("size 4 GiB", ioctl(fd, CDSM_IOC_GET_PARAMS, hp), E2BIG);
    }
    {
        auto a = sized<cdsm_app_op>();
        a.app_id = 0xdeadbeef;
        int want = unprivileged ? EPERM : ENOENT;
        expect_errno("age unknown application", ioctl(fd, CDSM_IOC_AGE, &a), want);
        expect_errno("release unknown application", ioctl(fd, CDSM_IOC_RELEASE, &a), want);
        auto m = sized<cdsm_get_matrix>();
        m.app_id = 0xdeadbeef;
        expect_errno("matrix of unknown application", ioctl(fd, CDSM_IOC_GET_MATRIX, &m), ENOENT);
        auto t = sized<cdsm_get_tasks>();
        t.app_id = 0xdeadbeef;
        expect_errno("tasks of unknown application", ioctl(fd, CDSM_IOC_GET_TASKS, &t), ENOENT);
    }
    {
        auto l = sized<cdsm_list_apps>();
        l.capacity = 1000;
        l.apps_ptr = reinterpret_cast<uintptr_t>(bad);
        // Only fails when there is something to copy: the test tracks itself first (root).
        if (!unprivileged) {
            uint32_t app = track_raw(fd, getpid());
            expect_errno("list into an unmapped buffer", ioctl(fd, CDSM_IOC_LIST_APPS, &l), EFAULT);
            auto m = sized<cdsm_get_matrix>();
            m.app_id = app;
            m.capacity = 4096;
            m.cells_ptr = reinterpret_cast<uintptr_t>(bad);
            expect_errno("matrix into an unmapped buffer", ioctl(fd, CDSM_IOC_GET_MATRIX, &m),
                         EFAULT);
            m.capacity = 0;
            expect_errno("matrix into a too small buffer", ioctl(fd, CDSM_IOC_GET_MATRIX, &m),
                         ENOSPC);
            expect_ok("dim reported when too small", m.dim >= 1 ? 0 : -1);
            auto t = sized<cdsm_get_tasks>();
            t.app_id = app;
            t.capacity = 100;
            t.tasks_ptr = reinterpret_cast<uintptr_t>(bad);
            expect_errno("tasks into an unmapped buffer", ioctl(fd, CDSM_IOC_GET_TASKS, &t),
                         EFAULT);
            auto tr = sized<cdsm_track>();
            tr.kind = CDSM_TRACK_PID;
            tr.pid = getpid();
            expect_errno("track a tracked pid", ioctl(fd, CDSM_IOC_TRACK, &tr), EEXIST);
            auto a = sized<cdsm_app_op>();
            a.app_id = app;
            expect_ok("release own application", ioctl(fd, CDSM_IOC_RELEASE, &a));
            expect_errno("release it twice", ioctl(fd, CDSM_IOC_RELEASE, &a), ENOENT);
        }
    }
    {
        auto tr = sized<cdsm_track>();
        tr.kind = 99;
        int want = unprivileged ? EPERM : EINVAL;
        expect_errno("track unknown kind", ioctl(fd, CDSM_IOC_TRACK, &tr), want);
        tr.kind = CDSM_TRACK_PID;
        tr.pid = -5;
        expect_errno("track negative pid", ioctl(fd, CDSM_IOC_TRACK, &tr), want);
        tr.pid = 0x3fffffff;
        expect_errno("track nonexistent pid", ioctl(fd, CDSM_IOC_TRACK, &tr),
                     unprivileged ? EPERM : ENOENT);
        tr.kind = CDSM_TRACK_CGROUP;
        tr.path_len = 5;
        tr.path_ptr = reinterpret_cast<uintptr_t>(bad);
        expect_errno("track cgroup, unmapped path", ioctl(fd, CDSM_IOC_TRACK, &tr),
                     unprivileged ? EPERM : EFAULT);
        std::string nope = "/no/such/cgroup";
        tr.path_len = static_cast<uint32_t>(nope.size());
        tr.path_ptr = reinterpret_cast<uintptr_t>(nope.data());
        expect_errno("track nonexistent cgroup", ioctl(fd, CDSM_IOC_TRACK, &tr),
                     unprivileged ? EPERM : ENOENT);
        tr.path_len = 1 << 20;
        expect_errno("track cgroup, huge path length", ioctl(fd, CDSM_IOC_TRACK, &tr),
                     unprivileged ? EPERM : EINVAL);
    }
    {
        auto p = sized<cdsm_params>();
        ioctl(fd, CDSM_IOC_GET_PARAMS, &p);
        auto q = p;
        q.block_shift = 99;
        expect_errno("set block_shift=99", ioctl(fd, CDSM_IOC_SET_PARAMS, &q),
                     unprivileged ? EPERM : EINVAL);
        q = p;
        q.nr_sharers = p.nr_sharers + 1;
        expect_errno("change a load-time parameter", ioctl(fd, CDSM_IOC_SET_PARAMS, &q),
                     unprivileged ? EPERM : EINVAL);
        q = p;
        // 5792 is the largest: an application's two matrices of 5793 tasks pass 256 MiB together
        // (8192, the largest before the whole-run matrix, took 512 MiB).
        if (!unprivileged) {
            q.max_tasks = 5792;
            expect_ok("set max_tasks=5792", ioctl(fd, CDSM_IOC_SET_PARAMS, &q));
        }
        q.max_tasks = 5793;
        expect_errno("set max_tasks=5793", ioctl(fd, CDSM_IOC_SET_PARAMS, &q),
                     unprivileged ? EPERM : EINVAL);
        q.max_tasks = 8192;
        expect_errno("set max_tasks=8192", ioctl(fd, CDSM_IOC_SET_PARAMS, &q),
                     unprivileged ? EPERM : EINVAL);
        q.max_tasks = 65535;
        expect_errno("set max_tasks=65535", ioctl(fd, CDSM_IOC_SET_PARAMS, &q),
                     unprivileged ? EPERM : EINVAL);
        q = p;
        q.rearm_period_ms = 0;
        expect_errno("set rearm_period_ms=0", ioctl(fd, CDSM_IOC_SET_PARAMS, &q),
                     unprivileged ? EPERM : EINVAL);
        if (unprivileged)
            expect_errno("set valid parameters", ioctl(fd, CDSM_IOC_SET_PARAMS, &p), EPERM);
        else
            expect_ok("set valid parameters", ioctl(fd, CDSM_IOC_SET_PARAMS, &p));
    }
    printf("misuse: %d failure(s)\n", misuse_failures);
    return misuse_failures ? 1 : 0;
}

// --- events: the generic netlink multicast group ---------------------------------------------

void print_event(const cdsm::kernel::Event& e) {
    // The tests' spelling (tests/kmod/tracking): "app_started", not "app-started".
    std::string kind = cdsm::kernel::to_string(e.kind);
    std::replace(kind.begin(), kind.end(), '-', '_');
    printf("event %s app %u", kind.c_str(), e.app_id);
    if (e.kind == cdsm::kernel::Event::Kind::kTaskJoined ||
        e.kind == cdsm::kernel::Event::Kind::kTaskExited)
        printf(" tid %d tgid %d index %u comm %s", e.tid, e.tgid, e.index, e.comm.c_str());
    printf("\n");
    fflush(stdout);
}

// --- rate: re-armed pages per second of one application --------------------------------------

uint64_t app_rearmed(const Device& dev, uint32_t app) {
    for (const cdsm_app_info& a : dev.list_apps())
        if (a.app_id == app) return a.rearm_pages;
    throw Failure("no application " + std::to_string(app));
}

uint64_t rss_pages(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string key;
    uint64_t kib = 0;
    while (in >> key)
        if (key == "VmRSS:" && in >> kib) return kib * 1024 / uint64_t(sysconf(_SC_PAGESIZE));
    throw Failure("process " + std::to_string(pid) + " is gone");
}

// Pages re-armed in @app over @seconds vs what rearm_rate_bp of @pid's resident pages gives;
// the ratio must be within [1 - tolerance, 1 + tolerance].
int cmd_rate(const Device& dev, uint32_t app, pid_t pid, double seconds, double tolerance) {
    const cdsm_params p = dev.params();
    uint64_t rss0 = rss_pages(pid), a0 = app_rearmed(dev, app);
    auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    uint64_t a1 = app_rearmed(dev, app), rss1 = rss_pages(pid);
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double rss = double(rss0 + rss1) / 2, expected = rss * p.rearm_rate_bp / 10000 * elapsed;
    double ratio = double(a1 - a0) / expected;
    bool ok = ratio >= 1 - tolerance && ratio <= 1 + tolerance;
    printf("rate: %u bp/s, rss %.0f pages, %.2f s: re-armed %llu, expected %.0f, ratio %.2f %s\n",
           p.rearm_rate_bp, rss, elapsed, (unsigned long long)(a1 - a0), expected, ratio,
           ok ? "ok" : "OUT OF RANGE");
    return ok ? 0 : 1;
}

int cmd_events(double seconds, const std::string& ready_file) {
    cdsm::kernel::EventListener listener;
    if (!ready_file.empty()) std::ofstream(ready_file) << "ready\n";
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now());
        if (left.count() <= 0) return 0;
        pollfd p{listener.fd(), POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
        const auto batch = listener.receive();
        for (const auto& e : batch.events) print_event(e);
        if (batch.lost) throw Failure("netlink events were lost (socket buffer overrun)");
    }
}

// --- race: duplicate and dangling task records ------------------------------------------------

// Registry check of the module (debugfs): "duplicates" and "mismatches" must be 0. Returns
// false when the module has no such file (a module before the check existed).
bool registry_ok(bool& present, std::string& text) {
    std::ifstream in("/sys/kernel/debug/cdsm/registry");
    present = bool(in);
    if (!present) return true;
    std::ostringstream all;
    all << in.rdbuf();
    text = all.str();
    std::istringstream ls(text);
    std::string key;
    uint64_t value;
    bool ok = true;
    while (ls >> key >> value)
        if ((key == "duplicates" || key == "mismatches") && value) ok = false;
    return ok;
}

int cmd_registry() {
    bool present = false;
    std::string text;
    bool ok = registry_ok(present, text);
    if (!present) throw Failure("no /sys/kernel/debug/cdsm/registry");
    printf("%s", text.c_str());
    return ok ? 0 : 1;
}

void* storm_thread(void*) {
    return nullptr;
}

// One storm process: forever forks a child that creates two threads and a grandchild, and exits.
[[noreturn]] void storm_spawner() {
    prctl(PR_SET_NAME, "cdsm-storm");
    for (;;) {
        pid_t c = fork();
        if (c == 0) {
            pthread_t t[2];
            for (auto& x : t) pthread_create(&x, nullptr, storm_thread, nullptr);
            pid_t g = fork();
            if (g == 0) _exit(0);
            for (auto& x : t) pthread_join(x, nullptr);
            if (g > 0) waitpid(g, nullptr, 0);
            _exit(0);
        }
        if (c > 0) waitpid(c, nullptr, 0);
    }
}

// The storm: a root process (the tracked tree) with `spawners` spawner children; returns its pid.
pid_t start_storm(unsigned spawners) {
    pid_t root = fork();
    if (root == 0) {
        prctl(PR_SET_NAME, "cdsm-storm");
        setpgid(0, 0);
        sched_param normal{};
        sched_setscheduler(0, SCHED_OTHER, &normal);
        for (unsigned i = 0; i < spawners; i++)
            if (fork() == 0) storm_spawner();
        for (;;) pause();
    }
    setpgid(root, root);
    return root;
}

bool tid_alive(pid_t tid) {
    return access(("/proc/" + std::to_string(tid)).c_str(), F_OK) == 0;
}

// Checks application `app`'s records: no tid live twice (a duplicate record), and no live record
// of a task that has exited: a record that is still live in a second snapshot taken after its
// task was seen gone (the exit probe runs before /proc/TID disappears) is dangling.
unsigned check_records(const Device& dev, uint32_t app, unsigned& dangling) {
    std::map<pid_t, int> live;
    for (const auto& t : dev.tasks(app))
        if (!(t.flags & CDSM_TASK_EXITED)) live[t.tid]++;
    unsigned duplicates = 0;
    std::set<pid_t> gone;
    for (auto [tid, n] : live) {
        if (n > 1) {
            duplicates += n - 1;
            printf("race: app %u: tid %d has %d live records\n", app, tid, n);
        }
        if (!tid_alive(tid)) gone.insert(tid);
    }
    if (!gone.empty())
        for (const auto& t : dev.tasks(app))
            if (!(t.flags & CDSM_TASK_EXITED) && gone.count(t.tid) && !tid_alive(t.tid)) {
                dangling++;
                printf("race: app %u: tid %d exited but its record is live\n", app, t.tid);
            }
    return duplicates;
}

// TRACK, check, UNTRACK and RELEASE in a loop while the storm runs; also TRACK single storm
// children by pid (when no other application has a live task, so that their exit probes take
// the fast path). Fails on a duplicate or dangling record, or a registry inconsistency.
int cmd_race(double seconds, unsigned spawners) {
    const Device dev;
    prctl(PR_SET_NAME, "cdsm-race");
    pid_t root = start_storm(spawners);
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    unsigned long rounds = 0, singles = 0, duplicates = 0, dangling = 0, registry_bad = 0;
    bool present = false;
    std::string text;
    unsigned dangle_round = 0;
    while (std::chrono::steady_clock::now() < end) {
        const uint32_t tree = dev.track_pid(root);
        rounds++;
        std::this_thread::sleep_for(std::chrono::milliseconds(rounds % 4 * 20));
        dangle_round = 0;
        duplicates += check_records(dev, tree, dangle_round);
        dangling += dangle_round;
        if (rounds % 3 == 0) {
            try {
                dev.untrack(tree);
            } catch (const cdsm::SystemError&) {
                // the whole tree may have exited in between
            }
        }
        dev.release(tree);
        // A storm child by pid: the newest process of the storm's group.
        pid_t newest = 0;
        if (FILE* f = popen(("pgrep -n -g " + std::to_string(root)).c_str(), "r")) {
            if (fscanf(f, "%d", &newest) != 1) newest = 0;
            pclose(f);
        }
        if (newest > 0 && newest != root) {
            uint32_t single = 0;
            try {
                single = dev.track_pid(newest);  // the child may be gone, or still in the tree
            } catch (const cdsm::SystemError&) {
            }
            if (single) {
                singles++;
                std::this_thread::sleep_for(std::chrono::milliseconds(30));
                dangle_round = 0;
                duplicates += check_records(dev, single, dangle_round);
                dangling += dangle_round;
                try {
                    dev.release(single);
                } catch (const cdsm::SystemError&) {
                }
            }
        }
        if (rounds % 16 == 0 && !registry_ok(present, text)) {
            registry_bad++;
            printf("race: registry inconsistent:\n%s", text.c_str());
        }
    }
    kill(-root, SIGKILL);
    waitpid(root, nullptr, 0);
    if (!registry_ok(present, text)) registry_bad++;
    printf(
        "race: %lu tree rounds, %lu single-process rounds, %lu duplicate and %lu dangling "
        "records, registry %s\n",
        rounds, singles, duplicates, dangling,
        present ? (registry_bad ? "INCONSISTENT" : "consistent") : "not available");
    if (present) printf("%s", text.c_str());
    return duplicates || dangling || registry_bad ? 1 : 0;
}

// --- opener: rights are the opener's -----------------------------------------------------------

// A one-byte message with room for one file descriptor (SCM_RIGHTS).
struct FdMessage {
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    FdMessage() {
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = ctl;
        msg.msg_controllen = sizeof(ctl);
    }
    FdMessage(const FdMessage&) = delete;
    FdMessage& operator=(const FdMessage&) = delete;
};

// Run as root with /dev/cdsm readable and writable by all. (1) Opened as root, then the process
// becomes nobody (losing every capability): control and reading every application still work.
// (2) Opened by nobody and passed to root (SCM_RIGHTS): control fails with EPERM and root's
// application stays unreadable (ENOENT), as for nobody.
int cmd_opener() {
    int failures = 0;
    auto expect = [&](const char* what, bool ok) {
        printf("opener: %-60s %s\n", what, ok ? "ok" : "FAIL");
        failures += !ok;
    };
    // An application of root's: a sleeping child.
    pid_t sleeper = fork();
    if (sleeper == 0) {
        pause();
        _exit(0);
    }
    int root_fd = open_dev();
    uint32_t root_app = track_raw(root_fd, sleeper);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv)) throw Failure("socketpair");
    pid_t child = fork();
    if (child == 0) {
        // (1) the opener drops to nobody
        int fd = open_dev();
        if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)) _exit(3);
        auto a = sized<cdsm_track>();
        a.kind = CDSM_TRACK_PID;
        a.pid = getpid();
        int bad = 0;
        if (ioctl(fd, CDSM_IOC_TRACK, &a) < 0) {
            printf("opener: TRACK after dropping to nobody: %s\n", strerror(errno));
            bad |= 1;
        } else {
            auto r = sized<cdsm_app_op>();
            r.app_id = a.app_id;
            if (ioctl(fd, CDSM_IOC_RELEASE, &r) < 0) bad |= 1;
        }
        auto m = sized<cdsm_get_tasks>();
        m.app_id = root_app;
        if (ioctl(fd, CDSM_IOC_GET_TASKS, &m) < 0) {
            printf("opener: reading root's application after dropping: %s\n", strerror(errno));
            bad |= 2;
        }
        // (2) nobody opens and passes the file to root
        int nfd = open_dev();
        FdMessage fm;
        msghdr& msg = fm.msg;
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &nfd, sizeof(int));
        if (sendmsg(sv[1], &msg, 0) != 1) bad |= 4;
        _exit(bad);
    }
    FdMessage fm;
    msghdr& msg = fm.msg;
    int passed = -1;
    if (recvmsg(sv[0], &msg, 0) == 1 && CMSG_FIRSTHDR(&msg))
        memcpy(&passed, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
    int status = 0;
    waitpid(child, &status, 0);
    int bad = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
    expect("opened as root, then nobody: TRACK and RELEASE work", !(bad & 1));
    expect("opened as root, then nobody: reads root's application", !(bad & 2));
    expect("nobody's file reached root", passed >= 0 && !(bad & 4));
    if (passed >= 0) {
        auto a = sized<cdsm_app_op>();
        a.app_id = root_app;
        int r = ioctl(passed, CDSM_IOC_UNTRACK, &a);
        expect("nobody's file used by root: UNTRACK gets EPERM", r < 0 && errno == EPERM);
        auto m = sized<cdsm_get_tasks>();
        m.app_id = root_app;
        r = ioctl(passed, CDSM_IOC_GET_TASKS, &m);
        expect("nobody's file used by root: root's application is ENOENT",
               r < 0 && errno == ENOENT);
        std::vector<cdsm_app_info> apps(256);
        auto l = sized<cdsm_list_apps>();
        l.capacity = static_cast<uint32_t>(apps.size());
        l.apps_ptr = reinterpret_cast<uintptr_t>(apps.data());
        bool listed = ioctl(passed, CDSM_IOC_LIST_APPS, &l) < 0;
        for (uint32_t i = 0; i < l.count && i < apps.size(); i++)
            listed |= apps[i].app_id == root_app;
        expect("nobody's file used by root: root's application not listed", !listed);
    }
    kill(sleeper, SIGKILL);
    waitpid(sleeper, nullptr, 0);
    auto r = sized<cdsm_app_op>();
    r.app_id = root_app;
    ioctl(root_fd, CDSM_IOC_RELEASE, &r);
    printf("opener: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}

void print_apps(const Device& dev) {
    for (const cdsm_app_info& a : dev.list_apps()) {
        printf(
            "app %u kind %u flags %#x tasks %u live %u dim %u root %d uid %u events %llu "
            "rearmed %llu kmem %llu comm %.16s\n",
            a.app_id, a.kind, a.flags, a.nr_tasks, a.nr_live_tasks, a.matrix_dim, a.root_pid, a.uid,
            (unsigned long long)a.events, (unsigned long long)a.rearm_pages,
            (unsigned long long)a.kmem_bytes, a.comm);
    }
}

// Sum of a matrix's cells (each pair once).
uint64_t matrix_total(const cdsm::CommMatrix& m) {
    uint64_t sum = 0;
    for (size_t i = 0; i < m.size(); i++)
        for (size_t j = i + 1; j < m.size(); j++) sum += m.at(i, j);
    return sum;
}

// An ended application (no new events): every whole-run cell >= its aged cell; a caller of the
// first version of cdsm_get_matrix (40 bytes, no view) reads the aged matrix and gets nothing
// written past its size; an unknown view or a non-zero pad is EINVAL; aging 10 times lowers the
// aged matrix and leaves the whole-run one as it was.
int cmd_views(const Device& dev, uint32_t app) {
    using cdsm::kernel::MatrixView;
    int failed = 0;
    auto expect = [&](const char* what, bool ok) {
        printf("views: %s: %s\n", what, ok ? "ok" : "FAILED");
        failed |= !ok;
    };
    const auto aged = dev.matrix(app, MatrixView::aged).matrix;
    const auto whole = dev.matrix(app, MatrixView::whole).matrix;
    bool dominates = aged.size() == whole.size();
    for (size_t i = 0; dominates && i < aged.size(); i++)
        for (size_t j = 0; j < aged.size(); j++) dominates &= whole.at(i, j) >= aged.at(i, j);
    printf("views: %zu tasks, aged total %llu, whole total %llu\n", aged.size(),
           (unsigned long long)matrix_total(aged), (unsigned long long)matrix_total(whole));
    expect("every whole-run cell >= its aged cell", dominates);
    expect("the whole-run matrix has events", matrix_total(whole) > 0);

    int fd = open("/dev/cdsm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Failure(std::string("open /dev/cdsm: ") + strerror(errno));
    const uint32_t dim = static_cast<uint32_t>(aged.size());
    struct {
        cdsm_get_matrix a;
        uint64_t canary;
    } v1{};
    std::vector<uint32_t> cells(size_t(dim) * dim);
    v1.a.size = CDSM_GET_MATRIX_SIZE_V1;
    v1.a.app_id = app;
    v1.a.capacity = dim;
    v1.a.cells_ptr = reinterpret_cast<uintptr_t>(cells.data());
    v1.a.view = 0xa5a5a5a5;  // past the caller's 40 bytes: neither read nor written
    v1.a.pad = 0x5a5a5a5a;
    v1.canary = 0x1122334455667788;
    const int r = ioctl(fd, CDSM_IOC_GET_MATRIX, &v1.a);
    expect("a 40-byte (first version) argument is accepted", r == 0);
    bool same = r == 0 && v1.a.dim == dim;
    for (uint32_t i = 0; same && i < dim; i++)
        for (uint32_t j = 0; j < dim; j++)
            same &= i == j || cells[size_t(i) * dim + j] == aged.at(i, j);
    expect("the first version reads the aged matrix", same);
    expect("nothing written past the first version's 40 bytes",
           v1.a.view == 0xa5a5a5a5 && v1.a.pad == 0x5a5a5a5a && v1.canary == 0x1122334455667788);
    auto bad = sized<cdsm_get_matrix>();
    bad.app_id = app;
    bad.capacity = dim;
    bad.cells_ptr = reinterpret_cast<uintptr_t>(cells.data());
    bad.view = 2;
    expect("view 2 is EINVAL", ioctl(fd, CDSM_IOC_GET_MATRIX, &bad) < 0 && errno == EINVAL);
    bad.view = CDSM_MATRIX_WHOLE;
    bad.pad = 1;
    expect("a non-zero pad is EINVAL", ioctl(fd, CDSM_IOC_GET_MATRIX, &bad) < 0 && errno == EINVAL);
    close(fd);

    for (int i = 0; i < 10; i++) dev.age(app);
    const auto aged2 = dev.matrix(app, MatrixView::aged).matrix;
    const auto whole2 = dev.matrix(app, MatrixView::whole).matrix;
    bool unchanged = whole2.size() == whole.size();
    for (size_t i = 0; unchanged && i < whole.size(); i++)
        for (size_t j = 0; j < whole.size(); j++) unchanged &= whole2.at(i, j) == whole.at(i, j);
    printf("views: after aging 10 times: aged total %llu, whole total %llu\n",
           (unsigned long long)matrix_total(aged2), (unsigned long long)matrix_total(whole2));
    expect("aging leaves the whole-run matrix as it was", unchanged);
    expect("aging lowers the aged matrix", matrix_total(aged2) < matrix_total(aged));
    return failed;
}

// Writes the aged matrix to PREFIX.K (K = 0, 1, ...; as "matrix" prints it) every `every`
// seconds while GATE holds "on"; returns when GATE holds "off" or the application has no live
// task. One process for a run of snapshots: in a busy guest starting a program takes seconds.
int cmd_snapshots(const Device& dev, uint32_t app, double every, const std::string& gate,
                  const std::string& prefix) {
    int n = 0;
    for (;;) {
        std::string state;
        std::ifstream(gate) >> state;
        bool live = false;
        for (const cdsm_app_info& a : dev.list_apps())
            live |= a.app_id == app && a.nr_live_tasks > 0;
        if (state == "off" || !live) break;
        if (state == "on") {
            const cdsm::CommMatrix m = dev.matrix(app, cdsm::kernel::MatrixView::aged).matrix;
            const std::string name = prefix + "." + std::to_string(n);
            {
                std::ofstream out(name + ".tmp");
                for (size_t i = 0; i < m.size(); i++) {
                    for (size_t j = 0; j < m.size(); j++) out << (j ? " " : "") << m.at(i, j);
                    out << "\n";
                }
                if (!out) throw Failure("cannot write " + name + ".tmp");
            }
            if (rename((name + ".tmp").c_str(), name.c_str()))
                throw Failure("cannot rename to " + name);
            n++;
        }
        std::this_thread::sleep_for(std::chrono::duration<double>(every));
    }
    printf("snapshots: %d\n", n);
    return 0;
}

void print_matrix(const Device& dev, uint32_t app, cdsm::kernel::MatrixView view) {
    const cdsm::CommMatrix m = dev.matrix(app, view).matrix;
    for (size_t i = 0; i < m.size(); i++) {
        for (size_t j = 0; j < m.size(); j++)
            printf("%s%llu", j ? " " : "", (unsigned long long)m.at(i, j));
        printf("\n");
    }
}

int run(int argc, char** argv) {
    CLI::App cli{"cdsm-query: the kernel-module tests' view of /dev/cdsm"};
    cli.require_subcommand(1);
    int status = 0;
    uint32_t app = 0;
    auto add_app = [&](CLI::App* sub) {
        sub->add_option("APP", app, "application id")->required();
    };
    auto with_dev = [&](CLI::App* sub, std::function<void(const Device&)> f) {
        sub->callback([f] { f(Device()); });
    };

    std::string app_file;
    std::vector<std::string> command;
    auto* exec = cli.add_subcommand("exec", "run a command tracked from its first instruction");
    exec->add_option("--app-file", app_file, "write the application id to this file");
    exec->add_option("command", command, "the command, after --")->required();
    with_dev(exec, [&](const Device& dev) {
        std::vector<char*> args;
        for (auto& a : command) args.push_back(a.data());
        args.push_back(nullptr);
        status = cmd_exec(dev, app_file, args.data());
    });

    std::vector<pid_t> pids;
    auto* track_pid = cli.add_subcommand(
        "track", "track process trees, print each application (stops at the first failure)");
    track_pid->add_option("PID", pids)->required()->check(CLI::PositiveNumber);
    with_dev(track_pid, [&](const Device& dev) {
        for (pid_t pid : pids) printf("%u\n", dev.track_pid(pid));
    });

    std::string path;
    auto* track_cg = cli.add_subcommand("track-cgroup", "track a cgroup v2 directory");
    track_cg->add_option("PATH", path, "relative to the cgroup2 root, starting with /")->required();
    with_dev(track_cg, [&](const Device& dev) { printf("%u\n", dev.track_cgroup(path)); });

    for (const char* name : {"untrack", "release", "age", "reset"}) {
        auto* sub = cli.add_subcommand(name, std::string(name) + " an application");
        add_app(sub);
        with_dev(sub, [&app, name](const Device& dev) {
            const std::string op = name;
            if (op == "untrack") dev.untrack(app);
            if (op == "release") dev.release(app);
            if (op == "age") dev.age(app);
            if (op == "reset") dev.reset(app);
        });
    }

    with_dev(cli.add_subcommand("list", "list the applications"), print_apps);
    auto* tasks = cli.add_subcommand("tasks", "an application's tasks");
    add_app(tasks);
    with_dev(tasks, [&](const Device& dev) {
        for (const auto& t : dev.tasks(app))
            printf("%u tid %d tgid %d flags %#x comm %.16s\n", t.index, t.tid, t.tgid, t.flags,
                   t.comm);
    });
    auto* matrix = cli.add_subcommand("matrix", "an application's matrix");
    add_app(matrix);
    std::string view_name = "aged";
    matrix->add_option("--view", view_name, "aged (default) or whole")
        ->check(CLI::IsMember({"aged", "whole"}));
    with_dev(matrix, [&](const Device& dev) {
        print_matrix(dev, app, cdsm::kernel::parse_matrix_view(view_name));
    });
    auto* snapshots = cli.add_subcommand(
        "snapshots", "the aged matrix to PREFIX.K every S seconds while GATE says on");
    add_app(snapshots);
    double every = 2;
    std::string gate, prefix;
    snapshots->add_option("--every", every, "seconds between snapshots")
        ->check(CLI::PositiveNumber);
    snapshots->add_option("--gate", gate, "a file: \"on\" takes snapshots, \"off\" stops")
        ->required();
    snapshots->add_option("--prefix", prefix, "snapshot files are PREFIX.0, PREFIX.1, ...")
        ->required();
    with_dev(snapshots,
             [&](const Device& dev) { status = cmd_snapshots(dev, app, every, gate, prefix); });
    auto* views = cli.add_subcommand(
        "views", "an ended application's two matrices: aging leaves the whole-run one alone");
    add_app(views);
    with_dev(views, [&](const Device& dev) { status = cmd_views(dev, app); });
    with_dev(cli.add_subcommand("counters", "the module's counters"), print_counters);
    with_dev(cli.add_subcommand("params", "the run-time parameters"), print_params);

    std::vector<std::string> assignments;
    auto* set = cli.add_subcommand("set", "change run-time parameters");
    set->add_option("NAME=VALUE", assignments)->required();
    with_dev(set, [&](const Device& dev) { set_params(dev, assignments); });

    std::string truth;
    double min = 0.95, within = 0;
    auto* check = cli.add_subcommand("check", "compare a matrix with a workload's truth file");
    std::string check_app;
    check->add_option("APP", check_app, "application id, or @FILE: the id FILE will hold")
        ->required();
    check->add_option("TRUTH", truth, "truth file; waited for")->required();
    unsigned age = 0;
    check->add_option("--age", age, "age the matrix this many times once TRUTH appears");
    check->add_option("--min", min, "share of tasks that must find a true partner")
        ->check(CLI::Range(0.0, 1.0));
    check->add_option("--within", within, "retry for this many seconds")
        ->check(CLI::NonNegativeNumber);
    bool among_truth = false;
    check->add_flag("--among-truth", among_truth, "only truth tasks can be the largest partner");
    std::string check_view = "aged";
    check->add_option("--view", check_view, "the matrix to check: aged (default) or whole")
        ->check(CLI::IsMember({"aged", "whole"}));
    with_dev(check, [&](const Device& dev) {
        status = cmd_check(dev, check_app, truth, min, within,
                           cdsm::kernel::parse_matrix_view(check_view), among_truth, age);
    });

    auto* detect = cli.add_subcommand(
        "detect-time", "seconds until every truth task's largest partner is a true one for good");
    std::string detect_app;
    detect->add_option("APP", detect_app, "application id, or @FILE: the id FILE will hold")
        ->required();
    detect->add_option("TRUTH", truth, "truth file; waited for")->required();
    double window = 6, poll_every = 0.05;
    detect->add_option("--window", window, "seconds after TRUTH to watch (default 6)")
        ->check(CLI::PositiveNumber);
    detect->add_option("--every", poll_every, "seconds between looks (default 0.05)")
        ->check(CLI::PositiveNumber);
    bool detect_among_truth = false;
    detect->add_flag("--among-truth", detect_among_truth,
                     "only truth tasks can be the largest partner");
    with_dev(detect, [&](const Device& dev) {
        status = cmd_detect_time(dev, detect_app, truth, window, poll_every, detect_among_truth);
    });

    bool unprivileged = false;
    auto* misuse = cli.add_subcommand("misuse", "ioctl misuse must fail cleanly");
    misuse->add_flag("--unprivileged", unprivileged, "expect EPERM for control calls");
    misuse->callback([&] { status = cmd_misuse(unprivileged); });

    pid_t rate_pid = 0;
    double rate_seconds = 5, tolerance = 0.5;
    auto* rate = cli.add_subcommand("rate", "re-armed pages per second vs the configured rate");
    add_app(rate);
    rate->add_option("PID", rate_pid, "the process whose RSS the rate applies to")->required();
    rate->add_option("--seconds", rate_seconds)->check(CLI::PositiveNumber);
    rate->add_option("--tolerance", tolerance, "allowed relative error (default 0.5)");
    with_dev(rate, [&](const Device& dev) {
        status = cmd_rate(dev, app, rate_pid, rate_seconds, tolerance);
    });

    double seconds = 10;
    std::string ready_file;
    auto* events = cli.add_subcommand("events", "print netlink events for a while");
    events->add_option("--seconds", seconds)->check(CLI::PositiveNumber);
    events->add_option("--ready-file", ready_file, "written once subscribed");
    events->callback([&] { status = cmd_events(seconds, ready_file); });

    double race_seconds = 30;
    unsigned spawners = 4;
    auto* race = cli.add_subcommand("race", "fork storm against TRACK/UNTRACK/RELEASE");
    race->add_option("--seconds", race_seconds)->check(CLI::PositiveNumber);
    race->add_option("--spawners", spawners, "storm processes (default 4)")
        ->check(CLI::Range(1, 64));
    race->callback([&] { status = cmd_race(race_seconds, spawners); });
    cli.add_subcommand("registry", "check the module's task registry (debugfs)")->callback([&] {
        status = cmd_registry();
    });
    cli.add_subcommand("opener", "rights are the opener's (run as root, /dev/cdsm 0666)")
        ->callback([&] { status = cmd_opener(); });

    try {
        cli.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return cli.exit(e) ? 2 : 0;
    }
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::invalid_argument& e) {
        fprintf(stderr, "cdsm-query: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        fprintf(stderr, "cdsm-query: %s\n", e.what());
        return 1;
    }
}
