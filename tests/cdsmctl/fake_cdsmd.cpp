// SPDX-License-Identifier: GPL-2.0
#include "fake_cdsmd.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace cdsm::cdsmctl::test {

FakeCdsmd::FakeCdsmd(Handler handler)
    : handler_(std::move(handler)), path_((dir_.path() / "cdsmd.sock").string()) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) ||
        listen(listen_fd_, 8) || pipe(stop_))
        throw std::runtime_error("fake cdsmd: cannot listen on " + path_);
    thread_ = std::thread([this] { serve(); });
}

FakeCdsmd::~FakeCdsmd() {
    if (write(stop_[1], "x", 1) != 1) std::terminate();
    thread_.join();
    for (int fd : {listen_fd_, stop_[0], stop_[1]}) close(fd);
}

std::vector<nlohmann::json> FakeCdsmd::requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
}

void FakeCdsmd::serve() {
    for (;;) {
        pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
        poll(fds, 2, -1);
        if (fds[1].revents) return;
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        serve_connection(fd);
        close(fd);
    }
}

void FakeCdsmd::serve_connection(int fd) {
    std::string buffer;
    for (;;) {
        pollfd fds[2] = {{fd, POLLIN, 0}, {stop_[0], POLLIN, 0}};
        poll(fds, 2, -1);
        if (fds[1].revents) return;
        char chunk[4096];
        const ssize_t n = read(fd, chunk, sizeof chunk);
        if (n <= 0) return;
        buffer.append(chunk, static_cast<std::size_t>(n));
        for (auto eol = buffer.find('\n'); eol != std::string::npos; eol = buffer.find('\n')) {
            const auto request = nlohmann::json::parse(buffer.substr(0, eol));
            buffer.erase(0, eol + 1);
            {
                std::lock_guard lock(mutex_);
                requests_.push_back(request);
            }
            nlohmann::json reply = handler_(request);
            if (reply.contains("_close")) return;
            std::string line;
            if (reply.contains("_raw")) {
                line = reply["_raw"].get<std::string>();
            } else {
                if (!reply.contains("ok")) reply["ok"] = true;
                line = reply.dump() + "\n";
            }
            if (send(fd, line.data(), line.size(), MSG_NOSIGNAL) < 0) return;
        }
    }
}

nlohmann::json refusal(const std::string& error, const std::string& code) {
    return {{"ok", false}, {"error", error}, {"code", code}};
}

}  // namespace cdsm::cdsmctl::test
