// SPDX-License-Identifier: GPL-2.0
// Running the cdsmctl binary as a user would, and scratch files for it.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cdsm/comm_matrix.hpp"

namespace cdsm::cdsmctl::test {

struct Result {
    int status = -1;  ///< exit status, or 128+signal
    std::string out;
    std::string err;
};

/// Runs cdsmctl with `args`. Its environment is the test's without CDSM_SOCKET, plus `env`
/// ("NAME=value"); `input` is its standard input.
Result cdsmctl(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
               const std::string& input = "");
/// Runs a program (command[0], a path) as cdsmctl() runs cdsmctl.
Result run(std::vector<std::string> command, const std::vector<std::string>& env = {},
           const std::string& input = "");

/// A directory removed with everything in it at the end of the test.
class TempDir {
  public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const noexcept { return path_; }
    /// Writes `text` to a file of the directory and returns its path.
    std::string write(const std::string& name, const std::string& text) const;

  private:
    std::filesystem::path path_;
};

/// One of tests/cdsmctl/data/.
std::string data(const std::string& name);

/// N tasks in N/2 pairs: task i with task N-1-i (`strong` events), every other pair `weak`.
/// Mirrored so that neither compact nor scatter placement puts partners together.
cdsm::CommMatrix mirrored_pairs(std::size_t n, cdsm::CommMatrix::Value strong = 100,
                                cdsm::CommMatrix::Value weak = 1);

/// Lines of a text.
std::vector<std::string> lines(const std::string& text);

/// The one line of an error message, or a failure naming what was printed instead.
bool one_line(const std::string& text);

}  // namespace cdsm::cdsmctl::test
