// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace cdsm {

/// The one exception type of libcdsm. Its message names the input that was wrong and what was
/// wrong with it, e.g. "matrix.csv: row 3 has 4 values, expected 5 (the matrix must be square)".
class Error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;

    /// Builds the message "<input>: <problem>".
    Error(std::string_view input, std::string_view problem);
};

}  // namespace cdsm
