// SPDX-License-Identifier: GPL-2.0
// cdsm-mpi-ring: MPI ranks exchange large messages with their neighbours in a ring or a 2-D halo;
// on one node with the vader (sm) transport the data travels through shared memory. Rank 0
// writes the ground truth: each rank's message partners. See README.md.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/cli.hpp"
#include "common/data_pattern.hpp"
#include "common/placement.hpp"
#include "common/system.hpp"
#include "common/truth.hpp"

using namespace cdsm::workloads;

namespace {

struct Options {
    std::string pattern = "ring";
    /// The ring's order: position p's neighbours are ring_order[p - 1] and ring_order[p + 1];
    /// empty: 0, 1, ..., N-1.
    std::vector<int> ring_order;
    /// With ring: a new ring order every `redraw` seconds (0: one ring for the whole run).
    double redraw = 0;
    std::size_t bytes = 128 * 1024;
    RunLength run;
    std::string truth;
    StartPlacement start;
};

/// One direction of exchange: this rank sends to `to` and receives from `from` (MPI_PROC_NULL at
/// the edge of a non-periodic grid), both with `tag`.
struct Link {
    int to;
    int from;
    int tag;
};

std::vector<Link> ring_links(int rank, int size, const std::vector<int>& order) {
    if (order.empty()) {
        const int right = (rank + 1) % size;
        const int left = (rank + size - 1) % size;
        return {{right, left, 0}, {left, right, 1}};
    }
    const auto at = static_cast<int>(std::find(order.begin(), order.end(), rank) - order.begin());
    const int right = order[static_cast<std::size_t>((at + 1) % size)];
    const int left = order[static_cast<std::size_t>((at + size - 1) % size)];
    return {{right, left, 0}, {left, right, 1}};
}

/// Empty when @p order is empty or a permutation of 0..size-1, else why not.
std::string ring_order_error(const std::vector<int>& order, int size) {
    if (order.empty()) return {};
    if (order.size() != static_cast<std::size_t>(size))
        return "--ring-order names " + std::to_string(order.size()) + " ranks, the job has " +
               std::to_string(size);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int r = 0; r < size; ++r) {
        if (sorted[static_cast<std::size_t>(r)] != r)
            return "--ring-order is not a permutation of the ranks 0.." + std::to_string(size - 1);
    }
    return {};
}

