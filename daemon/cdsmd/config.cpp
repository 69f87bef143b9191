// SPDX-License-Identifier: GPL-2.0
#include "config.hpp"

#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <toml++/toml.h>

#include <cdsm/error.hpp>
#include <cdsm/mapper.hpp>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

namespace cdsm::cdsmd {

namespace {

// Reads the keys of one TOML table, each at most once, and rejects the keys nobody read.
class TableReader {
  public:
    TableReader(const toml::table& table, std::string_view source, std::string prefix)
        : table_(table), source_(source), prefix_(std::move(prefix)) {}

    [[noreturn]] void fail(const toml::node& node, std::string_view problem) const {
        throw Error(fmt::format("{}:{}", source_, node.source().begin.line), problem);
    }

    template <typename T>
    void get(std::string_view key, T& out) {
        read_.insert(std::string(key));
        const toml::node* node = table_.get(key);
        if (!node) return;
        if constexpr (std::is_same_v<T, std::string>) {
            if (auto v = node->value_exact<std::string>()) {
                out = *v;
                return;
            }
            fail(*node, fmt::format("{}{} must be a string", prefix_, key));
        } else if constexpr (std::is_same_v<T, bool>) {
            if (auto v = node->value_exact<bool>()) {
                out = *v;
                return;
            }
            fail(*node, fmt::format("{}{} must be true or false", prefix_, key));
        } else if constexpr (std::is_same_v<T, double>) {
            if (auto v = node->value<double>()) {
                out = *v;
                return;
            }
            fail(*node, fmt::format("{}{} must be a number", prefix_, key));
        } else {
            const auto v = node->value_exact<std::int64_t>();
            if (!v || *v < 0 || *v > std::int64_t(UINT32_MAX)) {
                fail(*node, fmt::format("{}{} must be a whole number from 0 to {}", prefix_, key,
                                        UINT32_MAX));
            }
            out = static_cast<T>(*v);
        }
    }

    void get(std::string_view key, std::vector<std::string>& out) {
        read_.insert(std::string(key));
        const toml::node* node = table_.get(key);
        if (!node) return;
        const toml::array* array = node->as_array();
        if (!array) fail(*node, fmt::format("{}{} must be an array of strings", prefix_, key));
        out.clear();
        for (const toml::node& item : *array) {
            auto v = item.value_exact<std::string>();
            if (!v) fail(item, fmt::format("{}{} must be an array of strings", prefix_, key));
            out.push_back(*v);
        }
    }

    void mark_read(std::string_view key) { read_.insert(std::string(key)); }

    bool has(std::string_view key) const { return table_.get(key) != nullptr; }

    const toml::table* subtable(std::string_view key) {
        read_.insert(std::string(key));
        const toml::node* node = table_.get(key);
        if (!node) return nullptr;
        if (!node->is_table()) fail(*node, fmt::format("{}{} must be a table", prefix_, key));
        return node->as_table();
    }

    void reject_unknown() const {
        for (const auto& [key, node] : table_) {
            if (!read_.count(std::string(key.str()))) {
                fail(node, fmt::format("unknown key {}{}", prefix_, key.str()));
            }
        }
    }

