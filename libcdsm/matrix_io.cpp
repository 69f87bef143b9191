// SPDX-License-Identifier: GPL-2.0
#include "cdsm/matrix_io.hpp"

#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cdsm/error.hpp"
#include "matrix_check.hpp"

namespace cdsm {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

double parse_number(std::string_view token, std::string_view name, std::size_t row,
                    std::size_t column) {
    token = trim(token);
    double value = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc() || end != token.data() + token.size())
        throw Error(name, "row " + std::to_string(row) + ", column " + std::to_string(column) +
                              ": '" + std::string(token) + "' is not a number");
    return value;
}

// A cell as an event count: whole numbers directly, anything else (1.0, 1e3, -1, nan) through
// the checks of CommMatrix::from_square.
CommMatrix::Value parse_count(std::string_view token, std::string_view name, std::size_t row,
                              std::size_t column) {
    token = trim(token);
    CommMatrix::Value count = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), count);
    if (ec == std::errc() && end == token.data() + token.size() &&
        count < 18'000'000'000'000'000'000u)
        return count;
    return detail::checked_count(parse_number(token, name, row, column), name, row, column);
}

// Checks that a matrix has `rows` rows of `rows` values.
void check_row(std::size_t length, std::size_t row, std::size_t rows, std::string_view name) {
    if (length != rows)
        throw Error(name, "row " + std::to_string(row) + " has " + std::to_string(length) +
                              " values but there are " + std::to_string(rows) +
                              " rows (the matrix must be square)");
}

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path.string(), "cannot be opened");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

CommMatrix parse_matrix_csv(std::string_view text, std::string_view name) {
    // One pass over the text straight into the matrix (no table of doubles: a 4096-task CSV
    // took 270 MB that way). The row count comes first, from the non-empty lines.
    auto next_line = [](std::string_view& rest) {
        const auto eol = rest.find('\n');
        const std::string_view line = trim(rest.substr(0, eol));
        rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
        return line;
    };
    std::size_t rows = 0;
    for (std::string_view rest = text; !rest.empty();)
        if (!next_line(rest).empty()) ++rows;
    CommMatrix matrix(rows);
    std::size_t row = 0;
    for (std::string_view rest = text; !rest.empty();) {
        const std::string_view line = next_line(rest);
        if (line.empty()) continue;
        std::size_t column = 0;
        for (std::string_view cells = line;; ++column) {
            const auto comma = cells.find(',');
            const std::string_view token = cells.substr(0, comma);
            if (column < rows) {
                const CommMatrix::Value value = parse_count(token, name, row, column);
                if (column > row)
                    matrix.set(row, column, value);
                else if (column < row && matrix.at(column, row) != value)
                    detail::asymmetric(name, column, row,
                                       static_cast<double>(matrix.at(column, row)),
                                       static_cast<double>(value));
            }
            if (comma == std::string_view::npos) break;
            cells = cells.substr(comma + 1);
        }
        check_row(column + 1, row, rows, name);
        ++row;
    }
    return matrix;
}

std::string format_matrix_csv(const CommMatrix& matrix) {
    std::string out;
    for (std::size_t i = 0; i < matrix.size(); ++i) {
        for (std::size_t j = 0; j < matrix.size(); ++j) {
            if (j > 0) out += ',';
            out += std::to_string(matrix.at(i, j));
        }
        out += '\n';
    }
    return out;
}

nlohmann::json matrix_json(const CommMatrix& matrix, MatrixLayout layout,
                           std::span<const std::int64_t> tasks) {
    if (!tasks.empty() && tasks.size() != matrix.size())
        throw Error("task list of " + std::to_string(tasks.size()) + " ids",
                    "does not match the matrix of " + std::to_string(matrix.size()) + " tasks");
    nlohmann::json out{{"schema", kMatrixSchema}, {"dim", matrix.size()}};
    if (layout == MatrixLayout::kDense) {
        nlohmann::json rows = nlohmann::json::array();
        for (std::size_t i = 0; i < matrix.size(); ++i) {
            nlohmann::json row = nlohmann::json::array();
            for (std::size_t j = 0; j < matrix.size(); ++j) row.push_back(matrix.at(i, j));
            rows.push_back(std::move(row));
        }
        out["matrix"] = std::move(rows);
    } else {
        nlohmann::json entries = nlohmann::json::array();
        matrix.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value v) {
            entries.push_back({i, j, v});
        });
        out["entries"] = std::move(entries);
    }
    if (!tasks.empty()) out["tasks"] = std::vector<std::int64_t>(tasks.begin(), tasks.end());
    return out;
}

