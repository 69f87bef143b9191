// SPDX-License-Identifier: GPL-2.0
// A job's whole matrix: Open MPI's monitoring between all its ranks, merged with each node's
// shared-memory matrix from cdsm.ko by rank (issue 29, docs/cluster.md).
#include "cdsm/job_matrix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cdsm/error.hpp"
#include "cdsm/matrix_io.hpp"

namespace cdsm {
namespace {

std::optional<std::int64_t> task_int(const nlohmann::json& object, const char* name) {
    if (!object.is_object()) return std::nullopt;
    const auto it = object.find(name);
    if (it == object.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<std::int64_t>();
}

std::optional<std::uint32_t> task_u32(std::optional<std::int64_t> v) {
    if (!v || *v < 0 || *v > 0xffffffffLL) return std::nullopt;
    return static_cast<std::uint32_t>(*v);
}

// The level of two PUs of one node by the kind of their deepest common ancestor.
PairLevel pu_pair_level(const Topology& t, std::uint32_t cpu_a, std::uint32_t cpu_b) {
    const auto a = t.find_os_index(cpu_a), b = t.find_os_index(cpu_b);
    if (!a || !b) return PairLevel::kNode;
    switch (t.level_kind(t.common_level(*a, *b))) {
        case LevelKind::kPu:
        case LevelKind::kCore:
            return PairLevel::kCore;
        case LevelKind::kL2:
        case LevelKind::kL3:
            return PairLevel::kL3;
        case LevelKind::kNuma:
        case LevelKind::kPackage:
            return PairLevel::kPackage;
        case LevelKind::kMachine:
            return PairLevel::kNode;
    }
    return PairLevel::kNode;
}

// "0-3,7" of sorted ranks.
std::string rank_ranges(const std::vector<std::size_t>& ranks) {
    std::string out;
    for (std::size_t i = 0; i < ranks.size();) {
        std::size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
        if (!out.empty()) out += ',';
        out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
        i = j + 1;
    }
    return out;
}

nlohmann::json dense_rows(const CommMatrix& m) {
    return matrix_json(m, MatrixLayout::kDense).at("matrix");
}

}  // namespace

std::string_view to_string(PairLevel level) noexcept {
    switch (level) {
        case PairLevel::kSelf:
            return "self";
        case PairLevel::kCore:
            return "core";
        case PairLevel::kL3:
            return "l3";
        case PairLevel::kPackage:
            return "package";
        case PairLevel::kNode:
            return "node";
        case PairLevel::kNetwork:
            return "network";
        case PairLevel::kUnknown:
            return "unknown";
    }
    return "unknown";
}

NodeMatrix node_matrix_from_json(const nlohmann::json& reply, std::string node,
                                 std::string_view name) {
    NodeMatrix out;
    out.node = std::move(node);
    out.matrix = matrix_from_json(reply, name);
    const std::size_t n = out.matrix.size();
    out.rank.assign(n, std::nullopt);
    out.cpu.assign(n, std::nullopt);
    out.main_thread.assign(n, false);
    // cdsmd's reply: "tasks" are objects with their "index"; cdsmctl show's: "task_info" in
    // display order, whose rows are those of "matrix".
    const bool from_show = reply.contains("task_info");
    const auto& tasks = from_show ? reply.at("task_info") : reply.value("tasks", nlohmann::json());
    if (!tasks.is_array()) return out;
    for (std::size_t row = 0; row < tasks.size(); ++row) {
        const auto& t = tasks[row];
        if (!t.is_object()) {
            if (from_show && t.is_null()) continue;
            if (!from_show && t.is_number_integer()) continue;  // a file's task ids: no ranks
            throw Error(name, fmt::format("task {} is not an object", row));
        }
        std::size_t index = row;
        if (!from_show) {
            const auto i = task_int(t, "index");
            if (!i) throw Error(name, fmt::format("task {} has no \"index\"", row));
            index = static_cast<std::size_t>(*i);
        }
        if (index >= n)
            throw Error(name, fmt::format("task {}'s index {} is not a row of the {}x{} matrix",
                                          row, index, n, n));
        out.rank[index] = task_u32(task_int(t, "rank"));
        // Where it runs, else (an ended step's report) where cdsmd last saw it run.
        out.cpu[index] = task_u32(task_int(t, "cpu"));
        if (!out.cpu[index]) out.cpu[index] = task_u32(task_int(t, "last_cpu"));
        if (!out.cpu[index]) out.cpu[index] = task_u32(task_int(t, "placed_pu"));
        const auto tid = task_int(t, "tid"), pid = task_int(t, "pid");
        out.main_thread[index] = tid && pid && *tid == *pid;
    }
    return out;
}

JobMatrix merge_job_matrix(const RankTraffic* traffic, const std::vector<NodeMatrix>& nodes) {
    JobMatrix job;
    std::size_t ranks = traffic ? traffic->ranks() : 0;
    if (!traffic)
        for (const NodeMatrix& node : nodes)
            for (const auto& r : node.rank)
                if (r) ranks = std::max<std::size_t>(ranks, *r + std::size_t{1});
    job.ranks = ranks;
    job.node_of_rank.assign(ranks, {});
    job.cpu_of_rank.assign(ranks, std::nullopt);
    job.shared_memory = CommMatrix(ranks);
    std::vector<const NodeMatrix*> node_of(ranks, nullptr);
    std::size_t rankless = 0;

    for (const NodeMatrix& node : nodes) {
        // A rank's CPU: its main thread's, else its first task's that has one.
        std::vector<bool> cpu_from_main(ranks, false);
        for (std::size_t row = 0; row < node.matrix.size(); ++row) {
            if (!node.rank[row]) {
                ++rankless;
                continue;
            }
            const std::size_t r = *node.rank[row];
            if (r >= ranks)
                throw Error(node.node, fmt::format("rank {} is beyond the job's {} ranks (Open "
                                                   "MPI's monitoring), another job's task?",
                                                   r, ranks));
            if (node_of[r] && node_of[r] != &node)
                throw Error(node.node, fmt::format("rank {} is also on node {}: two runs' "
                                                   "matrices mixed?",
                                                   r, node_of[r]->node));
            node_of[r] = &node;
            job.node_of_rank[r] = node.node;
            if (node.cpu[row] &&
                (!job.cpu_of_rank[r] || (node.main_thread[row] && !cpu_from_main[r]))) {
                job.cpu_of_rank[r] = node.cpu[row];
                cpu_from_main[r] = node.main_thread[row];
            }
        }
        node.matrix.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value v) {
            if (!node.rank[i] || !node.rank[j] || *node.rank[i] == *node.rank[j]) return;
            job.shared_memory.add(*node.rank[i], *node.rank[j], v);
        });
    }
    if (traffic) {
        job.bytes = traffic->byte_matrix();
        job.messages = traffic->message_matrix();
    }

