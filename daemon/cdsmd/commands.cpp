// SPDX-License-Identifier: GPL-2.0
// The control-socket commands of cdsmd (docs/protocol.md).
#include "commands.hpp"

#include <fmt/format.h>
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <cdsm/topology_json.hpp>
#include <cdsm/version.hpp>
#include <charconv>
#include <cstring>

#include "request.hpp"
#include "slurm_step.hpp"

namespace cdsm::cdsmd {

using control::Json;
using control::ProtocolError;

namespace {

constexpr int kProtocolVersion = 1;

double seconds(const timeval& tv) {
    return double(tv.tv_sec) + double(tv.tv_usec) / 1e6;
}

// {"job_id", "step", "user"} of the application's Slurm step (slurm_step.hpp), else null.
Json slurm_json(const AppState& app) {
    const auto step = slurm_step(app);
    if (!step) return nullptr;
    return {{"job_id", step->job_id},
            {"step", step->step},
            {"user", app.info.uid == kNoOwner ? Json(nullptr) : Json(user_name(app.info.uid))}};
}

}  // namespace

std::string user_name(uid_t uid) {
    passwd pw{}, *found = nullptr;
    std::vector<char> buf(4096);
    if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found) return found->pw_name;
    return std::to_string(uid);
}

AppState& Commands::find_app(const Json& request, const Peer& peer) {
    const Json& a = request["app"];  // a string or a whole number (validate_request)
    std::string text = a.is_string() ? a.get<std::string>() : a.dump();
    std::optional<std::uint32_t> id;
    if (a.is_number_unsigned()) id = a.get<std::uint32_t>();
    std::uint32_t n = 0;
    if (a.is_string() && std::from_chars(text.data(), text.data() + text.size(), n).ptr ==
                             text.data() + text.size()) {
        id = n;
    }
    for (auto& [app_id, app] : c_.apps) {
        const bool match = id ? app_id == *id : app.name == text;
        if (match && may_see(peer, app.info.uid)) return app;
    }
    // Applications a peer may not see are reported exactly like unknown ones.
    throw ProtocolError("ENOENT", fmt::format("no application {}", text));
}

Json Commands::app_json(const AppState& app) const {
    const cdsm_app_info& i = app.info;
    std::size_t placed = 0;
    for (const auto& [tid, t] : app.tasks) placed += placed_on(t).has_value();
    return {{"app_id", i.app_id},
            {"name", app.name},
            {"comm", std::string(i.comm, strnlen(i.comm, sizeof(i.comm)))},
            {"kind", kernel::track_kind_name(i.kind)},
            {"mode", mode_name(app.mode)},
            {"rules", to_string(app.rules.value_or(c_.config.placement_rules))},
            {"uid", i.uid == kNoOwner ? Json(nullptr) : Json(i.uid)},
            {"root_pid", i.root_pid},
            {"cgroup", app.cgroup.empty() ? Json(nullptr) : Json(app.cgroup)},
            {"slurm", slurm_json(app)},
            {"nr_tasks", i.nr_tasks},
            {"nr_live_tasks", i.nr_live_tasks},
            {"ended", (i.flags & CDSM_APP_ENDED) != 0 || app.ended_at.has_value()},
            {"untracked", (i.flags & CDSM_APP_UNTRACKED) != 0},
            {"start_ns", i.start_ns},
            {"end_ns", i.end_ns},
            {"events", i.events},
            {"cost_current", app.cost_current},
            {"cost_best", app.cost_best},
            {"time_current_s", app.time_current_s},
            {"time_best_s", app.time_best_s},
            {"migrations", app.migrations},
            {"placed_tasks", placed},
            {"opted_out", app.opted_out},
            {"interval_ms", app.interval.current().count()},
            {"last_mapped_ns", app.last_mapped_ns},
            {"passes", app.passes}};
}

Json Commands::tasks_json(AppState& app) {
    Json out = Json::array();
    for (const cdsm_task_info& t : c_.kernel.tasks(app.info.app_id)) {
        const bool exited = (t.flags & CDSM_TASK_EXITED) != 0;
        const auto stat = exited ? std::nullopt : c_.proc.task_stat(t.tgid, t.tid);
        const auto mask = exited ? std::nullopt : c_.proc.affinity(t.tid);
        if (!exited) check_environment(app, t.tgid, c_.proc, c_.config.launchers);
        const auto env = app.env_by_tgid.find(t.tgid);
        Json rank = nullptr;
        if (env != app.env_by_tgid.end() && env->second.facts.rank) rank = *env->second.facts.rank;
        const auto st = app.tasks.find(t.tid);
        Json cpu = nullptr;
        if (stat) {
            const int processor = stat->processor;
            cpu = processor;
            if (processor >= 0) app.last_cpu[t.tid] = static_cast<std::uint32_t>(processor);
        }
        const auto last = app.last_cpu.find(t.tid);
        Json j = {{"index", t.index},
                  {"tid", t.tid},
                  {"pid", t.tgid},
                  {"rank", rank},
                  {"comm", std::string(t.comm, strnlen(t.comm, sizeof(t.comm)))},
                  {"cpu", cpu},
                  {"last_cpu", last != app.last_cpu.end() ? Json(last->second) : Json(nullptr)},
                  {"affinity", mask ? Json(*mask) : Json::array()},
                  {"exited", exited || !stat},
                  {"placed_pu", nullptr},
                  {"moves", app.moves.count(t.tid) ? app.moves.at(t.tid) : 0u},
                  {"left_alone", false},
                  {"reason", nullptr}};
        if (st != app.tasks.end() && !j["exited"].get<bool>()) {
            const TaskState& s = st->second;
            if (const auto pu = placed_on(s)) j["placed_pu"] = *pu;
            j["left_alone"] = left_alone(s.role);
            if (s.role != TaskRole::kPlace) j["reason"] = to_string(s.role);
        } else if (j["exited"].get<bool>()) {
            j["reason"] = "exited";
        }
        out.push_back(std::move(j));
    }
    return out;
}

