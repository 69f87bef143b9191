// SPDX-License-Identifier: GPL-2.0
// cdsmctl map against Scotch's own scotch_gmap (Debian package `scotch`), side by side on the
// same graphs and the same tree target, timed in one run:
//
//   build/bench/cdsm_side_by_side [--runs 5] [--sizes 32,128,...] [--patterns stencil-2d,...]
//                                 [--levels 2,3,4] [--max-dense 1024] [--cdsmctl PATH]
//                                 [--scotch-gmap PATH] [--keep DIR]
//
// For every pattern (2-D and 3-D stencils, dense clusters, all-to-all, random sparse), size
// (32 to 4096 tasks, as many as PUs) and machine (2, 3 or 4 levels: packages of PUs; packages
// of cores of 2 PUs; packages of 2 L3 groups of cores of 2 PUs) it writes the matrix as CSV
// for cdsmctl and as a Scotch graph, and the machine as the tleaf target cdsm's mapper builds
// (ScotchMapper::target_description). Then it runs
//     A: cdsmctl map --matrix M.csv --topology SPEC --json
//     B: scotch_gmap M.grf T.tgt OUT.map -b0 -vmt
// (-b0: a balanced mapping, one task per PU, as cdsm's; by default scotch_gmap may stack two
// tasks on a PU and leave another idle, which is no answer to the same problem)
// in turn, A B A B ... after one warm-up pair, and prints per graph the medians and the median of
// the pair-by-pair ratios A/B (min..max) of the whole process's wall time, of its CPU time
// (user + system: less disturbed by a busy machine than wall time) and of the mapping
// alone (cdsmctl's mapping_ms against scotch_gmap's "T Mapping" time), the cost ratio A/B (both
// deterministic: one run), both peak RSS, and scotch_gmap's largest load (tasks on one PU: more
// than 1 would make its cost not comparable). The cost of scotch_gmap's mapping is computed with
// cdsm's metric and checked against Scotch's own (CommExpan's sum): "check" says they agree, which
// proves that the tleaf distances are cdsm's.
//
// The machine is shared: compare ratios, not absolute times; the load average is printed.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cdsm/cost.hpp"
#include "cdsm/matrix_io.hpp"
#include "cdsm/patterns.hpp"
#include "cdsm/scotch_mapper.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace cdsm;

struct Run {
    double wall_s = 0, cpu_s = 0, map_s = 0;
    long max_rss_kb = 0;
    std::string output;
};

// Runs argv with stdout and stderr into `log`, under /usr/bin/time: posix_spawn's vfork child
// shares this process's memory until exec, and the kernel keeps that high-water mark as the
// child's peak RSS; GNU time forks from its own small image, so its "%M" is the program's own.
// Wall time around spawn + wait; CPU (user + system) from the kernel's accounting of the child
// and its children (GNU time's own share, well under a millisecond, is in both A and B).
Run run(const std::vector<std::string>& command, const fs::path& log, const fs::path& rss_file) {
    std::vector<std::string> args{"/usr/bin/time", "-f", "%M", "-o", rss_file.string()};
    args.insert(args.end(), command.begin(), command.end());
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    const auto start = std::chrono::steady_clock::now();
    pid_t pid = 0;
    const int err = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0) throw std::runtime_error("cannot start " + args[0] + " (Debian package time)");
    int status = 0;
    rusage usage{};
    if (wait4(pid, &status, 0, &usage) < 0) throw std::runtime_error("wait4 failed");
    Run r;
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
              static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
    std::ifstream in(log);
    r.output.assign(std::istreambuf_iterator<char>(in), {});
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw std::runtime_error(command[0] + " failed:\n" + r.output);
    std::ifstream(rss_file) >> r.max_rss_kb;
    return r;
}

// Scotch's graph file: edge weights only (flags 010), every edge in both rows.
void write_scotch_graph(const CommMatrix& m, const fs::path& path) {
    std::vector<std::vector<std::pair<std::size_t, CommMatrix::Value>>> rows(m.size());
    std::size_t arcs = 0;
    m.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value v) {
        rows[i].emplace_back(j, v);
        rows[j].emplace_back(i, v);
        arcs += 2;
    });
    std::string out = "0\n" + std::to_string(m.size()) + " " + std::to_string(arcs) + "\n0 010\n";
    for (auto& row : rows) {
        std::sort(row.begin(), row.end());
        out += std::to_string(row.size());
        for (const auto& [j, v] : row) out += " " + std::to_string(v) + " " + std::to_string(j);
        out += '\n';
    }
    std::ofstream(path) << out;
}

