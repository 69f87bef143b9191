// SPDX-License-Identifier: GPL-2.0
// cdsmd-testtool: what the daemon's VM tests need besides the workloads.
//
//   cdsmd-testtool request JSON|- [--socket PATH]
//       one control-socket request (-: read from stdin, for lines longer than an argument may
//       be); prints the response (JSON) or "error CODE: message" (exit 1)
//   cdsmd-testtool exec-after-connect --request JSON [--socket PATH] -- PROGRAM [ARG...]
//       connects, then execs PROGRAM (a setuid one, say) while a child sends the request on
//       the connection once PROGRAM runs, and prints the answer as `request` does
//   cdsmd-testtool connections --count N [--hold S] [--socket PATH]
//       opens N connections and pings on each; prints "ok=A refused=B" and the first refusal,
//       then holds them S seconds
//   cdsmd-testtool idle --seconds S [--partial] [--socket PATH]
//       connects (and with --partial sends half a request), waits S seconds, then pings;
//       prints "closed" when cdsmd hung up meanwhile, else "open"
//   cdsmd-testtool placement --truth FILE [--within S] [--max-ratio R]
//       where the truth file's tasks run now: partners on one package (for pairings), and the
//       placement's cost on the true matrix within R (default 1.05) times the Scotch mapping of
//       the true matrix (--max-ratio 0: partners only); with --within, retried until S seconds
//       after the file was written
//   cdsmd-testtool notify --socket PATH [--until LINE] [--seconds S]
//       listens as systemd's NOTIFY_SOCKET and prints the messages until one has LINE
//       (default READY=1); fails after S seconds (default 10) without it
//   cdsmd-testtool churn --threads N --seconds S
//       N slots in pairs, each running one busy thread at a time that lives 0.2-1 s: tasks
//       exit while cdsmd maps and migrates them
//   cdsmd-testtool fat-environ --processes N --mib M --seconds S
//       forks N processes, each of which execs this program again (as "exe") with M MiB of
//       environment and then joins its environment strings in memory, so that its
//       /proc/PID/environ is one variable, PMI_RANK=0xxx..., M MiB long; they sleep S seconds
//   cdsmd-testtool hammer --connections C --seconds S --request JSON
//       C connections, each sending the request again as soon as it is answered, for S seconds;
//       prints "answers=N" and the count of each answer ("ok=A EAGAIN=B ...")
//   cdsmd-testtool latency --seconds S
//       sends {"cmd":"list"} every 50 ms for S seconds on new connections; prints
//       "count=N p50_ms=X max_ms=Y errors=E"
//   cdsmd-testtool selfpin --threads N --pin-when FILE --cpu C --seconds T --truth FILE
//                          [--pin-bad]
//       N threads in pairs (i, N-1-i) sharing memory; once FILE exists (the test's go, given
//       when it saw what it waited for), thread 0 binds itself to CPU C (-1:
//       two CPUs after its current one), like a runtime that changes its own affinity, and
//       checks at the end that it is still there. --pin-bad: each thread starts
//       pinned to one CPU, partners on different packages (the workloads' --pin-bad), so that
//       cdsmd has a placement to repair whatever the kernel's scheduler would have done
#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cdsm/cost.hpp>
#include <cdsm/mapper.hpp>
#include <cdsm/migrator.hpp>
#include <cdsm/placement_rules.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "cdsm/control.hpp"
#include "common/pairing.hpp"
#include "common/placement.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Sends `line` as it is (it need not be valid) and prints the answer.
int request_on(cdsm::control::Client& client, const std::string& line) {
    try {
        const auto reply = client.request_line(line);
        std::printf("%s\n", reply.dump().c_str());
        return 0;
    } catch (const cdsm::control::ProtocolError& e) {
        std::printf("error %s: %s\n", e.code().c_str(), e.what());
        return 1;
    }
}

