// SPDX-License-Identifier: GPL-2.0
// cdsm-faultbench: page-fault microbenchmark. Threads map fresh anonymous memory, touch each page
// once (one minor fault per page), unmap it, and repeat; reports the median cost per fault.
// See README.md.
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "common/cli.hpp"
#include "common/memory.hpp"

using namespace cdsm::workloads;

namespace {

struct Options {
    int threads = 1;
    std::size_t pages = 16384;
    std::size_t chunk_pages = 256;
    RunLength run{.seconds = 10, .iterations = 5};
    bool json = false;
};

/// What one thread did in one repetition.
struct ThreadSample {
    std::uint64_t faults = 0;
    std::uint64_t pages = 0;
    double cpu_seconds = 0;  ///< the thread's own CPU time: preemption does not count
    std::uint64_t bad_pages = 0;
};

/// One repetition, all threads.
struct Repetition {
    std::uint64_t faults = 0;
    std::uint64_t pages = 0;
    double wall_seconds = 0;
    double cpu_seconds = 0;
    double faults_per_second() const { return static_cast<double>(faults) / wall_seconds; }
    double ns_per_fault() const { return cpu_seconds * 1e9 / static_cast<double>(faults); }
};

double thread_cpu_seconds() {
    timespec ts{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) throw_errno("clock_gettime");
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::uint64_t thread_minor_faults() {
    rusage usage{};
    if (getrusage(RUSAGE_THREAD, &usage) != 0) throw_errno("getrusage");
    return static_cast<std::uint64_t>(usage.ru_minflt);
}

/// Maps, touches and unmaps chunks until `pages` pages were touched or the deadline passed.
/// Each page is written once (one fault); its last word must still read zero (a fresh page).
ThreadSample touch_fresh_pages(const Options& options, const StopRule& deadline) {
    const std::size_t page = page_size();
    ThreadSample sample;
    const std::uint64_t faults0 = thread_minor_faults();
    const double cpu0 = thread_cpu_seconds();
    while (sample.pages < options.pages && !deadline.done(0)) {
        const std::size_t n = std::min(options.chunk_pages, options.pages - sample.pages);
        const Mapping chunk = Mapping::anonymous(n * page, false);
        // One fault per page: no transparent huge page to serve many pages with one fault.
        if (madvise(chunk.data(), chunk.size(), MADV_NOHUGEPAGE) != 0) throw_errno("madvise");
        for (std::size_t p = 0; p < n; ++p) {
            auto* word = reinterpret_cast<volatile std::uint64_t*>(chunk.data() + p * page);
            word[0] = p + 1;
            sample.bad_pages += word[page / sizeof(std::uint64_t) - 1] != 0 || word[0] != p + 1;
        }
        sample.pages += n;
    }
    sample.cpu_seconds = thread_cpu_seconds() - cpu0;
    sample.faults = thread_minor_faults() - faults0;
    return sample;
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

int run(const Options& options, const std::string& program) {
    const int threads = options.threads;
    const auto start = Clock::now();
    // Without --seconds there is no deadline inside a repetition.
    const StopRule deadline = options.run.by_time()
                                  ? StopRule::at(after_seconds(start, options.run.seconds))
                                  : StopRule::at(Clock::time_point::max());
    const StopRule enough =
        options.run.by_time() ? deadline : StopRule::after(options.run.iterations);
    std::vector<ThreadSample> samples(threads);
    std::vector<Repetition> reps;
    std::uint64_t bad_pages = 0;
    std::atomic<bool> go{false};
    std::barrier sync(threads);
    const auto body = [&](int t) {
        for (;;) {
            // Thread 0 decides for everybody, so that all take part in the same repetitions.
            if (t == 0) go = !enough.done(reps.size());
            sync.arrive_and_wait();
            if (!go) return;
            const auto t0 = Clock::now();
            samples[t] = touch_fresh_pages(options, deadline);
            sync.arrive_and_wait();
            if (t != 0) continue;
            Repetition rep;
            rep.wall_seconds = seconds_since(t0);
            for (const auto& s : samples) {
                rep.faults += s.faults;
                rep.pages += s.pages;
                rep.cpu_seconds += s.cpu_seconds;
                bad_pages += s.bad_pages;
            }
            if (rep.faults > 0) reps.push_back(rep);
        }
    };
    {
        std::vector<std::jthread> workers;
        for (int t = 1; t < threads; ++t) workers.emplace_back(body, t);
        body(0);
    }
    if (reps.empty()) throw std::runtime_error("no repetition completed");

    std::vector<double> rates, costs;
    std::uint64_t faults = 0, pages = 0;
    for (const auto& r : reps) {
        rates.push_back(r.faults_per_second());
        costs.push_back(r.ns_per_fault());
        faults += r.faults;
        pages += r.pages;
    }
    const double faults_per_page = static_cast<double>(faults) / static_cast<double>(pages);
    if (options.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& r : reps) {
            list.push_back({{"faults", r.faults},
                            {"pages", r.pages},
                            {"wall_seconds", r.wall_seconds},
                            {"faults_per_second", r.faults_per_second()},
                            {"ns_per_fault", r.ns_per_fault()}});
        }
        const nlohmann::json out = {{"threads", threads},
                                    {"pages_per_thread", options.pages},
                                    {"chunk_pages", options.chunk_pages},
                                    {"repetitions", list},
                                    {"median_faults_per_second", median(rates)},
                                    {"median_ns_per_fault", median(costs)},
                                    {"faults_per_page", faults_per_page},
                                    {"bad_pages", bad_pages}};
        std::printf("%s\n", out.dump().c_str());
    } else {
        std::printf(
            "%s: %s: %d threads, %zu repetitions: median %.0f faults/s, %.1f ns/fault "
            "(%.3f faults per page, %llu bad pages)\n",
            program.c_str(), bad_pages == 0 ? "OK" : "FAILED", threads, reps.size(), median(rates),
            median(costs), faults_per_page, static_cast<unsigned long long>(bad_pages));
    }
    return bad_pages == 0 ? kExitOk : kExitFailed;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Page-fault microbenchmark: touch fresh pages, report the cost per fault.",
                 "cdsm-faultbench"};
    Options options;
    app.add_option("--threads", options.threads, "Threads touching pages at the same time")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    app.add_option("--pages", options.pages, "Pages each thread touches per repetition")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30))
        ->capture_default_str();
    app.add_option("--chunk-pages", options.chunk_pages, "Pages per mmap/munmap")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))
        ->capture_default_str();
    options.run.add_options(app);
    app.get_option("--iterations")->description("Repetitions (default 5)");
    app.get_option("--seconds")
        ->description("Repeat until S seconds passed, instead of --iterations");
    app.add_flag("--json", options.json, "Print the result as JSON");
    return run_workload(app, argc, argv, [&] { return run(options, app.get_name()); });
}
