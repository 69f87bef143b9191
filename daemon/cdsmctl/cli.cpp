// SPDX-License-Identifier: GPL-2.0
// The command line: subcommands, their options and their help, then dispatch.
#include "cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "calibrate.hpp"
#include "cdsm/error.hpp"
#include "cdsm/mapper.hpp"
#include "cdsm/topology_json.hpp"
#include "cdsm/version.hpp"
#include "client.hpp"
#include "cluster_map.hpp"
#include "commands.hpp"
#include "job_matrix.hpp"
#include "output.hpp"

namespace cdsm::cdsmctl {
namespace {

constexpr const char* kFooter = R"(
Offline, without a kernel or a daemon:
  cdsmctl map --matrix pairs.csv --topology "pack:2 core:2 pu:2"
  cdsmctl map --matrix m.json --topology machine.xml --json
  cdsmctl show --matrix m.csv --png m.png
  cdsmctl topology --topology machine.xml
  cdsmctl cluster-map --monitoring mon/ --nodes 'n[1-4]' --node-topology node.xml --hostfile h
  cdsmctl job-matrix --monitoring mon/ --node-matrix n1=n1.json --node-matrix n2=n2.json
Through cdsmd (socket: --socket, $CDSM_SOCKET, or /run/cdsm/cdsmd.sock):
  cdsmctl run --name lulesh -- mpirun -np 8 ./lulesh
  cdsmctl show lulesh --by rank
See cdsmctl(1); JSON outputs: /usr/share/doc/cdsm/cdsmctl-json.md.)";

struct Options {
    std::string socket{cdsm::control::kDefaultSocketPath};
    bool json = false;
    std::string app;
    ShowOptions show;
    MapOptions map;
    RunOptions run;
    TrackOptions track;
    std::string topology;
    ClusterMapOptions cluster;
    JobMatrixOptions job;
    CalibrateOptions calibrate;
};

void add_show(CLI::App& app, Options& o) {
    auto* show = app.add_subcommand("show", "Show an application's communication matrix");
    show->add_option("APP", o.show.app, "Application id or name (see 'cdsmctl list')");
    show->add_option("--matrix", o.show.matrix_file,
                     "Show a saved matrix (CSV or JSON, '-' for stdin) instead of asking cdsmd");
    show->add_option("-f,--format", o.show.format,
                     "Output on stdout: table, csv, json or heatmap (default heatmap, or nothing "
                     "when only pictures (--png, --svg, --pdf) are asked for)")
        ->check(CLI::IsMember({"table", "csv", "json", "heatmap"}));
    show->add_option("--by", o.show.by,
                     "Order and label tasks by matrix index, thread id or MPI rank")
        ->check(CLI::IsMember({"index", "tid", "rank"}))
        ->capture_default_str();
    show->add_option("--view", o.show.view,
                     "Which of cdsmd's matrices: whole (every event since tracking began) or "
                     "aged (what cdsmd maps by: a quarter less at every aging and migration)")
        ->check(CLI::IsMember({"whole", "aged"}))
        ->capture_default_str();
    show->add_option("--png", o.show.png, "Also write the heatmap as a PNG picture to FILE");
    show->add_option("--svg", o.show.svg, "Also write the heatmap as an SVG picture to FILE");
    show->add_option("--pdf", o.show.pdf, "Also write the heatmap as a PDF picture to FILE");
    show->add_option("--color,--colour", o.show.colour,
                     "Heatmap in 256 colours: auto (on a 256-colour terminal), always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}))
        ->capture_default_str();
    show->add_option("--charset", o.show.charset,
                     "Heatmap characters: auto (Unicode in a UTF-8 locale), utf8, ascii")
        ->check(CLI::IsMember({"auto", "utf8", "ascii"}))
        ->capture_default_str();
    show->add_option("--width", o.show.width,
                     "Columns the heatmap may use (default: the terminal's); larger matrices "
                     "are summed in blocks");
}

void add_map(CLI::App& app, Options& o) {
    auto* map = app.add_subcommand(
        "map",
        "Compute a placement: of a tracked application (through cdsmd), or offline of "
        "a saved matrix on a machine description");
    map->add_option("APP", o.map.app, "Application id or name");
    map->add_option("--matrix", o.map.matrix_file,
                    "Offline: the matrix to map (CSV or JSON, '-' for stdin)");
    map->add_option("--topology", o.map.topology,
                    "Offline: the machine, an hwloc XML file or a synthetic description such "
                    "as \"pack:2 core:4 pu:2\"");
    std::vector<std::string> algorithms(cdsm::mapper_names().begin(), cdsm::mapper_names().end());
    algorithms.insert(algorithms.end(), {"compact", "scatter"});  // old names, still accepted
    map->add_option("-a,--algorithm", o.map.algorithm, "Mapping algorithm")
        ->check(CLI::IsMember(algorithms))
        ->capture_default_str();
    map->add_option("--current", o.map.current,
                    "Offline: where the tasks run now, one OS CPU per task (e.g. 0,8,1,9 or "
                    "0-7); adds its cost and keeps tasks in place where the result allows");
    map->add_option("--seed", o.map.seed, "Seed of the random baseline")->capture_default_str();
    map->add_option("--smt", o.map.smt,
                    "Offline: avoid (a core per busy task while tasks <= cores, every core "
                    "before a second PU) or allow (SMT siblings shared if communication says so)")
        ->check(CLI::IsMember({"avoid", "allow"}))
        ->capture_default_str();
    map->add_option("--spread", o.map.spread,
                    "Offline: balanced (packages and NUMA nodes loaded in proportion to their "
                    "cores) or pack (as few packages as communication wants)")
        ->check(CLI::IsMember({"balanced", "pack"}))
        ->capture_default_str();
    map->add_option("--time-model", o.map.time_model,
                    std::string("Offline: the time model for the predicted time beside the cost "
                                "(default: ") +
                        std::string(cdsm::kDefaultTimeModelPath) +
                        " if present, as cdsmctl calibrate writes it; else none)");
    map->add_flag("-n,--dry-run", o.map.dry_run,
                  "Through cdsmd: compute and report, but do not migrate");
    map->add_flag("--json", o.map.json,
                  "Print JSON (stable fields: /usr/share/doc/cdsm/cdsmctl-json.md)");
}

void add_tracking(CLI::App& app, Options& o) {
    auto* run = app.add_subcommand(
        "run",
        "Start a command tracked by cdsmd and exit with its status (128+signal if it "
        "was killed)");
    run->add_option("--name", o.run.name, "Name of the application (default: the command's)");
    const auto modes = CLI::IsMember({"map", "detect"});
    const char* mode_help =
        "map: cdsmd places its tasks (default); detect: cdsmd plans and reports, never moves";
    run->add_option("--mode", o.run.mode, mode_help)->check(modes);
    run->add_flag("-v,--verbose", o.run.verbose, "Say which application id it got, on stderr");
    run->add_option("--mpi-monitor", o.run.mpi_monitor,
                    "Open MPI's monitoring of every rank pair (OMPI_MCA_pml_monitoring_* in the "
                    "command's environment) and, after the run, the job's matrix: auto (for "
                    "mpirun, mpiexec, orterun), on, off")
        ->check(CLI::IsMember({"auto", "on", "off"}))
        ->capture_default_str();
    run->add_option("--monitoring-dir", o.run.monitoring_dir,
                    "Where Open MPI writes its monitoring files (an empty directory; default: "
                    "a new one in $TMPDIR or /tmp, kept)");
    run->add_option("--job-matrix", o.run.job_matrix,
                    "Where to write the job's matrix (cdsm-matrix JSON; default: "
                    "job-matrix.json in the monitoring directory)");
    run->footer(
        "COMMAND [ARG...] follows run's options, after an optional '--'; its words are "
        "never read as cdsmctl's.\n"
        "With monitoring, the job's matrix merges Open MPI's counts of every rank pair with "
        "this node's shared-memory matrix (cdsmctl job-matrix shows it).\n");

    auto* track = app.add_subcommand("track", "Track a running process tree or a cgroup");
    auto* pid = track->add_option("--pid", o.track.pid, "Process id (its threads and children)");
    auto* cgroup =
        track->add_option("--cgroup", o.track.cgroup, "cgroup v2 path, e.g. a Slurm job's");
    pid->excludes(cgroup);
    track->add_option("--name", o.track.name, "Name of the application");
    track->add_option("--mode", o.track.mode, mode_help)->check(modes);
    track->add_flag("--json", o.track.json,
                    "Print JSON (stable fields: /usr/share/doc/cdsm/cdsmctl-json.md)");

    auto* untrack = app.add_subcommand("untrack", "Stop tracking an application");
    untrack->add_option("APP", o.app, "Application id or name")->required();
}

// Where the subcommand's name is in "cdsmctl [--socket P] [OPTION...] SUBCOMMAND ...", or
// args.size() if there is none.
std::size_t subcommand_index(const std::vector<const char*>& args) {
    std::size_t i = 1;
    while (i < args.size() && args[i][0] == '-')
        i += std::string_view(args[i]) == "--socket" ? 2 : 1;
    return std::min(i, args.size());
}

// Takes the command of "cdsmctl [--socket P] run [run's options] [--] COMMAND [ARG...]" out of
// the arguments, so that its words (which may look like options) never reach the parser.
std::vector<std::string> take_run_command(std::vector<const char*>& args) {
    std::size_t i = subcommand_index(args);
    if (i >= args.size() || std::string_view(args[i]) != "run") return {};
    for (++i; i < args.size(); ++i) {
        const std::string_view arg = args[i];
        if (arg == "--name" || arg == "--mode" || arg == "--mpi-monitor" ||
            arg == "--monitoring-dir" || arg == "--job-matrix") {
            ++i;
            continue;
        }
        if (arg == "--" || arg.empty() || arg[0] != '-') break;
    }
    if (i >= args.size()) return {};
    std::vector<std::string> command(
        args.begin() + static_cast<std::ptrdiff_t>(i) + (std::string_view(args[i]) == "--" ? 1 : 0),
        args.end());
    args.resize(i);
    return command;
}

CLI::App* subcommand(CLI::App& app) {
    const auto parsed = app.get_subcommands();
    return parsed.empty() ? nullptr : parsed.front();
}

int dispatch(CLI::App& app, Options& o) {
    const std::string name = subcommand(app)->get_name();
    std::ostream& out = std::cout;
    if (name == "cluster-map") return cluster_map(o.cluster, out);
    if (name == "job-matrix") return job_matrix(o.job, out);
    if (name == "calibrate") return calibrate(o.calibrate, out);
    CdsmdClient client(o.socket);
    if (name == "list") return list_apps(client, o.json, out);
    if (name == "tasks") return show_tasks(client, o.app, o.json, out);
    if (name == "stats") return show_stats(client, o.json, out);
    if (name == "untrack") return untrack(client, o.app, out);
    if (name == "run") return run_tracked(client, o.run);
    if (name == "topology") {
        if (o.topology.empty()) return show_topology(client, o.json, out);
        const cdsm::Topology topology = load_topology(o.topology);
        const auto json = cdsm::topology_json(topology, cdsm::Distances(topology));
        if (o.json)
            print_json(out, json);
        else
            print_topology(json, out);
        return 0;
    }
    if (name == "track") {
        if (!o.track.pid && o.track.cgroup.empty())
            throw UsageError("track: give --pid PID or --cgroup PATH");
        return track(client, o.track, out);
    }
    if (name == "show") {
        if (o.show.app.empty() == o.show.matrix_file.empty())
            throw UsageError("show: give either APP or --matrix FILE");
        if (!o.show.matrix_file.empty() && subcommand(app)->count("--view"))
            throw UsageError("show: --view is for an application of cdsmd, not --matrix");
        return o.show.matrix_file.empty() ? show_app(client, o.show, out) : show_file(o.show, out);
    }
    // map
    if (!o.map.matrix_file.empty()) {
        if (!o.map.app.empty()) throw UsageError("map: give either APP or --matrix FILE, not both");
        if (o.map.topology.empty())
            throw UsageError("map --matrix: --topology FILE.xml|SYNTHETIC is needed offline");
        if (o.map.dry_run) throw UsageError("map --matrix is always a dry run; drop --dry-run");
        return map_offline(o.map, out);
    }
    if (o.map.app.empty()) throw UsageError("map: give APP, or --matrix FILE --topology MACHINE");
    if (!o.map.topology.empty() || !o.map.current.empty() || !o.map.time_model.empty())
        throw UsageError(
            "map APP: --topology, --current and --time-model are for offline use with --matrix");
    return map_app(client, o.map, out);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "cdsmctl: query and control cdsmd, the communication-aware task mapper, and "
        "map saved communication matrices offline.",
        "cdsmctl"};
    app.require_subcommand(1);
    app.fallthrough();
    Options o;
    app.add_option("--socket", o.socket, "cdsmd's control socket")
        ->envname(cdsm::control::kSocketEnv)
        ->capture_default_str();
    app.set_version_flag("--version", "",
                         "Print cdsmctl's version and the loaded cdsm.ko's, and exit");

    std::vector<const char*> args(argv, argv + argc);
    o.run.command = take_run_command(args);
    // CLI11 builds strings, validators and callbacks for every option: building every
    // subcommand cost a tenth of a 32-task offline map. Only the subcommand named is built;
    // every one when none is named, for help, or when the name is no subcommand's.
    const std::size_t at = subcommand_index(args);
    const std::string_view named = at < args.size() ? args[at] : "";
    constexpr std::string_view kNames[] = {"list",     "tasks",       "show",       "map",
                                           "run",      "track",       "untrack",    "stats",
                                           "topology", "cluster-map", "job-matrix", "calibrate"};
    const bool all = std::find(std::begin(kNames), std::end(kNames), named) == std::end(kNames);
    const auto wanted = [&](std::initializer_list<std::string_view> names) {
        return all || std::find(names.begin(), names.end(), named) != names.end();
    };

    if (wanted({"list"})) {
        auto* list = app.add_subcommand("list", "List the applications cdsmd tracks");
        list->add_flag("--json", o.json,
                       "Print JSON (stable fields: /usr/share/doc/cdsm/cdsmctl-json.md)");
    }
    if (wanted({"tasks"})) {
        auto* tasks = app.add_subcommand(
            "tasks",
            "List an application's tasks: index, tid, pid, MPI rank, command, CPU, affinity");
        tasks->add_option("APP", o.app, "Application id or name")->required();
        tasks->add_flag("--json", o.json,
                        "Print JSON (stable fields: /usr/share/doc/cdsm/cdsmctl-json.md)");
    }
    if (wanted({"show"})) add_show(app, o);
    if (wanted({"map"})) add_map(app, o);
    if (wanted({"run", "track", "untrack"})) add_tracking(app, o);
    if (wanted({"stats"})) {
        auto* stats = app.add_subcommand("stats", "Show the kernel module's and cdsmd's counters");
        stats->add_flag("--json", o.json,
                        "Print JSON (stable fields: /usr/share/doc/cdsm/cdsmctl-json.md)");
    }
    if (wanted({"topology"})) {
        auto* topology = app.add_subcommand(
            "topology",
            "Show the machine's hierarchy as cdsmd sees it, or offline a described one");
        topology->add_option("--topology", o.topology,
                             "Offline: an hwloc XML file or a synthetic description");
        topology->add_flag("--json", o.json,
                           "Print JSON (stable fields: /usr/share/doc/cdsm/cdsmctl-json.md)");
    }
    if (wanted({"cluster-map"})) add_cluster_map(app, o.cluster);
    if (wanted({"job-matrix"})) add_job_matrix(app, o.job);
    if (wanted({"calibrate"})) add_calibrate(app, o.calibrate);
    app.footer(kFooter);  // after the subcommands, which would inherit it

    try {
        app.parse(static_cast<int>(args.size()), args.data());
    } catch (const CLI::CallForHelp&) {
        std::cout << app.help();
        return 0;
    } catch (const CLI::CallForAllHelp&) {
        std::cout << app.help("", CLI::AppFormatMode::All);
        return 0;
    } catch (const CLI::CallForVersion&) {
        std::cout << cdsm::version_report("cdsmctl");
        return 0;
    } catch (const CLI::ParseError& e) {
        std::string message = e.what();
        if (!subcommand(app) && argc > 1 && !app.remaining().empty())
            message = fmt::format("unknown subcommand '{}'", app.remaining().front());
        std::cerr << "cdsmctl: " << message << " (see cdsmctl --help)\n";
        return 2;
    }
    try {
        return dispatch(app, o);
    } catch (const UsageError& e) {
        std::cerr << "cdsmctl: " << e.what() << " (see cdsmctl " << subcommand(app)->get_name()
                  << " --help)\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "cdsmctl: " << e.what() << '\n';
        return 1;
    }
}

}  // namespace cdsm::cdsmctl