int request(std::string json, const std::string& socket) {
    if (json == "-") json.assign(std::istreambuf_iterator<char>(std::cin), {});
    while (!json.empty() && json.back() == '\n') json.pop_back();
    try {
        cdsm::control::Client client(cdsm::control::socket_path(socket));
        return request_on(client, json);
    } catch (const cdsm::control::ProtocolError& e) {
        std::printf("error %s: %s\n", e.code().c_str(), e.what());
        return 1;
    }
}

std::string comm_of(pid_t pid) {
    std::ifstream in(fmt::format("/proc/{}/comm", pid));
    std::string comm;
    std::getline(in, comm);
    return comm;
}

// The connection is made as the caller; the process that made it then becomes PROGRAM, and a
// child that shares the connection sends the request once it has.
int exec_after_connect(const std::string& json, const std::string& socket,
                       std::vector<std::string> program) {
    cdsm::control::Client client(cdsm::control::socket_path(socket));
    const pid_t parent = ::getpid();
    const std::string before = comm_of(parent);
    std::fflush(stdout);
    const pid_t child = ::fork();
    if (child < 0) throw std::runtime_error("fork failed");
    if (child == 0) {
        for (int i = 0; i < 200 && comm_of(parent) == before; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        if (comm_of(parent) == before) {
            std::printf("exec-after-connect: %s did not start\n", program[0].c_str());
            std::_Exit(2);
        }
        const int status = request_on(client, json);
        std::fflush(stdout);
        std::_Exit(status);
    }
    std::vector<char*> args;
    for (auto& a : program) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    std::fprintf(stderr, "exec-after-connect: exec %s: %s\n", args[0], std::strerror(errno));
    return 127;
}

int connections(int count, double hold, const std::string& socket) {
    std::vector<std::unique_ptr<cdsm::control::Client>> open;
    int ok = 0, refused = 0;
    std::string first;
    for (int i = 0; i < count; ++i) {
        auto c = std::make_unique<cdsm::control::Client>(cdsm::control::socket_path(socket));
        try {
            c->request({{"cmd", "ping"}});
            ++ok;
            open.push_back(std::move(c));
        } catch (const cdsm::control::ProtocolError& e) {
            if (first.empty()) first = e.code() + ": " + e.what();
            ++refused;
        }
    }
    std::printf("ok=%d refused=%d%s%s\n", ok, refused,
                first.empty() ? "" : " first: ", first.c_str());
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(hold));
    return 0;
}

int idle(double seconds, bool partial, const std::string& socket) {
    cdsm::control::Client client(cdsm::control::socket_path(socket));
    if (partial) client.send_raw("{\"cmd\":");
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    try {
        client.request_line(partial ? "\"ping\"}" : "{\"cmd\":\"ping\"}");
        std::printf("open\n");
    } catch (const cdsm::control::ProtocolError& e) {
        std::printf("closed (%s: %s)\n", e.code().c_str(), e.what());
    }
    return 0;
}

struct Truth {
    std::vector<pid_t> tids;
    std::vector<std::set<std::size_t>> partners;  // by task index
};

Truth read_truth(const std::string& file) {
    std::ifstream in(file);
    if (!in) throw std::runtime_error("cannot read " + file);
    std::vector<std::vector<pid_t>> lines;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::vector<pid_t> v;
        for (pid_t t; ls >> t;) v.push_back(t);
        if (!v.empty()) lines.push_back(v);
    }
    Truth t;
    std::map<pid_t, std::size_t> index;
    for (const auto& l : lines) {
        index[l[0]] = t.tids.size();
        t.tids.push_back(l[0]);
    }
    for (const auto& l : lines) {
        std::set<std::size_t> p;
        for (std::size_t k = 1; k < l.size(); ++k) p.insert(index.at(l[k]));
        t.partners.push_back(p);
    }
    return t;
}

int current_cpu(pid_t tid) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(tid, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1) {
        for (int c = 0; c < CPU_SETSIZE; ++c) {
            if (CPU_ISSET(c, &set)) return c;
        }
    }
    return -1;  // not bound to one CPU: no placement to judge
}