    job.levels.assign(ranks * ranks, PairLevel::kUnknown);
    for (std::size_t a = 0; a < ranks; ++a)
        for (std::size_t b = 0; b < ranks; ++b) {
            PairLevel& l = job.levels[a * ranks + b];
            if (a == b)
                l = PairLevel::kSelf;
            else if (!node_of[a] || !node_of[b])
                l = PairLevel::kUnknown;
            else if (node_of[a] != node_of[b])
                l = PairLevel::kNetwork;
            else if (node_of[a]->topology && job.cpu_of_rank[a] && job.cpu_of_rank[b])
                l = pu_pair_level(*node_of[a]->topology, *job.cpu_of_rank[a], *job.cpu_of_rank[b]);
            else
                l = PairLevel::kNode;
        }

    if (!traffic)
        job.missing.push_back(
            "no Open MPI monitoring: the matrix holds cdsm.ko's shared-memory events within each "
            "node only, nothing between nodes (the job did not use Open MPI, its Open MPI has no "
            "monitoring components, as static builds, or monitoring was not turned on)");
    if (nodes.empty())
        job.missing.push_back(
            "no node's shared-memory matrix (cdsm.ko): ranks' nodes and levels are unknown");
    std::vector<std::size_t> nowhere;
    for (std::size_t r = 0; r < ranks; ++r)
        if (!node_of[r]) nowhere.push_back(r);
    if (!nowhere.empty() && !nodes.empty())
        job.missing.push_back(
            fmt::format("rank(s) {} are on no node's matrix: their node is "
                        "unknown (a node's matrix not given, or the rank "
                        "not tracked)",
                        rank_ranges(nowhere)));
    std::size_t without_cpu = 0;
    for (std::size_t r = 0; r < ranks; ++r)
        if (node_of[r] && !job.cpu_of_rank[r]) ++without_cpu;
    if (without_cpu > 0)
        job.missing.push_back(fmt::format(
            "{} rank(s) have no known CPU (their tasks had exited when the node's matrix was "
            "taken): pairs on one node are at level \"node\"",
            without_cpu));
    if (rankless > 0)
        job.missing.push_back(fmt::format(
            "{} task(s) without an MPI rank in the nodes' matrices were left out", rankless));
    return job;
}

