// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cdsm/comm_matrix.hpp"

namespace cdsm {

/// A communication matrix with the tasks its rows stand for (thread or process ids; empty when
/// the source did not say).
struct TaskMatrix {
    std::vector<std::int64_t> tasks;
    CommMatrix matrix;
};

/// CSV: N lines of N comma-separated whole numbers, symmetric, row i for task i.
/// Throws Error naming `name` (and row/column) if a row has the wrong length, a cell is not a
/// number, or from_square() rejects it (NaN, negative, fractional, asymmetric).
CommMatrix parse_matrix_csv(std::string_view text, std::string_view name);
std::string format_matrix_csv(const CommMatrix& matrix);

/// JSON: {"tasks": [id, ...], "matrix": [[...], ...]}; "tasks" is optional but, when present,
/// must list one id per row. Same checks as CSV, plus malformed JSON and a task list of the
/// wrong size.
TaskMatrix parse_matrix_json(std::string_view text, std::string_view name);
std::string format_matrix_json(const CommMatrix& matrix, std::span<const std::int64_t> tasks = {});

/// Reads a file, CSV or JSON by its extension (.csv, .json).
TaskMatrix read_matrix_file(const std::filesystem::path& path);
/// Writes a file, CSV or JSON by its extension (the task ids only go into JSON).
void write_matrix_file(const std::filesystem::path& path, const CommMatrix& matrix,
                       std::span<const std::int64_t> tasks = {});

}  // namespace cdsm