// The package (socket) of an OS CPU, as Linux reports it (read once per CPU).
int package_of(std::uint32_t cpu) {
    static std::map<std::uint32_t, int> known;
    if (const auto it = known.find(cpu); it != known.end()) return it->second;
    std::ifstream in(
        fmt::format("/sys/devices/system/cpu/cpu{}/topology/physical_package_id", cpu));
    int id = -1;
    in >> id;
    return known[cpu] = id;
}

// What the placement is judged against, computed once: the checks themselves must be quick, so
// that the first moment the placement is right is seen (the vCPUs are busy).
struct Judge {
    const Truth& truth;
    const cdsm::Topology& topo;
    const cdsm::Distances& dist;
    double max_ratio;
    cdsm::PlacementRules rules;  ///< cdsmd's [mapping] smt and spread
    cdsm::CommMatrix matrix;
    double best_cost = 0;
    bool pairing = true;

    Judge(const Truth& t, const cdsm::Topology& tp, const cdsm::Distances& d, double r,
          cdsm::PlacementRules ru)
        : truth(t), topo(tp), dist(d), max_ratio(r), rules(ru), matrix(t.tids.size()) {
        for (std::size_t i = 0; i < t.tids.size(); ++i) {
            for (std::size_t j : t.partners[i]) {
                if (i < j) matrix.set(i, j, 100);
            }
            // Partners must share a package when the pattern allows it: one partner each.
            pairing = pairing && t.partners[i].size() == 1;
        }
        // Under the rules cdsmd places by.
        const auto best = cdsm::make_mapper("scotch")->map({matrix, topo, dist, nullptr, rules});
        best_cost = cdsm::mapping_cost(matrix, best, dist);
    }
};

// One check; prints what it saw when `verbose`.
bool placement_ok(const Judge& judge, bool verbose) {
    const Truth& truth = judge.truth;
    const cdsm::Topology& topo = judge.topo;
    const std::size_t n = truth.tids.size();
    std::vector<cdsm::PuId> pus;
    std::string where;
    for (pid_t tid : truth.tids) {
        const int cpu = current_cpu(tid);
        where += fmt::format(" {}:{}", tid, cpu);
        const auto pu = topo.find_os_index(std::uint32_t(cpu));
        if (cpu < 0 || !pu.has_value()) {
            if (verbose)
                std::printf("placement: task %d is not bound to one CPU;%s\n", tid, where.c_str());
            return false;
        }
        pus.push_back(pu.value());
    }
    std::size_t apart = 0;
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j : truth.partners[i]) {
            if (i < j &&
                package_of(topo.pu(pus[i]).os_index) != package_of(topo.pu(pus[j]).os_index))
                ++apart;
        }
    }
    const cdsm::Placement placement(pus);
    const double cost = cdsm::mapping_cost(judge.matrix, placement, judge.dist);
    const double best_cost = judge.best_cost, max_ratio = judge.max_ratio;
    // The rules first (issue 28): no two busy tasks on one core while a core is idle, tasks
    // balanced over the packages; communication decides only within them.
    const std::string broken = cdsm::rule_violation(judge.topo, placement, judge.rules);
    const bool ok = broken.empty() && (!judge.pairing || apart == 0) &&
                    (max_ratio <= 0 || cost <= max_ratio * best_cost);
    if (verbose) {
        std::printf(
            "placement: tid:cpu%s\nplacement: rules %s: %s; %zu partner pair(s) on different "
            "packages, cost %.0f, mapper on the true matrix %.0f (ratio %.3f, limit %.2f): %s\n",
            where.c_str(), cdsm::to_string(judge.rules).c_str(),
            broken.empty() ? "kept" : broken.c_str(), apart, cost, best_cost,
            best_cost > 0 ? cost / best_cost : 0.0, max_ratio, ok ? "ok" : "NOT OK");
    }
    return ok;
}