nlohmann::json job_matrix_json(const JobMatrix& job, std::string_view title) {
    const std::size_t n = job.ranks;
    nlohmann::json out = matrix_json(job.primary(), MatrixLayout::kDense);
    out["by"] = "rank";
    out["unit"] = job.bytes ? "bytes" : "events";
    out["title"] = title;
    nlohmann::json labels = nlohmann::json::array(), nodes = nlohmann::json::array(),
                   cpus = nlohmann::json::array(), levels = nlohmann::json::array();
    for (std::size_t r = 0; r < n; ++r) {
        labels.push_back(fmt::format("{}", r));
        nodes.push_back(job.node_of_rank[r].empty() ? nlohmann::json(nullptr)
                                                    : nlohmann::json(job.node_of_rank[r]));
        cpus.push_back(job.cpu_of_rank[r] ? nlohmann::json(*job.cpu_of_rank[r])
                                          : nlohmann::json(nullptr));
        nlohmann::json row = nlohmann::json::array();
        for (std::size_t c = 0; c < n; ++c) row.push_back(to_string(job.level(r, c)));
        levels.push_back(std::move(row));
    }
    out["labels"] = std::move(labels);
    out["nodes"] = std::move(nodes);
    out["cpus"] = std::move(cpus);
    out["levels"] = std::move(levels);
    if (job.bytes) out["bytes"] = dense_rows(*job.bytes);
    if (job.messages) out["messages"] = dense_rows(*job.messages);
    out["shared_memory"] = dense_rows(job.shared_memory);

    // Totals: per node (pairs of ranks both on it), between nodes, and where a node is unknown.
    struct Sum {
        std::uint64_t ranks = 0, bytes = 0, messages = 0, events = 0;
    };
    std::map<std::string, Sum> per_node;
    for (std::size_t r = 0; r < n; ++r)
        if (!job.node_of_rank[r].empty()) ++per_node[job.node_of_rank[r]].ranks;
    Sum inter, unknown;
    const auto add = [&](Sum& s, std::size_t a, std::size_t b) {
        if (job.bytes) s.bytes += job.bytes->at(a, b);
        if (job.messages) s.messages += job.messages->at(a, b);
        s.events += job.shared_memory.at(a, b);
    };
    for (std::size_t a = 0; a < n; ++a)
        for (std::size_t b = a + 1; b < n; ++b) {
            const PairLevel l = job.level(a, b);
            if (l == PairLevel::kNetwork)
                add(inter, a, b);
            else if (l == PairLevel::kUnknown)
                add(unknown, a, b);
            else
                add(per_node[job.node_of_rank[a]], a, b);
        }
    const auto sum_json = [&](const Sum& s) {
        nlohmann::json j{{"shared_memory_events", s.events}};
        if (job.bytes) {
            j["bytes"] = s.bytes;
            j["messages"] = s.messages;
        }
        return j;
    };
    nlohmann::json node_totals = nlohmann::json::array();
    for (const auto& [name, s] : per_node) {
        nlohmann::json j = sum_json(s);
        j["node"] = name;
        j["ranks"] = s.ranks;
        node_totals.push_back(std::move(j));
    }
    out["totals"] = {{"nodes", std::move(node_totals)},
                     {"inter_node", sum_json(inter)},
                     {"unknown", sum_json(unknown)}};
    out["missing"] = job.missing;
    return out;
}

std::string job_matrix_pairs_csv(const JobMatrix& job) {
    std::string out = "rank_a,rank_b,node_a,node_b,level,bytes,messages,shared_memory_events\n";
    for (std::size_t a = 0; a < job.ranks; ++a)
        for (std::size_t b = a + 1; b < job.ranks; ++b) {
            const std::uint64_t bytes = job.bytes ? job.bytes->at(a, b) : 0;
            const std::uint64_t messages = job.messages ? job.messages->at(a, b) : 0;
            const std::uint64_t events = job.shared_memory.at(a, b);
            if (bytes == 0 && messages == 0 && events == 0) continue;
            out += fmt::format("{},{},{},{},{},{},{},{}\n", a, b, job.node_of_rank[a],
                               job.node_of_rank[b], to_string(job.level(a, b)), bytes, messages,
                               events);
        }
    return out;
}

}  // namespace cdsm
