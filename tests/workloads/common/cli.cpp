// SPDX-License-Identifier: GPL-2.0
#include "cli.hpp"

#include <cstdio>
#include <exception>
#include <sstream>

#include "system.hpp"

namespace cdsm::workloads {

void RunLength::add_options(CLI::App& app) {
    std::ostringstream default_seconds;
    default_seconds << seconds;
    // --seconds wins over a program's default number of iterations.
    auto* secs = app.add_option("--seconds", seconds,
                                "Run for S seconds" +
                                    (by_time() ? " (default " + default_seconds.str() + ")" : ""))
                     ->each([this](const std::string&) { iterations = 0; })
                     ->type_name("S")
                     ->check(CLI::PositiveNumber);
    auto* iters =
        app.add_option("--iterations", iterations,
                       "Run N passes per task instead of a time" +
                           (by_time() ? "" : " (default " + std::to_string(iterations) + ")"))
            ->type_name("N")
            ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
    secs->excludes(iters);
}

namespace {

int fail(const CLI::App& app, const char* what, int code) {
    std::fprintf(stderr, "%s: error: %s\n", app.get_name().c_str(), what);
    return code;
}

}  // namespace

int run_workload(CLI::App& app, int argc, char** argv, const std::function<int()>& run) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::fputs(app.help().c_str(), stdout);
        return kExitOk;
    } catch (const CLI::ParseError& e) {
        return fail(app, e.what(), kExitUsage);
    }
    try {
        stop_early_on_sigusr1();
        return run();
    } catch (const UsageError& e) {
        return fail(app, e.what(), kExitUsage);
    } catch (const std::exception& e) {
        return fail(app, e.what(), kExitFailed);
    }
}

}  // namespace cdsm::workloads
