// SPDX-License-Identifier: GPL-2.0
// cdsm-pairs-procs: N processes, process i shares data only with its partner in a seeded
// non-neighbour pairing, through one POSIX shared-memory segment per pair. See README.md.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/memory.hpp"
#include "common/pair_region.hpp"
#include "common/placement.hpp"
#include "common/processes.hpp"
#include "common/truth.hpp"

using namespace cdsm::workloads;

namespace {

struct Options {
    int tasks = 8;
    std::uint64_t seed = 1;
    std::size_t data_pages = 4;
    RunLength run;
    std::string truth;
    StartPlacement start;
};

/// A segment per pair, unlinked as soon as it exists: the processes reach it through the
/// inherited descriptor, and no name is left in /dev/shm whatever way the program ends.
UniqueFd make_segment(std::size_t bytes, int pair) {
    const std::string name = "/cdsm-pairs-" + std::to_string(getpid()) + "-" + std::to_string(pair);
    UniqueFd fd(shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (fd.get() < 0) throw_errno("shm_open " + name);
    const int unlinked = shm_unlink(name.c_str());
    if (unlinked != 0) throw_errno("shm_unlink " + name);
    if (ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) throw_errno("ftruncate " + name);
    return fd;
}

/// The body of process `index`. The higher-indexed partner verifies, so the first process (which
/// also waits for the others) never waits for a partner that may have died.
void run_task(int index, const std::vector<int>& partner, const std::vector<UniqueFd>& segments,
              const Options& options, const StopRule& stop, PairTaskResult& slot) {
    slot.tid = current_tid();
    const int lower = std::min(index, partner[index]);
    // At the start of a reservation `index` pages longer than the segment: mmap places new
    // mappings top-down, so each process sees the segment at a different virtual address, as
    // unrelated processes would.
    const std::size_t bytes = PairRegion::bytes(options.data_pages);
    const Mapping reservation = Mapping::anonymous(bytes + index * page_size(), false);
    if (mmap(reservation.data(), bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
             segments[lower].get(), 0) == MAP_FAILED) {
        throw_errno("mmap of the shared segment");
    }
    const PairRegion region(reservation.bytes().first(bytes));
    const int side = index == lower ? 1 : 0;
    slot.passes = region.sweep_until(side, stop);
    region.publish(side, slot.passes);
    if (side == 0) slot.wrong_words = region.verify();
}

int run(const Options& options, const std::string& program) {
    if (options.tasks % 2 != 0) throw UsageError("--procs must be even");
    const std::vector<int> partner = make_pairing(options.tasks, options.seed);
    const PartnerGraph graph = pairing_graph(partner);
    const std::vector<int> cpus = options.start.resolve(graph);
    std::vector<UniqueFd> segments(options.tasks);
    for (int i = 0; i < options.tasks; ++i) {
        if (i < partner[i]) segments[i] = make_segment(PairRegion::bytes(options.data_pages), i);
    }
    // Each process reports on its own page of a shared mapping.
    const PerTaskPages<PairTaskResult> slots(options.tasks, true);
    const auto start = Clock::now();
    const StopRule stop = options.run.by_time()
                              ? StopRule::at(after_seconds(start, options.run.seconds))
                              : StopRule::after(options.run.iterations);
    const ProcessTeam team(options.tasks, program,
                           [&](int i) { run_task(i, partner, segments, options, stop, slots[i]); });
    const std::span<const pid_t> tids = team.pids();
    int failures = 0;
    try {
        for (std::size_t i = 0; i < cpus.size(); ++i) pin_task(tids[i], cpus[i]);
        if (!options.truth.empty()) write_truth(options.truth, tids, graph);
        run_task(0, partner, segments, options, stop, slots[0]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: error: %s\n", program.c_str(), e.what());
        ++failures;
        team.stop();
    }
    // A process that died leaves its partner waiting in verify(): the team stops everybody then.
    failures += team.wait();
    const PairTotals totals(slots, options.tasks);
    const bool ok = failures == 0 && totals.wrong_words == 0;
    std::printf("%s: %s: %d processes, %s\n", program.c_str(), ok ? "OK" : "FAILED", options.tasks,
                totals.describe("process").c_str());
    return ok ? kExitOk : kExitFailed;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Processes that share POSIX shared memory in known pairs (ground truth for cdsm).",
                 "cdsm-pairs-procs"};
    Options options;
    app.add_option("--procs", options.tasks, "Number of processes (even, >= 4)")
        ->check(CLI::Range(4, 4096))
        ->capture_default_str();
    app.add_option("--seed", options.seed, "Seed of the pairing")->capture_default_str();
    app.add_option("--pages", options.data_pages, "Data pages each pair shares")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 16))
        ->capture_default_str();
    options.run.add_options(app);
    app.add_option("--truth", options.truth, "Write the ground truth to FILE")->type_name("FILE");
    options.start.add_options(app);
    return run_workload(app, argc, argv, [&] { return run(options, app.get_name()); });
}