// Seconds since the file was written: the workloads write their truth once every task runs,
// so this is how long the tasks have been running, however late this checker started.
double age_of(const std::string& file) {
    const auto written = std::filesystem::last_write_time(file);
    return std::chrono::duration<double>(std::filesystem::file_time_type::clock::now() - written)
        .count();
}

int placement(const std::string& file, double within, double max_ratio,
              cdsm::PlacementRules rules) {
    // Started before the workload (a checker started after it would load late on a VM whose
    // vCPUs the workload keeps busy): the machine first, then wait for the truth file.
    const cdsm::Topology machine = cdsm::Topology::from_system();
    // 120 s by the clock: counted in sleeps, the wait lasted over 400 s in a busy guest.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!std::filesystem::exists(file) || std::filesystem::is_empty(file)) {
        if (std::chrono::steady_clock::now() >= give_up)
            throw std::runtime_error("no truth file " + file + " after 120 s");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const Truth truth = read_truth(file);
    // The rules hold within the CPUs the tasks may use (a Slurm job's cgroup cpuset, say: its
    // tasks two per core when it has more tasks than cores, whatever the rest of the machine
    // does), as cdsmd applies them. The checker itself runs outside that cgroup.
    const auto allowed = cdsm::cgroup_allowed_cpus(truth.tids.front());
    const cdsm::Topology topo =
        allowed && allowed->size() < machine.pu_count() ? machine.restricted_to(*allowed) : machine;
    const cdsm::Distances dist(topo);
    const Judge judge(truth, topo, dist, max_ratio, rules);
    for (bool first = true;; first = false) {
        const double elapsed = age_of(file);
        if (elapsed <= within && placement_ok(judge, false)) {
            placement_ok(judge, true);
            std::printf("placement: ok %s %.2f s\n", first ? "at the first check, after" : "after",
                        elapsed);
            return 0;
        }
        if (elapsed >= within) {
            placement_ok(judge, true);
            std::printf("placement: still wrong after %.2f s\n", elapsed);
            return 1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

int selfpin(int threads, const std::string& pin_when, int cpu, double seconds,
            const std::string& truth, bool pin_bad) {
    std::vector<int> start_cpus;
    if (pin_bad) {
        std::vector<int> partner(std::size_t(threads), 0);
        for (int i = 0; i < threads; ++i) partner[std::size_t(i)] = threads - 1 - i;
        start_cpus = cdsm::workloads::bad_placement(cdsm::workloads::pairing_graph(partner),
                                                    cdsm::workloads::allowed_cpus());
    }
    const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    const std::size_t pairs = std::size_t(threads) / 2;
    void* mem = mmap(nullptr, pairs * 32 * page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) throw std::runtime_error("mmap failed");
    auto* words = static_cast<std::atomic<std::uint64_t>*>(mem);
    const std::size_t per_pair = 32 * page / sizeof(std::uint64_t);
    std::vector<std::atomic<pid_t>> tids(threads);
    std::atomic<int> ready{0};
    std::atomic<bool> pinned_ok{true};
    const auto start = Clock::now();
    const auto end = start + std::chrono::duration<double>(seconds);
    auto body = [&](int i) {
        tids[i] = pid_t(syscall(SYS_gettid));
        if (!start_cpus.empty()) cdsm::workloads::pin_task(0, start_cpus[std::size_t(i)]);
        ++ready;
        const std::size_t pair = std::size_t(std::min(i, threads - 1 - i));
        std::atomic<std::uint64_t>* mine = words + pair * per_pair;
        bool pinned = false;
        auto next_look = Clock::now();
        while (Clock::now() < end) {
            for (std::size_t w = 0; w < per_pair; w += 32) mine[w].fetch_add(1);
            if (i != 0 || pinned || Clock::now() < next_look) continue;
            next_look = Clock::now() + std::chrono::milliseconds(50);
            if (access(pin_when.c_str(), F_OK) != 0) continue;
            // --cpu -1: a CPU of another core than the one cdsmd gave it.
            if (cpu < 0) {
                const int n = int(std::thread::hardware_concurrency());
                cpu = (std::max(current_cpu(0), 0) + 2) % n;
            }
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            if (sched_setaffinity(0, sizeof set, &set) != 0) throw std::runtime_error("pin");
            pinned = true;
            std::printf("selfpin: thread %d bound itself to CPU %d\n", int(tids[0]), cpu);
            std::fflush(stdout);
        }
        if (i == 0 && current_cpu(0) != cpu) pinned_ok = false;
    };
    std::vector<std::thread> pool;
    for (int i = 1; i < threads; ++i) pool.emplace_back(body, i);
    while (ready < threads - 1) std::this_thread::yield();
    tids[0] = pid_t(syscall(SYS_gettid));
    {
        std::ofstream out(truth + ".tmp");
        for (int i = 0; i < threads; ++i) out << tids[i] << " " << tids[threads - 1 - i] << "\n";
    }
    std::rename((truth + ".tmp").c_str(), truth.c_str());
    body(0);
    for (auto& t : pool) t.join();
    std::printf("selfpin: %s\n",
                pinned_ok ? "thread 0 kept its own binding" : "FAILED: thread 0 was moved");
    return pinned_ok ? 0 : 1;
}

}  // namespace

// Listens on a datagram socket as systemd's NOTIFY_SOCKET and prints each message (one line per
// assignment) until one holds `until` (e.g. READY=1); fails after `seconds` without it.
int notify(const std::string& path, const std::string& until, double seconds) {
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (fd < 0 || path.size() >= sizeof(addr.sun_path)) throw std::runtime_error("socket " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    ::unlink(path.c_str());
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) < 0)
        throw std::runtime_error("bind " + path + ": " + std::strerror(errno));
    const timeval tv{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    char buf[4096];
    while (Clock::now() < end) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) continue;
        const std::string message(buf, std::size_t(n));
        std::printf("notify: %s\n", message.c_str());
        std::fflush(stdout);
        std::istringstream lines(message);
        for (std::string line; std::getline(lines, line);) {
            if (line == until) return 0;
        }
    }
    std::printf("notify: no %s within %.0f s\n", until.c_str(), seconds);
    return 1;
}

