// SPDX-License-Identifier: GPL-2.0
// cdsm-checksum: proves that re-arming pages loses nothing. Fills private, shared and file-backed
// memory with a known pattern, transforms it in place for a while, then checks every word and
// that RSS did not change. See README.md.
#include <unistd.h>

#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/cli.hpp"
#include "common/data_pattern.hpp"
#include "common/memory.hpp"

using namespace cdsm::workloads;

namespace {

struct Options {
    std::size_t mib = 64;
    int threads = 4;
    std::vector<std::string> kinds{"private", "shared", "file"};
    std::string dir = "/tmp";
    RunLength run;
    bool json = false;
};

/// Memory use of this process in KiB, from /proc/self/status and /proc/self/smaps_rollup.
struct MemoryUsage {
    long rss = -1, anon = -1, file = -1, shmem = -1, pss = -1;
};

long field_kib(const std::string& path, const std::string& key) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) == 0) return std::strtol(line.c_str() + key.size(), nullptr, 10);
    }
    throw std::runtime_error("no '" + key + "' in " + path);
}

MemoryUsage memory_usage() {
    return {field_kib("/proc/self/status", "VmRSS:"), field_kib("/proc/self/status", "RssAnon:"),
            field_kib("/proc/self/status", "RssFile:"), field_kib("/proc/self/status", "RssShmem:"),
            field_kib("/proc/self/smaps_rollup", "Pss:")};
}

nlohmann::json to_json(const MemoryUsage& m) {
    return {{"rss_kib", m.rss},
            {"anon_kib", m.anon},
            {"file_kib", m.file},
            {"shmem_kib", m.shmem},
            {"pss_kib", m.pss}};
}

/// One kind of memory under test.
struct Region {
    std::string kind;
    Mapping map;
};

Region make_region(const std::string& kind, std::size_t bytes, const std::string& dir) {
    if (kind == "private") return {kind, Mapping::anonymous(bytes, false)};
    if (kind == "shared") return {kind, Mapping::anonymous(bytes, true)};
    // The file is unlinked at once: the mapping stays file-backed and nothing is left behind.
    std::string path = dir + "/cdsm-checksum-XXXXXX";
    const UniqueFd fd(mkstemp(path.data()));
    if (fd.get() < 0) throw_errno("cannot create a file in " + dir);
    if (unlink(path.c_str()) != 0) throw_errno("unlink " + path);
    if (ftruncate(fd.get(), static_cast<off_t>(round_up_to_pages(bytes))) != 0) {
        throw_errno("ftruncate " + path);
    }
    return {kind, Mapping::shared_file(fd.get(), bytes)};
}

/// A slice of a region: the unit a thread owns and transforms.
struct Chunk {
    std::span<std::uint64_t> words;
    std::uint64_t stream;  ///< which region: initial values differ between regions
    std::uint64_t first;   ///< index of the chunk's first word in its region
};

constexpr std::size_t kChunkBytes = 256 * 1024;

std::vector<Chunk> chunks_of(const std::vector<Region>& regions) {
    std::vector<Chunk> chunks;
    for (std::size_t r = 0; r < regions.size(); ++r) {
        const auto words = regions[r].map.words();
        constexpr std::size_t kChunkWords = kChunkBytes / sizeof(std::uint64_t);
        for (std::size_t first = 0; first < words.size(); first += kChunkWords) {
            chunks.push_back(
                {words.subspan(first, std::min(kChunkWords, words.size() - first)), r, first});
        }
    }
    return chunks;
}

bool within(long before, long after, long tolerance) {
    return after - before <= tolerance && before - after <= tolerance;
}

