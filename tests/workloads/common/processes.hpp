// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <functional>
#include <span>
#include <string>
#include <vector>

namespace cdsm::workloads {

/// The processes of a multi-process workload: the caller is process 0 and forks the others.
/// Children die with the first process (PR_SET_PDEATHSIG); on SIGINT/SIGTERM the first process
/// terminates the children and dies of the signal.
class ProcessTeam {
  public:
    /// Forks processes 1..n-1, each running `body(index)`: exit 0 when it returns, 1 when it
    /// throws (one line "PROGRAM: error: process I: ..." on stderr). Throws on a failed fork.
    ProcessTeam(int n, const std::string& program, const std::function<void(int)>& body);
    /// Every process's pid, index 0 the caller's.
    std::span<const pid_t> pids() const { return pids_; }
    /// Terminates the children (SIGTERM).
    void stop() const;
    /// Waits for every child. The first that fails is reported and makes the others killed
    /// (SIGKILL): a dead process leaves its partners waiting. Returns the number of failures.
    int wait() const;

  private:
    std::string program_;
    std::vector<pid_t> pids_;
};

}  // namespace cdsm::workloads