  private:
    const toml::table& table_;
    std::string_view source_;
    std::string prefix_;
    std::set<std::string> read_;
};

std::optional<uid_t> resolve_user(const std::string& user) {
    if (!user.empty() && user.find_first_not_of("0123456789") == std::string::npos) {
        // A number beyond uid_t is no user, nor is (uid_t)-1 (the kernel's "no uid").
        uid_t uid = 0;
        const auto r = std::from_chars(user.data(), user.data() + user.size(), uid);
        if (r.ec != std::errc() || uid == static_cast<uid_t>(-1)) return std::nullopt;
        return uid;
    }
    if (const passwd* pw = ::getpwnam(user.c_str())) return pw->pw_uid;
    return std::nullopt;
}

std::optional<gid_t> resolve_group(const std::string& name) {
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) {
        return static_cast<gid_t>(std::stoul(name));
    }
    if (const group* gr = ::getgrnam(name.c_str())) return gr->gr_gid;
    return std::nullopt;
}

void read_daemon(TableReader& t, Config& c) {
    std::string level = spdlog::level::to_string_view(c.log_level).data();
    t.get("device", c.device);
    t.get("socket", c.socket);
    t.get("state_file", c.state_file);
    t.get("log_level", level);
    t.get("admin_group", c.admin_group);
    t.get("max_clients", c.max_clients);
    t.get("max_clients_per_user", c.max_clients_per_user);
    t.get("client_timeout_ms", c.client_timeout_ms);
    if (c.max_clients_per_user == 0 || c.client_timeout_ms == 0) {
        throw Error("daemon.max_clients_per_user and daemon.client_timeout_ms",
                    "must be at least 1");
    }
    c.log_level = spdlog::level::from_str(level);
    if (c.log_level == spdlog::level::off && level != "off") {
        throw Error("log_level '" + level + "'",
                    "is not one of trace, debug, info, warning, error, critical, off");
    }
    if (!c.admin_group.empty()) {
        c.admin_gid = resolve_group(c.admin_group);
        if (!c.admin_gid)
            throw Error("daemon.admin_group '" + c.admin_group + "'", "no such group");
    }
    t.reject_unknown();
}

void read_mapping(TableReader& t, Config& c, std::string_view source) {
    t.get("algorithm", c.algorithm);
    std::string smt(to_string(c.placement_rules.smt)), spread(to_string(c.placement_rules.spread));
    t.get("smt", smt);
    t.get("spread", spread);
    c.placement_rules = {parse_smt_rule(smt), parse_spread_rule(spread)};  // Error names a bad word
    t.get("min_gain", c.min_gain);
    t.get("min_gain_sigma", c.min_gain_sigma);
    t.get("min_events", c.min_events);
    t.get("interval_min_ms", c.interval.min_ms);
    t.get("interval_max_ms", c.interval.max_ms);
    t.get("interval_step_ms", c.interval.step_ms);
    t.get("idle_cpu", c.idle_cpu);
    t.get("settle_ms", c.settle_ms);
    t.get("settle_max_ms", c.settle_max_ms);
    t.get("threads_wait_ms", c.threads_wait_ms);
    t.get("launchers", c.launchers);
    t.get("age_after_migration", c.age_after_migration);
    t.get("release_ended_after_ms", c.release_ended_after_ms);
    t.get("scan_interval_ms", c.scan_interval_ms);
    t.get("time_model", c.time_model);
    if (const toml::table* costs = t.subtable("costs")) {
        TableReader ct(*costs, source, "mapping.costs.");
        ct.get("core", c.costs.core);
        ct.get("l2", c.costs.l2);
        ct.get("l3", c.costs.l3);
        ct.get("numa", c.costs.numa);
        ct.get("package", c.costs.package);
        ct.get("machine", c.costs.machine);
        ct.reject_unknown();
    }
    t.reject_unknown();
    const std::string where(source);
    make_mapper(c.algorithm);  // throws Error naming an unknown algorithm
    // The time model: an error in the file names the file (TimeModel::from_file).
    std::error_code ec;
    if (!c.time_model.empty())
        c.model = TimeModel::from_file(c.time_model);
    else if (std::filesystem::exists(kDefaultTimeModelPath, ec))
        c.model = TimeModel::from_file(kDefaultTimeModelPath);
    if (!(c.min_gain >= 0 && c.min_gain < 1)) {
        throw Error(where, "mapping.min_gain must be in [0, 1)");
    }
    if (!(c.min_gain_sigma >= 0 && c.min_gain_sigma <= 100)) {
        throw Error(where, "mapping.min_gain_sigma must be in [0, 100]");
    }
    if (!(c.idle_cpu >= 0 && c.idle_cpu <= 1)) {
        throw Error(where, "mapping.idle_cpu must be in [0, 1] (a fraction of one CPU)");
    }
    if (c.settle_ms > 600000 || c.settle_max_ms > 600000) {
        throw Error(where,
                    "mapping.settle_ms and settle_max_ms must be at most 600000 (10 minutes)");
    }
    if (c.threads_wait_ms > 600000) {
        throw Error(where, "mapping.threads_wait_ms must be at most 600000 (10 minutes)");
    }
    if (c.interval.min_ms == 0 || c.interval.min_ms > c.interval.max_ms) {
        throw Error(where,
                    "mapping.interval_min_ms must be at least 1 and at most interval_max_ms");
    }
    try {
        c.costs.validate();
    } catch (const Error& e) {
        throw Error(where, std::string("mapping.costs: ") + e.what());
    }
}

void read_kernel(TableReader& t, Config& c) {
    for (const std::string& name : kernel_param_names()) {
        std::uint32_t v = 0;
        t.get(name, v);
        if (t.has(name)) c.kernel[name] = v;
    }
    t.reject_unknown();
}

void read_metrics(TableReader& t, MetricsConfig& m, std::string_view source) {
    t.get("textfile_dir", m.textfile_dir);
    t.get("period_ms", m.period_ms);
    t.reject_unknown();
    const std::string where(source);
    if (!m.textfile_dir.empty() && m.textfile_dir.front() != '/') {
        throw Error(where, fmt::format("metrics.textfile_dir '{}' must be an absolute path (the "
                                       "node exporter's --collector.textfile.directory)",
                                       m.textfile_dir));
    }
    if (m.period_ms < MetricsConfig::kPeriodMinMs || m.period_ms > MetricsConfig::kPeriodMaxMs) {
        throw Error(where, fmt::format("metrics.period_ms must be from {} to {} (1 s to 1 h)",
                                       MetricsConfig::kPeriodMinMs, MetricsConfig::kPeriodMaxMs));
    }
}

}  // namespace

