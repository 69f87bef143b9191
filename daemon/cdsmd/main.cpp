// SPDX-License-Identifier: GPL-2.0
// cdsmd: maps the applications cdsm.ko tracks onto the machine, periodically. See
// cdsmd.toml.example and docs/protocol.md.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cdsm/error.hpp>
#include <cdsm/topology.hpp>
#include <cdsm/version.hpp>
#include <cstdio>

#include "log_text.hpp"
#include "service.hpp"

namespace {

// Under systemd (JOURNAL_STREAM set) the journal stamps each line itself: print the level as a
// syslog prefix instead of our own time stamp.
void setup_logging() {
    auto logger = spdlog::stderr_logger_st("cdsmd");
    cdsm::cdsmd::set_log_format(*logger, std::getenv("JOURNAL_STREAM") != nullptr);
    spdlog::set_default_logger(logger);
}

// Detaches into the background; the parent exits once the child said it is ready (or died).
int daemonize(int& ready_fd) {
    int pipefd[2];
    if (::pipe(pipefd) < 0) return -1;
    const pid_t pid = ::fork();
    if (pid < 0) return -1;
    if (pid > 0) {
        ::close(pipefd[1]);
        char status = 1;
        if (::read(pipefd[0], &status, 1) != 1) status = 1;
        std::_Exit(status);
    }
    ::close(pipefd[0]);
    ::setsid();
    ready_fd = pipefd[1];
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    cdsm::Topology::skip_io_plugins();
    CLI::App app{
        "cdsmd: places the threads and processes that cdsm.ko sees communicating "
        "close to each other on the machine's hierarchy.",
        "cdsmd"};
    cdsm::cdsmd::Options options;
    std::string config_path(cdsm::cdsmd::kDefaultConfigPath);
    std::string log_level;
    bool foreground = false;
    app.add_option("-c,--config", config_path, "Configuration file (TOML)")->capture_default_str();
    app.add_flag("-f,--foreground", foreground,
                 "Stay in the foreground (as under systemd); otherwise detach once ready");
    app.add_flag("--once", options.once,
                 "Map every tracked application once, print each decision as a JSON line, exit");
    app.add_flag("-n,--dry-run", options.dry_run,
                 "Compute placements and report them, but never migrate, age or release");
    app.add_option("-s,--socket", options.socket,
                   "Control socket (default: daemon.socket, $CDSM_SOCKET, /run/cdsm/cdsmd.sock)");
    app.add_option("-l,--log-level", log_level,
                   "trace, debug, info, warning, error (overrides daemon.log_level)");
    app.set_version_flag(
        "-V,--version",
        [] {
            std::string report = cdsm::version_report("cdsmd");
            report.pop_back();  // CLI11 ends the line
            return report;
        },
        "Print cdsmd's version and the loaded cdsm.ko's, and exit");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // --help and --version exit 0; a bad command line 2, as cdsmctl's usage errors.
        return app.exit(e) == 0 ? 0 : 2;
    }
    options.config_explicit = app.count("--config") > 0;
    options.config_path = config_path;

    setup_logging();
    try {
        cdsm::cdsmd::Config config =
            cdsm::cdsmd::load_config(options.config_path, options.config_explicit);
        if (!log_level.empty()) {
            config.log_level = spdlog::level::from_str(log_level);
            if (config.log_level == spdlog::level::off && log_level != "off") {
                throw cdsm::Error("--log-level " + log_level, "unknown level");
            }
        }
        spdlog::set_level(config.log_level);
        int ready_fd = -1;
        if (!foreground && !options.once && daemonize(ready_fd) < 0) {
            throw std::runtime_error("cannot detach into the background");
        }
        cdsm::cdsmd::Service daemon(options, std::move(config));
        if (ready_fd >= 0) {
            daemon.on_ready([ready_fd] {
                const char ok = 0;
                (void)!::write(ready_fd, &ok, 1);
                ::close(ready_fd);
            });
        }
        return daemon.run();
    } catch (const std::exception& e) {
        spdlog::critical("{}", e.what());
        return 1;
    }
}
