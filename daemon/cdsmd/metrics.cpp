// SPDX-License-Identifier: GPL-2.0
#include "metrics.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cdsm/version.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>

#include "atomic_file.hpp"
#include "procfs.hpp"

namespace cdsm::cdsmd {

namespace {

// The length of the UTF-8 sequence that starts `s` if it is a valid one (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), else 0.
std::size_t utf8_length(std::string_view s) {
    const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    const auto cont = [&](std::size_t i) { return i < s.size() && (b(i) & 0xC0) == 0x80; };
    const unsigned char c = b(0);
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (!cont(1) || !cont(2)) return 0;
        if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
        if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogate
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (!cont(1) || !cont(2) || !cont(3)) return 0;
        if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
        if (c == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
        return 4;
    }
    return 0;
}

// HELP text: backslash and newline escaped (the format's rule for docstrings).
std::string escape_help(std::string_view text) {
    std::string out;
    for (const char c : text) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

// A sample value: integers as such, others in the shortest form that reads back the same.
std::string value_text(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    return fmt::format("{}", v);
}

using Labels = std::vector<std::pair<std::string_view, std::string>>;

// Writes the families in order, each with its HELP and TYPE once.
class Exposition {
  public:
    void family(std::string_view name, std::string_view type, std::string_view help) {
        name_ = name;
        out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escape_help(help), name, type);
    }
    void sample(double value, const Labels& labels = {}) { sample(value_text(value), labels); }
    void sample(std::uint64_t value, const Labels& labels = {}) {
        sample(std::to_string(value), labels);
    }
    std::string take() { return std::move(out_); }

  private:
    void sample(const std::string& value, const Labels& labels) {
        out_ += name_;
        if (!labels.empty()) {
            out_ += '{';
            for (std::size_t i = 0; i < labels.size(); ++i) {
                out_ += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first,
                                    escape_label_value(labels[i].second));
            }
            out_ += '}';
        }
        out_ += ' ' + value + '\n';
    }