namespace {

TrackRule read_rule(TableReader& t, const toml::node& node) {
    TrackRule r;
    t.get("name", r.name);
    t.get("comm", r.comm);
    t.get("user", r.user);
    t.get("cgroup", r.cgroup);
    t.get("min_threads", r.min_threads);
    t.reject_unknown();
    if (!r.user.empty()) {
        r.uid = resolve_user(r.user);
        if (!r.uid) t.fail(node, fmt::format("track.user: no user '{}'", r.user));
    }
    if (!r.cgroup.empty() && r.cgroup.front() != '/') {
        t.fail(node, fmt::format("track.cgroup '{}' must start with '/' (relative to the cgroup2 "
                                 "root)",
                                 r.cgroup));
    }
    if (r.comm.empty() && !r.uid && r.cgroup.empty() && r.min_threads == 0) {
        t.fail(node, "a [[track]] rule needs at least one of comm, user, cgroup, min_threads");
    }
    return r;
}

}  // namespace

const std::vector<std::string>& kernel_param_names() {
    static const std::vector<std::string> names = {
        "block_shift",  "rearm_rate_bp", "rearm_period_ms", "max_tasks",
        "auto_threads", "retention_s",   "age_period_ms"};
    return names;
}

Config parse_config(std::string_view text, std::string_view source) {
    toml::table root;
    try {
        root = toml::parse(text, source);
    } catch (const toml::parse_error& e) {
        throw Error(fmt::format("{}:{}", source, e.source().begin.line), e.description());
    }
    Config c;
    TableReader top(root, source, "");
    if (const toml::table* t = top.subtable("daemon")) {
        TableReader r(*t, source, "daemon.");
        read_daemon(r, c);
    }
    if (const toml::table* t = top.subtable("mapping")) {
        TableReader r(*t, source, "mapping.");
        read_mapping(r, c, source);
    }
    if (const toml::table* t = top.subtable("kernel")) {
        TableReader r(*t, source, "kernel.");
        read_kernel(r, c);
    }
    if (const toml::table* t = top.subtable("metrics")) {
        TableReader r(*t, source, "metrics.");
        read_metrics(r, c.metrics, source);
    }
    // [[track]] is an array of tables.
    if (const toml::node* rules = root.get("track")) {
        const toml::array* array = rules->as_array();
        if (!array || !array->is_array_of_tables()) {
            top.fail(*rules, "track must be written as [[track]] tables");
        }
        for (const toml::node& rule : *array) {
            TableReader r(*rule.as_table(), source, "track.");
            c.rules.push_back(read_rule(r, rule));
        }
    }
    top.mark_read("track");
    top.reject_unknown();
    return c;
}

Config load_config(const std::filesystem::path& path, bool explicit_path) {
    std::ifstream in(path);
    if (!in) {
        if (!explicit_path && !std::filesystem::exists(path)) return Config{};
        throw Error(path.string(), "cannot read the configuration file");
    }
    std::stringstream text;
    text << in.rdbuf();
    return parse_config(text.str(), path.string());
}

}  // namespace cdsm::cdsmd
