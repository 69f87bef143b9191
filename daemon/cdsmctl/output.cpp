// SPDX-License-Identifier: GPL-2.0
#include "output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "cdsm/error.hpp"

namespace cdsm::cdsmctl {
namespace {

bool looks_numeric(const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789.-x") == std::string::npos && s != "-";
}

}  // namespace

Table::Table(std::vector<std::string> header) : header_(std::move(header)) {}

void Table::add(std::vector<std::string> row) {
    row.resize(header_.size());
    rows_.push_back(std::move(row));
}

void Table::print(std::ostream& out) const {
    std::vector<std::size_t> width(header_.size());
    for (std::size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
    for (const auto& row : rows_)
        for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    auto line = [&](const std::vector<std::string>& row, bool header) {
        std::string text;
        for (std::size_t c = 0; c < row.size(); ++c) {
            const bool last = c + 1 == row.size();
            const bool right = !header && looks_numeric(row[c]);
            if (c > 0) text += "  ";
            if (right)
                text += fmt::format("{:>{}}", row[c], width[c]);
            else if (last)
                text += row[c];
            else
                text += fmt::format("{:<{}}", row[c], width[c]);
        }
        while (!text.empty() && text.back() == ' ') text.pop_back();
        out << text << '\n';
    };
    line(header_, true);
    for (const auto& row : rows_) line(row, false);
}

std::string read_file_text(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw cdsm::Error(path, "cannot be read");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void write_file_text(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    out.flush();
    if (!out) throw cdsm::Error(path, "cannot be written");
}

std::string format_number(double value) {
    if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e18)
        return fmt::format("{}", static_cast<std::int64_t>(value));
    return fmt::format("{:.2f}", value);
}

std::string cell(const nlohmann::json& value) {
    if (value.is_null()) return "-";
    if (value.is_string()) return value.get<std::string>();
    if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
    if (value.is_number()) return format_number(value.get<double>());
    return value.dump();
}

const nlohmann::json& field(const nlohmann::json& object, const char* name) {
    static const nlohmann::json null;
    if (!object.is_object()) return null;
    const auto it = object.find(name);
    return it == object.end() ? null : *it;
}

std::optional<std::int64_t> optional_int(const nlohmann::json& object, const char* name) {
    const auto& value = field(object, name);
    if (!value.is_number_integer()) return std::nullopt;
    return value.get<std::int64_t>();
}

void print_json(std::ostream& out, const nlohmann::json& value) {
    // Names come from files, hwloc and cdsmd (a task's comm can hold any byte): bytes that are
    // not UTF-8 are replaced rather than thrown, as cdsmd's encode_line does.
    out << value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

}  // namespace cdsm::cdsmctl
