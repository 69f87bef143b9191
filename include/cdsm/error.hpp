// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cerrno>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace cdsm {

/// What libcdsm throws for bad input. Its message names the input that was wrong and what was
/// wrong with it, e.g. "matrix.csv: row 3 has 4 values, expected 5 (the matrix must be square)".
class Error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;

    /// Builds the message "<input>: <problem>".
    Error(std::string_view input, std::string_view problem);
};

/// What libcdsm throws when a system call failed (the kernel client, the control socket): the
/// message names the call (and its object) and the errno text, e.g. "CDSM_IOC_GET_MATRIX
/// (application 3): No such file or directory". code() holds the errno.
class SystemError : public std::system_error {
  public:
    SystemError(int err, const std::string& call)
        : std::system_error(err, std::generic_category(), call) {}
    int err() const noexcept { return code().value(); }
};

/// Throws SystemError(errno, call).
[[noreturn]] inline void throw_errno(const std::string& call) {
    throw SystemError(errno, call);
}

}  // namespace cdsm
