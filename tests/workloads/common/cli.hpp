// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace cdsm::workloads {

/// Exit codes shared by every workload: 0 when the run and its own data checks passed.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  ///< a data check failed or a system call failed
inline constexpr int kExitUsage = 2;   ///< invalid arguments

/// An invalid argument combination found after parsing; reported as one line, exit 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// How long a workload runs: for a time, or for a number of iterations (passes) per task.
struct RunLength {
    double seconds = 2.0;
    std::uint64_t iterations = 0;  ///< 0: run for `seconds`; a program may default to a count

    /// Adds --seconds and --iterations (mutually exclusive) to `app`.
    void add_options(CLI::App& app);
    bool by_time() const { return iterations == 0; }
};

/// Parses the command line into the options bound to `app`, then calls `run`. Maps the outcome to
/// an exit code: --help prints the help (0); a parse error or UsageError prints one line
/// "PROGRAM: error: ..." (2); any other exception prints one line (1); else `run`'s result.
int run_workload(CLI::App& app, int argc, char** argv, const std::function<int()>& run);

}  // namespace cdsm::workloads