// Pairs of short-lived threads for `seconds`: each of `threads` slots runs one busy thread at a
// time that shares a page with its partner slot's and exits after 0.2-1 s, then starts the next:
// tasks keep exiting while cdsmd maps and migrates them. Prints how many threads ran.
int churn(int threads, double seconds) {
    const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    const std::size_t pairs = std::size_t(threads) / 2;
    void* mem =
        mmap(nullptr, pairs * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) throw std::runtime_error("mmap failed");
    auto* words = static_cast<std::atomic<std::uint64_t>*>(mem);
    const std::size_t per_pair = page / sizeof(std::uint64_t);
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    std::atomic<long> started{0};
    auto slot = [&](int i) {
        std::uint64_t seed = std::uint64_t(i) * 7919 + 1;
        while (Clock::now() < end) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            const auto life = std::chrono::milliseconds(200 + (seed >> 33) % 800);
            std::thread worker([&, life] {
                std::atomic<std::uint64_t>* mine =
                    words + (std::size_t(i) % pairs) * per_pair + std::size_t(i / int(pairs));
                const auto stop = Clock::now() + life;
                while (Clock::now() < stop) {
                    for (std::size_t k = 0; k < per_pair; k += 8) mine[k].fetch_add(1);
                }
            });
            ++started;
            worker.join();
        }
    };
    std::vector<std::thread> slots;
    for (int i = 0; i < threads; ++i) slots.emplace_back(slot, i);
    for (auto& t : slots) t.join();
    std::printf("churn: %ld threads ran in %.0f s\n", started.load(), seconds);
    return 0;
}

