// SPDX-License-Identifier: GPL-2.0
// cdsmd-load: many clients against a running cdsmd (tests/cdsmd/vm-load, bench/cdsmd/load).
//
//   cdsmd-load --app ID --daemon-pid PID [--clients 64] [--requests 1000] [--slow 8]
//              [--half-open 8] [--socket PATH]
//
// Forks --clients processes, one in eight as root and the others each as its own uid, each
// sending --requests mixed requests (reads of the application ID, control, malformed lines,
// wrong types, deep nesting; half of the clients pipeline 16 at a time); --slow processes
// pipeline 2048 topology answers (~1.5 MiB) and read them 512 bytes every 100 ms; --half-open
// processes send half a request, or a request and then shut down their sending side without
// reading. Meanwhile a well-behaved root client sends `list` every 20 ms on its own connection
// and times the answers, and cdsmd's memory (VmRSS of PID) is sampled every 100 ms. Prints one
// JSON object: answers by code, list latency (p50, p99, max), RSS at the start, sampled peak and
// VmHWM. Fails (exit 1) when a client's connection broke or it got an answer no request of its
// kind may get, a list failed or lacked application ID, or cdsmd is gone.
#include <fmt/format.h>
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cdsm/control.hpp"

namespace {

using cdsm::control::Json;
using Clock = std::chrono::steady_clock;

constexpr int kSlowAnswers = 2048;

void become(uid_t uid) {
    if (uid == 0) return;
    if (::setgroups(0, nullptr) < 0 || ::setgid(uid) < 0 || ::setuid(uid) < 0) {
        std::fprintf(stderr, "cdsmd-load: cannot become uid %u: %s\n", uid, std::strerror(errno));
        std::_Exit(3);
    }
}

int connect_to(const std::string& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) return -1;
    return fd;
}

// One request of the mix, by number; `root` clients may control.
std::string pick(unsigned k, std::uint32_t app) {
    switch (k % 12) {
        case 0:
        case 1:
        case 2:
            return R"({"cmd":"list"})";
        case 3:
            return R"({"cmd":"ping"})";
        case 4:
            return R"({"cmd":"stats"})";
        case 5:
            return R"({"cmd":"topology"})";
        case 6:
            return fmt::format(R"({{"cmd":"show","app":{}}})", app);
        case 7:
            return fmt::format(R"({{"cmd":"tasks","app":{}}})", app);
        case 8:
            return fmt::format(R"({{"cmd":"matrix","app":{}}})", app);
        case 9:
            return fmt::format(R"({{"cmd":"age","app":{}}})", app);
        case 10:
            return fmt::format(R"({{"cmd":"map","app":{},"dry_run":true}})", app);
        default: {
            static const std::string bad[] = {
                "not json", R"({"cmd":"show","app":{"x":1}})", R"({"cmd":7})",
                R"({"cmd":"show","app":)" + std::string(40, '[') + std::string(40, ']') + "}"};
            return bad[(k / 12) % 4];
        }
    }
}

// The codes a request of the mix may get: unprivileged clients do not see root's application
// (ENOENT) and may not age it (EPERM).
bool expected(const std::string& code, unsigned k, bool root) {
    if (code == "ok") return k % 12 != 11 && (root || (k % 12 < 6));
    if (k % 12 == 11) return code == "EPROTO" || code == "EINVAL";
    if (!root && k % 12 == 9) return code == "EPERM";
    if (!root && k % 12 >= 6) return code == "ENOENT";
    return false;
}

