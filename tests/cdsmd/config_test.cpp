// SPDX-License-Identifier: GPL-2.0
// cdsmd's TOML configuration: defaults, the documented example, and clear errors.
#include "config.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cdsm/error.hpp>
#include <filesystem>
#include <fstream>
#include <string>

namespace cdsm::cdsmd {
namespace {

std::string error_of(std::string_view text) {
    try {
        parse_config(text, "test.toml");
    } catch (const cdsm::Error& e) {
        return e.what();
    }
    return "no error";
}

TEST(Config, EmptyFileGivesTheDefaults) {
    const Config c = parse_config("", "test.toml");
    EXPECT_EQ(c.algorithm, "scotch");
    EXPECT_EQ(c.interval.min_ms, 50u);
    EXPECT_EQ(c.interval.max_ms, 2000u);
    EXPECT_EQ(c.interval.step_ms, 50u);
    EXPECT_DOUBLE_EQ(c.min_gain, 0.05);
    // libcdsm's one default (issue 28): a core per busy task, balanced over the packages.
    EXPECT_EQ(c.placement_rules, cdsm::PlacementRules{});
    EXPECT_EQ(cdsm::to_string(c.placement_rules), "smt=avoid spread=balanced");
    EXPECT_TRUE(c.rules.empty());
    EXPECT_EQ(c.kernel, (std::map<std::string, std::uint32_t>{{"age_period_ms", 1000}}));
    EXPECT_NE(std::find(c.launchers.begin(), c.launchers.end(), "slurmstepd"), c.launchers.end());
}

TEST(Config, TheShippedExampleParsesAndEqualsTheDefaults) {
    const Config c = load_config(CDSMD_EXAMPLE_CONFIG, true);
    const Config d;
    EXPECT_EQ(c.algorithm, d.algorithm);
    EXPECT_EQ(c.launchers, d.launchers);
    EXPECT_EQ(c.placement_rules, d.placement_rules);
    EXPECT_EQ(c.state_file, d.state_file);
    EXPECT_EQ(c.release_ended_after_ms, d.release_ended_after_ms);
    EXPECT_EQ(c.costs.machine, d.costs.machine);
    EXPECT_EQ(c.idle_cpu, d.idle_cpu);
    EXPECT_EQ(c.min_events, d.min_events);
    EXPECT_EQ(c.kernel, d.kernel);
    EXPECT_EQ(c.admin_group, d.admin_group);
    EXPECT_EQ(c.metrics.textfile_dir, d.metrics.textfile_dir);
    EXPECT_EQ(c.metrics.period_ms, d.metrics.period_ms);
}

TEST(Config, EverySectionIsRead) {
    const Config c = parse_config(R"(
[daemon]
socket = "/tmp/x.sock"
log_level = "debug"
admin_group = "root"
[mapping]
algorithm = "compact"
min_gain = 0.1
min_gain_sigma = 1.5
settle_ms = 250
settle_max_ms = 5000
threads_wait_ms = 0
interval_min_ms = 20
interval_max_ms = 500
idle_cpu = 0.25
launchers = ["mpirun"]
release_ended_after_ms = 0
[mapping.costs]
machine = 20
[kernel]
auto_threads = 4
rearm_rate_bp = 0
[[track]]
name = "jobs"
cgroup = "/system.slice/*/job_*"
[[track]]
comm = "lulesh*"
user = "0"
min_threads = 8
)",
                                  "test.toml");
    EXPECT_EQ(c.socket, "/tmp/x.sock");
    EXPECT_EQ(c.log_level, spdlog::level::debug);
    EXPECT_EQ(c.admin_group, "root");
    EXPECT_EQ(c.admin_gid, 0u);
    EXPECT_EQ(parse_config("[daemon]\nadmin_group = \"4711\"\n", "t").admin_gid, 4711u);
    EXPECT_EQ(parse_config("", "t").admin_gid, std::nullopt);
    EXPECT_EQ(c.algorithm, "compact");
    EXPECT_DOUBLE_EQ(c.min_gain_sigma, 1.5);
    EXPECT_EQ(c.settle_ms, 250u);
    EXPECT_EQ(c.settle_max_ms, 5000u);
    EXPECT_EQ(c.threads_wait_ms, 0u);
    EXPECT_EQ(parse_config("", "t").threads_wait_ms, 60000u);
    EXPECT_EQ(c.interval.min_ms, 20u);
    EXPECT_EQ(c.interval.max_ms, 500u);
    EXPECT_EQ(c.launchers, std::vector<std::string>{"mpirun"});
    EXPECT_EQ(c.release_ended_after_ms, 0u);
    EXPECT_EQ(c.costs.machine, 20u);
    EXPECT_EQ(c.kernel.at("auto_threads"), 4u);
    EXPECT_EQ(c.kernel.at("rearm_rate_bp"), 0u);     // an explicit 0 is kept
    EXPECT_EQ(c.kernel.at("age_period_ms"), 1000u);  // defaults not overridden stay
    ASSERT_EQ(c.rules.size(), 2u);
    EXPECT_TRUE(c.rules[0].cgroup_only());
    EXPECT_EQ(c.rules[1].uid, 0u);
    EXPECT_EQ(c.rules[1].min_threads, 8u);
    EXPECT_FALSE(c.rules[1].cgroup_only());
}

TEST(Config, ErrorsNameTheFileLineAndProblem) {
    EXPECT_EQ(error_of("[mapping]\nalgoritm = \"scotch\"\n"),
              "test.toml:2: unknown key mapping.algoritm");
    EXPECT_EQ(error_of("[daemon]\nsocket = 3\n"), "test.toml:2: daemon.socket must be a string");
    EXPECT_EQ(error_of("[mapping]\ninterval_min_ms = -5\n"),
              "test.toml:2: mapping.interval_min_ms must be a whole number from 0 to 4294967295");
    EXPECT_EQ(error_of("[kernel]\nblock_size = 8\n"), "test.toml:2: unknown key kernel.block_size");
    EXPECT_EQ(
        error_of("[[track]]\nname = \"x\"\n"),
        "test.toml:1: a [[track]] rule needs at least one of comm, user, cgroup, min_threads");
    EXPECT_EQ(error_of("[daemon]\nadmin_group = \"no-such-group-cdsm\"\n"),
              "daemon.admin_group 'no-such-group-cdsm': no such group");
    EXPECT_EQ(error_of("[[track]]\nuser = \"no-such-user-cdsm\"\n"),
              "test.toml:1: track.user: no user 'no-such-user-cdsm'");
    // A uid beyond uid_t is no user (it was cut to uid 0, or thrown as std::out_of_range
    // without file or line: tests/fuzz/fuzz_config); so is (uid_t)-1, "no uid" to the kernel.
    for (const char* uid : {"4294967296", "99999999999999999999", "4294967295"}) {
        EXPECT_EQ(error_of(fmt::format("[[track]]\nuser = \"{}\"\n", uid)),
                  fmt::format("test.toml:1: track.user: no user '{}'", uid));
    }
    EXPECT_EQ(
        error_of("[[track]]\ncgroup = \"job_*\"\n"),
        "test.toml:1: track.cgroup 'job_*' must start with '/' (relative to the cgroup2 root)");
    EXPECT_EQ(error_of("track = 3\n"), "test.toml:1: track must be written as [[track]] tables");
    EXPECT_NE(error_of("[mapping\n").find("test.toml:1: "), std::string::npos);
}

TEST(Config, TheTimeModelIsReadFromItsFile) {
    const auto path = std::filesystem::temp_directory_path() /
                      fmt::format("cdsmd-config-test-{}.json", ::getpid());
    {
        std::ofstream f(path);
        f << R"({"schema": "cdsm-time-model/1", "node": {"latency_us": 2.5, "rate_gbs": 3}})";
    }
    const Config c =
        parse_config(fmt::format("[mapping]\ntime_model = \"{}\"\n", path.string()), "t.toml");
    EXPECT_EQ(c.model.node.latency_us, 2.5);
    EXPECT_EQ(c.model.socket.latency_us, TimeModel{}.socket.latency_us);  // left out: default
    {
        std::ofstream f(path);
        f << R"({"node": {"latency_us": -1}})";
    }
    const std::string e = error_of(fmt::format("[mapping]\ntime_model = \"{}\"\n", path.string()));
    EXPECT_NE(e.find(path.string()), std::string::npos) << e;
    std::filesystem::remove(path);
    EXPECT_NE(error_of("[mapping]\ntime_model = \"/nonexistent/model.json\"\n")
                  .find("/nonexistent/model.json"),
              std::string::npos);
}

TEST(Config, ValuesOutOfRangeAreRefused) {
    EXPECT_NE(error_of("[mapping]\nalgorithm = \"magic\"\n").find("magic"), std::string::npos);
    EXPECT_EQ(error_of("[mapping]\nmin_gain = 1.5\n"),
              "test.toml: mapping.min_gain must be in [0, 1)");
    EXPECT_EQ(error_of("[mapping]\nmin_gain_sigma = -1\n"),
              "test.toml: mapping.min_gain_sigma must be in [0, 100]");
    EXPECT_EQ(error_of("[mapping]\nsettle_ms = 700000\n"),
              "test.toml: mapping.settle_ms and settle_max_ms must be at most 600000 (10 minutes)");
    EXPECT_EQ(error_of("[mapping]\nthreads_wait_ms = 600001\n"),
              "test.toml: mapping.threads_wait_ms must be at most 600000 (10 minutes)");
    EXPECT_EQ(error_of("[mapping]\nidle_cpu = 2\n"),
              "test.toml: mapping.idle_cpu must be in [0, 1] (a fraction of one CPU)");
    EXPECT_EQ(error_of("[mapping]\ninterval_min_ms = 3000\n"),
              "test.toml: mapping.interval_min_ms must be at least 1 and at most interval_max_ms");
    EXPECT_NE(error_of("[mapping.costs]\nmachine = 1\n").find("mapping.costs"), std::string::npos);
    EXPECT_NE(error_of("[daemon]\nlog_level = \"loud\"\n").find("loud"), std::string::npos);
}

TEST(Config, Metrics) {
    const Config off = parse_config("", "t");
    EXPECT_EQ(off.metrics.textfile_dir, "");  // off unless asked for
    EXPECT_EQ(off.metrics.period_ms, 15000u);
    const Config on = parse_config(
        "[metrics]\ntextfile_dir = \"/var/lib/prometheus/node-exporter\"\nperiod_ms = 5000\n", "t");
    EXPECT_EQ(on.metrics.textfile_dir, "/var/lib/prometheus/node-exporter");
    EXPECT_EQ(on.metrics.period_ms, 5000u);
    EXPECT_EQ(error_of("[metrics]\ntextfile_dir = \"node-exporter\"\n"),
              "test.toml: metrics.textfile_dir 'node-exporter' must be an absolute path (the node "
              "exporter's --collector.textfile.directory)");
    for (const char* period : {"999", "3600001", "0"}) {
        EXPECT_EQ(error_of(fmt::format("[metrics]\nperiod_ms = {}\n", period)),
                  "test.toml: metrics.period_ms must be from 1000 to 3600000 (1 s to 1 h)");
    }
    EXPECT_EQ(error_of("[metrics]\nperiod_ms = \"15s\"\n"),
              "test.toml:2: metrics.period_ms must be a whole number from 0 to 4294967295");
    EXPECT_EQ(error_of("[metrics]\ntextfile_dir = 1\n"),
              "test.toml:2: metrics.textfile_dir must be a string");
    EXPECT_EQ(error_of("[metrics]\ndirectory = \"/x\"\n"),
              "test.toml:2: unknown key metrics.directory");
    EXPECT_EQ(error_of("metrics = 1\n"), "test.toml:1: metrics must be a table");
}

TEST(Config, MissingFiles) {
    EXPECT_NO_THROW(load_config("/nonexistent/cdsmd.toml", false));
    EXPECT_THROW(load_config("/nonexistent/cdsmd.toml", true), cdsm::Error);
}

}  // namespace
}  // namespace cdsm::cdsmd