int fat_environ(int processes, double mib, double seconds) {
    // The kernel takes at most a quarter of the stack limit for arguments and environment, and
    // 128 KiB per string.
    rlimit stack{};
    ::getrlimit(RLIMIT_STACK, &stack);
    const rlim_t want = rlim_t(mib * 4 + 64) << 20;
    if (stack.rlim_cur != RLIM_INFINITY && stack.rlim_cur < want) {
        stack.rlim_cur = std::min(want, stack.rlim_max);
        if (::setrlimit(RLIMIT_STACK, &stack) != 0) throw std::runtime_error("setrlimit");
    }
    std::vector<std::string> env = {"PMI_RANK=0"};
    for (std::size_t done = 0, k = 0; done < std::size_t(mib * 1048576); ++k) {
        env.push_back(fmt::format("FILL{}=", k) + std::string(120 << 10, 'x'));
        done += env.back().size() + 1;
    }
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string secs = fmt::format("{}", seconds);
    std::vector<pid_t> children;
    for (int i = 0; i < processes; ++i) {
        const pid_t pid = ::fork();
        if (pid == 0) {
            const char* argv[] = {"exe", "fat-environ-child", secs.c_str(), nullptr};
            ::execve("/proc/self/exe", const_cast<char**>(argv), envp.data());
            std::fprintf(stderr, "fat-environ: exec: %s\n", std::strerror(errno));
            ::_exit(127);
        }
        if (pid > 0) children.push_back(pid);
    }
    int failed = 0;
    for (pid_t pid : children) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    return failed ? 1 : 0;
}

// After the exec: the environment strings are contiguous; the NULs between them become 'x', so
// the area is one string, the first variable's value.
int fat_environ_child(double seconds) {
    std::vector<char*> ends;
    for (char** e = environ; *e; ++e) {
        char* end = *e + std::strlen(*e);
        if (e[1] && e[1] == end + 1) ends.push_back(end);
    }
    for (char* end : ends) *end = 'x';
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return 0;
}

int hammer(int connections, double seconds, const std::string& json, const std::string& socket) {
    std::mutex lock;
    std::map<std::string, long> answers;
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    std::vector<std::thread> clients;
    for (int i = 0; i < connections; ++i) {
        clients.emplace_back([&] {
            std::map<std::string, long> mine;
            try {
                cdsm::control::Client c(cdsm::control::socket_path(socket));
                while (Clock::now() < until) {
                    try {
                        c.request_line(json);
                        ++mine["ok"];
                    } catch (const cdsm::control::ProtocolError& e) {
                        ++mine[e.code()];
                        if (e.code() == "EPROTO" || e.code() == "EIO" || e.code() == "EBUSY") break;
                    }
                }
            } catch (const std::exception& e) {
                ++mine["connect"];
            }
            const std::lock_guard<std::mutex> held(lock);
            for (const auto& [code, n] : mine) answers[code] += n;
        });
    }
    for (auto& t : clients) t.join();
    long total = 0;
    std::string counts;
    for (const auto& [code, n] : answers) {
        total += n;
        counts += fmt::format(" {}={}", code, n);
    }
    std::printf("answers=%ld%s\n", total, counts.c_str());
    return 0;
}