// A client process: writes its counts as a JSON line to `report`.
[[noreturn]] void client(int index, int requests, std::uint32_t app, const std::string& path,
                         int report) {
    const bool root = index % 8 == 0;
    become(root ? 0 : uid_t(20000 + index));
    std::map<std::string, int> codes;
    int unexpected = 0, broken = 0;
    std::string first_unexpected;
    const int fd = connect_to(path);
    if (fd < 0) {
        broken = 1;
    } else {
        const unsigned batch = index % 2 ? 16 : 1;
        cdsm::control::LineBuffer in(cdsm::control::kMaxResponseBytes);
        std::vector<char> buf(1u << 16);
        for (int sent = 0; sent < requests && !broken;) {
            std::vector<unsigned> kinds;
            std::string out;
            for (unsigned b = 0; b < batch && sent < requests; ++b, ++sent) {
                const unsigned k = unsigned(sent) * 7 + unsigned(index);
                kinds.push_back(k);
                out += pick(k, app) + "\n";
            }
            if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) != ssize_t(out.size())) {
                broken = 1;
                break;
            }
            for (unsigned k : kinds) {
                std::optional<std::string> line;
                while (!(line = in.next_line())) {
                    const ssize_t n = ::read(fd, buf.data(), buf.size());
                    if (n <= 0) break;
                    in.append(std::string_view(buf.data(), std::size_t(n)));
                }
                if (!line) {
                    broken = 1;
                    break;
                }
                const Json r = cdsm::control::parse_line(*line);
                const std::string code = r.value("ok", false) ? "ok" : r.value("code", "?");
                ++codes[code];
                if (!expected(code, k, root)) {
                    if (!unexpected++) first_unexpected = pick(k, app) + " -> " + *line;
                }
            }
        }
        ::close(fd);
    }
    const std::string line = Json{{"codes", codes},
                                  {"unexpected", unexpected},
                                  {"first_unexpected", first_unexpected.substr(0, 300)},
                                  {"broken", broken}}
                                 .dump() +
                             "\n";
    (void)!::write(report, line.data(), line.size());
    std::_Exit(0);
}

[[noreturn]] void slow_reader(int index, std::uint32_t app, const std::string& path) {
    become(uid_t(30000 + index));
    const int fd = connect_to(path);
    // kSlowAnswers topology answers (~730 B each in the lab: ~1.5 MiB, well over the 256 KiB of
    // answers cdsmd holds for one connection) and, not theirs, root's application's matrix.
    std::string out;
    for (int i = 0; i < kSlowAnswers; ++i) {
        out += fmt::format(R"({{"cmd":"topology"}})"
                           "\n"
                           R"({{"cmd":"matrix","app":{}}})"
                           "\n",
                           app);
    }
    (void)!::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
    char buf[512];
    for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (::read(fd, buf, sizeof(buf)) <= 0) std::_Exit(0);
    }
}

[[noreturn]] void half_open(int index, const std::string& path) {
    become(uid_t(40000 + index));
    const int fd = connect_to(path);
    if (index % 2) {
        (void)!::send(fd, "{\"cmd\":\"li", 10, MSG_NOSIGNAL);
    } else {
        (void)!::send(fd, "{\"cmd\":\"stats\"}\n", 16, MSG_NOSIGNAL);
        ::shutdown(fd, SHUT_WR);
    }
    for (;;) ::pause();
}

