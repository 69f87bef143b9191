// SPDX-License-Identifier: GPL-2.0
// cdsmd's Prometheus metrics: the text format (checked by Prometheus's own promtool), label
// escaping, the atomic write, and a directory that cannot be written.
#include "metrics.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "atomic_file.hpp"

namespace cdsm::cdsmd {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// A directory of its own, removed at the end.
class TempDir {
  public:
    TempDir() {
        std::string t = (fs::temp_directory_path() / "cdsm-metrics-XXXXXX").string();
        if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp");
        path_ = t;
    }
    ~TempDir() {
        std::error_code ec;
        fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

  private:
    fs::path path_;
};

// What spdlog logs while it lives.
class LogCapture {
  public:
    LogCapture() : previous_(spdlog::default_logger()) {
        auto logger = std::make_shared<spdlog::logger>(
            "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_));
        logger->set_pattern("%l: %v");
        spdlog::set_default_logger(logger);
    }
    ~LogCapture() { spdlog::set_default_logger(previous_); }
    std::string text() const { return out_.str(); }

  private:
    std::ostringstream out_;
    std::shared_ptr<spdlog::logger> previous_;
};

// A node with a Slurm step's application, an application of nobody and names that need
// escaping.
MetricsSnapshot sample_snapshot() {
    MetricsSnapshot s;
    s.module.faults = 123456;
    s.module.comm_events = 789;
    s.module.rearm_armed = 55;
    s.module.dropped = 3;
    s.module.apps = 2;
    s.module.tasks = 9;
    s.module.kmem_bytes = 1 << 20;
    s.module.status = CDSM_STATUS_NUMA_BALANCING_NORMAL | CDSM_STATUS_REARM_AVAILABLE;
    s.applications = 2;
    s.mapping_passes = 40;
    s.migrations = 6;
    s.cpu_seconds = 1.25;
    s.resident_bytes = 8 << 20;
    s.start_time_s = 1795584000.5;
    s.version = "1.2.3";
    AppMetrics lmp;
    lmp.app_id = 7;
    lmp.name = "slurm-42.0";
    lmp.comm = "lmp";
    lmp.user = "alice";
    lmp.slurm = SlurmStep{42, "0"};
    lmp.events = 5000;
    lmp.tasks = 4;
    lmp.cost_current = 1200.5;
    lmp.cost_best = 1000;
    lmp.migrations = 6;
    lmp.passes = 30;
    lmp.last_mapping_s = 1795584100.25;
    lmp.interval_s = 0.15;
    AppMetrics odd;
    odd.app_id = 8;
    odd.name = "a \"quoted\" \\ name\nwith a newline";
    odd.comm = "bad\xff\xc0\x80utf8";
    odd.events = 1;
    odd.interval_s = 0.05;
    s.apps = {lmp, odd};
    return s;
}

TEST(Metrics, LabelValuesAreEscapedAndValidUtf8) {
    EXPECT_EQ(escape_label_value("plain"), "plain");
    EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    EXPECT_EQ(escape_label_value("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
              "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");  // é € 😀 kept
    const std::string fffd = "\xEF\xBF\xBD";
    EXPECT_EQ(escape_label_value("x\xffy"), "x" + fffd + "y");
    EXPECT_EQ(escape_label_value("\xc0\x80"), fffd + fffd);                        // overlong NUL
    EXPECT_EQ(escape_label_value("\xed\xa0\x80"), fffd + fffd + fffd);             // a surrogate
    EXPECT_EQ(escape_label_value("\xe2\x82"), fffd + fffd);                        // cut short
    EXPECT_EQ(escape_label_value("\xf4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // > U+10FFFF
}

TEST(Metrics, FormatHasEachFamilyOnceWithHelpTypeAndLabels) {
    const std::string text = format_metrics(sample_snapshot());
    // Lines that must be there, as Prometheus reads them.
    for (const char* line : {
             "# TYPE cdsm_module_faults_total counter\ncdsm_module_faults_total 123456\n",
             "\ncdsm_module_events_total 789\n",
             "\ncdsm_module_pages_rearmed_total 55\n",
             "\ncdsm_module_dropped_faults_total 3\n",
             "# TYPE cdsm_module_applications gauge\ncdsm_module_applications 2\n",
             "\ncdsm_module_memory_bytes 1048576\n",
             "\ncdsm_module_rearm_available 1\n",
             "\ncdsmd_build_info{version=\"1.2.3\"} 1\n",
             "\ncdsmd_applications 2\n",
             "\ncdsmd_mapping_passes_total 40\n",
             "\ncdsmd_migrations_total 6\n",
             "# TYPE cdsmd_process_cpu_seconds_total counter\ncdsmd_process_cpu_seconds_total "
             "1.25\n",
             "\ncdsmd_process_resident_memory_bytes 8388608\n",
             "\ncdsmd_process_start_time_seconds 1795584000.5\n",
             "\ncdsm_app_events_total{app=\"7\",name=\"slurm-42.0\",comm=\"lmp\",user=\"alice\","
             "job_id=\"42\",step=\"0\"} 5000\n",
             "\ncdsm_app_cost{app=\"7\",name=\"slurm-42.0\",comm=\"lmp\",user=\"alice\","
             "job_id=\"42\",step=\"0\"} 1200.5\n",
             "\ncdsm_app_cost_best{app=\"7\",name=\"slurm-42.0\",comm=\"lmp\",user=\"alice\","
             "job_id=\"42\",step=\"0\"} 1000\n",
             "\ncdsm_app_interval_seconds{app=\"7\",name=\"slurm-42.0\",comm=\"lmp\","
             "user=\"alice\",job_id=\"42\",step=\"0\"} 0.15\n",
             "\ncdsm_app_last_mapping_timestamp_seconds{app=\"7\",name=\"slurm-42.0\","
             "comm=\"lmp\",user=\"alice\",job_id=\"42\",step=\"0\"} 1795584100.25\n",
             // No owner, no step: no user, job_id or step label (an empty one is none).
             "\ncdsm_app_events_total{app=\"8\",name=\"a \\\"quoted\\\" \\\\ name\\nwith a "
             "newline\",comm=\"bad\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDutf8\"} 1\n",
         }) {
        EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << text;
    }
    // Never mapped: no last-mapping time for it.
    EXPECT_EQ(text.find("cdsm_app_last_mapping_timestamp_seconds{app=\"8\""), std::string::npos);
    // Each family: HELP, then TYPE, once; counters and only counters end in _total.
    std::istringstream lines(text);
    std::map<std::string, int> helps, types;
    std::string line, last_help;
    while (std::getline(lines, line)) {
        char name[128], type[16];
        if (std::sscanf(line.c_str(), "# HELP %127s", name) == 1) {
            ++helps[name];
            last_help = name;
        } else if (std::sscanf(line.c_str(), "# TYPE %127s %15s", name, type) == 2) {
            ++types[name];
            EXPECT_EQ(last_help, name) << "TYPE without its HELP just before";
            const bool total = std::string_view(name).ends_with("_total");
            EXPECT_EQ(total, std::string_view(type) == "counter") << name << " is a " << type;
        }
    }
    EXPECT_EQ(helps.size(), 30u);
    for (const auto& [name, n] : helps) EXPECT_EQ(n, 1) << name;
    EXPECT_EQ(types, helps);
}

// Prometheus's own checker reads what cdsmd writes (the node exporter and Prometheus parse it
// the same way) and finds no problem: syntax, escaping, HELP/TYPE, naming conventions.
TEST(Metrics, PromtoolChecksTheOutput) {
    ASSERT_TRUE(fs::exists(CDSM_PROMTOOL))
        << "promtool not found (" << CDSM_PROMTOOL
        << "): install Debian's prometheus (scripts/install-deps) and run cmake again";
    TempDir dir;
    for (const MetricsSnapshot& s : {sample_snapshot(), MetricsSnapshot{}}) {
        const fs::path file = dir.path() / "cdsm.prom";
        std::ofstream(file) << format_metrics(s);
        const std::string out = (dir.path() / "promtool.out").string();
        const int status = std::system(
            fmt::format("'{}' check metrics <'{}' >'{}' 2>&1", CDSM_PROMTOOL, file.string(), out)
                .c_str());
        EXPECT_EQ(status, 0) << "promtool check metrics:\n"
                             << read_all(out) << "\non:\n"
                             << read_all(file);
    }
}

TEST(Metrics, WritesAtomicallyReadableByOthersWhateverTheUmask) {
    TempDir dir;
    MetricsWriter writer({dir.path().string(), 1000});
    const fs::path file = dir.path() / "cdsm.prom";
    EXPECT_EQ(writer.path(), file);
    const mode_t umask = ::umask(077);
    const auto t0 = Clock::now();
    EXPECT_LE(writer.due(), t0);  // at once
    MetricsSnapshot first = sample_snapshot();
    writer.tick(t0, [&] { return first; });
    ::umask(umask);
    ASSERT_TRUE(fs::exists(file));
    EXPECT_EQ(read_all(file), format_metrics(first));
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0644u);  // the node exporter runs as its own user
    EXPECT_EQ(writer.due(), t0 + std::chrono::milliseconds(1000));

    // Not due: nothing is gathered.
    bool gathered = false;
    writer.tick(t0 + std::chrono::milliseconds(999), [&] {
        gathered = true;
        return first;
    });
    EXPECT_FALSE(gathered);

    // A reader that opened the file before the next write still reads the whole old file; the
    // next open reads the whole new one; no temporary file is left.
    std::ifstream old_reader(file);
    MetricsSnapshot second = first;
    second.apps.pop_back();
    writer.tick(t0 + std::chrono::milliseconds(1000), [&] { return second; });
    std::stringstream old_text;
    old_text << old_reader.rdbuf();
    EXPECT_EQ(old_text.str(), format_metrics(first));
    EXPECT_EQ(read_all(file), format_metrics(second));
    // The ended application (not in the snapshot) is gone from the file.
    EXPECT_EQ(read_all(file).find("app=\"8\""), std::string::npos);
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir.path())) names.push_back(e.path().filename());
    EXPECT_EQ(names, std::vector<std::string>{"cdsm.prom"});

    writer.remove();  // cdsmd stops
    EXPECT_FALSE(fs::exists(file));
}

TEST(Metrics, AnUnwritableDirectoryIsLoggedOnceAndRetried) {
    TempDir dir;
    const fs::path missing = dir.path() / "not-yet";
    LogCapture log;
    MetricsWriter writer({missing.string(), 2000});
    const auto t0 = Clock::now();
    writer.tick(t0, sample_snapshot);  // must not throw: cdsmd keeps running
    const std::string first = log.text();
    EXPECT_NE(first.find(fmt::format("warning: metrics: cannot write {}/cdsm.prom (tried again "
                                     "every 2000 ms): create a temporary file for {}/cdsm.prom: "
                                     "No such file or directory",
                                     missing.string(), missing.string())),
              std::string::npos)
        << first;
    EXPECT_EQ(writer.due(), t0 + std::chrono::milliseconds(2000));
    writer.tick(t0 + std::chrono::milliseconds(2000), sample_snapshot);
    EXPECT_EQ(log.text(), first) << "the same failure is logged once";

    fs::create_directory(missing);
    writer.tick(t0 + std::chrono::milliseconds(4000), sample_snapshot);
    EXPECT_TRUE(fs::exists(missing / "cdsm.prom"));
    EXPECT_NE(log.text().find(fmt::format("info: metrics: writing {}/cdsm.prom every 2000 ms",
                                          missing.string())),
              std::string::npos)
        << log.text();
}

TEST(Metrics, ReconfiguringMovesOrStopsTheFile) {
    TempDir a, b;
    MetricsWriter writer({a.path().string(), 1000});
    writer.tick(Clock::now(), sample_snapshot);
    ASSERT_TRUE(fs::exists(a.path() / "cdsm.prom"));
    writer.reconfigure({b.path().string(), 1000});
    EXPECT_FALSE(fs::exists(a.path() / "cdsm.prom"));  // not left to go stale
    EXPECT_LE(writer.due(), Clock::now());
    writer.tick(Clock::now(), sample_snapshot);
    EXPECT_TRUE(fs::exists(b.path() / "cdsm.prom"));
    writer.reconfigure({});
    EXPECT_FALSE(fs::exists(b.path() / "cdsm.prom"));
    EXPECT_EQ(writer.due(), Clock::time_point::max());  // off
    EXPECT_EQ(MetricsWriter().due(), Clock::time_point::max());
}

TEST(Metrics, GatherLeavesEndedApplicationsOut) {
    std::map<std::uint32_t, AppState> apps;
    AppState& live = apps[3];
    live.info.app_id = 3;
    live.info.uid = 0;
    live.info.events = 77;
    live.info.nr_live_tasks = 2;
    std::string("lmp").copy(live.info.comm, sizeof(live.info.comm) - 1);
    live.name = "lmp";
    live.cgroup = "/system.slice/slurmstepd.scope/job_9/step_batch/user";
    live.migrations = 4;
    AppState& by_pid = apps[6];  // tracked by pid inside a job step
    by_pid.info.app_id = 6;
    by_pid.task_cgroup = "/system.slice/slurmstepd.scope/job_10/step_0/user/task_0";
    AppState& ended = apps[4];
    ended.info.app_id = 4;
    ended.ended_at = Clock::now();
    AppState& flagged = apps[5];
    flagged.info.app_id = 5;
    flagged.info.flags = CDSM_APP_ENDED;
    ServiceCounters counters;
    counters.mappings = 12;
    cdsm_counters module{};
    module.faults = 99;
    const MetricsSnapshot s = gather_metrics(apps, counters, module);
    ASSERT_EQ(s.apps.size(), 2u);
    EXPECT_EQ(s.applications, 2u);
    EXPECT_EQ(s.apps[1].slurm, (SlurmStep{10, "0"}));
    const AppMetrics& a = s.apps[0];
    EXPECT_EQ(a.app_id, 3u);
    EXPECT_EQ(a.comm, "lmp");
    EXPECT_EQ(a.user, "root");
    EXPECT_EQ(a.slurm, (SlurmStep{9, "batch"}));
    EXPECT_EQ(a.events, 77u);
    EXPECT_EQ(a.tasks, 2u);
    EXPECT_EQ(a.migrations, 4u);
    EXPECT_FALSE(a.last_mapping_s);  // never mapped
    EXPECT_DOUBLE_EQ(a.interval_s, 0.05);
    EXPECT_EQ(s.module.faults, 99u);
    EXPECT_EQ(s.mapping_passes, 12u);
    EXPECT_GT(s.resident_bytes, 0u);
    EXPECT_GT(s.start_time_s, 1.7e9);
}

TEST(AtomicFile, NothingOthersMadeInTheDirectoryIsOpened) {
    // cdsm.prom.tmp was opened by its name, without O_NONBLOCK: a FIFO made there by an account
    // that may write the directory blocked cdsmd in open() for good. The write runs in a child
    // so that a blocked one fails the test instead of hanging it.
    const fs::path dir = fs::path(::testing::TempDir()) / fmt::format("atomic-{}", ::getpid());
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path file = dir / "cdsm.prom";
    ASSERT_EQ(::mkfifo((file.string() + ".tmp").c_str(), 0666), 0);
    fs::create_symlink("/nonexistent-target", file.string() + ".XXXXXX");
    const pid_t child = ::fork();
    if (child == 0) {
        try {
            write_file_atomically(file, "metrics\n", 0644);
        } catch (...) {
            ::_exit(1);
        }
        ::_exit(0);
    }
    int status = -1;
    for (int waited = 0; waited < 1000 && ::waitpid(child, &status, WNOHANG) == 0; ++waited)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (status == -1) {
        ::kill(child, SIGKILL);
        ::waitpid(child, &status, 0);
        FAIL() << "write_file_atomically blocked on the FIFO";
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(text, "metrics\n");
    EXPECT_EQ(fs::status(file).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                  fs::perms::others_read);
    EXPECT_TRUE(fs::is_fifo(file.string() + ".tmp"));
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
    EXPECT_EQ(entries, 3u);  // the file, the FIFO, the link: no temporary file left
    fs::remove_all(dir);
}

TEST(AtomicFile, ADirectoryOthersMayWriteIsNamed) {
    EXPECT_EQ(others_may_write("/"), std::nullopt);
    EXPECT_EQ(others_may_write("/nonexistent-directory"), std::nullopt);
    struct stat tmp {};
    if (::stat("/tmp", &tmp) == 0 && tmp.st_uid == 0 && (tmp.st_mode & S_IWOTH)) {
        ASSERT_TRUE(others_may_write("/tmp"));
        EXPECT_NE(others_may_write("/tmp")->find("every user may write it"), std::string::npos);
    }
    const fs::path mine = fs::path(::testing::TempDir()) / fmt::format("owned-{}", ::getpid());
    fs::create_directories(mine);
    if (::geteuid() != 0) {
        ASSERT_TRUE(others_may_write(mine));
        EXPECT_NE(others_may_write(mine)->find("belongs to uid"), std::string::npos);
    } else {
        ::chmod(mine.c_str(), 0757);
        EXPECT_TRUE(others_may_write(mine));
        ::chmod(mine.c_str(), 0755);
        EXPECT_FALSE(others_may_write(mine));
    }
    fs::remove_all(mine);
}

}  // namespace
}  // namespace cdsm::cdsmd
