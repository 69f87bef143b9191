// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
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

/// The name and version of the matrix JSON schema (docs/json.md), its "schema" member.
inline constexpr std::string_view kMatrixSchema = "cdsm-matrix/1";

/// How matrix_json() writes the pairs: every cell, row by row ("matrix": [[...], ...]), or the
/// non-zero pairs above the diagonal ("entries": [[i, j, value], ...], by rows).
enum class MatrixLayout { kDense, kSparse };

/// {"schema": "cdsm-matrix/1", "dim": N, "matrix" or "entries", "tasks": [id, ...]}, "tasks"
/// only when given. Throws Error if `tasks` is given with a size other than the matrix's.
nlohmann::json matrix_json(const CommMatrix& matrix, MatrixLayout layout,
                           std::span<const std::int64_t> tasks = {});
/// The matrix of a JSON object: dense rows under "matrix" (or "cells", the name cdsmd's
/// protocol 1 gives them), or "dim" and sparse "entries". Other members are not read. Throws
/// Error naming `name`, the row and the column when it is not a matrix; the same checks as CSV.
CommMatrix matrix_from_json(const nlohmann::json& object, std::string_view name);

/// A JSON matrix file (docs/json.md): matrix_from_json() of the document, and its "tasks", which
/// are optional but, when present, must list one id per row. Throws Error for malformed JSON
/// and a task list of the wrong size too.
TaskMatrix parse_matrix_json(std::string_view text, std::string_view name);
/// matrix_json(matrix, kDense, tasks) on one line, with its newline.
std::string format_matrix_json(const CommMatrix& matrix, std::span<const std::int64_t> tasks = {});

/// Reads a file, CSV or JSON by its extension (.csv, .json).
TaskMatrix read_matrix_file(const std::filesystem::path& path);
/// Writes a file, CSV or JSON by its extension (the task ids only go into JSON).
void write_matrix_file(const std::filesystem::path& path, const CommMatrix& matrix,
                       std::span<const std::int64_t> tasks = {});

}  // namespace cdsm
