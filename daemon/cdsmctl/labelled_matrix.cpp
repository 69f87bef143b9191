// SPDX-License-Identifier: GPL-2.0
#include "labelled_matrix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>

#include "cdsm/error.hpp"
#include "output.hpp"

namespace cdsm::cdsmctl {
namespace {

// The matrix seen through a permutation: display row r is source row order[r].
cdsm::CommMatrix permuted(const cdsm::CommMatrix& m, const std::vector<std::size_t>& order) {
    cdsm::CommMatrix out(m.size());
    for (std::size_t r = 0; r < order.size(); ++r)
        for (std::size_t s = r + 1; s < order.size(); ++s) out.set(r, s, m.at(order[r], order[s]));
    return out;
}

// Row order for a sort key; rows without a key keep their index order after the others.
std::vector<std::size_t> order_by(const std::vector<std::optional<std::int64_t>>& keys) {
    std::vector<std::size_t> order(keys.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (keys[a].has_value() != keys[b].has_value()) return keys[a].has_value();
        return keys[a].has_value() && *keys[a] < *keys[b];
    });
    return order;
}

std::string key_label(const std::optional<std::int64_t>& key) {
    return key ? fmt::format("{}", *key) : "-";
}

}  // namespace

Axis parse_axis(std::string_view name) {
    if (name == "index") return Axis::kIndex;
    if (name == "tid") return Axis::kTid;
    if (name == "rank") return Axis::kRank;
    throw UsageError(fmt::format("--by {}: expected index, tid or rank", name));
}

std::string_view to_string(Axis axis) noexcept {
    switch (axis) {
        case Axis::kIndex:
            return "index";
        case Axis::kTid:
            return "tid";
        case Axis::kRank:
            return "rank";
    }
    return "index";
}

LabelledMatrix from_cdsmd_matrix(const nlohmann::json& reply, Axis by, std::string title,
                                 std::string_view source) {
    const cdsm::CommMatrix matrix = cdsm::matrix_from_json(reply, source);
    const std::size_t n = matrix.size();

    // Task objects by matrix row; rows the reply does not describe stay null.
    std::vector<nlohmann::json> task_of(n);
    const auto& tasks = field(reply, "tasks");
    if (tasks.is_array())
        for (const auto& t : tasks)
            if (const auto index = optional_int(t, "index");
                index && *index >= 0 && static_cast<std::size_t>(*index) < n)
                task_of[static_cast<std::size_t>(*index)] = t;

    std::vector<std::optional<std::int64_t>> keys(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (by == Axis::kIndex) keys[i] = static_cast<std::int64_t>(i);
        if (by == Axis::kTid) keys[i] = optional_int(task_of[i], "tid");
        if (by == Axis::kRank) keys[i] = optional_int(task_of[i], "rank");
    }
    if (by == Axis::kRank && n > 0 &&
        std::none_of(keys.begin(), keys.end(), [](auto& k) { return k.has_value(); }))
        throw cdsm::Error(title,
                          "no task has an MPI rank (OMPI_COMM_WORLD_RANK, PMI_RANK, "
                          "PMIX_RANK or SLURM_PROCID in its environment)");

    auto order = order_by(keys);
    // A rank's threads: its main thread (tid = pid) first, then the others in index order.
    const auto is_main = [&](std::size_t r) {
        const auto tid = optional_int(task_of[r], "tid");
        return tid && tid == optional_int(task_of[r], "pid");
    };
    if (by == Axis::kRank)
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            if (keys[a].has_value() != keys[b].has_value()) return keys[a].has_value();
            if (keys[a] != keys[b]) return keys[a] < keys[b];
            return keys[a].has_value() && is_main(a) && !is_main(b);
        });
    LabelledMatrix out{permuted(matrix, order),
                       {},
                       std::string(to_string(by)),
                       std::move(title),
                       {},
                       nlohmann::json::array(),
                       // An older cdsmd sends no "view": it knew the aged matrix only.
                       reply.value("view", "aged"),
                       "events",
                       {}};
    bool all_tids = true;
    // Under --by rank, a rank of several tasks (a hybrid code's threads): "3" for its main
    // thread, "3.1", "3.2", ... for the others; a rank of one task is "3".
    std::map<std::int64_t, int> tasks_of_rank, threads_of_rank;
    for (const auto& k : keys)
        if (k) ++tasks_of_rank[*k];
    for (std::size_t r : order) {
        if (by == Axis::kRank && keys[r] && tasks_of_rank[*keys[r]] > 1 && !is_main(r))
            out.labels.push_back(fmt::format("{}.{}", *keys[r], ++threads_of_rank[*keys[r]]));
        else
            out.labels.push_back(key_label(keys[r]));
        out.tasks.push_back(task_of[r]);
        const auto tid = optional_int(task_of[r], "tid");
        all_tids = all_tids && tid.has_value();
        out.tids.push_back(tid.value_or(-1));
    }
    if (!all_tids) out.tids.clear();
    return out;
}

LabelledMatrix from_task_matrix(cdsm::TaskMatrix file, Axis by, std::string title) {
    const std::size_t n = file.matrix.size();
    if (by == Axis::kRank)
        throw UsageError("--by rank needs cdsmd's task list; a matrix file has no ranks");
    if (by == Axis::kTid && file.tasks.empty())
        throw cdsm::Error(title,
                          "lists no task ids (a JSON \"tasks\" array), so --by tid "
                          "cannot label it");
    std::vector<std::optional<std::int64_t>> keys(n);
    for (std::size_t i = 0; i < n; ++i)
        keys[i] = by == Axis::kTid ? file.tasks[i] : static_cast<std::int64_t>(i);
    const auto order = order_by(keys);
    LabelledMatrix out{permuted(file.matrix, order),
                       {},
                       std::string(to_string(by)),
                       std::move(title),
                       {},
                       nullptr,
                       {},
                       "events",
                       {}};
    for (std::size_t r : order) {
        out.labels.push_back(key_label(keys[r]));
        if (!file.tasks.empty()) out.tids.push_back(file.tasks[r]);
    }
    return out;
}

std::string matrix_csv(const LabelledMatrix& m) {
    return cdsm::format_matrix_csv(m.matrix);
}

nlohmann::json matrix_json(const LabelledMatrix& m) {
    nlohmann::json out = cdsm::matrix_json(m.matrix, cdsm::MatrixLayout::kDense, m.tids);
    out["by"] = m.axis;
    out["labels"] = m.labels;
    out["title"] = m.title;
    if (!m.view.empty()) out["view"] = m.view;
    if (!m.tasks.is_null()) out["task_info"] = m.tasks;
    return out;
}

void print_matrix_table(const LabelledMatrix& m, std::ostream& out) {
    std::vector<std::string> header{m.axis};
    header.insert(header.end(), m.labels.begin(), m.labels.end());
    Table table(std::move(header));
    for (std::size_t i = 0; i < m.matrix.size(); ++i) {
        std::vector<std::string> row{m.labels[i]};
        for (std::size_t j = 0; j < m.matrix.size(); ++j)
            row.push_back(fmt::format("{}", m.matrix.at(i, j)));
        table.add(std::move(row));
    }
    table.print(out);
}

}  // namespace cdsm::cdsmctl
