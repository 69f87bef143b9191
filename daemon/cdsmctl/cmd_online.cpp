// SPDX-License-Identifier: GPL-2.0
// The subcommands that ask cdsmd (docs/protocol.md): one request each, the reply printed as a table
// or, with --json, as cdsmd sent it without its "ok" member (docs/cdsmctl-json.md).
#include <fmt/format.h>

#include <cdsm/cpu_list.hpp>
#include <charconv>

#include "commands.hpp"
#include "output.hpp"

namespace cdsm::cdsmctl {
namespace {

std::string cpu_list_of(const nlohmann::json& cpus) {
    std::vector<std::uint32_t> list;
    for (const auto& cpu : cpus)
        if (cpu.is_number_unsigned()) list.push_back(cpu.get<std::uint32_t>());
    return list.empty() ? "-" : cdsm::format_cpu_list(list);
}

std::string seconds_since(const nlohmann::json& start_ns, const nlohmann::json& end_ns) {
    if (!start_ns.is_number() || !end_ns.is_number()) return "-";
    return fmt::format("{:.1f}s", (end_ns.get<double>() - start_ns.get<double>()) / 1e9);
}

// "key value" lines for a JSON object, nested objects as "outer.inner".
void print_flat(const nlohmann::json& object, const std::string& prefix, Table& table) {
    for (const auto& [key, value] : object.items()) {
        if (value.is_object())
            print_flat(value, prefix + key + ".", table);
        else
            table.add({prefix + key, cell(value)});
    }
}

// "J.S" of a Slurm step's application, "-" for others.
std::string slurm_job(const nlohmann::json& app) {
    if (!app.contains("slurm") || !app["slurm"].is_object()) return "-";
    const auto& s = app["slurm"];
    return fmt::format(
        "{}.{}", cell(field(s, "job_id")),
        s.contains("step") && s["step"].is_string() ? s["step"].get<std::string>() : "?");
}

// The time model's prediction for the placement in use and the best one, "CURRENT/BEST" in
// seconds (3 significant digits); "-" from a cdsmd that sends none.
std::string model_times(const nlohmann::json& app) {
    const auto& current = field(app, "time_current_s");
    const auto& best = field(app, "time_best_s");
    if (!current.is_number() || !best.is_number()) return "-";
    return fmt::format("{:.3g}/{:.3g}", current.get<double>(), best.get<double>());
}

}  // namespace

nlohmann::json app_argument(const std::string& app) {
    std::uint64_t id = 0;
    const auto [end, ec] = std::from_chars(app.data(), app.data() + app.size(), id);
    if (ec == std::errc() && end == app.data() + app.size()) return id;
    return app;
}

int list_apps(CdsmdClient& client, bool json, std::ostream& out) {
    const auto reply = client.request({{"cmd", "list"}});
    if (json) {
        print_json(out, reply);
        return 0;
    }
    Table table({"ID", "NAME", "KIND", "MODE", "JOB", "UID", "PID/CGROUP", "TASKS", "EVENTS",
                 "COST", "BEST", "TIME_S", "MIGR", "INTERVAL", "STATE"});
    for (const auto& a : field(reply, "apps")) {
        const bool ended = field(a, "ended") == true;
        const bool by_cgroup = a.contains("cgroup") && a["cgroup"].is_string();
        table.add(
            {cell(field(a, "app_id")), cell(field(a, "name")), cell(field(a, "kind")),
             a.contains("mode") ? cell(a["mode"]) : "-", slurm_job(a), cell(field(a, "uid")),
             by_cgroup ? a["cgroup"].get<std::string>() : cell(field(a, "root_pid")),
             fmt::format("{}/{}", cell(field(a, "nr_live_tasks")), cell(field(a, "nr_tasks"))),
             cell(field(a, "events")), cell(field(a, "cost_current")), cell(field(a, "cost_best")),
             model_times(a), cell(field(a, "migrations")),
             field(a, "interval_ms").is_number() ? cell(field(a, "interval_ms")) + "ms" : "-",
             ended ? "ended after " + seconds_since(field(a, "start_ns"), field(a, "end_ns"))
                   : "running"});
    }
    table.print(out);
    return 0;
}

int show_tasks(CdsmdClient& client, const std::string& app, bool json, std::ostream& out) {
    const auto reply = client.request({{"cmd", "tasks"}, {"app", app_argument(app)}});
    if (json) {
        print_json(out, reply);
        return 0;
    }
    Table table(
        {"INDEX", "TID", "PID", "RANK", "COMM", "CPU", "AFFINITY", "PLACED", "MOVES", "STATE"});
    for (const auto& t : field(reply, "tasks")) {
        std::string state = field(t, "exited") == true ? "exited" : "running";
        if (field(t, "left_alone") == true)
            state += ", left alone" + (field(t, "reason").is_string()
                                           ? ": " + field(t, "reason").get<std::string>()
                                           : std::string());
        table.add({cell(field(t, "index")), cell(field(t, "tid")), cell(field(t, "pid")),
                   cell(field(t, "rank")), cell(field(t, "comm")), cell(field(t, "cpu")),
                   cpu_list_of(field(t, "affinity")), cell(field(t, "placed_pu")),
                   t.contains("moves") ? cell(field(t, "moves")) : std::string("-"), state});
    }
    table.print(out);
    return 0;
}

int show_app(CdsmdClient& client, const ShowOptions& options, std::ostream& out) {
    const auto app = app_argument(options.app);
    const auto reply = client.request({{"cmd", "matrix"}, {"app", app}, {"view", options.view}});
    std::string title = "application " + cell(field(reply, "app_id"));
    if (app.is_string()) title += " (" + options.app + ")";
    // An older cdsmd sends no "view": it knew the aged matrix only.
    title += reply.value("view", "aged") == "whole" ? ", whole run" : ", aged";
    PictureCaption caption;
    if (wants_picture(options)) {
        // The application's name, Slurm job and start, for the picture's title; a cdsmd that
        // cannot say (it released the application meanwhile) leaves them out.
        nlohmann::json info;
        try {
            info = client.request({{"cmd", "show"}, {"app", field(reply, "app_id")}});
        } catch (const cdsm::control::ProtocolError&) {
        }
        caption = cdsmd_caption(reply, info);
    }
    show_matrix(from_cdsmd_matrix(reply, parse_axis(options.by), title), options, out, caption);
    return 0;
}

int map_app(CdsmdClient& client, const MapOptions& options, std::ostream& out) {
    const auto reply = client.request({{"cmd", "map"},
                                       {"app", app_argument(options.app)},
                                       {"dry_run", options.dry_run},
                                       {"algorithm", options.algorithm}});
    if (options.json)
        print_json(out, reply);
    else
        print_mapping(reply, out);
    return 0;
}

int show_stats(CdsmdClient& client, bool json, std::ostream& out) {
    const auto reply = client.request({{"cmd", "stats"}});
    if (json) {
        print_json(out, reply);
        return 0;
    }
    Table table({"COUNTER", "VALUE"});
    print_flat(reply, "", table);
    table.print(out);
    return 0;
}

int show_topology(CdsmdClient& client, bool json, std::ostream& out) {
    const auto reply = client.request({{"cmd", "topology"}});
    if (json || !field(reply, "levels").is_array())
        print_json(out, reply);
    else
        print_topology(reply, out);
    return 0;
}

int track(CdsmdClient& client, const TrackOptions& options, std::ostream& out) {
    nlohmann::json request{{"cmd", "track"}};
    if (options.pid) request["pid"] = *options.pid;
    if (!options.cgroup.empty()) request["cgroup"] = options.cgroup;
    if (!options.name.empty()) request["name"] = options.name;
    if (!options.mode.empty()) request["mode"] = options.mode;
    const auto reply = client.request(request);
    if (options.json)
        print_json(out, reply);
    else
        out << "application " << cell(field(reply, "app_id")) << '\n';
    return 0;
}

int untrack(CdsmdClient& client, const std::string& app, std::ostream&) {
    client.request({{"cmd", "untrack"}, {"app", app_argument(app)}});
    return 0;
}

}  // namespace cdsm::cdsmctl
