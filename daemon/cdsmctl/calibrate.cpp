// SPDX-License-Identifier: GPL-2.0
#include "calibrate.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "cdsm/error.hpp"
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
        std::sort(rtts.begin(), rtts.end());
        m.latency_us = rtts[rtts.size() / 2] / 2;
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
        std::sort(rates.begin(), rates.end());
        m.rate_gbs = rates[rates.size() / 2];
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

}  // namespace

void add_calibrate(CLI::App& app, CalibrateOptions& o) {
    auto* cmd = app.add_subcommand(
        "calibrate",
        "Measure the time model's latency and rate within a socket and between sockets on "
        "this node (pinned ping-pongs through shared memory) and write the model file that "
        "cdsmctl cluster-map and map read");
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
    cmd->footer(
        "\nBetween nodes nothing is measured here: the network's figures stay the base "
        "model's (docs/cluster.md).\n");
}

int calibrate(const CalibrateOptions& o, std::ostream& out) {
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
    out << "network not measured here: " << model.network.latency_us << " us, "
        << model.network.rate_gbs << " GB/s (" << (o.base.empty() ? "default" : o.base) << ")\n";
    out << "written: " << path << '\n';
    return 0;
}

}  // namespace cdsm::cdsmctl