Json Commands::stats_json() const {
    const cdsm_counters c = c_.kernel.counters();
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    return {
        {"kernel",
         {{"status",
           {{"numa_balancing_normal", (c.status & CDSM_STATUS_NUMA_BALANCING_NORMAL) != 0},
            {"rearm_available", (c.status & CDSM_STATUS_REARM_AVAILABLE) != 0}}},
          {"faults", c.faults},
          {"tracked_faults", c.tracked_faults},
          {"comm_events", c.comm_events},
          {"rearm_armed", c.rearm_armed},
          {"rearm_taken", c.rearm_taken},
          {"dropped", c.dropped},
          {"evictions", c.evictions},
          {"apps", c.apps},
          {"tasks", c.tasks},
          {"kmem_bytes", c.kmem_bytes},
          {"alloc_failures", c.alloc_failures},
          {"events_lost", c.events_lost}}},
        {"daemon",
         {{"uptime_s", std::chrono::duration<double>(Clock::now() - c_.counters.started).count()},
          {"apps", c_.apps.size()},
          {"mappings", c_.counters.mappings},
          {"migrations", c_.counters.migrations},
          {"cpu_user_s", seconds(ru.ru_utime)},
          {"cpu_sys_s", seconds(ru.ru_stime)},
          {"max_rss_kib", ru.ru_maxrss},
          {"dry_run", c_.dry_run}}}};
}

Json Commands::topology_json() const {
    return cdsm::topology_json(c_.planner->machine(), c_.planner->distances());
}

Json Commands::track(const Json& request, const Peer& peer) {
    const std::string name = request.value("name", "");
    const AppMode mode = *parse_mode(request.value("mode", "map"));  // checked: validate_request
    // Rules asked for this application (checked: validate_request), the rest [mapping]'s.
    std::optional<PlacementRules> rules;
    if (request.contains("smt") || request.contains("spread")) {
        const PlacementRules site = c_.config.placement_rules;
        rules = PlacementRules{
            parse_smt_rule(request.value("smt", std::string(to_string(site.smt)))),
            parse_spread_rule(request.value("spread", std::string(to_string(site.spread))))};
    }
    std::uint32_t id = 0;
    std::string cgroup;
    if (request.contains("pid")) {
        const pid_t pid = request["pid"].get<pid_t>();
        id = c_.kernel.track_pid(pid);
        c_.untracked_pids.erase(pid);
    } else if (request.contains("cgroup")) {
        cgroup = request["cgroup"].get<std::string>();
        id = c_.kernel.track_cgroup(cgroup);
        c_.untracked_cgroups.erase(cgroup);
    } else {
        throw ProtocolError("EINVAL", "track needs \"pid\" or \"cgroup\"");
    }
    for (const cdsm_app_info& info : c_.kernel.list_apps()) {
        if (info.app_id != id) continue;
        AppState& app = c_.adopt(info, name);
        app.cgroup = cgroup;
        app.mode = mode;
        app.rules = rules;
    }
    c_.save_state();
    spdlog::info("control socket: uid {} tracked application {} ({}{}{})", peer.uid, id,
                 mode_name(mode), rules ? ", " : "", rules ? to_string(*rules) : "");
    return {{"app_id", id}};
}

Json Commands::app_command(const std::string& cmd, const Json& request, const Peer& peer) {
    AppState& app = find_app(request, peer);
    const std::uint32_t id = app.info.app_id;
    if (cmd == "untrack") {
        c_.kernel.untrack(id);
        // The [[track]] rules must not track it again at their next scan.
        if (app.info.kind == CDSM_TRACK_CGROUP && !app.cgroup.empty())
            c_.untracked_cgroups.insert(app.cgroup);
        if (app.info.root_pid > 0) c_.untracked_pids.insert(app.info.root_pid);
        c_.save_state();
    }
    if (cmd == "age") c_.kernel.age(id);
    if (cmd == "reset") c_.kernel.reset(id);
    if (cmd == "release") {
        c_.kernel.release(id);
        c_.forget(id);
    }
    spdlog::info("control socket: uid {}: {} application {}", peer.uid, cmd, id);
    return Json::object();
}

