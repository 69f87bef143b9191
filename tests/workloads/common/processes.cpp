// SPDX-License-Identifier: GPL-2.0
#include "processes.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>

#include "cli.hpp"
#include "system.hpp"

namespace cdsm::workloads {

namespace {

// The children, for the signal handler.
pid_t g_children[4096];
volatile sig_atomic_t g_child_count = 0;

void stop_children(int sig) {
    for (sig_atomic_t i = 0; i < g_child_count; ++i) kill(g_children[i], SIGTERM);
    signal(sig, SIG_DFL);
    raise(sig);
}

// SIGUSR1 (an early end, stop_early_on_sigusr1): the children end their runs too.
void forward_stop(int) {
    request_stop();
    for (sig_atomic_t i = 0; i < g_child_count; ++i) kill(g_children[i], SIGUSR1);
}

}  // namespace

ProcessTeam::ProcessTeam(int n, const std::string& program, const std::function<void(int)>& body)
    : program_(program), pids_{getpid()} {
    const pid_t parent = getpid();
    for (int i = 1; i < n; ++i) {
        const pid_t pid = fork();
        if (pid < 0) throw_errno("fork");
        if (pid == 0) {
            int code = kExitFailed;
            g_child_count = 0;  // a child forwards no signal to its elder siblings
            try {
                if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) throw_errno("prctl(PR_SET_PDEATHSIG)");
                if (getppid() == parent) {
                    body(i);
                    code = kExitOk;
                }
            } catch (const std::exception& e) {
                std::fprintf(stderr, "%s: error: process %d: %s\n", program.c_str(), i, e.what());
            }
            std::fflush(nullptr);
            _exit(code);
        }
        pids_.push_back(pid);
        g_children[g_child_count] = pid;
        g_child_count = g_child_count + 1;
    }
    signal(SIGINT, stop_children);
    signal(SIGTERM, stop_children);
    signal(SIGUSR1, forward_stop);
}

void ProcessTeam::stop() const {
    for (std::size_t i = 1; i < pids_.size(); ++i) kill(pids_[i], SIGTERM);
}

int ProcessTeam::wait() const {
    int failures = 0;
    for (std::size_t left = pids_.size() - 1; left > 0; --left) {
        int status = 0;
        const pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) throw_errno("waitpid");
        if ((!WIFEXITED(status) || WEXITSTATUS(status) != 0) && failures++ == 0) {
            std::fprintf(stderr, "%s: error: process %d failed (status 0x%x)\n", program_.c_str(),
                         pid, status);
            for (std::size_t i = 1; i < pids_.size(); ++i) kill(pids_[i], SIGKILL);
        }
    }
    return failures;
}

}  // namespace cdsm::workloads
