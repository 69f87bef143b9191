// SPDX-License-Identifier: GPL-2.0
// `cdsmctl run -- COMMAND`: fork, have cdsmd track the child while it waits on a pipe, then let
// it exec the command, so that not one page fault of the program escapes tracking.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cdsm/error.hpp"
#include "commands.hpp"
#include "output.hpp"

namespace cdsm::cdsmctl {
namespace {

volatile sig_atomic_t g_child = 0;

void forward(int sig) {
    if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
}

// In the child: wait for the parent's go-ahead, then become the command.
[[noreturn]] void exec_when_tracked(int go_fd, const std::vector<std::string>& command) {
    char go = 0;
    ssize_t n;
    do n = read(go_fd, &go, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1) _exit(125);  // the parent could not have it tracked and has reported why
    std::vector<char*> argv;
    for (const auto& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    const int err = errno;
    std::fprintf(stderr, "cdsmctl: cannot run '%s': %s\n", argv[0], std::strerror(err));
    _exit(err == ENOENT ? 127 : 126);  // as shells report it
}

int wait_status(pid_t child) {
    int status = 0;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) throw cdsm::Error("waitpid()", std::strerror(errno));
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

}  // namespace

int run_tracked(CdsmdClient& client, const RunOptions& options) {
    if (options.command.empty())
        throw UsageError("run: no COMMAND given (cdsmctl run [--name N] [--] COMMAND [ARG...])");
    int go[2];
    if (pipe2(go, O_CLOEXEC) != 0) throw cdsm::Error("pipe()", std::strerror(errno));
    std::fflush(nullptr);
    const pid_t child = fork();
    if (child < 0) throw cdsm::Error("fork()", std::strerror(errno));
    if (child == 0) {
        close(go[1]);
        exec_when_tracked(go[0], options.command);
    }
    close(go[0]);

    const std::string name =
        options.name.empty() ? std::filesystem::path(options.command.front()).filename().string()
                             : options.name;
    nlohmann::json reply;
    try {
        nlohmann::json request{{"cmd", "track"}, {"pid", child}, {"name", name}};
        if (!options.mode.empty()) request["mode"] = options.mode;
        reply = client.request(request);
    } catch (...) {
        close(go[1]);  // the child exits without running the command
        wait_status(child);
        throw;
    }
    if (options.verbose)
        std::fprintf(stderr, "cdsmctl: %s (pid %d) is application %s\n", name.c_str(), child,
                     cell(field(reply, "app_id")).c_str());

    // A terminal's ^C and ^\ reach the child through its process group; signals sent to
    // cdsmctl alone (kill, a batch system) are passed on.
    g_child = child;
    struct sigaction ignore {
    }, pass{};
    ignore.sa_handler = SIG_IGN;
    pass.sa_handler = forward;
    sigemptyset(&pass.sa_mask);
    pass.sa_flags = SA_RESTART;
    sigaction(SIGINT, &ignore, nullptr);
    sigaction(SIGQUIT, &ignore, nullptr);
    for (int sig : {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) sigaction(sig, &pass, nullptr);

    const char start = 'g';
    if (write(go[1], &start, 1) != 1) {
        const int err = errno;
        close(go[1]);
        wait_status(child);
        throw cdsm::Error("starting the command", std::strerror(err));
    }
    close(go[1]);
    return wait_status(child);
}

}  // namespace cdsm::cdsmctl