int latency(double seconds, const std::string& socket) {
    std::vector<double> ms;
    int errors = 0;
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until) {
        const auto t0 = Clock::now();
        try {
            cdsm::control::Client c(cdsm::control::socket_path(socket));
            c.request({{"cmd", "list"}});
        } catch (const std::exception&) {
            ++errors;
        }
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::sort(ms.begin(), ms.end());
    std::printf("count=%zu p50_ms=%.0f max_ms=%.0f errors=%d\n", ms.size(),
                ms.empty() ? 0 : ms[ms.size() / 2], ms.empty() ? 0 : ms.back(), errors);
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 3 && std::string_view(argv[1]) == "fat-environ-child")
        return fat_environ_child(std::atof(argv[2]));
    CLI::App app{"cdsmd's VM-test helper", "cdsmd-testtool"};
    app.require_subcommand(1);
    std::string json, socket, truth;
    double within = 0, ratio = 1.05, seconds = 10;
    int threads = 4, cpu = 0;
    auto* req = app.add_subcommand("request", "one control-socket request");
    req->add_option("json", json)->required();
    req->add_option("--socket", socket);
    auto* pl = app.add_subcommand("placement", "check where a truth file's tasks run");
    pl->add_option("--truth", truth)->required();
    pl->add_option("--within", within);
    pl->add_option("--max-ratio", ratio);
    // cdsmd's [mapping] smt and spread (its defaults unless the test configures others).
    std::string smt{cdsm::to_string(cdsm::PlacementRules{}.smt)};
    std::string spread{cdsm::to_string(cdsm::PlacementRules{}.spread)};
    pl->add_option("--smt", smt)->check(CLI::IsMember({"avoid", "allow"}));
    pl->add_option("--spread", spread)->check(CLI::IsMember({"balanced", "pack"}));
    auto* sp = app.add_subcommand("selfpin", "threads in pairs; thread 0 binds itself later");
    sp->add_option("--threads", threads)->check(CLI::Range(2, 64));
    std::string pin_when;
    sp->add_option("--pin-when", pin_when)->required();
    sp->add_option("--cpu", cpu);
    sp->add_option("--seconds", seconds);
    sp->add_option("--truth", truth)->required();
    bool pin_bad = false;
    sp->add_flag("--pin-bad", pin_bad);
    std::string until = "READY=1";
    auto* nt = app.add_subcommand("notify", "listen as systemd's NOTIFY_SOCKET for a message");
    nt->add_option("--socket", socket)->required();
    nt->add_option("--until", until);
    nt->add_option("--seconds", seconds);
    auto* ex = app.add_subcommand("exec-after-connect", "connect, then exec a program");
    std::vector<std::string> program;
    ex->add_option("--request", json)->required();
    ex->add_option("--socket", socket);
    ex->add_option("program", program)->required();
    int count = 1;
    bool partial = false;
    auto* co = app.add_subcommand("connections", "open several connections and hold them");
    co->add_option("--count", count)->required();
    double hold = 0;
    co->add_option("--hold", hold);
    co->add_option("--socket", socket);
    auto* id = app.add_subcommand("idle", "an idle connection: does cdsmd close it?");
    id->add_option("--seconds", seconds)->required();
    id->add_flag("--partial", partial);
    id->add_option("--socket", socket);
    auto* ch = app.add_subcommand("churn", "pairs of threads that keep exiting and restarting");
    ch->add_option("--threads", threads)->check(CLI::Range(2, 64));
    ch->add_option("--seconds", seconds);
    int processes = 1;
    double mib = 6;
    auto* fe = app.add_subcommand("fat-environ", "processes whose environ is one huge value");
    fe->add_option("--processes", processes)->required();
    fe->add_option("--mib", mib);
    fe->add_option("--seconds", seconds);
    int conns = 16;
    auto* hm = app.add_subcommand("hammer", "a request again and again on many connections");
    hm->add_option("--connections", conns);
    hm->add_option("--seconds", seconds);
    hm->add_option("--request", json)->required();
    hm->add_option("--socket", socket);
    auto* la = app.add_subcommand("latency", "list every 50 ms; its latency");
    la->add_option("--seconds", seconds);
    la->add_option("--socket", socket);
    CLI11_PARSE(app, argc, argv);
    try {
        if (*fe) return fat_environ(processes, mib, seconds);
        if (*hm) return hammer(conns, seconds, json, socket);
        if (*la) return latency(seconds, socket);
        if (*ch) return churn(threads, seconds);
        if (*req) return request(json, socket);
        if (*ex) return exec_after_connect(json, socket, program);
        if (*co) return connections(count, hold, socket);
        if (*id) return idle(seconds, partial, socket);
        if (*nt) return notify(socket, until, seconds);
        if (*pl)
            return placement(truth, within, ratio,
                             {cdsm::parse_smt_rule(smt), cdsm::parse_spread_rule(spread)});
        return selfpin(threads, pin_when, cpu, seconds, truth, pin_bad);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cdsmd-testtool: %s\n", e.what());
        return 1;
    }
}
