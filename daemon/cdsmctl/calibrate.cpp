// SPDX-License-Identifier: GPL-2.0
#include "calibrate.hpp"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <latch>
#include <optional>
#include <thread>
#include <vector>

#include "cdsm/error.hpp"
#include "cdsm/fd.hpp"
#include "cdsm/time_model.hpp"
#include "cdsm/topology.hpp"
#include "output.hpp"

namespace cdsm::cdsmctl {
namespace {

using Clock = std::chrono::steady_clock;

// What two processes share: a turn counter for the ping-pong and a buffer for the rate.
struct Shared {
    alignas(64) std::atomic<std::uint64_t> turn{0};
    alignas(64) std::atomic<std::uint64_t> ready{0};
};

void pin(std::uint32_t cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
        throw cdsm::Error(fmt::format("CPU {}", cpu), std::strerror(errno));
}

// Waits until `flag` reaches `value`, yielding now and then (the other side may share a CPU
// with other work on a loaded machine).
void wait_for(const std::atomic<std::uint64_t>& flag, std::uint64_t value) {
    for (unsigned spins = 0; flag.load(std::memory_order_acquire) < value; ++spins)
        if (spins % 256 == 255) sched_yield();
}

// The median of `values` (the upper one of an even count), which it sorts.
double median(std::vector<double>& values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

struct Measured {
    double latency_us;
    double rate_gbs;
};

// One level: a process pinned on `a` and one on `b`. Latency: half the median round trip of a
// counter bounced between them, over batches. Rate: `bytes` copied into the shared buffer by
// one and out of it by the other, one after the other, as a shared-memory MPI message is.
Measured ping_pong(std::uint32_t a, std::uint32_t b, std::size_t round_trips, std::size_t bytes) {
    const std::size_t size = sizeof(Shared) + bytes;
    void* mem = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) throw cdsm::Error("mmap()", std::strerror(errno));
    auto* shared = new (mem) Shared;
    auto* buffer = static_cast<char*>(mem) + sizeof(Shared);
    constexpr int kBatches = 9, kCopies = 8;
    const pid_t child = fork();
    if (child < 0) throw cdsm::Error("fork()", std::strerror(errno));
    if (child == 0) {
        // The partner: answers every odd turn, then receives the copies.
        try {
            pin(b);
        } catch (...) {
            _exit(1);
        }
        std::vector<char> out(bytes);
        for (std::uint64_t t = 1; t <= kBatches * round_trips * 2; t += 2) {
            wait_for(shared->turn, t);
            shared->turn.store(t + 1, std::memory_order_release);
        }
        for (std::uint64_t c = 1; c <= kCopies; ++c) {
            wait_for(shared->ready, 2 * c - 1);
            std::memcpy(out.data(), buffer, bytes);
            shared->ready.store(2 * c, std::memory_order_release);
        }
        _exit(0);
    }
    Measured m{0, 0};
    try {
        pin(a);
        std::vector<double> rtts;
        std::uint64_t t = 0;
        for (int batch = 0; batch < kBatches; ++batch) {
            const auto start = Clock::now();
            for (std::size_t i = 0; i < round_trips; ++i) {
                shared->turn.store(++t, std::memory_order_release);
                wait_for(shared->turn, ++t);
            }
            rtts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() /
                           static_cast<double>(round_trips));
        }
        m.latency_us = median(rtts) / 2;
        std::vector<char> in(bytes, 'x');
        std::vector<double> rates;
        for (std::uint64_t c = 1; c <= kCopies; ++c) {
            const auto start = Clock::now();
            std::memcpy(buffer, in.data(), bytes);
            shared->ready.store(2 * c - 1, std::memory_order_release);
            wait_for(shared->ready, 2 * c);
            const double s = std::chrono::duration<double>(Clock::now() - start).count();
            rates.push_back(static_cast<double>(bytes) / s / 1e9);
        }
        m.rate_gbs = median(rates);
    } catch (...) {
        kill(child, SIGKILL);
        waitpid(child, nullptr, 0);
        munmap(mem, size);
        throw;
    }
    int status = 0;
    waitpid(child, &status, 0);
    munmap(mem, size);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw cdsm::Error(fmt::format("CPU {}", b), "the ping-pong partner could not run there");
    return m;
}

// Two PUs of different cores whose deepest common level is `kind` (a Package: two cores of one
// socket; the Machine: two sockets), as OS CPU numbers.
std::optional<std::pair<std::uint32_t, std::uint32_t>> pair_at(const cdsm::Topology& t,
                                                               cdsm::LevelKind within) {
    for (cdsm::PuId a = 0; a < t.pu_count(); ++a)
        for (cdsm::PuId b = a + 1; b < t.pu_count(); ++b) {
            const auto kind = t.level_kind(t.common_level(a, b));
            const bool same_core = kind == cdsm::LevelKind::kCore || kind == cdsm::LevelKind::kPu;
            if (same_core) continue;
            bool ok = false;
            if (within == cdsm::LevelKind::kMachine) {
                ok = kind == cdsm::LevelKind::kMachine;
            } else {
                // Within one socket: any level below the machine (L3, L2, NUMA, Package), or a
                // machine of one package (its Package level dropped).
                bool has_package = false;
                for (std::size_t l = 0; l < t.level_count(); ++l)
                    has_package |= t.level_kind(l) == cdsm::LevelKind::kPackage;
                ok = kind != cdsm::LevelKind::kMachine || !has_package;
            }
            if (ok) return std::pair{t.pu(a).os_index, t.pu(b).os_index};
        }
    return std::nullopt;
}

// ---- the network: a TCP ping-pong between two nodes -------------------------------------------
//
// The peer (--peer) connects to the server (--serve) and sends a header: the magic, then the
// round trips per batch, the batches, the bytes per copy, the copies and the streams (each a
// 64-bit number in network order). Then each round trip is 8 bytes there and 8 back; each copy
// `bytes` there and one byte back. Then the injection rate: the peer opens `streams` more
// connections, each starting with the magic, and sends `copies` copies on all of them at once,
// each acknowledged. What Open MPI's tcp transport sees between these two nodes, not an RDMA
// network's (docs/cluster.md).

constexpr char kMagic[8] = {'C', 'D', 'S', 'M', 'C', 'A', 'L', '2'};
constexpr int kNetBatches = 9, kNetCopies = 8;
constexpr std::uint64_t kMaxStreams = 64;
// What one side holds of a copy at a time (the server reads a copy in pieces).
constexpr std::size_t kPiece = 1 << 20;

// HOST:PORT or [V6]:PORT; for --serve, PORT alone means every address.
std::pair<std::string, std::string> split_address(const std::string& text, bool host_optional,
                                                  const char* option) {
    const auto colon = text.rfind(':');
    std::string host, port;
    if (colon == std::string::npos) {
        port = text;
    } else {
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
            host = host.substr(1, host.size() - 2);
    }
    const bool numeric = !port.empty() && port.size() <= 5 &&
                         port.find_first_not_of("0123456789") == std::string::npos &&
                         std::stoul(port) <= 65535;
    if (!numeric || (host.empty() && !host_optional))
        throw cdsm::Error(option, fmt::format("'{}' is not {}", text,
                                              host_optional ? "[ADDR:]PORT" : "HOST:PORT"));
    return {host, port};
}

void send_all(int fd, const void* data, std::size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = send(fd, p, size, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw cdsm::Error("network ping-pong", std::strerror(errno));
        p += n;
        size -= static_cast<std::size_t>(n);
    }
}

void recv_all(int fd, void* data, std::size_t size) {
    auto* p = static_cast<char*>(data);
    while (size > 0) {
        const ssize_t n = recv(fd, p, size, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw cdsm::Error("network ping-pong", std::strerror(errno));
        if (n == 0) throw cdsm::Error("network ping-pong", "the other side closed the connection");
        p += n;
        size -= static_cast<std::size_t>(n);
    }
}

void no_delay(int fd) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Receives `copies` copies of `bytes` in pieces, acknowledging each with one byte.
void answer_copies(int fd, std::uint64_t copies, std::uint64_t bytes) {
    std::vector<char> piece(std::min<std::uint64_t>(bytes, kPiece));
    for (std::uint64_t c = 0; c < copies; ++c) {
        for (std::uint64_t left = bytes; left > 0;) {
            const std::size_t n = std::min<std::uint64_t>(left, piece.size());
            recv_all(fd, piece.data(), n);
            left -= n;
        }
        send_all(fd, "k", 1);
    }
}

// Sends `copies` copies of `buffer`, each acknowledged; the seconds each took.
std::vector<double> send_copies(int fd, const std::vector<char>& buffer, int copies) {
    std::vector<double> seconds;
    for (int c = 0; c < copies; ++c) {
        const auto start = Clock::now();
        send_all(fd, buffer.data(), buffer.size());
        char ack = 0;
        recv_all(fd, &ack, 1);
        seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    return seconds;
}

// Accepts one connection on `listener` within `timeout_s`.
cdsm::Fd accept_within(int listener, int timeout_s, const std::string& what) {
    pollfd p{listener, POLLIN, 0};
    const int ready = poll(&p, 1, timeout_s * 1000);
    if (ready == 0)
        throw cdsm::Error(what, fmt::format("no peer connected within {} s", timeout_s));
    cdsm::Fd conn(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn) throw cdsm::Error(what, std::strerror(errno));
    no_delay(conn.get());
    char magic[8];
    recv_all(conn.get(), magic, sizeof(magic));
    if (std::memcmp(magic, kMagic, sizeof(magic)) != 0)
        throw cdsm::Error(what, "the peer is not cdsmctl calibrate --peer (of this version)");
    return conn;
}

// --serve: answers one peer, then returns.
void serve_one(const std::string& address, unsigned timeout_s, std::ostream& out) {
    const auto [host, port] = split_address(address, true, "--serve");
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    if (const int rc =
            getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found);
        rc != 0)
        throw cdsm::Error("--serve " + address, gai_strerror(rc));
    cdsm::Fd listener;
    std::string error = "no address";
    // Without a host: IPv6's any address first, which takes IPv4 peers too.
    for (addrinfo* a = found; a && !listener; a = a->ai_next) {
        cdsm::Fd fd(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
        const int one = 1;
        if (fd) setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (fd && bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0 &&
            listen(fd.get(), static_cast<int>(kMaxStreams) + 1) == 0)
            listener = std::move(fd);
        else
            error = std::strerror(errno);
    }
    freeaddrinfo(found);
    if (!listener) throw cdsm::Error("--serve " + address, error);
    out << "serving one network ping-pong on " << address << '\n' << std::flush;
    const std::string what = "--serve " + address;
    cdsm::Fd conn = accept_within(listener.get(), static_cast<int>(timeout_s), what);
    std::uint64_t header[5];
    recv_all(conn.get(), header, sizeof(header));
    const std::uint64_t round_trips = be64toh(header[0]), batches = be64toh(header[1]),
                        bytes = be64toh(header[2]), copies = be64toh(header[3]),
                        streams = be64toh(header[4]);
    if (round_trips > 10000000 || batches > 100 || bytes > (1u << 30) || copies > 100 ||
        streams > kMaxStreams)
        throw cdsm::Error(what, "the peer asked for too much");
    std::uint64_t word = 0;
    for (std::uint64_t i = 0; i < round_trips * batches; ++i) {
        recv_all(conn.get(), &word, sizeof(word));
        send_all(conn.get(), &word, sizeof(word));
    }
    answer_copies(conn.get(), copies, bytes);
    // The injection rate: every stream connected first (the peer starts them together), each
    // answered by a thread of its own.
    std::vector<cdsm::Fd> conns;
    for (std::uint64_t i = 0; i < streams; ++i)
        conns.push_back(accept_within(listener.get(), 10, what));
    std::vector<std::exception_ptr> errors(streams);
    {
        std::vector<std::jthread> threads;
        for (std::uint64_t i = 0; i < streams; ++i)
            threads.emplace_back([&, i] {
                try {
                    answer_copies(conns[i].get(), copies, bytes);
                } catch (...) {
                    errors[i] = std::current_exception();
                }
            });
    }
    for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
    out << "answered " << round_trips * batches << " round trips and " << copies << " copies of "
        << bytes << " bytes, then " << streams << " streams of " << copies << " copies at once\n";
}

struct NetworkMeasured {
    double latency_us;
    double rate_gbs;       ///< one stream's
    double injection_gbs;  ///< all streams' together
};

// Connects to the --serve at `address` and sends the magic. A server started at the same moment
// (two srun tasks, a script) may not listen yet: refused connections are tried again for
// `retry_s`.
cdsm::Fd connect_to_server(const std::string& address, int retry_s) {
    const auto [host, port] = split_address(address, false, "--peer");
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0)
        throw cdsm::Error("--peer " + address, gai_strerror(rc));
    cdsm::Fd conn;
    std::string error = "no address";
    const auto give_up = Clock::now() + std::chrono::seconds(retry_s);
    for (bool refused = true; !conn && refused;) {
        refused = false;
        for (addrinfo* a = found; a && !conn; a = a->ai_next) {
            cdsm::Fd fd(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
            if (fd && connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) {
                conn = std::move(fd);
            } else {
                refused |= errno == ECONNREFUSED;
                error = std::strerror(errno);
            }
        }
        refused &= Clock::now() < give_up;
        if (!conn && refused) usleep(100000);
    }
    freeaddrinfo(found);
    if (!conn)
        throw cdsm::Error("--peer " + address,
                          error + " (is cdsmctl calibrate --serve running there?)");
    no_delay(conn.get());
    send_all(conn.get(), kMagic, sizeof(kMagic));
    return conn;
}

// --peer: the network's latency (half the median round trip of 8 bytes, over batches), one
// stream's rate (`bytes` sent and acknowledged, the median of the copies), and the injection
// rate: `streams` connections sending their copies at once, all their bytes over the time until
// the last one's last copy was acknowledged.
NetworkMeasured ping_pong_network(const std::string& address, std::size_t round_trips,
                                  std::size_t bytes, std::size_t streams) {
    cdsm::Fd conn = connect_to_server(address, 10);
    const std::uint64_t header[5] = {htobe64(round_trips), htobe64(kNetBatches), htobe64(bytes),
                                     htobe64(kNetCopies), htobe64(streams)};
    send_all(conn.get(), header, sizeof(header));
    std::vector<double> rtts;
    for (int batch = 0; batch < kNetBatches; ++batch) {
        const auto start = Clock::now();
        for (std::uint64_t i = 0; i < round_trips; ++i) {
            std::uint64_t word = i, back = 0;
            send_all(conn.get(), &word, sizeof(word));
            recv_all(conn.get(), &back, sizeof(back));
            if (back != word) throw cdsm::Error("--peer " + address, "the answer was garbled");
        }
        rtts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() /
                       static_cast<double>(round_trips));
    }
    const std::vector<char> buffer(bytes, 'x');
    std::vector<double> rates;
    for (const double s : send_copies(conn.get(), buffer, kNetCopies))
        rates.push_back(static_cast<double>(bytes) / s / 1e9);
    std::vector<cdsm::Fd> conns;
    for (std::size_t i = 0; i < streams; ++i) conns.push_back(connect_to_server(address, 0));
    std::vector<std::exception_ptr> errors(streams);
    std::latch ready(static_cast<std::ptrdiff_t>(streams) + 1);
    Clock::time_point start;
    {
        std::vector<std::jthread> threads;
        for (std::size_t i = 0; i < streams; ++i)
            threads.emplace_back([&, i] {
                ready.arrive_and_wait();
                try {
                    send_copies(conns[i].get(), buffer, kNetCopies);
                } catch (...) {
                    errors[i] = std::current_exception();
                }
            });
        start = Clock::now();
        ready.arrive_and_wait();
    }
    const double together = std::chrono::duration<double>(Clock::now() - start).count();
    for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
    const double sent = static_cast<double>(streams * kNetCopies) * static_cast<double>(bytes);
    return {median(rtts) / 2, median(rates), sent / together / 1e9};
}

}  // namespace

void add_calibrate(CLI::App& app, CalibrateOptions& o) {
    auto* cmd = app.add_subcommand(
        "calibrate",
        "Measure the time model's latency and rate within a socket and between sockets on "
        "this node (pinned ping-pongs through shared memory), and between nodes with --peer "
        "(TCP), and write the model file that cdsmctl cluster-map and map read");
    cmd->add_option("-o,--output", o.output,
                    std::string("The model file to write (default: ") +
                        std::string(cdsm::kDefaultTimeModelPath) + "; '-' for stdout only)");
    cmd->add_option("--time-model", o.base,
                    "A model file whose other figures (network, injection, costs) are kept "
                    "(default: the documented defaults)");
    cmd->add_option("--round-trips", o.round_trips, "Round trips per batch (9 batches)")
        ->check(CLI::Range(1, 10000000))
        ->capture_default_str();
    cmd->add_option("--bytes", o.bytes, "Bytes per copy for the rate (8 copies)")
        ->check(CLI::Range(64, 1 << 30))
        ->capture_default_str();
    cmd->add_flag("--json", o.json, "Print the model written (cdsm-time-model/1)");
    auto* peer = cmd->add_option("--peer", o.peer,
                                 "Also measure the network: a TCP ping-pong with `cdsmctl "
                                 "calibrate --serve` on another node (HOST:PORT; a refused "
                                 "connection is tried again for 10 s)");
    auto* serve = cmd->add_option("--serve", o.serve,
                                  "Measure nothing: answer one --peer's network ping-pong on "
                                  "[ADDR:]PORT, then exit");
    serve->excludes(peer);
    cmd->add_option("--streams", o.streams,
                    "With --peer: TCP streams sending at once for the node's injection rate "
                    "(default: this node's PUs, at most 16)")
        ->check(CLI::Range(1, static_cast<int>(kMaxStreams)))
        ->needs(peer);
    cmd->add_option("--serve-timeout", o.serve_timeout_s, "Seconds --serve waits for its peer")
        ->check(CLI::Range(1, 86400))
        ->capture_default_str();
    cmd->footer(
        "\nBetween nodes: run `cdsmctl calibrate --serve PORT` on one node and `cdsmctl "
        "calibrate --peer NODE:PORT` on another; the network's figures are then those of TCP "
        "between them (Open MPI's tcp transport), not of an RDMA network: one stream's latency "
        "and rate, and the injection rate, what --streams streams sent together (a lower bound "
        "of the node's limit when they did not slow each other down). Without --peer they stay "
        "the base model's (docs/cluster.md).\n");
}

int calibrate(const CalibrateOptions& o, std::ostream& out) {
    if (!o.serve.empty()) {
        serve_one(o.serve, o.serve_timeout_s, out);
        return 0;
    }
    // A malformed --peer is refused before the node's own measurements, not after them.
    if (!o.peer.empty()) split_address(o.peer, false, "--peer");
    cdsm::TimeModel model = o.base.empty() ? cdsm::TimeModel{} : cdsm::TimeModel::from_file(o.base);
    const cdsm::Topology topology = cdsm::Topology::from_system();
    nlohmann::json measured = nlohmann::json::object();
    std::vector<std::string> lines;
    const auto level = [&](const char* name, cdsm::LevelKind within, cdsm::LinkTiming& timing) {
        const auto pair = pair_at(topology, within);
        if (!pair) {
            lines.push_back(
                fmt::format("{:<7} not measured (no two such CPUs here): default {} "
                            "us, {} GB/s",
                            name, timing.latency_us, timing.rate_gbs));
            return;
        }
        const Measured m = ping_pong(pair->first, pair->second, o.round_trips, o.bytes);
        timing = {m.latency_us, m.rate_gbs};
        measured[name] = {{"cpus", {pair->first, pair->second}},
                          {"latency_us", m.latency_us},
                          {"rate_gbs", m.rate_gbs}};
        lines.push_back(fmt::format("{:<7} CPUs {} and {}: {:.3g} us, {:.3g} GB/s", name,
                                    pair->first, pair->second, m.latency_us, m.rate_gbs));
    };
    level("socket", cdsm::LevelKind::kPackage, model.socket);
    level("node", cdsm::LevelKind::kMachine, model.node);
    if (!o.peer.empty()) {
        // TCP round trips cost tens of microseconds: a tenth of the shared-memory ones.
        const std::size_t round_trips = std::max<std::size_t>(1, o.round_trips / 10);
        const std::size_t streams =
            o.streams ? o.streams : std::clamp<std::size_t>(topology.pus().size(), 1, 16);
        const NetworkMeasured m = ping_pong_network(o.peer, round_trips, o.bytes, streams);
        model.network = {m.latency_us, m.rate_gbs};
        // A node sends at least what one stream sends alone: streams that slowed each other
        // below it (a guest on one host thread, a busy node) say nothing more of the node.
        model.injection_gbs = std::max(m.injection_gbs, m.rate_gbs);
        measured["network"] = {{"peer", o.peer},
                               {"round_trips", round_trips},
                               {"latency_us", m.latency_us},
                               {"rate_gbs", m.rate_gbs}};
        // Streams that each kept most of one stream's rate did not meet a shared limit: what
        // they reached together is a lower bound of the node's.
        const bool saturated = m.injection_gbs < 0.8 * static_cast<double>(streams) * m.rate_gbs;
        measured["injection"] = {{"peer", o.peer},
                                 {"streams", streams},
                                 {"gbs", m.injection_gbs},
                                 {"saturated", saturated}};
        lines.push_back(fmt::format("{:<7} peer {} (TCP): {:.3g} us, {:.3g} GB/s", "network",
                                    o.peer, m.latency_us, m.rate_gbs));
        lines.push_back(fmt::format(
            "{:<7} peer {}, {} streams at once: {:.3g} GB/s{}", "inject", o.peer, streams,
            m.injection_gbs,
            saturated ? ""
                      : fmt::format(" (not saturated: {} x one stream's rate or more; a lower "
                                    "bound, try more --streams)",
                                    0.8 * static_cast<double>(streams))));
    }
    model.validate("the measured model");
    nlohmann::json doc = model.to_json();
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    doc["calibrated"] = {{"host", host},
                         {"topology", topology.describe()},
                         {"round_trips", o.round_trips},
                         {"bytes", o.bytes},
                         {"levels", measured}};
    const std::string path = o.output.empty() ? std::string(cdsm::kDefaultTimeModelPath) : o.output;
    if (path != "-") {
        std::error_code ec;
        const auto dir = std::filesystem::path(path).parent_path();
        if (!dir.empty()) std::filesystem::create_directories(dir, ec);
        write_file_text(path, doc.dump(2) + '\n');
    }
    if (o.json || path == "-") {
        print_json(out, doc);
        return 0;
    }
    for (const auto& l : lines) out << l << '\n';
    if (o.peer.empty())
        out << "network not measured (no --peer): " << model.network.latency_us << " us, "
            << model.network.rate_gbs << " GB/s (" << (o.base.empty() ? "default" : o.base)
            << ")\n";
    out << "written: " << path << '\n';
    return 0;
}

}  // namespace cdsm::cdsmctl