std::vector<Link> halo2d_links(int rank, int size) {
    int dims[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    const int cols = dims[1];
    const int row = rank / cols, col = rank % cols;
    const auto at = [&](int r, int c) {
        return r < 0 || r >= dims[0] || c < 0 || c >= cols ? MPI_PROC_NULL : r * cols + c;
    };
    return {{at(row, col + 1), at(row, col - 1), 0},
            {at(row, col - 1), at(row, col + 1), 1},
            {at(row + 1, col), at(row - 1, col), 2},
            {at(row - 1, col), at(row + 1, col), 3}};
}

std::vector<Link> links_of(const Options& options, int rank, int size) {
    return options.pattern == "ring" ? ring_links(rank, size, options.ring_order)
                                     : halo2d_links(rank, size);
}

/// The rings of --redraw: every rank draws the same sequence (one generator, seeded alike), each
/// ring's pairs of neighbours different from the previous ring's (at least 4 ranks: 3 or fewer
/// make one ring only).
class RingDraw {
  public:
    explicit RingDraw(int size) : order_(static_cast<std::size_t>(size)) {
        std::iota(order_.begin(), order_.end(), 0);
    }
    const std::vector<int>& order() const { return order_; }
    const std::vector<int>& next() {
        const auto previous = pairs(order_);
        do {
            std::shuffle(order_.begin(), order_.end(), random_);
        } while (pairs(order_) == previous);
        return order_;
    }

  private:
    static std::vector<std::pair<int, int>> pairs(const std::vector<int>& order) {
        std::vector<std::pair<int, int>> out;
        for (std::size_t p = 0; p < order.size(); ++p) {
            const int a = order[p], b = order[(p + 1) % order.size()];
            out.emplace_back(std::min(a, b), std::max(a, b));
        }
        std::sort(out.begin(), out.end());
        return out;
    }
    std::vector<int> order_;
    std::mt19937 random_{20261130};
};

std::string ring_text(const std::vector<int>& order) {
    std::string out;
    for (const int r : order) out += (out.empty() ? "" : "-") + std::to_string(r);
    return out;
}

/// Every rank's distinct message partners.
PartnerGraph partner_graph(const Options& options, int size) {
    PartnerGraph graph(size);
    for (int r = 0; r < size; ++r) {
        for (const Link& l : links_of(options, r, size)) {
            for (const int p : {l.to, l.from}) {
                if (p != MPI_PROC_NULL && p != r &&
                    std::find(graph[r].begin(), graph[r].end(), p) == graph[r].end()) {
                    graph[r].push_back(p);
                }
            }
        }
        std::sort(graph[r].begin(), graph[r].end());
    }
    return graph;
}

// A message: its iteration, the sender's stop proposal, with --redraw the sender's proposal of
// the next ring's first iteration, then the payload.
constexpr std::size_t kHeaderWords = 2;
constexpr std::size_t kRedrawHeaderWords = 3;
constexpr std::uint64_t kNoStop = std::numeric_limits<std::uint64_t>::max();

std::uint64_t payload_word(int sender, std::uint64_t iteration, std::size_t k) {
    return initial_word(static_cast<std::uint64_t>(sender), iteration) + k;
}

void fill_message(std::vector<std::uint64_t>& msg, std::size_t header, int sender, std::uint64_t it,
                  std::uint64_t stop, std::uint64_t switch_at) {
    msg[0] = it;
    msg[1] = stop;
    if (header == kRedrawHeaderWords) msg[2] = switch_at;
    for (std::size_t k = header; k < msg.size(); ++k) msg[k] = payload_word(sender, it, k);
}

std::size_t wrong_words(const std::vector<std::uint64_t>& msg, std::size_t header, int sender,
                        std::uint64_t it) {
    std::size_t wrong = msg[0] != it;
    for (std::size_t k = header; k < msg.size(); ++k)
        wrong += msg[k] != payload_word(sender, it, k);
    return wrong;
}

struct Outcome {
    std::uint64_t iterations = 0;
    std::uint64_t wrong = 0;
    std::uint64_t rings = 1;
};

/// Exchanges with the neighbours until the ranks agree to stop. By time, a rank whose deadline
/// passed at iteration k proposes to stop at k + size and piggybacks the proposal on its messages;
/// each rank forwards the smallest proposal it knows, which reaches every rank (diameter < size)
/// before that iteration, so all stop at the same iteration without any collective that would
/// add communication between ranks that are not partners. With --redraw the ranks agree the same
/// way on the iteration where the next ring begins, proposed by a rank whose ring has lasted
/// --redraw seconds; rank 0 prints each ring.
Outcome exchange(const Options& options, int rank, int size, const std::string& program) {
    std::vector<Link> links = links_of(options, rank, size);
    const bool redraw = options.redraw > 0;
    const std::size_t header = redraw ? kRedrawHeaderWords : kHeaderWords;
    const std::size_t words = header + options.bytes / sizeof(std::uint64_t);
    std::vector<std::vector<std::uint64_t>> out(links.size(), std::vector<std::uint64_t>(words));
    std::vector<std::vector<std::uint64_t>> in(links.size(), std::vector<std::uint64_t>(words));
    std::vector<MPI_Request> requests(2 * links.size());
    const auto start = Clock::now();
    const auto deadline = after_seconds(start, options.run.seconds);
    std::uint64_t stop = options.run.by_time() ? kNoStop : options.run.iterations;
    RingDraw draw(size);
    auto ring_ends = after_seconds(start, options.redraw);
    std::uint64_t switch_at = kNoStop;
    Outcome result;
    const auto print_ring = [&](std::uint64_t it) {
        if (rank == 0 && redraw)
            std::printf("%s: ring %llu from iteration %llu (%.2f s): %s\n", program.c_str(),
                        static_cast<unsigned long long>(result.rings),
                        static_cast<unsigned long long>(it), seconds_since(start),
                        ring_text(draw.order()).c_str());
    };
    print_ring(0);
    for (std::uint64_t it = 0; it < stop; ++it) {
        if (stop == kNoStop && (Clock::now() >= deadline || stop_requested()))
            stop = it + static_cast<std::uint64_t>(size);
        if (redraw && it == switch_at) {
            links = ring_links(rank, size, draw.next());
            ++result.rings;
            print_ring(it);
            switch_at = kNoStop;
            ring_ends = after_seconds(Clock::now(), options.redraw);
        }
        if (redraw && switch_at == kNoStop && Clock::now() >= ring_ends)
            switch_at = it + static_cast<std::uint64_t>(size);
        for (std::size_t l = 0; l < links.size(); ++l) {
            MPI_Irecv(in[l].data(), static_cast<int>(words), MPI_UINT64_T, links[l].from,
                      links[l].tag, MPI_COMM_WORLD, &requests[2 * l]);
            fill_message(out[l], header, rank, it, stop, switch_at);
            MPI_Isend(out[l].data(), static_cast<int>(words), MPI_UINT64_T, links[l].to,
                      links[l].tag, MPI_COMM_WORLD, &requests[2 * l + 1]);
        }
        MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
        for (std::size_t l = 0; l < links.size(); ++l) {
            if (links[l].from == MPI_PROC_NULL) continue;
            result.wrong += wrong_words(in[l], header, links[l].from, it);
            stop = std::min(stop, in[l][1]);
            if (redraw) switch_at = std::min(switch_at, in[l][2]);
        }
        result.iterations = it + 1;
    }
    return result;
}

/// Rank 0 writes the truth once every rank has written its tid to FILE.rank<r>. Files, not an MPI
/// collective: a collective would make every rank exchange messages with ranks that are not its
/// partners, all-to-all traffic at the very start that the truth file dates. The other ranks go on
/// at once; so the truth appears once every rank is past MPI_Init and about to send.
void publish_truth(const std::string& file, int rank, int size, const PartnerGraph& graph) {
    const auto rank_file = [&](int r) { return file + ".rank" + std::to_string(r); };
    {
        const std::string tmp = rank_file(rank) + ".tmp";
        std::FILE* out = std::fopen(tmp.c_str(), "w");
        if (out == nullptr) throw_errno("open " + tmp);
        const bool ok = std::fprintf(out, "%d\n", static_cast<int>(current_tid())) > 0;
        if (std::fclose(out) != 0 || !ok) throw_errno("write " + tmp);
        if (std::rename(tmp.c_str(), rank_file(rank).c_str()) != 0) throw_errno("rename " + tmp);
    }
    if (rank != 0) return;
    std::vector<pid_t> tids(static_cast<std::size_t>(size), 0);
    const auto give_up = after_seconds(Clock::now(), 120);
    for (int r = 0; r < size; ++r) {
        // Written by a rename, so a file that exists is whole.
        std::FILE* in = nullptr;
        while ((in = std::fopen(rank_file(r).c_str(), "r")) == nullptr) {
            if (Clock::now() >= give_up) {
                throw std::runtime_error("rank " + std::to_string(r) + " wrote no tid in 120 s");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        const bool ok = std::fscanf(in, "%d", &tids[r]) == 1;
        std::fclose(in);
        std::remove(rank_file(r).c_str());
        if (!ok) throw std::runtime_error("no tid in " + rank_file(r));
    }
    write_truth(file, tids, graph);
}

int run(const Options& options, const std::string& program) {
    MPI_Init(nullptr, nullptr);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    // The same on every rank, so every rank stops the same way.
    if (size < 2) {
        MPI_Finalize();
        throw UsageError("needs at least 2 ranks (run it under mpirun -np N)");
    }
    if (const std::string why = ring_order_error(options.ring_order, size); !why.empty()) {
        MPI_Finalize();
        throw UsageError(why);
    }
    if (options.redraw > 0 && size < 4) {
        MPI_Finalize();
        throw UsageError("--redraw needs at least 4 ranks (fewer make only one ring)");
    }
    int failed = 0;
    try {
        const PartnerGraph graph = partner_graph(options, size);
        const std::vector<int> cpus = options.start.resolve(graph);
        if (!cpus.empty()) pin_task(0, cpus[rank]);
        if (!options.truth.empty()) publish_truth(options.truth, rank, size, graph);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: error: rank %d: %s\n", program.c_str(), rank, e.what());
        failed = 1;
    }
    const Outcome outcome = exchange(options, rank, size, program);
    std::uint64_t local[3] = {outcome.wrong, static_cast<std::uint64_t>(failed),
                              outcome.iterations};
    std::uint64_t total[3] = {};
    MPI_Allreduce(local, total, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&local[2], &total[2], 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    const bool ok = total[0] == 0 && total[1] == 0 && total[2] == outcome.iterations;
    if (rank == 0) {
        const std::string rings =
            options.redraw > 0 ? " (" + std::to_string(outcome.rings) + " rings)" : "";
        std::printf(
            "%s: %s: %d ranks, %s%s, %zu-byte messages, %llu iterations, wrong words %llu\n",
            program.c_str(), ok ? "OK" : "FAILED", size, options.pattern.c_str(), rings.c_str(),
            options.bytes, static_cast<unsigned long long>(outcome.iterations),
            static_cast<unsigned long long>(total[0]));
    }
    MPI_Finalize();
    return ok ? kExitOk : kExitFailed;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"MPI ranks exchanging messages in a ring or 2-D halo (ground truth for cdsm).",
                 "cdsm-mpi-ring"};
    Options options;
    app.add_option("--pattern", options.pattern,
                   "Message partners: ring (left, right) or halo2d "
                   "(a non-periodic 2-D grid from MPI_Dims_create)")
        ->check(CLI::IsMember({"ring", "halo2d"}))
        ->capture_default_str();
    app.add_option("--ring-order", options.ring_order,
                   "With ring: the ranks in ring order, a permutation of 0..N-1 (e.g. "
                   "0,3,6,1,4,7,2,5: neighbours that Slurm's block and cyclic orders put on "
                   "different nodes); default 0,1,...,N-1")
        ->delimiter(',')
        ->expected(2, CLI::detail::expected_max_vector_size);
    app.add_option("--redraw", options.redraw,
                   "With ring: a new ring every S seconds, its order drawn at random (the same on "
                   "every rank), its pairs of neighbours never all the previous ring's; at least 4 "
                   "ranks; not with --ring-order or --truth")
        ->type_name("S")
        ->check(CLI::PositiveNumber);
    app.add_option("--bytes", options.bytes, "Payload bytes per message")
        ->check(CLI::Range(std::size_t{8}, std::size_t{1} << 28))
        ->capture_default_str();
    options.run.add_options(app);
    app.add_option("--truth", options.truth, "Rank 0 writes the ground truth to FILE")
        ->type_name("FILE");
    options.start.add_options(app);
    // Arguments are checked before MPI_Init: --help and usage errors need no MPI runtime.
    return run_workload(app, argc, argv, [&] {
        if (!options.ring_order.empty() && options.pattern != "ring")
            throw UsageError("--ring-order is for --pattern ring");
        if (options.redraw > 0 && options.pattern != "ring")
            throw UsageError("--redraw is for --pattern ring");
        if (options.redraw > 0 && !options.ring_order.empty())
            throw UsageError("--redraw draws the rings: not with --ring-order");
        if (options.redraw > 0 && !options.truth.empty())
            throw UsageError("--redraw has no one truth: not with --truth");
        return run(options, app.get_name());
    });
}
