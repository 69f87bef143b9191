// SPDX-License-Identifier: GPL-2.0
#include "client.hpp"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cdsm/error.hpp"

namespace cdsmctl {
namespace {

// Replies carry whole matrices (a 1024-task one is several MiB); refuse only absurd sizes.
constexpr std::size_t kMaxReply = std::size_t{256} << 20;

}  // namespace

DaemonClient::DaemonClient(std::string socket_path) : path_(std::move(socket_path)) {}

DaemonClient::~DaemonClient() {
    if (fd_ >= 0) close(fd_);
}

void DaemonClient::connect() {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.empty() || path_.size() >= sizeof addr.sun_path)
        throw cdsm::Error(fmt::format("socket path '{}'", path_),
                          fmt::format("must have 1 to {} characters", sizeof addr.sun_path - 1));
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw cdsm::Error("socket()", std::strerror(errno));
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        close(fd_);
        fd_ = -1;
        const bool absent = err == ENOENT || err == ECONNREFUSED;
        throw cdsm::Error(fmt::format("cannot connect to cdsmd at {}: {}{}", path_,
                                      std::strerror(err), absent ? " (is cdsmd running?)" : ""));
    }
}

std::string DaemonClient::read_line() {
    for (;;) {
        if (const auto eol = buffer_.find('\n'); eol != std::string::npos) {
            std::string line = buffer_.substr(0, eol);
            buffer_.erase(0, eol + 1);
            return line;
        }
        if (buffer_.size() > kMaxReply)
            throw cdsm::Error(fmt::format("cdsmd at {}", path_),
                              "sent a reply line longer than 256 MiB");
        char chunk[65536];
        const ssize_t got = ::read(fd_, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            throw cdsm::Error(fmt::format("cdsmd at {}", path_),
                              fmt::format("reading the reply failed: {}", std::strerror(errno)));
        if (got == 0)
            throw cdsm::Error(fmt::format("cdsmd at {}", path_),
                              "closed the connection without replying");
        buffer_.append(chunk, static_cast<std::size_t>(got));
    }
}

nlohmann::json DaemonClient::request(const nlohmann::json& request) {
    if (fd_ < 0) connect();
    const std::string line = request.dump() + "\n";
    for (std::size_t sent = 0; sent < line.size();) {
        const ssize_t n = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            throw cdsm::Error(fmt::format("cdsmd at {}", path_),
                              fmt::format("sending the request failed: {}", std::strerror(errno)));
        sent += static_cast<std::size_t>(n);
    }
    const std::string text = read_line();
    auto reply = nlohmann::json::parse(text, nullptr, false);
    if (reply.is_discarded() || !reply.is_object() || !reply.contains("ok") ||
        !reply["ok"].is_boolean())
        throw cdsm::Error(
            fmt::format("cdsmd at {}", path_),
            fmt::format("sent a reply that is not protocol: '{}'", text.substr(0, 120)));
    if (!reply["ok"].get<bool>()) {
        const auto error = reply.value("error", std::string("request refused"));
        throw DaemonError(error, reply.value("code", std::string("EIO")));
    }
    reply.erase("ok");
    return reply;
}

}  // namespace cdsmctl
