// SPDX-License-Identifier: GPL-2.0
#include "pairs_team.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>

#include "data_pattern.hpp"
#include "pair_region.hpp"
#include "truth.hpp"

namespace cdsm::workloads {

void PairsOptions::add_options(CLI::App& app, bool with_work) {
    app.add_option("--threads", tasks, "Number of threads (even, >= 4)")
        ->check(CLI::Range(4, 4096))
        ->capture_default_str();
    app.add_option("--seed", seed, "Seed of the pairings")->capture_default_str();
    app.add_option("--pages", data_pages, "Data pages each pair shares")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 16))
        ->capture_default_str();
    run.add_options(app);
    app.add_option("--truth", truth, "Write the ground truth of the first pairing to FILE")
        ->type_name("FILE");
    auto* sw = app.add_option("--switch-after", switch_after,
                              "Switch to a second, disjoint pairing after S seconds")
                   ->type_name("S")
                   ->check(CLI::PositiveNumber);
    auto* on_signal =
        app.add_flag("--switch-on-signal", switch_on_signal,
                     "Switch to a second, disjoint pairing when the process gets SIGUSR2 (a "
                     "test's cue, sent once it has seen what it waited for in the first)")
            ->excludes(sw);
    app.add_option("--truth2", truth2,
                   "Write the ground truth of the second pairing to FILE (when it begins)")
        ->type_name("FILE");
    auto* pause =
        app.add_option("--pause-ms", pause_ms,
                       "Sleep MS ms after each sweep of the pair's data: tasks that are mostly "
                       "idle, so that many of them fit on few CPUs (default 0: never sleep)")
            ->type_name("MS")
            ->check(CLI::Range(0.0, 10000.0));
    start.add_options(app);
    if (!with_work) return;
    auto* w = app.add_flag("--work", work,
                           "Compute-and-share mode: each iteration computes on private data, then "
                           "sweeps the pair's data once; reports the median run time");
    w->excludes(sw);
    w->excludes(on_signal);
    w->excludes(pause);
    app.add_option("--private-kib", private_kib, "Work mode: private data per thread, KiB")
        ->check(CLI::Range(std::size_t{4}, std::size_t{1} << 22))
        ->needs(w)
        ->capture_default_str();
    app.add_option("--repeat", repeat, "Work mode: timed repetitions")
        ->check(CLI::Range(1u, 1000u))
        ->needs(w)
        ->capture_default_str();
    app.add_flag("--json", json, "Work mode: print the result as JSON")->needs(w);
}

void PairsOptions::validate() const {
    if (tasks % 2 != 0) throw UsageError("--threads must be even, not " + std::to_string(tasks));
    if (switch_after > 0 && !run.by_time()) {
        throw UsageError("--switch-after needs a run by time (--seconds), not --iterations");
    }
    if (switch_on_signal && !run.by_time()) {
        throw UsageError("--switch-on-signal needs a run by time (--seconds), not --iterations");
    }
    if (!truth2.empty() && !two_phases()) {
        throw UsageError("--truth2 needs a second pairing (--switch-after or --switch-on-signal)");
    }
    if (switch_after > 0 && switch_after >= run.seconds) {
        throw UsageError("--switch-after must be less than --seconds");
    }
    if (work && run.by_time())
        throw UsageError("--work needs --iterations (a fixed amount of work)");
}

PairsTeam::Phase PairsTeam::make_phase(std::vector<int> partner, std::size_t data_pages) {
    Phase phase{std::move(partner), {}};
    phase.regions.resize(phase.partner.size());
    for (std::size_t i = 0; i < phase.partner.size(); ++i) {
        // Mapped here, first touched by the partners themselves. Base pages: the regions of
        // several pairs are neighbours, and in one transparent huge page they would be one page,
        // re-armed as one and taking one hinting fault for all the pairs in it.
        if (static_cast<int>(i) < phase.partner[i]) {
            phase.regions[i] =
                Mapping::anonymous(PairRegion::bytes(data_pages), false).in_base_pages();
        }
    }
    return phase;
}

PairsTeam::PairsTeam(const PairsOptions& options)
    : options_(options), slots_(options.tasks, false) {
    if (options.two_phases()) {
        auto [first, second] = make_disjoint_pairings(options.tasks, options.seed);
        phase1_ = make_phase(std::move(first), options.data_pages);
        phase2_ = make_phase(std::move(second), options.data_pages);
    } else {
        phase1_ = make_phase(make_pairing(options.tasks, options.seed), options.data_pages);
    }
    start_cpus_ = options.start.resolve(pairing_graph(phase1_.partner));
    if (options.switch_on_signal) switch_on_sigusr2();
    // Mapped here so that no member can fail once the team runs; first touched by its owner.
    for (int i = 0; options.work && i < options.tasks; ++i) {
        private_data_.push_back(Mapping::anonymous(options.private_kib * 1024, false));
    }
}

void PairsTeam::record_failure(const std::string& what) {
    const std::lock_guard lock(failure_mutex_);
    if (failure_.empty()) failure_ = what;
}

