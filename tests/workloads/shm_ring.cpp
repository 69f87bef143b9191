// SPDX-License-Identifier: GPL-2.0
// cdsm-shm-ring: N processes in a ring exchange messages through per-process shared-memory
// segments laid out as Open MPI's vader transport lays out its own: each process's segment holds
// its receive mailbox, which its neighbours write, and the send fragments it reuses for all its
// neighbours, which they read. See README.md.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/data_pattern.hpp"
#include "common/memory.hpp"
#include "common/placement.hpp"
#include "common/processes.hpp"
#include "common/truth.hpp"

using namespace cdsm::workloads;

namespace {

struct Options {
    int procs = 6;
    std::size_t bytes = 2048;
    int fragments = 8;
    RunLength run;
    std::string truth;
    StartPlacement start;
};

// Mailbox slots: one 256-byte block, written by every neighbour (vader's FIFO head).
constexpr int kMaxProcs = 32;
// A mailbox slot: 0 when empty, else the message's sequence number << 16 | last << 15 | fragment.
constexpr std::uint64_t kLast = 1u << 15;
constexpr std::uint64_t kFragmentMask = kLast - 1;

/// A fragment: its busy flag (set by the owner when it sends, cleared by the receiver), then the
/// payload.
constexpr std::size_t kFragmentHeader = 64;

/// A process's segment: the mailbox on the first page, then the fragments.
struct Segment {
    static std::size_t fragment_stride(const Options& o) {
        return (kFragmentHeader + o.bytes + 255) / 256 * 256;
    }
    static std::size_t bytes(const Options& o) {
        return page_size() + round_up_to_pages(o.fragments * fragment_stride(o));
    }
    std::uint64_t* base;
    std::size_t stride;

    std::atomic_ref<std::uint64_t> slot(int sender) const { return std::atomic_ref(base[sender]); }
    std::uint64_t* fragment(std::uint64_t f) const {
        return base + (page_size() + f * stride) / sizeof(std::uint64_t);
    }
    std::atomic_ref<std::uint64_t> busy(std::uint64_t f) const {
        return std::atomic_ref(*fragment(f));
    }
    std::uint64_t* payload(std::uint64_t f) const {
        return fragment(f) + kFragmentHeader / sizeof(std::uint64_t);
    }
};

std::uint64_t payload_word(int sender, std::uint64_t seq, std::size_t k) {
    return initial_word(static_cast<std::uint64_t>(sender), seq) + k;
}

/// The segments, created by the first process before it forks, each unlinked at once (the
/// processes reach them through the inherited descriptors, and no name is left in /dev/shm).
/// Only sized, never touched: the owner touches its segment first, as vader's owner does.
std::vector<UniqueFd> make_segments(const Options& o) {
    std::vector<UniqueFd> fds;
    for (int r = 0; r < o.procs; ++r) {
        const std::string name =
            "/cdsm-shm-ring-" + std::to_string(getpid()) + "-" + std::to_string(r);
        UniqueFd fd(shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
        if (fd.get() < 0) throw_errno("shm_open " + name);
        if (shm_unlink(name.c_str()) != 0) throw_errno("shm_unlink " + name);
        if (ftruncate(fd.get(), static_cast<off_t>(Segment::bytes(o))) != 0)
            throw_errno("ftruncate " + name);
        fds.push_back(std::move(fd));
    }
    return fds;
}

struct Result {
    pid_t tid = 0;
    std::uint64_t sent = 0;
    std::uint64_t received = 0;
    std::uint64_t wrong_words = 0;
};

/// A barrier of processes over pipes (no shared memory: it would pair every process).
struct PipeBarrier {
    int up[2];
    int down[2];
    explicit PipeBarrier() {
        if (pipe(up) != 0 || pipe(down) != 0) throw_errno("pipe");
    }
    /// Every process calls it; the first (`first`) waits for the `n - 1` others, then lets them go.
    void wait(bool first, int n) const {
        char c = 0;
        if (first) {
            for (int i = 1; i < n; ++i)
                if (read(up[0], &c, 1) != 1) throw_errno("barrier read");
            for (int i = 1; i < n; ++i)
                if (write(down[1], &c, 1) != 1) throw_errno("barrier write");
        } else {
            if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) != 1) throw_errno("barrier");
        }
    }
};

