// SPDX-License-Identifier: GPL-2.0
#include "cdsm/matrix_io.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

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
    // In blocks into room for the whole file: one copy of it in memory, not two.
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    std::string text;
    if (!ec) text.reserve(size);
    std::array<char, 1 << 16> block;
    while (in.read(block.data(), block.size()) || in.gcount() > 0)
        text.append(block.data(), static_cast<std::size_t>(in.gcount()));
    return text;
}

bool is_blank(char c) {
    return c == ' ' || c == '\t';
}

// The cell starting at `p` when it is a plain count ([ \t]*digits[ \t\r]*, at most 19 digits:
// no overflow) before the line's end or a comma, which `p` is then left at; nullopt for
// anything else, which parse_count() reads or rejects. A 4096-task CSV has 16.8 M cells.
std::optional<CommMatrix::Value> plain_count(const char*& p, const char* end) {
    const char* q = p;
    while (q != end && is_blank(*q)) ++q;
    const char* const digits = q;
    CommMatrix::Value value = 0;
    while (q != end && *q >= '0' && *q <= '9' && q - digits < 19)
        value = value * 10 + static_cast<CommMatrix::Value>(*q++ - '0');
    if (q == digits) return std::nullopt;
    while (q != end && (is_blank(*q) || *q == '\r')) ++q;
    if (q != end && *q != ',') return std::nullopt;
    p = q;
    return value;
}

// Fills a matrix row by row, in the order of the text: the upper triangle is stored, and each
// cell below the diagonal must equal the pair its row stored before. While the matrix is
// sparse a pair is a binary search away; the non-zero pairs of each column, listed as they are
// stored (by rows), turn the check into a walk down the list.
class SymmetricFill {
  public:
    SymmetricFill(CommMatrix& matrix, std::string_view name)
        : matrix_(matrix), name_(name), columns_(matrix.is_sparse() ? matrix.size() : 0) {}

    void start_row(std::size_t row) {
        if (!columns_.empty() && row > 0) columns_[row - 1] = {};  // checked: no longer needed
        row_ = row;
        next_ = 0;
        if (!matrix_.is_sparse()) columns_ = {};  // it became dense: at() is an index
    }

    void cell(std::size_t column, CommMatrix::Value value) {
        if (column > row_) {
            if (value == 0) return;
            matrix_.set(row_, column, value);
            if (!columns_.empty()) columns_[column].push_back({row_, value});
            return;
        }
        if (column == row_) return;
        const CommMatrix::Value upper = stored(column);
        if (upper != value)
            detail::asymmetric(name_, column, row_, static_cast<double>(upper),
                               static_cast<double>(value));
    }

  private:
    struct Pair {
        std::size_t row;
        CommMatrix::Value value;
    };

    // The pair (column, row_), column < row_, the cells of a row coming in column order.
    CommMatrix::Value stored(std::size_t column) {
        if (columns_.empty()) return matrix_.at(column, row_);
        const auto& pairs = columns_[row_];
        if (next_ < pairs.size() && pairs[next_].row == column) return pairs[next_++].value;
        return 0;
    }

    CommMatrix& matrix_;
    std::string_view name_;
    std::vector<std::vector<Pair>> columns_;  // while sparse: column j's pairs (i < j, value)
    std::size_t row_ = 0, next_ = 0;
};

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
    SymmetricFill fill(matrix, name);
    std::size_t row = 0;
    for (std::string_view rest = text; !rest.empty();) {
        const std::string_view line = next_line(rest);
        if (line.empty()) continue;
        fill.start_row(row);
        const char* p = line.data();
        const char* const end = p + line.size();
        std::size_t column = 0;
        for (; column < rows; ++column) {
            std::optional<CommMatrix::Value> value;
            if (end - p >= 2 && p[0] == '0' && p[1] == ',') {
                // The commonest cell, read in place: plain_count's checks for blanks and digits
                // were 42 % of a 4096-task `cdsmctl map` of a stencil (bench/mapping/README.md).
                value = 0;
                ++p;
            } else {
                value = plain_count(p, end);
            }
            if (!value) {
                const auto* comma = static_cast<const char*>(std::memchr(p, ',', end - p));
                const char* token_end = comma ? comma : end;
                value = parse_count({p, token_end}, name, row, column);
                p = token_end;
            }
            fill.cell(column, *value);
            if (p == end) break;
            ++p;  // the comma
        }
        // Cells past the last column are counted, not read.
        if (column == rows) column += static_cast<std::size_t>(std::count(p, end, ','));
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
