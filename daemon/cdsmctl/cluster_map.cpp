// SPDX-License-Identifier: GPL-2.0
#include "cluster_map.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "cdsm/cluster.hpp"
#include "cdsm/error.hpp"
#include "cdsm/matrix_io.hpp"
#include "cdsm/monitoring.hpp"
#include "commands.hpp"
#include "output.hpp"

namespace cdsm::cdsmctl {
namespace {

cdsm::RankTraffic load_traffic(const ClusterMapOptions& o) {
    if (!o.monitoring.empty())
        return cdsm::read_monitoring(o.monitoring,
                                     {.internal = !o.application_only, .one_sided = true});
    const cdsm::TaskMatrix bytes = load_matrix(o.matrix_file);
    if (o.messages_file.empty()) return cdsm::RankTraffic::from_matrices(bytes.matrix);
    const cdsm::TaskMatrix messages = load_matrix(o.messages_file);
    return cdsm::RankTraffic::from_matrices(bytes.matrix, &messages.matrix);
}

nlohmann::json figures_json(const cdsm::PlacementFigures& f, const cdsm::Cluster& cluster) {
    return {{"inter_node_bytes", f.inter_node_bytes},
            {"inter_node_messages", f.inter_node_messages},
            {"cost", f.cost},
            {"time_s", f.time_s},
            {"slowest_node", cluster.network().nodes().at(f.slowest_node)},
            {"slowest_node_bytes_out", f.slowest_node_bytes_out}};
}

}  // namespace

void add_cluster_map(CLI::App& app, ClusterMapOptions& o) {
    auto* cmd = app.add_subcommand(
        "cluster-map",
        "Offline: where an MPI job's ranks should run on its nodes next time, from its "
        "traffic (Open MPI's monitoring files or a saved matrix), the nodes' hierarchy and the "
        "network; writes a SLURM_HOSTFILE and an Open MPI rankfile");
    auto* monitoring = cmd->add_option(
        "--monitoring", o.monitoring,
        "Open MPI's monitoring files of the job: their directory, or the prefix given to "
        "--mca pml_monitoring_filename (files PREFIX.<rank>.prof)");
    auto* matrix = cmd->add_option(
        "--matrix", o.matrix_file,
        "Instead: bytes between each pair of ranks, a cdsm-matrix CSV or JSON file");
    monitoring->excludes(matrix);
    cmd->add_option("--messages", o.messages_file,
                    "With --matrix: messages between each pair of ranks (same format); without "
                    "it the time model counts no latencies")
        ->needs(matrix);
    cmd->add_flag("--application-only", o.application_only,
                  "With --monitoring: only the application's messages (E lines), not Open MPI's "
                  "internal ones (I lines: collectives)")
        ->needs(monitoring);
    cmd->add_option("--nodes", o.nodes,
                    "The job's nodes, a Slurm hostlist such as 'n[1-4]' (e.g. "
                    "$SLURM_JOB_NODELIST)")
        ->required();
    cmd->add_option("--node-topology", o.node_topology,
                    "Every node's hierarchy: an hwloc XML file (lstopo --of xml) or a synthetic "
                    "description such as \"pack:2 core:8 pu:2\"; one rank per core")
        ->required();
    auto* conf = cmd->add_option("--topology-conf", o.topology_conf,
                                 "Slurm's topology.conf for the network's switches (default: "
                                 "one switch above every node)");
    auto* addr = cmd->add_option(
        "--topology-addr", o.topology_addr,
        "Instead: the nodes' SLURM_TOPOLOGY_ADDR (e.g. s0.s2.n5), one a line, each optionally "
        "followed by its SLURM_TOPOLOGY_ADDR_PATTERN (e.g. from srun --ntasks-per-node=1 sh -c "
        "'echo $SLURM_TOPOLOGY_ADDR $SLURM_TOPOLOGY_ADDR_PATTERN')");
    addr->excludes(conf);
    cmd->add_option("--topology-addr-pattern", o.topology_addr_pattern,
                    "SLURM_TOPOLOGY_ADDR_PATTERN of the lines without one (default: every "
                    "component but the last is a switch)")
        ->needs(addr);
    cmd->add_option("--current", o.current,
                    "The placement to compare with (before): block, cyclic, or a SLURM_HOSTFILE")
        ->capture_default_str();
    cmd->add_option("--spread", o.spread,
                    "Within each node: balanced (its ranks shared among its packages in "
                    "proportion to their cores) or pack (partners gathered on as few packages "
                    "as communication wants); one rank per core either way")
        ->check(CLI::IsMember({"balanced", "pack"}))
        ->capture_default_str();
    cmd->add_option("--time-model", o.time_model,
                    std::string("Latencies, rates and network costs, a JSON file (default: ") +
                        std::string(cdsm::kDefaultTimeModelPath) +
                        " if present, else Blue Waters' figures; docs/cluster.md)");
    cmd->add_option("--hostfile", o.hostfile,
                    "Write the placement as a SLURM_HOSTFILE (line i: rank i's node) for "
                    "srun --distribution=arbitrary");
    cmd->add_option("--rankfile", o.rankfile,
                    "Write the placement as an Open MPI rankfile (rank N=HOST slot=S:C)");
    cmd->add_option("--save-matrix", o.save_matrix,
                    "Write the job's byte matrix (both directions of a pair added) as a "
                    "cdsm-matrix file (.csv or .json)");
    cmd->add_option("-f,--format", o.format, "Report on stdout: text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    cmd->footer(
        "\nExample: a run with Open MPI's monitoring, the placement, the next run:\n"
        "  mpirun --mca pml_monitoring_enable 2 --mca pml_monitoring_enable_output 3 --mca "
        "pml_monitoring_filename mon/prof ./app\n"
        "  cdsmctl cluster-map --monitoring mon --nodes 'n[1-4]' --node-topology node.xml "
        "--current cyclic --hostfile hosts\n"
        "  SLURM_HOSTFILE=hosts srun --distribution=arbitrary -n 64 ./app\n"
        "The model and its limits: docs/cluster.md.\n");
}

int cluster_map(const ClusterMapOptions& o, std::ostream& out) {
    if (o.monitoring.empty() == o.matrix_file.empty())
        throw UsageError("cluster-map: give --monitoring DIR or --matrix FILE");
    const cdsm::RankTraffic traffic = load_traffic(o);
    std::vector<std::string> nodes = cdsm::expand_hostlist(o.nodes);
    cdsm::Network network =
        !o.topology_conf.empty()
            ? cdsm::Network::from_topology_conf(read_file_text(o.topology_conf), o.topology_conf,
                                                std::move(nodes))
        : !o.topology_addr.empty()
            ? cdsm::Network::from_topology_addr(read_file_text(o.topology_addr), o.topology_addr,
                                                std::move(nodes), o.topology_addr_pattern)
            : cdsm::Network::flat(std::move(nodes));
    const cdsm::Cluster cluster(std::move(network), load_topology(o.node_topology),
                                load_time_model(o.time_model).value_or(cdsm::TimeModel{}));
    const std::size_t ranks = traffic.ranks();
    cdsm::ClusterPlacement current;
    if (o.current == "block")
        current = cdsm::block_placement(ranks, cluster);
    else if (o.current == "cyclic")
        current = cdsm::cyclic_placement(ranks, cluster);
    else
        current = cdsm::hostfile_placement(read_file_text(o.current), o.current, ranks, cluster);
    const cdsm::ClusterPlacement placement = cdsm::map_cluster(
        traffic, cluster, &current, {cdsm::SmtRule::kAvoid, cdsm::parse_spread_rule(o.spread)});
    const cdsm::PlacementFigures before = cdsm::evaluate(traffic, cluster, current);
    const cdsm::PlacementFigures after = cdsm::evaluate(traffic, cluster, placement);

    if (!o.hostfile.empty()) write_file_text(o.hostfile, cdsm::format_hostfile(cluster, placement));
    if (!o.rankfile.empty()) write_file_text(o.rankfile, cdsm::format_rankfile(cluster, placement));
    if (!o.save_matrix.empty()) cdsm::write_matrix_file(o.save_matrix, traffic.byte_matrix());

    if (o.format == "json") {
        nlohmann::json slots = nlohmann::json::array();
        for (const cdsm::RankSlot& s : placement)
            slots.push_back({{"node", cluster.network().nodes()[s.node]},
                             {"socket", cluster.socket(s.core)},
                             {"core", cluster.core_in_socket(s.core)},
                             {"os_cpu", cluster.node().pu(s.core).os_index}});
        print_json(out, {{"schema", "cdsm-cluster-map/1"},
                         {"ranks", ranks},
                         {"total_bytes", traffic.total_bytes()},
                         {"total_messages", traffic.total_messages()},
                         {"nodes", cluster.network().nodes()},
                         {"network", cluster.network().describe()},
                         {"node_topology", cluster.node().describe()},
                         {"cores_per_node", cluster.cores_per_node()},
                         {"time_model", cluster.model().to_json()},
                         {"current", o.current},
                         {"before", figures_json(before, cluster)},
                         {"after", figures_json(after, cluster)},
                         {"placement", slots}});
        return 0;
    }
    out << fmt::format("{} ranks, {} bytes in {} messages\n", ranks, traffic.total_bytes(),
                       traffic.total_messages());
    out << fmt::format("{} nodes of {} cores ({}); network: {}\n", cluster.network().node_count(),
                       cluster.cores_per_node(), cluster.node().describe(),
                       cluster.network().describe());
    out << fmt::format("{:<22} {:>18} {:>14} {:>16} {:>14}\n", "placement", "inter-node bytes",
                       "messages", "cost", "time (model)");
    const auto row = [&](const std::string& name, const cdsm::PlacementFigures& f) {
        out << fmt::format("{:<22} {:>18} {:>14} {:>16.0f} {:>12.6g} s\n", name, f.inter_node_bytes,
                           f.inter_node_messages, f.cost, f.time_s);
    };
    row("current (" + std::filesystem::path(o.current).filename().string() + ")", before);
    row("cdsm", after);
    if (!o.hostfile.empty()) out << "hostfile: " << o.hostfile << '\n';
    if (!o.rankfile.empty()) out << "rankfile: " << o.rankfile << '\n';
    return 0;
}

}  // namespace cdsm::cdsmctl
