// SPDX-License-Identifier: GPL-2.0
#include "job_matrix.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>

#include "cdsm/error.hpp"
#include "cdsm/matrix_io.hpp"
#include "cdsm/monitoring.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "terminal_heatmap.hpp"

namespace cdsm::cdsmctl {
namespace {

// "HOST=VALUE" split at its first '='.
std::pair<std::string, std::string> host_value(const std::string& arg, const char* option) {
    const auto eq = arg.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
        throw UsageError(fmt::format("{} {}: expected HOST=FILE", option, arg));
    return {arg.substr(0, eq), arg.substr(eq + 1)};
}

}  // namespace

std::optional<cdsm::RankTraffic> read_job_monitoring(const std::string& path, bool application_only,
                                                     std::vector<std::string>& missing) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec) && std::filesystem::is_empty(path, ec)) {
        missing.push_back(fmt::format(
            "Open MPI wrote no monitoring file into {}: the job did not use Open MPI, or its "
            "Open MPI has no monitoring components (static builds have none)",
            path));
        return std::nullopt;
    }
    return cdsm::read_monitoring(path, {.internal = !application_only, .one_sided = true});
}

void add_job_matrix(CLI::App& app, JobMatrixOptions& o) {
    auto* cmd = app.add_subcommand(
        "job-matrix",
        "Offline: a job's whole rank x rank matrix, from Open MPI's monitoring files and the "
        "nodes' shared-memory matrices of cdsm.ko (collected on each node), with each pair's "
        "level (core, l3, package, node, network)");
    cmd->add_option("--monitoring", o.monitoring,
                    "Open MPI's monitoring files of the job: their directory, or the prefix "
                    "given to --mca pml_monitoring_filename");
    cmd->add_flag("--application-only", o.application_only,
                  "Only the application's messages (E lines), not Open MPI's internal ones");
    cmd->add_option("--node-matrix", o.node_matrices,
                    "HOST=FILE: a node's matrix as cdsmd answers it (a Slurm report's "
                    "matrix.json, or cdsmctl show APP --format json); repeat per node");
    cmd->add_option("--node-topology", o.node_topologies,
                    "[HOST=]XML|SYNTHETIC: a node's hierarchy, to tell core, l3 and package "
                    "apart (without HOST=: every node's)");
    cmd->add_option("-f,--format", o.format,
                    "heatmap (with node boundaries and totals), json (cdsm-matrix/1 with the "
                    "job's members), csv (the matrix) or pairs (one CSV line per pair)")
        ->check(CLI::IsMember({"heatmap", "json", "csv", "pairs"}))
        ->capture_default_str();
    cmd->add_option("-o,--output", o.output, "Also write the JSON document to FILE");
    cmd->add_option("--color,--colour", o.colour, "Heatmap colours: auto, always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}))
        ->capture_default_str();
    cmd->add_option("--charset", o.charset, "Heatmap characters: auto, utf8, ascii")
        ->check(CLI::IsMember({"auto", "utf8", "ascii"}))
        ->capture_default_str();
    cmd->add_option("--width", o.width, "Columns the heatmap may use (default: the terminal's)");
    cmd->footer(
        "\nExample: monitoring files and the matrices of two nodes:\n"
        "  cdsmctl job-matrix --monitoring mon --node-matrix n1=n1/matrix.json "
        "--node-matrix n2=n2/matrix.json --node-topology node.xml\n");
}

void print_job_matrix(const cdsm::JobMatrix& job, const std::string& title,
                      const JobMatrixOptions& o, std::ostream& out) {
    const nlohmann::json json = cdsm::job_matrix_json(job, title);
    if (!o.output.empty()) write_file_text(o.output, json.dump() + '\n');
    if (o.format == "json") {
        print_json(out, json);
        return;
    }
    if (o.format == "csv") {
        out << cdsm::format_matrix_csv(job.primary());
        return;
    }
    if (o.format == "pairs") {
        out << cdsm::job_matrix_pairs_csv(job);
        return;
    }
    // Rows by rank, grouped by node when every rank's node is known and ranks of a node are
    // contiguous; otherwise in rank order, lines wherever the node changes.
    LabelledMatrix m;
    m.matrix = job.primary();
    m.axis = "rank";
    m.title = title;
    m.unit = job.bytes ? "bytes" : "events";
    for (std::size_t r = 0; r < job.ranks; ++r) m.labels.push_back(fmt::format("{}", r));
    if (std::any_of(job.node_of_rank.begin(), job.node_of_rank.end(),
                    [](const std::string& n) { return !n.empty(); }))
        m.groups = job.node_of_rank;
    out << fmt::format("{}: {} ranks, {}\n", title, job.ranks,
                       job.bytes ? "bytes of Open MPI's monitoring"
                                 : "cdsm.ko's shared-memory events (no monitoring)");
    out << render_terminal_heatmap(m, detect_style(STDOUT_FILENO, o.colour, o.charset, o.width));
    const auto& totals = json.at("totals");
    Table table({"NODE", "RANKS", "BYTES", "MESSAGES", "SHM EVENTS"});
    const auto row = [&](const std::string& name, const std::string& ranks,
                         const nlohmann::json& t) {
        table.add({name, ranks, job.bytes ? cell(t.at("bytes")) : "-",
                   job.bytes ? cell(t.at("messages")) : "-", cell(t.at("shared_memory_events"))});
    };
    for (const auto& n : totals.at("nodes")) row(n.at("node"), cell(n.at("ranks")), n);
    row("between nodes", "-", totals.at("inter_node"));
    if (job.missing.size() > 0 || totals.at("unknown").value("bytes", 0) > 0)
        row("unknown node", "-", totals.at("unknown"));
    table.print(out);
    for (const auto& line : job.missing) out << "missing: " << line << '\n';
}

int job_matrix(const JobMatrixOptions& o, std::ostream& out) {
    if (o.monitoring.empty() && o.node_matrices.empty())
        throw UsageError("job-matrix: give --monitoring DIR and/or --node-matrix HOST=FILE");
    std::vector<std::string> missing;
    std::optional<cdsm::RankTraffic> traffic;
    if (!o.monitoring.empty())
        traffic = read_job_monitoring(o.monitoring, o.application_only, missing);

    std::map<std::string, std::string> topology_of;  // "" for every node
    for (const auto& arg : o.node_topologies) {
        const auto eq = arg.find('=');
        // A synthetic description has no '='; neither has a file name, mostly.
        if (eq == std::string::npos)
            topology_of[""] = arg;
        else
            topology_of[arg.substr(0, eq)] = arg.substr(eq + 1);
    }
    std::vector<cdsm::NodeMatrix> nodes;
    std::map<std::string, cdsm::Topology> loaded;
    for (const auto& arg : o.node_matrices) {
        auto [host, file] = host_value(arg, "--node-matrix");
        nlohmann::json reply;
        try {
            reply = nlohmann::json::parse(read_file_text(file));
        } catch (const nlohmann::json::exception& e) {
            throw cdsm::Error(file, std::string("not JSON: ") + e.what());
        }
        for (const auto& n : nodes)
            if (n.node == host) throw UsageError("--node-matrix: node " + host + " given twice");
        cdsm::NodeMatrix node = cdsm::node_matrix_from_json(reply, host, file);
        auto spec = topology_of.find(host);
        if (spec == topology_of.end()) spec = topology_of.find("");
        if (spec != topology_of.end()) {
            if (!loaded.contains(spec->second))
                loaded.emplace(spec->second, load_topology(spec->second));
            node.topology = loaded.at(spec->second);
        }
        nodes.push_back(std::move(node));
    }
    for (const auto& entry : topology_of) {
        // Not a structured binding: clang before 16 (Debian 12's 14, the sanitizer tree) cannot
        // capture one in a lambda.
        const std::string& host = entry.first;
        if (!host.empty() &&
            std::none_of(nodes.begin(), nodes.end(), [&](const auto& n) { return n.node == host; }))
            throw UsageError("--node-topology " + host + "=...: no --node-matrix " + host +
                             "=FILE");
    }
    cdsm::JobMatrix job = cdsm::merge_job_matrix(traffic ? &*traffic : nullptr, nodes);
    // The reader's reason (no file in DIR) replaces the merge's general one (no monitoring).
    if (!missing.empty()) job.missing.front() = missing.front();
    print_job_matrix(job, "job matrix", o, out);
    if (o.format != "heatmap")
        for (const auto& m : job.missing) std::cerr << "cdsmctl: missing: " << m << '\n';
    return 0;
}

}  // namespace cdsm::cdsmctl