    std::string out_;
    std::string_view name_;
};

// One application's identity: always app, name, comm; user unless it has no owner; job_id and
// step for a Slurm job step (a label with an empty value is no label in Prometheus: they are
// left out rather than written empty).
Labels app_labels(const AppMetrics& a) {
    Labels l{{"app", std::to_string(a.app_id)}, {"name", a.name}, {"comm", a.comm}};
    if (!a.user.empty()) l.emplace_back("user", a.user);
    if (a.slurm) {
        l.emplace_back("job_id", std::to_string(a.slurm->job_id));
        l.emplace_back("step", a.slurm->step);
    }
    return l;
}

void module_families(Exposition& e, const cdsm_counters& c) {
    struct Counter {
        const char* name;
        std::uint64_t value;
        const char* help;
    };
    const Counter counters[] = {
        {"cdsm_module_faults_total", c.faults, "Page faults cdsm.ko saw (handle_mm_fault calls)."},
        {"cdsm_module_tracked_faults_total", c.tracked_faults,
         "Page faults of tracked tasks that cdsm.ko recorded."},
        {"cdsm_module_events_total", c.comm_events,
         "Communication events (pairs of tasks of one application sharing a memory block) "
         "counted by cdsm.ko."},
        {"cdsm_module_pages_rearmed_total", c.rearm_armed,
         "Pages cdsm.ko re-armed so that they fault again (made PROT_NONE for a hinting fault)."},
        {"cdsm_module_hinting_faults_total", c.rearm_taken,
         "NUMA-hinting faults taken by tracked tasks (the kernel's own scanner's included)."},
        {"cdsm_module_dropped_faults_total", c.dropped,
         "Faults cdsm.ko did not record: its ring buffer was full, a probe was missed or the "
         "task was out of range."},
        {"cdsm_module_block_evictions_total", c.evictions,
         "Block table entries cdsm.ko replaced by another memory block."},
        {"cdsm_module_pages_migrated_total", c.migrated,
         "Hinting faults of tracked tasks after which the kernel had migrated the page."},
        {"cdsm_module_allocation_failures_total", c.alloc_failures,
         "Allocations in cdsm.ko that failed (and were survived)."},
        {"cdsm_module_netlink_events_lost_total", c.events_lost,
         "Netlink events cdsm.ko lost (queue full or no memory)."},
    };
    for (const Counter& k : counters) {
        e.family(k.name, "counter", k.help);
        e.sample(k.value);
    }
    e.family("cdsm_module_applications", "gauge", "Applications in cdsm.ko now.");
    e.sample(std::uint64_t(c.apps));
    e.family("cdsm_module_tasks", "gauge", "Tasks in cdsm.ko now (live or exited).");
    e.sample(std::uint64_t(c.tasks));
    e.family("cdsm_module_memory_bytes", "gauge", "Kernel memory cdsm.ko uses now.");
    e.sample(std::uint64_t(c.kmem_bytes));
    const bool rearm =
        (c.status & CDSM_STATUS_NUMA_BALANCING_NORMAL) && (c.status & CDSM_STATUS_REARM_AVAILABLE);
    e.family("cdsm_module_rearm_available", "gauge",
             "1 when cdsm.ko can re-arm pages (kernel.numa_balancing has bit 0 set), else 0: "
             "then it detects first-touch sharing only.");
    e.sample(std::uint64_t(rearm));
}

void daemon_families(Exposition& e, const MetricsSnapshot& s) {
    e.family("cdsmd_build_info", "gauge", "cdsmd's version, as a label; the value is 1.");
    e.sample(std::uint64_t(1), {{"version", s.version}});
    e.family("cdsmd_applications", "gauge", "Applications cdsmd follows now (not ended).");
    e.sample(s.applications);
    e.family("cdsmd_mapping_passes_total", "counter", "Mapping passes cdsmd made.");
    e.sample(s.mapping_passes);
    e.family("cdsmd_migrations_total", "counter", "Tasks cdsmd moved to another CPU.");
    e.sample(s.migrations);
    e.family("cdsmd_process_cpu_seconds_total", "counter",
             "CPU time cdsmd used, user and system, in seconds.");
    e.sample(s.cpu_seconds);
    e.family("cdsmd_process_resident_memory_bytes", "gauge", "cdsmd's resident memory now.");
    e.sample(s.resident_bytes);
    e.family("cdsmd_process_start_time_seconds", "gauge",
             "When cdsmd started, in seconds since the Unix epoch.");
    e.sample(s.start_time_s);
}

void app_families(Exposition& e, const std::vector<AppMetrics>& apps) {
    struct Family {
        const char* name;
        const char* type;
        const char* help;
        std::function<std::optional<double>(const AppMetrics&)> value;
    };
    const auto u64 = [](std::uint64_t v) { return std::optional<double>(double(v)); };
    const Family families[] = {
        {"cdsm_app_events_total", "counter",
         "Communication events counted between the application's tasks (before aging).",
         [&](const AppMetrics& a) { return u64(a.events); }},
        {"cdsm_app_pages_rearmed_total", "counter", "The application's pages re-armed.",
         [&](const AppMetrics& a) { return u64(a.pages_rearmed); }},
        {"cdsm_app_tasks", "gauge", "The application's live tasks.",
         [&](const AppMetrics& a) { return u64(a.tasks); }},
        {"cdsm_app_cost", "gauge",
         "Communication cost of the application's placement at its last pass (events times "
         "the cost of the level that joins each pair; the unit of mapping.costs).",
         [](const AppMetrics& a) { return std::optional(a.cost_current); }},
        {"cdsm_app_cost_best", "gauge",
         "Communication cost of the best placement cdsmd found at its last pass.",
         [](const AppMetrics& a) { return std::optional(a.cost_best); }},
        {"cdsm_app_migrations_total", "counter", "Tasks of the application cdsmd moved.",
         [&](const AppMetrics& a) { return u64(a.migrations); }},
        {"cdsm_app_mapping_passes_total", "counter", "Mapping passes over the application.",
         [&](const AppMetrics& a) { return u64(a.passes); }},
        {"cdsm_app_last_mapping_timestamp_seconds", "gauge",
         "When cdsmd last looked at the application (a mapping pass), in seconds since the Unix "
         "epoch.",
         [](const AppMetrics& a) { return a.last_mapping_s; }},
        {"cdsm_app_interval_seconds", "gauge",
         "The application's mapping interval now (adaptive), in seconds.",
         [](const AppMetrics& a) { return std::optional(a.interval_s); }},
    };
    for (const Family& f : families) {
        e.family(f.name, f.type, f.help);
        for (const AppMetrics& a : apps) {
            if (const auto v = f.value(a)) e.sample(*v, app_labels(a));
        }
    }
}

// The Unix time of a CLOCK_BOOTTIME instant (procfs::now_ns()).
double unix_time_of_boot_ns(std::uint64_t boot_ns) {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    return now - (double(procfs::now_ns()) - double(boot_ns)) / 1e9;
}

std::uint64_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    std::uint64_t size = 0, resident = 0;
    statm >> size >> resident;
    return resident * std::uint64_t(::sysconf(_SC_PAGESIZE));
}

}  // namespace