double scotch_value(const std::string& output, const std::string& key) {
    const auto at = output.find(key);
    if (at == std::string::npos) throw std::runtime_error("no " + key + " in:\n" + output);
    return std::strtod(output.c_str() + at + key.size(), nullptr);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');) out.push_back(item);
    return out;
}

std::string machine_spec(int levels, std::size_t pus) {
    if (levels == 2) return "pack:2 pu:" + std::to_string(pus / 2);
    if (levels == 3) return "pack:2 core:" + std::to_string(pus / 4) + " pu:2";
    return "pack:2 l3:2 core:" + std::to_string(pus / 8) + " pu:2";
}

CommMatrix pattern(const std::string& name, std::size_t n) {
    if (name == "stencil-2d") return patterns::stencil_2d(n);
    if (name == "stencil-3d") return patterns::stencil_3d(n);
    if (name == "dense-clusters") return patterns::dense_clusters(n);
    if (name == "all-to-all") return patterns::all_to_all(n);
    if (name == "random-sparse") return patterns::random_sparse(n);
    throw std::runtime_error("unknown pattern " + name);
}

bool dense(const std::string& name) {
    return name == "dense-clusters" || name == "all-to-all";
}

fs::path self_dir() {
    return fs::canonical("/proc/self/exe").parent_path();
}

std::string loadavg() {
    std::ifstream in("/proc/loadavg");
    std::string a, b, c;
    in >> a >> b >> c;
    return a + " " + b + " " + c;
}

std::string ms(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, s < 0.01 ? "%.2f" : s < 1 ? "%.1f" : "%.0f", s * 1e3);
    return buf;
}

std::string ratio_range(const std::vector<double>& r) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f (%.2f-%.2f)", median(r),
                  *std::min_element(r.begin(), r.end()), *std::max_element(r.begin(), r.end()));
    return buf;
}

}  // namespace

