// SPDX-License-Identifier: GPL-2.0
#pragma once

namespace cdsm::cdsmctl {

/// cdsmctl's main(): parses the command line, runs the subcommand, prints errors as one line
/// on stderr and returns the exit status (0, 1 for failures, 2 for usage errors, or the status
/// of the command `run` started).
int main(int argc, char** argv);

}  // namespace cdsm::cdsmctl
