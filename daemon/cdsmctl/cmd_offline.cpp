// SPDX-License-Identifier: GPL-2.0
// What cdsmctl does without a kernel or a daemon: map a saved matrix onto an hwloc XML or
// synthetic machine, describe a machine, show a saved matrix.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cdsm/baseline_mappers.hpp"
#include "cdsm/cost.hpp"
#include "cdsm/cpu_list.hpp"
#include "cdsm/error.hpp"
#include "cdsm/mapper.hpp"
#include "cdsm/matrix_io.hpp"
#include "cdsm/migrator.hpp"
#include "cdsm/relabel.hpp"
#include "cdsm/remapper.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "terminal_heatmap.hpp"

namespace cdsm::cdsmctl {
namespace {

// The whole stream, in blocks into room for `size` bytes when known (a 4096-task CSV is 33 MB:
// one copy of it in memory, not two).
std::string read_all(std::istream& in, std::uintmax_t size) {
    std::string text;
    text.reserve(size);
    std::array<char, 1 << 16> block;
    while (in.read(block.data(), block.size()) || in.gcount() > 0)
        text.append(block.data(), static_cast<std::size_t>(in.gcount()));
    return text;
}

std::string read_text(const std::string& path) {
    if (path == "-") return read_all(std::cin, 0);
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw cdsm::Error(path, "is a directory, not a matrix file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw cdsm::Error(path, fmt::format("cannot be read ({})", std::strerror(errno)));
    const auto size = std::filesystem::file_size(path, ec);
    return read_all(in, ec ? 0 : size);
}

bool looks_like_json(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    return first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
}

std::optional<cdsm::Placement> current_placement(const MapOptions& options,
                                                 const cdsm::Topology& topology,
                                                 std::size_t tasks) {
    if (options.current.empty()) return std::nullopt;
    const auto cpus = cdsm::parse_cpu_list(options.current);
    if (cpus.size() != tasks)
        throw cdsm::Error(fmt::format("--current {}", options.current),
                          fmt::format("lists {} CPUs but the matrix has {} tasks (one OS CPU "
                                      "per task, e.g. 0,1,8,9)",
                                      cpus.size(), tasks));
    std::vector<cdsm::PuId> pus;
    for (std::uint32_t cpu : cpus) {
        const auto pu = topology.find_os_index(cpu);
        if (!pu)
            throw cdsm::Error(
                fmt::format("--current {}", options.current),
                fmt::format("CPU {} is not a usable PU of {}", cpu, topology.source()));
        pus.push_back(*pu);
    }
    return cdsm::Placement(std::move(pus));
}

nlohmann::json os_indices(const cdsm::Placement& placement, const cdsm::Topology& topology) {
    nlohmann::json out = nlohmann::json::array();
    for (cdsm::PuId pu : placement.pus()) out.push_back(topology.pu(pu).os_index);
    return out;
}

std::string join(const nlohmann::json& values) {
    std::string out;
    for (const auto& v : values) out += (out.empty() ? "" : " ") + cell(v);
    return out;
}

}  // namespace

cdsm::Topology load_topology(const std::string& spec) {
    std::error_code ec;
    const bool xml = std::filesystem::exists(spec, ec) || spec.ends_with(".xml");
    // cdsmctl loads one topology, here: hwloc loads only the plugins it needs for it, libxml2's
    // XML reader only for an XML file that hwloc's own reader rejects.
    cdsm::Topology::skip_io_plugins(false);
    return xml ? cdsm::Topology::from_xml_file(spec) : cdsm::Topology::from_synthetic(spec);
}

std::optional<cdsm::TimeModel> load_time_model(const std::string& path) {
    if (!path.empty()) return cdsm::TimeModel::from_file(path);
    std::error_code ec;
    if (std::filesystem::exists(cdsm::kDefaultTimeModelPath, ec))
        return cdsm::TimeModel::from_file(cdsm::kDefaultTimeModelPath);
    return std::nullopt;
}

cdsm::TaskMatrix load_matrix(const std::string& path) {
    const std::string text = read_text(path);
    const std::string name = path == "-" ? "standard input" : path;
    const auto ext = std::filesystem::path(path).extension();
    cdsm::TaskMatrix out;
    if (ext == ".json" || (ext != ".csv" && looks_like_json(text)))
        out = cdsm::parse_matrix_json(text, name);
    else
        out.matrix = cdsm::parse_matrix_csv(text, name);
    if (out.matrix.size() == 0) throw cdsm::Error(name, "holds no matrix (no rows)");
    return out;
}

int map_offline(const MapOptions& options, std::ostream& out) {
    const cdsm::TaskMatrix file = load_matrix(options.matrix_file);
    const cdsm::Topology topology = load_topology(options.topology);
    const cdsm::Distances distances(topology);
    const auto current = current_placement(options, topology, file.matrix.size());
    const cdsm::PlacementRules rules{cdsm::parse_smt_rule(options.smt),
                                     cdsm::parse_spread_rule(options.spread)};
    const cdsm::MappingProblem problem{file.matrix, topology, distances,
                                       current ? &*current : nullptr, rules};

    const auto start = std::chrono::steady_clock::now();
    std::string rule;
    cdsm::Placement placement =
        cdsm::make_mapper(options.algorithm, options.seed)->map(problem, rule);
    const std::chrono::duration<double, std::milli> mapping_time =
        std::chrono::steady_clock::now() - start;
    const double cost = cdsm::mapping_cost(file.matrix, placement, distances);
    // Equivalent labellings cost the same; from a current placement take the one moving least.
    if (current) placement = cdsm::relabel_to_minimise_moves(placement, *current, topology);

    nlohmann::json result{
        {"dim", file.matrix.size()},
        {"topology",
         {{"source", topology.source()},
          {"summary", topology.describe()},
          {"pu_count", topology.pu_count()}}},
        {"algorithm", options.algorithm},
        {"rules", cdsm::to_string(rules)},
        {"rule", rule},
        {"placement", os_indices(placement, topology)},
        {"cost", cost},
        {"mapping_ms", mapping_time.count()},
    };
    nlohmann::json baselines = nlohmann::json::object();
    for (const std::string_view name : cdsm::mapper_names()) {
        // Relabelling keeps the cost: the chosen algorithm is not run again.
        if (name == options.algorithm) {
            baselines[std::string(name)] = cost;
            continue;
        }
        const cdsm::Placement p = cdsm::make_mapper(name, options.seed)->map(problem);
        baselines[std::string(name)] = cdsm::mapping_cost(file.matrix, p, distances);
    }
    // The model's prediction beside the cost, when there is a model (cdsmctl calibrate).
    if (const auto model = load_time_model(options.time_model)) {
        result["time_s"] = model->node_time_s(file.matrix, topology, placement);
        if (current) result["time_s_current"] = model->node_time_s(file.matrix, topology, *current);
    }
    if (current) {
        baselines["current"] = cdsm::mapping_cost(file.matrix, *current, distances);
        result["moves"] = placement.moves_from(*current);
        result["noise"] = cdsm::cost_difference_noise(file.matrix, *current, placement, distances);
        result["current_broken_rule"] = cdsm::rule_violation(topology, *current, rules);
    }
    result["baselines"] = std::move(baselines);
    if (!file.tasks.empty()) result["tasks"] = file.tasks;
    if (options.json)
        print_json(out, result);
    else
        print_mapping(result, out);
    return 0;
}

void print_mapping(const nlohmann::json& m, std::ostream& out) {
    const auto& placement = field(m, "placement");
    if (const auto& topology = field(m, "topology"); topology.is_object())
        out << fmt::format("{} tasks on {}: {} ({} PUs)\n", placement.size(),
                           cell(field(topology, "source")), cell(field(topology, "summary")),
                           cell(field(topology, "pu_count")));
    if (const auto& algorithm = field(m, "algorithm"); !algorithm.is_null())
        out << "algorithm: " << cell(algorithm) << '\n';
    if (const auto& rule = field(m, "rule"); rule.is_string() && !rule.get<std::string>().empty())
        out << "rule: " << rule.get<std::string>() << '\n';
    out << fmt::format("placement (OS PU of task 0..{}): {}\n",
                       placement.empty() ? 0 : placement.size() - 1, join(placement));

    double cost = 0;
    if (const auto& c = field(m, "cost"); c.is_number()) {
        cost = c.get<double>();
        out << "cost: " << format_number(cost);
        if (const auto& moves = field(m, "moves"); moves.is_number())
            out << fmt::format(" ({} tasks move from --current)", cell(moves));
        out << '\n';
        if (const auto& t = field(m, "time_s"); t.is_number()) {
            out << fmt::format("time (model, 1 event = 1 short message): {:.6g} s",
                               t.get<double>());
            if (const auto& tc = field(m, "time_s_current"); tc.is_number())
                out << fmt::format(" ({:.6g} s with --current)", tc.get<double>());
            out << '\n';
        }
        if (const auto& broken = field(m, "current_broken_rule");
            broken.is_string() && !broken.get<std::string>().empty())
            out << "--current breaks the rules: " << broken.get<std::string>() << '\n';
    } else if (const auto& after = field(m, "cost_after"); after.is_number()) {
        cost = after.get<double>();
        out << fmt::format("cost: {} before, {} after\n", cell(field(m, "cost_before")),
                           format_number(cost));
        // cdsmd's time model beside it (an older cdsmd sends none).
        if (const auto& t = field(m, "time_after_s");
            t.is_number() && field(m, "time_before_s").is_number())
            out << fmt::format(
                "time (model, 1 event = 1 short message): {:.6g} s before, {:.6g} s after\n",
                field(m, "time_before_s").get<double>(), t.get<double>());
    }
    if (const auto& baselines = field(m, "baselines"); baselines.is_object()) {
        Table table({"baseline", "cost", "vs placement"});
        for (const auto& [name, value] : baselines.items()) {
            const bool comparable = value.is_number() && cost > 0;
            table.add({name, cell(value),
                       comparable ? fmt::format("{:.2f}x", value.get<double>() / cost) : "-"});
        }
        table.print(out);
    }
    if (const auto& moved = field(m, "moved"); moved.is_array() && !moved.empty()) {
        out << "moved:\n";
        for (const auto& t : moved) {
            std::vector<std::uint32_t> from;
            for (const auto& cpu : field(t, "from"))
                if (cpu.is_number_unsigned()) from.push_back(cpu.get<std::uint32_t>());
            out << fmt::format("  tid {}: CPUs {} -> {}\n", cell(field(t, "tid")),
                               cdsm::format_cpu_list(from), cell(field(t, "to")));
        }
    }
    if (const auto& failed = field(m, "failed"); failed.is_array() && !failed.empty()) {
        out << "failed:\n";
        for (const auto& t : failed)
            out << fmt::format("  tid {}: {}\n", cell(field(t, "tid")), cell(field(t, "error")));
    }
    if (const auto& applied = field(m, "applied"); applied.is_boolean())
        out << (applied.get<bool>() ? "applied: yes\n" : "applied: no (dry run or no gain)\n");
}

void print_topology(const nlohmann::json& t, std::ostream& out) {
    // A cdsmd older than the schema cdsm-topology/1 sends no depth, arities or symmetry: what is
    // absent is derived or shown as "-".
    out << fmt::format("{}: {} ({} PUs{})\n", cell(field(t, "source")), cell(field(t, "summary")),
                       field(t, "pus").size(),
                       field(t, "symmetric") == false ? ", asymmetric" : "");
    Table levels({"depth", "kind", "nodes", "arity", "cost"});
    std::size_t depth = 0;
    for (const auto& l : field(t, "levels")) {
        const auto lo = field(l, "arity_min"), hi = field(l, "arity_max");
        levels.add({std::to_string(depth++), cell(field(l, "kind")), cell(field(l, "nodes")),
                    lo == hi ? cell(lo) : cell(lo) + "-" + cell(hi), cell(field(l, "cost"))});
    }
    levels.print(out);
    out << "cost: distance between two PUs whose deepest common ancestor is at that level\n";
    std::string os;
    for (const auto& pu : field(t, "pus"))
        os += (os.empty() ? "" : " ") + cell(field(pu, "os_index"));
    out << "OS index of each PU in logical order: " << os << '\n';
}

void show_matrix(const LabelledMatrix& m, const ShowOptions& options, std::ostream& out,
                 const PictureCaption& caption) {
    write_pictures(m, options, caption);
    std::string format = options.format;
    if (format.empty()) {
        if (wants_picture(options)) return;
        format = "heatmap";
    }
    if (format == "table")
        print_matrix_table(m, out);
    else if (format == "csv")
        out << matrix_csv(m);
    else if (format == "json")
        print_json(out, matrix_json(m));
    else
        out << render_terminal_heatmap(
            m, detect_style(STDOUT_FILENO, options.colour, options.charset, options.width));
}

int show_file(const ShowOptions& options, std::ostream& out) {
    const Axis by = parse_axis(options.by);
    if (by == Axis::kRank)
        throw UsageError("--by rank needs cdsmd's task list; a matrix file has no ranks");
    const std::string name = options.matrix_file == "-" ? "standard input" : options.matrix_file;
    show_matrix(from_task_matrix(load_matrix(options.matrix_file), by,
                                 std::filesystem::path(name).filename().string()),
                options, out);
    return 0;
}

}  // namespace cdsm::cdsmctl