int main(int argc, char** argv) {
    std::size_t runs = 5, max_dense = 1024;
    std::vector<std::string> sizes = split("32,128,512,1024,4096");
    std::vector<std::string> names =
        split("stencil-2d,stencil-3d,dense-clusters,all-to-all,random-sparse");
    std::vector<std::string> levels = split("2,3,4");
    std::string cdsmctl = (self_dir().parent_path() / "daemon/cdsmctl/cdsmctl").string();
    std::string gmap = "/usr/bin/scotch_gmap";
    fs::path dir;
    for (int k = 1; k < argc; ++k) {
        const std::string arg = argv[k];
        auto value = [&]() -> std::string {
            if (k + 1 >= argc) throw std::runtime_error(arg + " needs a value");
            return argv[++k];
        };
        if (arg == "--runs")
            runs = std::stoul(value());
        else if (arg == "--sizes")
            sizes = split(value());
        else if (arg == "--patterns")
            names = split(value());
        else if (arg == "--levels")
            levels = split(value());
        else if (arg == "--max-dense")
            max_dense = std::stoul(value());
        else if (arg == "--cdsmctl")
            cdsmctl = value();
        else if (arg == "--scotch-gmap")
            gmap = value();
        else if (arg == "--keep")
            dir = value();
        else {
            std::cerr << "usage: " << argv[0]
                      << " [--runs N] [--sizes LIST] [--patterns LIST] [--levels LIST]"
                         " [--max-dense N] [--cdsmctl PATH] [--scotch-gmap PATH] [--keep DIR]\n"
                         "(see the comment at the top of bench/mapping/side_by_side.cpp)\n";
            return arg == "-h" || arg == "--help" ? 0 : 2;
        }
    }
    if (runs < 1) runs = 1;
    const bool keep = !dir.empty();
    if (!keep) {
        char tmpl[] = "/tmp/cdsm-side-by-side.XXXXXX";
        if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
        dir = tmpl;
    }
    fs::create_directories(dir);
    std::cout << "cdsmctl map (A) vs scotch_gmap (B), " << runs
              << " runs each after one warm-up, interleaved; load average before: " << loadavg()
              << "\nwhole: wall time of the process; map: cdsmctl's mapping_ms vs scotch_gmap's "
                 "'T Mapping'; ratios A/B: median of pairs (min-max)\n\n";
    std::printf("%-15s %5s %3s | %8s %8s %-18s %-18s | %8s %8s %-18s | %7s | %6s %6s | %4s %5s\n",
                "graph", "tasks", "lvl", "A ms", "B ms", "whole A/B", "cpu A/B", "A map", "B map",
                "map A/B", "cost %", "A MB", "B MB", "load", "check");
    double worst_cost = -1e9;
    for (const auto& size_text : sizes) {
        const std::size_t n = std::stoul(size_text);
        for (const auto& name : names) {
            if (dense(name) && n > max_dense) continue;
            const CommMatrix m = pattern(name, n);
            const fs::path csv = dir / (name + "-" + size_text + ".csv");
            const fs::path grf = dir / (name + "-" + size_text + ".grf");
            write_matrix_file(csv, m);
            write_scotch_graph(m, grf);
            for (const auto& level_text : levels) {
                const std::string spec = machine_spec(std::stoi(level_text), n);
                const Topology topology = Topology::from_synthetic(spec);
                const Distances distances(topology);
                const fs::path tgt = dir / ("machine-" + level_text + "-" + size_text + ".tgt");
                std::ofstream(tgt) << ScotchMapper::target_description(topology, distances) << '\n';
                const fs::path out_map = dir / "out.map";
                const std::vector<std::string> a{cdsmctl,      "map", "--matrix", csv.string(),
                                                 "--topology", spec,  "--json"};
                const std::vector<std::string> b{
                    gmap, grf.string(), tgt.string(), out_map.string(), "-b0", "-vmt"};
                std::vector<double> a_wall, b_wall, a_map, b_map, whole_ratio, cpu_ratio, map_ratio;
                long a_rss = 0, b_rss = 0;
                Run last_a, last_b;
                for (std::size_t k = 0; k <= runs; ++k) {
                    last_a = run(a, dir / "a.log", dir / "a.rss");
                    last_b = run(b, dir / "b.log", dir / "b.rss");
                    last_a.map_s =
                        nlohmann::json::parse(last_a.output).at("mapping_ms").get<double>() / 1e3;
                    last_b.map_s = scotch_value(last_b.output, "T\tMapping\t\t");
                    if (k == 0) continue;  // warm-up
                    a_wall.push_back(last_a.wall_s);
                    b_wall.push_back(last_b.wall_s);
                    a_map.push_back(last_a.map_s);
                    b_map.push_back(last_b.map_s);
                    whole_ratio.push_back(last_a.wall_s / last_b.wall_s);
                    cpu_ratio.push_back(last_a.cpu_s / std::max(last_b.cpu_s, 1e-6));
                    map_ratio.push_back(last_a.map_s / std::max(last_b.map_s, 1e-6));
                    a_rss = std::max(a_rss, last_a.max_rss_kb);
                    b_rss = std::max(b_rss, last_b.max_rss_kb);
                }
                const double a_cost = nlohmann::json::parse(last_a.output).at("cost").get<double>();
                // scotch_gmap's mapping: "COUNT" then "VERTEX LEAF" lines; leaf k is PU k.
                std::ifstream in(out_map);
                std::size_t count = 0;
                in >> count;
                std::vector<PuId> pus(n, 0);
                for (std::size_t k = 0; k < count; ++k) {
                    std::size_t v = 0, leaf = 0;
                    in >> v >> leaf;
                    pus.at(v) = static_cast<PuId>(leaf);
                }
                const Placement scotch_placement(pus);
                const auto loads = scotch_placement.loads(topology.pu_count());
                const double b_cost = mapping_cost(m, scotch_placement, distances);
                const double scotch_own = [&] {
                    const auto at = last_b.output.find("CommExpan=");
                    const auto open = last_b.output.find('(', at);
                    return std::strtod(last_b.output.c_str() + open + 1, nullptr);
                }();
                const double cost_pct = b_cost == 0 ? 0 : (a_cost / b_cost - 1) * 100;
                worst_cost = std::max(worst_cost, cost_pct);
                std::printf(
                    "%-15s %5zu %3s | %8s %8s %-18s %-18s | %8s %8s %-18s | %+6.2f%% | %6.1f %6.1f "
                    "| %4zu %5s\n",
                    name.c_str(), n, level_text.c_str(), ms(median(a_wall)).c_str(),
                    ms(median(b_wall)).c_str(), ratio_range(whole_ratio).c_str(),
                    ratio_range(cpu_ratio).c_str(), ms(median(a_map)).c_str(),
                    ms(median(b_map)).c_str(), ratio_range(map_ratio).c_str(), cost_pct,
                    static_cast<double>(a_rss) / 1024, static_cast<double>(b_rss) / 1024,
                    *std::max_element(loads.begin(), loads.end()),
                    std::abs(scotch_own - b_cost) <= 1e-6 * std::max(1.0, b_cost) ? "ok" : "DIFF");
                std::fflush(stdout);
            }
        }
    }
    std::cout << "\nworst cost A vs B: " << worst_cost << " %; load average after: " << loadavg()
              << "\n";
    if (!keep) fs::remove_all(dir);
    return 0;
}