namespace {

CommMatrix dense_from_json(const nlohmann::json& rows, std::string_view name) {
    std::vector<double> values;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        if (!rows[r].is_array())
            throw Error(name, "matrix row " + std::to_string(r) + " is not an array");
        check_row(rows[r].size(), r, rows.size(), name);
        for (std::size_t c = 0; c < rows[r].size(); ++c) {
            if (!rows[r][c].is_number())
                throw Error(name, "row " + std::to_string(r) + ", column " + std::to_string(c) +
                                      ": " + rows[r][c].dump() + " is not a number");
            values.push_back(rows[r][c].get<double>());
        }
    }
    return CommMatrix::from_square(values, rows.size(), name);
}

// A whole number >= 0 (parsed JSON holds those as unsigned, a json built in C++ may not).
bool is_whole(const nlohmann::json& v) {
    return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
}

CommMatrix sparse_from_json(const nlohmann::json& dim, const nlohmann::json& entries,
                            std::string_view name) {
    if (!is_whole(dim)) throw Error(name, "has \"entries\" but no \"dim\"");
    const auto n = dim.get<std::uint64_t>();
    // A dim far beyond the entries would only allocate memory (the module tracks at most 8192
    // tasks).
    constexpr std::uint64_t kMaxSparseDim = 1u << 16;
    if (n > kMaxSparseDim)
        throw Error(name,
                    "\"dim\" " + std::to_string(n) + " is above " + std::to_string(kMaxSparseDim));
    CommMatrix matrix(n);
    for (std::size_t k = 0; k < entries.size(); ++k) {
        const auto& e = entries[k];
        const auto bad = [&](const std::string& why) {
            return Error(name, "entry " + std::to_string(k) + " " + e.dump() + ": " + why);
        };
        if (!e.is_array() || e.size() != 3 || !is_whole(e[0]) || !is_whole(e[1]) || !is_whole(e[2]))
            throw bad("is not [i, j, value] of whole numbers");
        const auto i = e[0].get<std::uint64_t>(), j = e[1].get<std::uint64_t>();
        if (i >= n || j >= n || i == j) throw bad("is not a pair of two tasks below dim");
        matrix.set(i, j, e[2].get<std::uint64_t>());
    }
    return matrix;
}

}  // namespace

CommMatrix matrix_from_json(const nlohmann::json& object, std::string_view name) {
    if (!object.is_object()) throw Error(name, "is not a JSON object");
    for (const char* dense : {"matrix", "cells"}) {
        if (const auto it = object.find(dense); it != object.end() && it->is_array())
            return dense_from_json(*it, name);
    }
    if (const auto it = object.find("entries"); it != object.end() && it->is_array())
        return sparse_from_json(object.contains("dim") ? object["dim"] : nlohmann::json(), *it,
                                name);
    throw Error(name, "has no \"matrix\" array");
}

TaskMatrix parse_matrix_json(std::string_view text, std::string_view name) {
    const auto json = nlohmann::json::parse(text, nullptr, false);
    if (json.is_discarded()) throw Error(name, "malformed JSON");
    TaskMatrix out{{}, matrix_from_json(json, name)};
    if (json.contains("tasks")) {
        const auto& tasks = json["tasks"];
        if (!tasks.is_array()) throw Error(name, "\"tasks\" is not an array");
        if (tasks.size() != out.matrix.size())
            throw Error(name, "lists " + std::to_string(tasks.size()) +
                                  " tasks but the matrix has " + std::to_string(out.matrix.size()) +
                                  " rows");
        // Ids, or (a matrix answer of cdsmd saved as it came) task objects with their "tid".
        for (const auto& task : tasks) {
            const auto& id = task.is_object() && task.contains("tid") ? task["tid"] : task;
            if (!id.is_number_integer())
                throw Error(name, "task id " + task.dump() + " is not an integer");
            out.tasks.push_back(id.get<std::int64_t>());
        }
    }
    return out;
}

std::string format_matrix_json(const CommMatrix& matrix, std::span<const std::int64_t> tasks) {
    return matrix_json(matrix, MatrixLayout::kDense, tasks).dump() + "\n";
}

TaskMatrix read_matrix_file(const std::filesystem::path& path) {
    const std::string text = read_text(path);
    if (path.extension() == ".json") return parse_matrix_json(text, path.string());
    if (path.extension() == ".csv") return {{}, parse_matrix_csv(text, path.string())};
    throw Error(path.string(), "unknown matrix format (expected .csv or .json)");
}

void write_matrix_file(const std::filesystem::path& path, const CommMatrix& matrix,
                       std::span<const std::int64_t> tasks) {
    std::string text;
    if (path.extension() == ".json")
        text = format_matrix_json(matrix, tasks);
    else if (path.extension() == ".csv")
        text = format_matrix_csv(matrix);
    else
        throw Error(path.string(), "unknown matrix format (expected .csv or .json)");
    std::ofstream out(path, std::ios::binary);
    if (!(out << text)) throw Error(path.string(), "cannot be written");
}

}  // namespace cdsm