Json Commands::matrix_json(const Json& request, const Peer& peer) {
    AppState& app = find_app(request, peer);
    const bool sparse = request.value("sparse", false);
    // Refused before the module copies a matrix too large to send.
    const std::uint64_t dim = app.info.nr_tasks;
    if (!sparse) check_matrix_cells(dim * dim, false, app.info.app_id);
    const auto view = kernel::parse_matrix_view(request.value("view", "aged"));
    const auto m = c_.kernel.matrix(app.info.app_id, view);
    Json j = matrix_cells(m.matrix, sparse, app.info.app_id);
    j.update(Json{{"app_id", app.info.app_id},
                  {"view", kernel::to_string(view)},
                  {"dim", m.matrix.size()},
                  {"events", m.events},
                  {"snapshot_ns", m.snapshot_ns},
                  {"tasks", tasks_json(app)}});
    return j;
}

Json Commands::set_params(const Json& request) {
    const auto& names = kernel_param_names();
    for (const auto& [name, value] : request["params"].items()) {
        if (std::find(names.begin(), names.end(), name) == names.end()) {
            throw ProtocolError("EINVAL", fmt::format("unknown module parameter '{}'", name));
        }
        c_.config.kernel[name] = value.get<std::uint32_t>();
    }
    c_.apply_kernel_params();
    return Json::object();
}

Json Commands::map(const Json& request, const Peer& peer, bool dry_run) {
    AppState& app = find_app(request, peer);
    // The algorithm is one of mapper_names() (validate_request).
    const std::string algorithm = request.value("algorithm", "");
    if (peer.privileged) return c_.map(app, MapRequest{!dry_run, algorithm, true, false});
    // One request's pass is bounded too: 1024 tasks on 128 PUs take about 2 s (every baseline
    // included); larger applications are mapped by cdsmd's own passes ("show" has the last).
    if (app.info.nr_live_tasks > kMaxRequestTasks) {
        throw ProtocolError("E2BIG",
                            fmt::format("application {} has {} live tasks; a user's map request "
                                        "maps at most {} (cdsmd's own passes map it: see show)",
                                        app.info.app_id, app.info.nr_live_tasks, kMaxRequestTasks));
    }
    const auto start = WorkBudget::Clock::now();
    if (const auto wait = budget_.wait(peer.uid, start)) {
        throw ProtocolError(
            "EAGAIN",
            fmt::format("map requests of uid {} and other users have taken their share of "
                        "cdsmd's time; try again in {:.1f} s",
                        peer.uid, std::chrono::duration<double>(*wait).count()));
    }
    struct Spend {
        WorkBudget& budget;
        uid_t uid;
        WorkBudget::Clock::time_point start;
        ~Spend() {
            const auto end = WorkBudget::Clock::now();
            budget.spend(uid, end - start, end);
        }
    } spend{budget_, peer.uid, start};
    return c_.map(app, MapRequest{!dry_run, algorithm, true, false});
}

Json Commands::handle(const Json& request, const control::PeerCredentials& creds) {
    validate_request(request);
    const Peer peer = peer_rights(creds, c_.config.admin_gid);
    const std::string cmd = request.value("cmd", "");
    const bool dry_run = request.value("dry_run", false);
    if (is_control_request(cmd, dry_run) && !peer.privileged) {
        spdlog::info("control socket: uid {} (pid {}) may not '{}'", peer.uid, peer.pid, cmd);
        throw ProtocolError("EPERM", fmt::format("'{}' needs root{}", cmd,
                                                 c_.config.admin_group.empty()
                                                     ? std::string()
                                                     : " or group " + c_.config.admin_group));
    }
    if (cmd == "ping") {
        return {{"version", std::string(cdsm::version())},
                {"abi", c_.kernel.abi_version()},
                {"protocol", kProtocolVersion},
                {"dry_run", c_.dry_run}};
    }
    if (cmd == "list") {
        Json apps = Json::array();
        for (const auto& [id, app] : c_.apps) {
            if (may_see(peer, app.info.uid)) apps.push_back(app_json(app));
        }
        return {{"apps", apps}};
    }
    if (cmd == "show") {
        AppState& app = find_app(request, peer);
        Json j = app_json(app);
        j["last"] = app.last;
        j["history"] = Json(app.history);
        return j;
    }
    if (cmd == "tasks") {
        AppState& app = find_app(request, peer);
        return {{"app_id", app.info.app_id}, {"tasks", tasks_json(app)}};
    }
    if (cmd == "matrix") return matrix_json(request, peer);
    if (cmd == "track") return track(request, peer);
    if (cmd == "untrack" || cmd == "age" || cmd == "reset" || cmd == "release")
        return app_command(cmd, request, peer);
    if (cmd == "map") return map(request, peer, dry_run);
    if (cmd == "stats") return stats_json();
    if (cmd == "topology") return topology_json();
    if (cmd == "set") return set_params(request);
    if (cmd == "reload") {
        c_.reload_config();
        return Json::object();
    }
    throw ProtocolError("EINVAL", fmt::format("unknown command '{}'", cmd));
}

}  // namespace cdsm::cdsmd
