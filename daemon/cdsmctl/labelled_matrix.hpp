// SPDX-License-Identifier: GPL-2.0
// A communication matrix as cdsmctl shows it: rows in display order, each with a label (task
// index, thread id or MPI rank), from cdsmd or from a saved file.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cdsm/comm_matrix.hpp"
#include "cdsm/matrix_io.hpp"

namespace cdsm::cdsmctl {

/// How rows and columns are ordered and labelled (`--by`).
enum class Axis { kIndex, kTid, kRank };

/// "index", "tid" or "rank"; throws UsageError otherwise.
Axis parse_axis(std::string_view name);
std::string_view to_string(Axis axis) noexcept;

struct LabelledMatrix {
    cdsm::CommMatrix matrix;
    /// One label per row (and column), in display order.
    std::vector<std::string> labels;
    /// What the labels are: "index", "tid" or "rank".
    std::string axis;
    /// What the matrix is of, for pictures: "application 3 (pairs), whole run" or a file name.
    std::string title;
    /// Thread ids in display order; empty when the source did not say.
    std::vector<std::int64_t> tids;
    /// cdsmd's task objects (docs/protocol.md "tasks") in display order; null for files.
    nlohmann::json tasks;
    /// cdsmd's matrix: "whole" (the run) or "aged"; empty for a file.
    std::string view;
    /// What a cell counts, for the legend: "events" or "bytes".
    std::string unit = "events";
    /// Per row, its group (a job's node): the heatmap draws a line where it changes. Empty for
    /// none.
    std::vector<std::string> groups;
};

/// From cdsmd's reply to {"cmd":"matrix"}: {"dim","cells","tasks"}. Throws cdsm::Error naming
/// `source` if the reply is not a square matrix of counts. Tasks without an MPI rank sort last
/// under Axis::kRank and are labelled "-"; if no task has one, that is an error.
LabelledMatrix from_cdsmd_matrix(const nlohmann::json& reply, Axis by, std::string title,
                                 std::string_view source = "cdsmd's matrix reply");

/// From a matrix read by libcdsm. Axis::kTid needs the file's task ids; Axis::kRank is not
/// available for files (UsageError).
LabelledMatrix from_task_matrix(cdsm::TaskMatrix file, Axis by, std::string title);

/// `show --format csv`: the rows as libcdsm writes them (cdsm::parse_matrix_csv reads them
/// back), display order.
std::string matrix_csv(const LabelledMatrix& m);

/// `show --format json`: {"matrix","tasks"} as libcdsm reads them, plus "dim", "by", "labels",
/// "title" and, from cdsmd, "task_info" (docs/cdsmctl-json.md).
nlohmann::json matrix_json(const LabelledMatrix& m);

/// `show --format table`: the counts with row and column labels.
void print_matrix_table(const LabelledMatrix& m, std::ostream& out);

}  // namespace cdsm::cdsmctl
