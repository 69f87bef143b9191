// SPDX-License-Identifier: GPL-2.0
// What every subcommand prints with: aligned tables, CPU lists, numbers, and the two kinds of
// error that decide cdsmctl's exit status.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace cdsm::cdsmctl {

/// A command line that cannot be run as given: exit status 2. Every other error exits with 1.
class UsageError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

/// Columns of text aligned on their widest cell; numbers are right-aligned.
class Table {
  public:
    explicit Table(std::vector<std::string> header);
    void add(std::vector<std::string> row);
    void print(std::ostream& out) const;

  private:
    std::vector<std::string> header_;
    std::vector<std::vector<std::string>> rows_;
};

/// A cost or event count as shown in tables: whole numbers without a fraction, others with two
/// decimals.
std::string format_number(double value);

/// A whole text file; cdsm::Error "PATH: cannot be read" if it cannot be.
std::string read_file_text(const std::string& path);
/// Writes `text` to `path`; cdsm::Error "PATH: cannot be written" if it cannot.
void write_file_text(const std::string& path, const std::string& text);

/// A JSON value as a table cell: numbers and strings plainly, null as "-".
std::string cell(const nlohmann::json& value);

/// A member of a JSON object, or null when absent: what cdsmd sends may gain or lose optional
/// fields without breaking the tool.
const nlohmann::json& field(const nlohmann::json& object, const char* name);

/// An optional integer member (absent or null gives nothing).
std::optional<std::int64_t> optional_int(const nlohmann::json& object, const char* name);

/// Prints JSON the way every --json output is printed: indented, one trailing newline, bytes
/// that are not UTF-8 replaced by U+FFFD.
void print_json(std::ostream& out, const nlohmann::json& value);

}  // namespace cdsm::cdsmctl
