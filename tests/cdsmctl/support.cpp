// SPDX-License-Identifier: GPL-2.0
#include "support.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

extern char** environ;

namespace cdsm::cdsmctl::test {

Result cdsmctl(const std::vector<std::string>& args, const std::vector<std::string>& env,
               const std::string& input) {
    std::vector<std::string> command{CDSMCTL_BINARY};
    command.insert(command.end(), args.begin(), args.end());
    return run(command, env, input);
}

Result run(std::vector<std::string> argv_s, const std::vector<std::string>& env,
           const std::string& input) {
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "CDSM_SOCKET=", 12) != 0) env_s.emplace_back(*e);
    env_s.insert(env_s.end(), env.begin(), env.end());
    std::vector<char*> argv, envp;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);

    int in[2], out[2], err[2];
    if (pipe(in) || pipe(out) || pipe(err)) throw std::runtime_error("pipe failed");
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
        execve(argv[0], argv.data(), envp.data());
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    // Small inputs fit in the pipe; cdsmctl reads stdin only when told to.
    if (!input.empty() && write(in[1], input.data(), input.size()) < 0)
        throw std::runtime_error("writing cdsmctl's input failed");
    close(in[1]);
    Result r;
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    std::string* sinks[2] = {&r.out, &r.err};
    int open = 2;
    while (open > 0) {
        poll(fds, 2, -1);
        for (int k = 0; k < 2; ++k) {
            if (fds[k].fd < 0 || !fds[k].revents) continue;
            char buf[65536];
            const ssize_t n = read(fds[k].fd, buf, sizeof buf);
            if (n <= 0) {
                close(fds[k].fd);
                fds[k].fd = -1;
                --open;
            } else {
                sinks[k]->append(buf, static_cast<std::size_t>(n));
            }
        }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    r.status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    return r;
}

TempDir::TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cdsmctl-test-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
    const auto file = path_ / name;
    std::ofstream(file, std::ios::binary) << text;
    return file.string();
}

std::string data(const std::string& name) {
    return std::string(CDSMCTL_TEST_DATA) + "/" + name;
}

cdsm::CommMatrix mirrored_pairs(std::size_t n, cdsm::CommMatrix::Value strong,
                                cdsm::CommMatrix::Value weak) {
    cdsm::CommMatrix m(n);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) m.set(i, j, j == n - 1 - i ? strong : weak);
    return m;
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < text.size()) {
        const auto eol = text.find('\n', start);
        out.push_back(text.substr(start, eol - start));
        if (eol == std::string::npos) break;
        start = eol + 1;
    }
    return out;
}

bool one_line(const std::string& text) {
    return !text.empty() && text.back() == '\n' && text.find('\n') == text.size() - 1;
}

}  // namespace cdsm::cdsmctl::test