void PairsTeam::write_truth_file(const Phase& phase, const std::string& file) {
    if (file.empty()) return;
    std::vector<pid_t> tids(options_.tasks);
    for (int i = 0; i < options_.tasks; ++i) tids[i] = slots_[i].tid;
    try {
        write_truth(file, tids, pairing_graph(phase.partner));
    } catch (const std::exception& e) {
        record_failure(e.what());
    }
}

void PairsTeam::exchange(const Phase& phase, int index, const StopRule& stop) {
    const int partner = phase.partner[index];
    const int lower = std::min(index, partner);
    const PairRegion region(phase.regions[lower].bytes());
    const int side = index == lower ? 0 : 1;
    const auto pause = std::chrono::microseconds(std::llround(options_.pause_ms * 1000));
    const std::uint64_t passes = region.sweep_until(side, stop, pause);
    region.publish(side, passes);
    PairTaskResult& slot = slots_[index];
    slot.passes += passes;
    if (side == 0) slot.wrong_words += region.verify();
}

void PairsTeam::work(const Phase& phase, int index, const std::function<void()>& barrier) {
    const int partner = phase.partner[index];
    const int lower = std::min(index, partner);
    const PairRegion region(phase.regions[lower].bytes());
    const int side = index == lower ? 0 : 1;
    const auto words = private_data_[index].words();
    const auto stream = static_cast<std::uint64_t>(index);
    fill_initial(words, stream, 0);
    constexpr unsigned kStepsPerIteration = 4;
    for (unsigned rep = 0; rep < options_.repeat; ++rep) {
        barrier();
        const auto t0 = Clock::now();
        const double cpu0 = index == 0 ? process_cpu_seconds() : 0;
        for (std::uint64_t it = 0; it < options_.run.iterations; ++it) {
            apply_steps(words, 0, kStepsPerIteration);
            region.sweep(side);
        }
        barrier();
        if (index == 0) {
            run_seconds_.push_back(seconds_since(t0));
            run_cpu_seconds_.push_back(process_cpu_seconds() - cpu0);
        }
    }
    const std::uint64_t iterations = options_.run.iterations * options_.repeat;
    region.publish(side, iterations);
    PairTaskResult& slot = slots_[index];
    slot.passes = iterations;
    slot.wrong_words = count_wrong(words, stream, 0, iterations * kStepsPerIteration);
    if (side == 0) slot.wrong_words += region.verify();
}

void PairsTeam::member(int index, const std::function<void()>& barrier) {
    try {
        if (!start_cpus_.empty()) pin_task(0, start_cpus_[index]);
    } catch (const std::exception& e) {
        record_failure(e.what());
    }
    slots_[index].tid = current_tid();
    barrier();
    if (index == 0) write_truth_file(phase1_, options_.truth);
    if (options_.work) {
        work(phase1_, index, barrier);
        return;
    }
    const auto start = Clock::now();
    const auto& run = options_.run;
    const auto end = after_seconds(start, run.seconds);
    if (!options_.two_phases()) {
        exchange(phase1_, index,
                 run.by_time() ? StopRule::at(end) : StopRule::after(run.iterations));
        return;
    }
    exchange(phase1_, index,
             options_.switch_on_signal ? StopRule::until_switch(end)
                                       : StopRule::at(after_seconds(start, options_.switch_after)));
    barrier();
    if (index == 0) write_truth_file(phase2_, options_.truth2);
    exchange(phase2_, index, StopRule::at(end));
}

int PairsTeam::finish(const std::string& program) {
    const PairTotals totals(slots_, options_.tasks);
    const std::size_t wrong = totals.wrong_words;
    const bool ok = wrong == 0 && failure_.empty();
    if (options_.work) {
        const auto sorted_copy = [](std::vector<double> v) {
            std::sort(v.begin(), v.end());
            return v;
        };
        const std::vector<double> sorted = sorted_copy(run_seconds_);
        const double median = sorted[sorted.size() / 2];
        const double median_cpu = sorted_copy(run_cpu_seconds_)[run_cpu_seconds_.size() / 2];
        if (options_.json) {
            const nlohmann::json out = {{"threads", options_.tasks},
                                        {"iterations", options_.run.iterations},
                                        {"private_kib", options_.private_kib},
                                        {"run_seconds", run_seconds_},
                                        {"median_seconds", median},
                                        {"cpu_seconds", run_cpu_seconds_},
                                        {"median_cpu_seconds", median_cpu},
                                        {"data_ok", wrong == 0}};
            std::printf("%s\n", out.dump().c_str());
        } else {
            std::printf(
                "%s: %s: work median %.6f s over %u runs (min %.6f, max %.6f), CPU median "
                "%.6f s, %d threads\n",
                program.c_str(), wrong == 0 ? "OK" : "FAILED", median, options_.repeat,
                sorted.front(), sorted.back(), median_cpu, options_.tasks);
        }
    } else {
        std::printf("%s: %s: %d threads, %s, %s\n", program.c_str(), wrong == 0 ? "OK" : "FAILED",
                    options_.tasks, options_.two_phases() ? "2 phases" : "1 phase",
                    totals.describe("thread").c_str());
    }
    if (!failure_.empty())
        std::fprintf(stderr, "%s: error: %s\n", program.c_str(), failure_.c_str());
    return ok ? kExitOk : kExitFailed;
}

}  // namespace cdsm::workloads
