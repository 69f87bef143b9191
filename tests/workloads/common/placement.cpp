// SPDX-License-Identifier: GPL-2.0
#include "placement.hpp"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <queue>
#include <utility>

#include "cli.hpp"
#include "system.hpp"

namespace cdsm::workloads {

namespace {

int parse_cpu(std::string_view text, std::string_view list) {
    int value = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < 0 ||
        value >= CPU_SETSIZE) {
        throw UsageError("invalid CPU list '" + std::string(list) + "'");
    }
    return value;
}

int read_topology_id(int cpu, const char* name) {
    std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/" + name);
    int id = 0;
    // Without sysfs topology (a minimal VM) every CPU counts as its own core of package 0.
    if (!(in >> id)) return std::string_view(name) == "core_id" ? cpu : 0;
    return id;
}

// Colours tasks 0/1 so that partners differ where possible (breadth-first, component by
// component) and numbers the components.
std::vector<std::pair<int, int>> colour_components(const PartnerGraph& partners) {
    const int n = static_cast<int>(partners.size());
    std::vector<std::pair<int, int>> colour(n, {-1, -1});  // (component, colour)
    int component = 0;
    for (int root = 0; root < n; ++root) {
        if (colour[root].first >= 0) continue;
        colour[root] = {component, 0};
        std::queue<int> todo;
        todo.push(root);
        while (!todo.empty()) {
            const int t = todo.front();
            todo.pop();
            for (const int p : partners[t]) {
                if (colour[p].first >= 0) continue;
                colour[p] = {component, 1 - colour[t].second};
                todo.push(p);
            }
        }
        ++component;
    }
    return colour;
}

}  // namespace

std::vector<int> parse_cpu_list(std::string_view list) {
    std::vector<int> cpus;
    std::string_view rest = list;
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        const auto dash = item.find('-');
        const int first = parse_cpu(item.substr(0, dash), list);
        const int last =
            dash == std::string_view::npos ? first : parse_cpu(item.substr(dash + 1), list);
        if (last < first) throw UsageError("invalid CPU list '" + std::string(list) + "'");
        for (int c = first; c <= last; ++c) cpus.push_back(c);
    }
    if (cpus.empty()) throw UsageError("empty CPU list");
    return cpus;
}

std::vector<Cpu> allowed_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) throw_errno("sched_getaffinity");
    std::vector<Cpu> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &set)) {
            cpus.push_back(
                {c, read_topology_id(c, "physical_package_id"), read_topology_id(c, "core_id")});
        }
    }
    return cpus;
}

std::vector<int> bad_placement(const PartnerGraph& partners, std::span<const Cpu> cpus) {
    // Units are packages when there are several, else cores, else the CPUs themselves.
    std::map<std::pair<int, int>, std::vector<int>> by_package, by_core;
    for (const Cpu& c : cpus) {
        by_package[{c.package, 0}].push_back(c.os_index);
        by_core[{c.package, c.core}].push_back(c.os_index);
    }
    const auto& grouping = by_package.size() > 1 ? by_package : by_core;
    std::vector<std::vector<int>> units;
    for (const auto& [id, members] : grouping) units.push_back(members);
    if (units.size() == 1) {
        units.clear();
        for (const Cpu& c : cpus) units.push_back({c.os_index});
    }
    std::vector<std::size_t> cursor(units.size(), 0);
    std::vector<int> placement;
    for (const auto& [component, colour] : colour_components(partners)) {
        const std::size_t u = static_cast<std::size_t>(2 * component + colour) % units.size();
        placement.push_back(units[u][cursor[u]++ % units[u].size()]);
    }
    return placement;
}

void pin_task(pid_t tid, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(tid, sizeof(set), &set) != 0) {
        throw_errno("sched_setaffinity(" + std::to_string(tid) + ", CPU " + std::to_string(cpu) +
                    ")");
    }
}

void StartPlacement::add_options(CLI::App& app) {
    auto* bad = app.add_flag("--pin-bad", pin_bad,
                             "Start each task pinned to one CPU, partners on different packages "
                             "(or cores): a placement a mapper must repair");
    auto* list = app.add_option("--start-cpus", start_cpus,
                                "Start task i pinned to the i-th OS CPU of LIST (e.g. 0,4,1,5), "
                                "cycling when there are more tasks")
                     ->type_name("LIST");
    bad->excludes(list);
}

std::vector<int> StartPlacement::resolve(const PartnerGraph& partners) const {
    const std::vector<Cpu> cpus = allowed_cpus();
    if (pin_bad) return bad_placement(partners, cpus);
    if (start_cpus.empty()) return {};
    const std::vector<int> list = parse_cpu_list(start_cpus);
    for (const int c : list) {
        if (std::none_of(cpus.begin(), cpus.end(), [c](const Cpu& a) { return a.os_index == c; })) {
            throw UsageError("CPU " + std::to_string(c) + " is not in this process's allowed set");
        }
    }
    std::vector<int> placement(partners.size());
    for (std::size_t i = 0; i < placement.size(); ++i) placement[i] = list[i % list.size()];
    return placement;
}

}  // namespace cdsm::workloads