long rss_kib(pid_t pid, const char* key) {
    std::ifstream in(fmt::format("/proc/{}/status", pid));
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::strlen(key)));
    }
    return -1;
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, std::size_t(p * double(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli{"many clients against a running cdsmd", "cdsmd-load"};
    int clients = 64, requests = 1000, slow = 8, half = 8;
    std::uint32_t app = 0;
    pid_t daemon_pid = 0;
    std::string socket;
    cli.add_option("--clients", clients, "client processes sending mixed requests")
        ->check(CLI::Range(1, 1024));
    cli.add_option("--requests", requests, "requests per client")->check(CLI::Range(1, 1000000));
    cli.add_option("--slow", slow, "slow readers of large answers")->check(CLI::Range(0, 1024));
    cli.add_option("--half-open", half, "connections left half-sent or half-closed")
        ->check(CLI::Range(0, 1024));
    cli.add_option("--app", app, "an application cdsmd manages (it must stay listed)")->required();
    cli.add_option("--daemon-pid", daemon_pid, "cdsmd's pid (for its memory)")->required();
    cli.add_option("--socket", socket,
                   "cdsmd's socket (default: $CDSM_SOCKET, else /run/cdsm/cdsmd.sock)");
    CLI11_PARSE(cli, argc, argv);
    const std::string path = cdsm::control::socket_path(socket);

    std::vector<pid_t> background;
    for (int i = 0; i < slow; ++i) {
        if (const pid_t p = ::fork(); p == 0)
            slow_reader(i, app, path);
        else
            background.push_back(p);
    }
    for (int i = 0; i < half; ++i) {
        if (const pid_t p = ::fork(); p == 0)
            half_open(i, path);
        else
            background.push_back(p);
    }

    std::atomic<bool> done{false};
    long rss_start = rss_kib(daemon_pid, "VmRSS:"), rss_peak = rss_start;
    std::thread sampler([&] {
        while (!done) {
            rss_peak = std::max(rss_peak, rss_kib(daemon_pid, "VmRSS:"));
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    });
    std::vector<double> latencies;
    int list_errors = 0, missing_app = 0;
    std::size_t topology_bytes = 0;
    std::string list_error;
    std::thread lister([&] {
        try {
            cdsm::control::Client c(path);
            topology_bytes = c.request({{"cmd", "topology"}}).dump().size();
            while (!done) {
                const auto t0 = Clock::now();
                try {
                    const Json r = c.request({{"cmd", "list"}});
                    latencies.push_back(
                        std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
                    const auto& apps = r.at("apps");
                    if (std::none_of(apps.begin(), apps.end(),
                                     [&](const Json& a) { return a.at("app_id") == app; })) {
                        ++missing_app;
                    }
                } catch (const cdsm::control::ProtocolError& e) {
                    if (!list_errors++) list_error = e.code() + ": " + e.what();
                    c = cdsm::control::Client(path);
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
        } catch (const std::exception& e) {
            ++list_errors;
            list_error = e.what();
        }
    });

    int pipefd[2];
    if (::pipe(pipefd) < 0) return 2;
    const auto t0 = Clock::now();
    for (int i = 0; i < clients; ++i) {
        if (::fork() == 0) {
            ::close(pipefd[0]);
            client(i, requests, app, path, pipefd[1]);
        }
    }
    ::close(pipefd[1]);
    std::map<std::string, long> codes;
    long unexpected = 0, broken = 0, reports = 0;
    std::string first_unexpected;
    cdsm::control::LineBuffer in(1u << 20);
    char buf[4096];
    for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof(buf))) > 0;) {
        in.append(std::string_view(buf, std::size_t(n)));
        while (auto line = in.next_line()) {
            const Json r = Json::parse(*line);
            ++reports;
            for (const auto& [code, count] : r.at("codes").items())
                codes[code] += count.get<long>();
            unexpected += r.at("unexpected").get<long>();
            broken += r.at("broken").get<long>();
            if (first_unexpected.empty()) first_unexpected = r.at("first_unexpected");
        }
    }
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    done = true;
    lister.join();
    sampler.join();
    for (pid_t p : background) ::kill(p, SIGKILL);
    while (::wait(nullptr) > 0) {
    }
    const bool alive = ::kill(daemon_pid, 0) == 0;
    const long hwm = rss_kib(daemon_pid, "VmHWM:");
    const Json summary = {{"clients", clients},
                          {"requests_per_client", requests},
                          {"slow_readers", slow},
                          {"half_open", half},
                          {"seconds", seconds},
                          {"requests_per_second", double(clients) * requests / seconds},
                          {"slow_reader_answers_bytes", topology_bytes * kSlowAnswers},
                          {"answers", codes},
                          {"clients_reported", reports},
                          {"unexpected", unexpected},
                          {"first_unexpected", first_unexpected},
                          {"broken_connections", broken},
                          {"list",
                           {{"answered", latencies.size()},
                            {"errors", list_errors},
                            {"first_error", list_error},
                            {"without_app", missing_app},
                            {"p50_ms", percentile(latencies, 0.5)},
                            {"p99_ms", percentile(latencies, 0.99)},
                            {"max_ms", percentile(latencies, 1.0)}}},
                          {"cdsmd",
                           {{"alive", alive},
                            {"rss_start_kib", rss_start},
                            {"rss_peak_kib", rss_peak},
                            {"vm_hwm_kib", hwm}}}};
    std::printf("%s\n", summary.dump().c_str());
    const bool ok = alive && reports == clients && unexpected == 0 && broken == 0 &&
                    list_errors == 0 && missing_app == 0 && !latencies.empty();
    return ok ? 0 : 1;
}
