// SPDX-License-Identifier: GPL-2.0
// Line by line through a text held in memory (the cluster's input files), with line numbers
// for error messages. Internal to libcdsm.
#pragma once

#include <cstddef>
#include <string_view>

namespace cdsm::detail {

class TextLines {
  public:
    explicit TextLines(std::string_view text) : rest_(text) {}

    /// The next line, without its newline (and a '\r' before it); false at the end.
    bool next(std::string_view& line) {
        if (rest_.empty()) return false;
        const std::size_t eol = rest_.find('\n');
        line = rest_.substr(0, eol);
        rest_.remove_prefix(eol == std::string_view::npos ? rest_.size() : eol + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        ++number_;
        return true;
    }
    /// The number of the line next() returned last, from 1.
    std::size_t number() const noexcept { return number_; }

  private:
    std::string_view rest_;
    std::size_t number_ = 0;
};

}  // namespace cdsm::detail