/// Process `r`'s run: initialise its segment, meet the others, then exchange until time is up and
/// every neighbour has sent its last message. The result is stored at the end only: a page that
/// all processes write during the run would be shared memory of its own.
Result run_proc(int r, const Options& o, const std::vector<UniqueFd>& fds,
                const PipeBarrier& barrier) {
    Result result;
    result.tid = current_tid();
    const int n = o.procs;
    const int neighbours[2] = {(r + n - 1) % n, (r + 1) % n};
    std::vector<Mapping> maps;
    std::vector<Segment> seg(n, Segment{nullptr, Segment::fragment_stride(o)});
    for (int p : {r, neighbours[0], neighbours[1]}) {
        if (seg[p].base) continue;
        maps.push_back(Mapping::shared_file(fds[p].get(), Segment::bytes(o)));
        seg[p].base = reinterpret_cast<std::uint64_t*>(maps.back().data());
    }
    // The owner touches its whole segment first (vader's owner initialises its own).
    std::fill_n(seg[r].base, Segment::bytes(o) / sizeof(std::uint64_t), 0);
    barrier.wait(r == 0, n);

    const std::size_t words = o.bytes / sizeof(std::uint64_t);
    const StopRule stop = o.run.by_time() ? StopRule::at(after_seconds(Clock::now(), o.run.seconds))
                                          : StopRule::after(o.run.iterations);
    std::uint64_t seq_to[2] = {0, 0};
    bool sent_last[2] = {false, false}, got_last[2] = {false, false};
    while (!(sent_last[0] && sent_last[1] && got_last[0] && got_last[1])) {
        bool idle = true;
        for (int k = 0; k < 2; ++k) {
            // Receive from neighbour k: read the fragment in its segment, then free it.
            const int s = neighbours[k];
            const std::uint64_t d = seg[r].slot(s).load(std::memory_order_acquire);
            if (d != 0 && !got_last[k]) {
                const std::uint64_t f = d & kFragmentMask, seq = d >> 16;
                const std::uint64_t* data = seg[s].payload(f);
                for (std::size_t w = 0; w < words; ++w)
                    result.wrong_words += data[w] != payload_word(s, seq, w);
                seg[s].busy(f).store(0, std::memory_order_release);
                seg[r].slot(s).store(0, std::memory_order_release);
                got_last[k] = (d & kLast) != 0;
                ++result.received;
                idle = false;
            }
            // Send to neighbour k from the first free fragment (vader's LIFO free list: the
            // same fragments serve every neighbour).
            const int p = neighbours[k];
            if (sent_last[k] || seg[p].slot(r).load(std::memory_order_acquire) != 0) continue;
            int f = 0;
            while (f < o.fragments && seg[r].busy(f).load(std::memory_order_acquire) != 0) ++f;
            if (f == o.fragments) continue;
            const std::uint64_t seq = ++seq_to[k];
            std::uint64_t* data = seg[r].payload(f);
            for (std::size_t w = 0; w < words; ++w) data[w] = payload_word(r, seq, w);
            seg[r].busy(f).store(1, std::memory_order_relaxed);
            sent_last[k] = stop.done(seq);
            seg[p].slot(r).store(seq << 16 | (sent_last[k] ? kLast : 0) | f,
                                 std::memory_order_release);
            ++result.sent;
            idle = false;
        }
        if (idle) sched_yield();
    }
    return result;
}

int run(const Options& o, const std::string& program) {
    if (o.bytes % sizeof(std::uint64_t) != 0) throw UsageError("--bytes must be a multiple of 8");
    PartnerGraph graph(o.procs);
    for (int r = 0; r < o.procs; ++r) {
        graph[r] = {(r + o.procs - 1) % o.procs, (r + 1) % o.procs};
        std::sort(graph[r].begin(), graph[r].end());
    }
    const std::vector<int> cpus = o.start.resolve(graph);
    const std::vector<UniqueFd> fds = make_segments(o);
    const PipeBarrier barrier;
    // Each process reports on its own page of a shared mapping.
    const PerTaskPages<Result> results(o.procs, true);
    const ProcessTeam team(o.procs, program,
                           [&](int r) { results[r] = run_proc(r, o, fds, barrier); });
    const std::span<const pid_t> tids = team.pids();
    int failures = 0;
    try {
        for (std::size_t i = 0; i < cpus.size(); ++i) pin_task(tids[i], cpus[i]);
        if (!o.truth.empty()) write_truth(o.truth, tids, graph);
        results[0] = run_proc(0, o, fds, barrier);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: error: %s\n", program.c_str(), e.what());
        ++failures;
        team.stop();
    }
    failures += team.wait();
    std::uint64_t sent = 0, received = 0, wrong = 0;
    for (int r = 0; r < o.procs; ++r) {
        sent += results[r].sent;
        received += results[r].received;
        wrong += results[r].wrong_words;
    }
    const bool ok = failures == 0 && wrong == 0 && sent == received;
    std::printf("%s: %s: %d processes, %llu messages sent, %llu received, %llu wrong words\n",
                program.c_str(), ok ? "OK" : "FAILED", o.procs,
                static_cast<unsigned long long>(sent), static_cast<unsigned long long>(received),
                static_cast<unsigned long long>(wrong));
    return ok ? kExitOk : kExitFailed;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "Processes in a ring that exchange messages through per-process shared-memory "
        "segments laid out like Open MPI's vader (ground truth for cdsm).",
        "cdsm-shm-ring"};
    Options options;
    app.add_option("--procs", options.procs, "Number of processes")
        ->check(CLI::Range(3, kMaxProcs))
        ->capture_default_str();
    app.add_option("--bytes", options.bytes, "Bytes per message (a multiple of 8)")
        ->check(CLI::Range(std::size_t{8}, std::size_t{1} << 20))
        ->capture_default_str();
    app.add_option("--fragments", options.fragments, "Send fragments per process")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    options.run.add_options(app);
    app.add_option("--truth", options.truth, "Write the ground truth to FILE")->type_name("FILE");
    options.start.add_options(app);
    return run_workload(app, argc, argv, [&] { return run(options, app.get_name()); });
}