int run(const Options& options, const std::string& program) {
    for (const auto& kind : options.kinds) {
        if (kind != "private" && kind != "shared" && kind != "file") {
            throw UsageError("unknown --kinds entry '" + kind + "' (private, shared, file)");
        }
    }
    const std::size_t total = options.mib << 20;
    const std::size_t each = round_up_to_pages(total / options.kinds.size());
    std::vector<Region> regions;
    for (const auto& kind : options.kinds) regions.push_back(make_region(kind, each, options.dir));
    const std::vector<Chunk> chunks = chunks_of(regions);

    // Thread t owns chunks t, t + T, ...; all of a thread's chunks go through the same number of
    // rounds, one transformation step per round.
    const int threads = options.threads;
    std::vector<std::uint64_t> rounds(threads, 0);
    std::vector<std::size_t> wrong(threads, 0);
    MemoryUsage before, after;
    double seconds = 0;
    std::barrier sync(threads);
    const auto body = [&](int t) {
        for (std::size_t c = t; c < chunks.size(); c += threads) {
            fill_initial(chunks[c].words, chunks[c].stream, chunks[c].first);
        }
        sync.arrive_and_wait();
        if (t == 0) before = memory_usage();
        sync.arrive_and_wait();
        const auto start = Clock::now();
        const StopRule stop = options.run.by_time()
                                  ? StopRule::at(after_seconds(start, options.run.seconds))
                                  : StopRule::after(options.run.iterations);
        while (!stop.done(rounds[t])) {
            for (std::size_t c = t; c < chunks.size(); c += threads) {
                apply_steps(chunks[c].words, chunks[c].first, 1);
            }
            ++rounds[t];
        }
        sync.arrive_and_wait();
        if (t == 0) {
            seconds = seconds_since(start);
            after = memory_usage();
        }
        for (std::size_t c = t; c < chunks.size(); c += threads) {
            wrong[t] += count_wrong(chunks[c].words, chunks[c].stream, chunks[c].first, rounds[t]);
        }
    };
    {
        std::vector<std::jthread> workers;
        for (int t = 1; t < threads; ++t) workers.emplace_back(body, t);
        body(0);
    }

    std::size_t wrong_words = 0;
    for (const std::size_t w : wrong) wrong_words += w;
    // Page tables, stacks and the heap may move a little; the data itself must not.
    const long tolerance = std::max(2048L, static_cast<long>(total >> 10) / 100);
    const bool rss_ok =
        within(before.rss, after.rss, tolerance) && within(before.anon, after.anon, tolerance) &&
        within(before.file, after.file, tolerance) && within(before.shmem, after.shmem, tolerance);
    const bool ok = wrong_words == 0 && rss_ok;
    const auto [min_rounds, max_rounds] = std::minmax_element(rounds.begin(), rounds.end());
    if (options.json) {
        const nlohmann::json out = {{"ok", ok},
                                    {"bytes", each * regions.size()},
                                    {"kinds", options.kinds},
                                    {"threads", threads},
                                    {"seconds", seconds},
                                    {"passes_min", *min_rounds},
                                    {"passes_max", *max_rounds},
                                    {"wrong_words", wrong_words},
                                    {"rss_ok", rss_ok},
                                    {"before", to_json(before)},
                                    {"after", to_json(after)}};
        std::printf("%s\n", out.dump().c_str());
    } else {
        std::printf(
            "%s: %s: %zu MiB (%zu kinds), %d threads, %.2f s, passes %llu..%llu, wrong words %zu, "
            "RSS %ld -> %ld KiB (anon %ld -> %ld, file %ld -> %ld, shmem %ld -> %ld)%s, "
            "PSS %ld -> %ld KiB\n",
            program.c_str(), ok ? "OK" : "FAILED", (each * regions.size()) >> 20, regions.size(),
            threads, seconds, static_cast<unsigned long long>(*min_rounds),
            static_cast<unsigned long long>(*max_rounds), wrong_words, before.rss, after.rss,
            before.anon, after.anon, before.file, after.file, before.shmem, after.shmem,
            rss_ok ? "" : " CHANGED", before.pss, after.pss);
    }
    return ok ? kExitOk : kExitFailed;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Transforms memory in place and checks every word at the end (cdsm re-arming).",
                 "cdsm-checksum"};
    Options options;
    app.add_option("--mib", options.mib, "Memory under test in MiB, split between the kinds")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))
        ->capture_default_str();
    app.add_option("--threads", options.threads, "Worker threads")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    app.add_option("--kinds", options.kinds,
                   "Kinds of memory: private (anonymous), shared (anonymous), file (MAP_SHARED "
                   "file in --dir)")
        ->delimiter(',')
        ->type_name("LIST")
        ->capture_default_str();
    app.add_option("--dir", options.dir, "Directory of the file-backed mapping")
        ->check(CLI::ExistingDirectory)
        ->capture_default_str();
    options.run.add_options(app);
    app.add_flag("--json", options.json, "Print the result as JSON");
    return run_workload(app, argc, argv, [&] { return run(options, app.get_name()); });
}