std::string escape_label_value(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (std::size_t i = 0; i < value.size();) {
        const std::size_t n = utf8_length(value.substr(i));
        if (n == 0) {
            out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
            ++i;
            continue;
        }
        const char c = value[i];
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out.append(value.substr(i, n));
        i += n;
    }
    return out;
}

std::string format_metrics(const MetricsSnapshot& snapshot) {
    Exposition e;
    module_families(e, snapshot.module);
    daemon_families(e, snapshot);
    app_families(e, snapshot.apps);
    return e.take();
}

MetricsSnapshot gather_metrics(const std::map<std::uint32_t, AppState>& apps,
                               const ServiceCounters& counters, const cdsm_counters& module) {
    MetricsSnapshot s;
    s.module = module;
    s.mapping_passes = counters.mappings;
    s.migrations = counters.migrations;
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    s.cpu_seconds = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                    double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    s.resident_bytes = resident_bytes();
    s.start_time_s =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch() -
                                      (Clock::now() - counters.started))
            .count();
    s.version = std::string(version());
    for (const auto& [id, app] : apps) {
        if (app.ended_at || (app.info.flags & CDSM_APP_ENDED)) continue;
        const cdsm_app_info& i = app.info;
        AppMetrics a;
        a.app_id = id;
        a.name = app.name;
        a.comm = std::string(i.comm, strnlen(i.comm, sizeof(i.comm)));
        if (i.uid != kNoOwner) a.user = user_name(i.uid);
        a.slurm = slurm_step(app);
        a.events = i.events;
        a.pages_rearmed = i.rearm_pages;
        a.tasks = i.nr_live_tasks;
        a.cost_current = app.cost_current;
        a.cost_best = app.cost_best;
        a.migrations = app.migrations;
        a.passes = app.passes;
        if (app.last_mapped_ns) a.last_mapping_s = unix_time_of_boot_ns(app.last_mapped_ns);
        a.interval_s = std::chrono::duration<double>(app.interval.current()).count();
        s.apps.push_back(std::move(a));
    }
    s.applications = s.apps.size();
    return s;
}

// ---- the writer -----------------------------------------------------------------------------

MetricsWriter::MetricsWriter(MetricsConfig config) {
    reconfigure(config);
}

std::filesystem::path MetricsWriter::path() const {
    return std::filesystem::path(config_.textfile_dir) / kMetricsFile;
}

void MetricsWriter::reconfigure(const MetricsConfig& config) {
    if (written_ && config.textfile_dir != config_.textfile_dir) remove();
    config_ = config;
    failure_.clear();
    due_ = config_.textfile_dir.empty() ? Clock::time_point::max() : Clock::time_point::min();
}

void MetricsWriter::tick(Clock::time_point now, const std::function<MetricsSnapshot()>& gather) {
    if (now < due_) return;
    due_ = now + std::chrono::milliseconds(config_.period_ms);
    try {
        // Readable by the node exporter (its own user) whatever cdsmd's umask.
        write_file_atomically(path(), format_metrics(gather()), 0644);
        if (!written_ || !failure_.empty()) {
            spdlog::info("metrics: writing {} every {} ms", path().string(), config_.period_ms);
            // The file is written safely there (atomic_file.hpp), but others may replace it.
            if (const auto why = others_may_write(config_.textfile_dir))
                spdlog::warn(
                    "metrics: other accounts may replace or remove {}: {} (make "
                    "metrics.textfile_dir root's alone)",
                    path().string(), *why);
        }
        written_ = true;
        failure_.clear();
    } catch (const std::exception& e) {
        if (failure_ != e.what())
            spdlog::warn("metrics: cannot write {} (tried again every {} ms): {}", path().string(),
                         config_.period_ms, e.what());
        failure_ = e.what();
    }
}

void MetricsWriter::remove() {
    if (!written_) return;
    std::error_code ec;
    std::filesystem::remove(path(), ec);
    written_ = false;
}

}  // namespace cdsm::cdsmd
