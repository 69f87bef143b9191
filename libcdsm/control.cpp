// SPDX-License-Identifier: GPL-2.0
#include "cdsm/control.hpp"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace cdsm::control {

std::string socket_path(std::string_view option) {
    if (!option.empty()) return std::string(option);
    if (const char* env = std::getenv(kSocketEnv); env && *env) return env;
    return std::string(kDefaultSocketPath);
}

std::string errno_code(int err) {
    switch (err) {
#define CDSM_ERRNO(e) \
    case e:           \
        return #e;
        CDSM_ERRNO(ENOENT)
        CDSM_ERRNO(EPERM)
        CDSM_ERRNO(EACCES)
        CDSM_ERRNO(EINVAL)
        CDSM_ERRNO(EEXIST)
        CDSM_ERRNO(ESRCH)
        CDSM_ERRNO(ENOSPC)
        CDSM_ERRNO(EBUSY)
        CDSM_ERRNO(ENODEV)
        CDSM_ERRNO(E2BIG)
        CDSM_ERRNO(EFAULT)
        CDSM_ERRNO(ENOTTY)
        CDSM_ERRNO(EPROTO)
        CDSM_ERRNO(ECONNREFUSED)
#undef CDSM_ERRNO
        default:
            return "EIO";
    }
}

Json ok_response(Json result) {
    Json r = Json::object();
    r["ok"] = true;
    if (result.is_object()) r.update(result);
    return r;
}

Json error_response(std::string_view code, std::string_view message) {
    return Json{{"ok", false}, {"error", message}, {"code", code}};
}

std::string encode_line(const Json& message) {
    // dump() escapes control characters, so the only '\n' is the terminator. Invalid UTF-8
    // (a task's comm can hold any byte) is replaced rather than thrown.
    std::string line = message.dump(-1, ' ', false, Json::error_handler_t::replace);
    line.push_back('\n');
    return line;
}

void LineBuffer::append(std::string_view bytes) {
    data_.append(bytes);
    if (data_.find('\n', scanned_) == std::string::npos) {
        scanned_ = data_.size();
        if (data_.size() > max_bytes_) {
            throw ProtocolError("EPROTO", fmt::format("message longer than {} bytes", max_bytes_));
        }
    }
}

std::optional<std::string> LineBuffer::next_line() {
    const auto nl = data_.find('\n');
    if (nl == std::string::npos) {
        scanned_ = data_.size();
        return std::nullopt;
    }
    std::string line = data_.substr(0, nl);
    data_.erase(0, nl + 1);
    scanned_ = 0;
    if (line.size() > max_bytes_) {
        throw ProtocolError("EPROTO", fmt::format("message longer than {} bytes", max_bytes_));
    }
    return line;
}

Json parse_line(std::string_view line) {
    // The parser itself does not recurse, but everything that walks the result does (dump,
    // comparisons): a line of a few hundred thousand '[' would overflow the stack there.
    const auto bounded = [](int depth, Json::parse_event_t event, Json&) {
        if ((event == Json::parse_event_t::object_start ||
             event == Json::parse_event_t::array_start) &&
            depth >= kMaxDepth) {
            throw ProtocolError("EPROTO",
                                fmt::format("message nested more than {} levels deep", kMaxDepth));
        }
        return true;
    };
    Json j = Json::parse(line, bounded, false);
    if (j.is_discarded()) throw ProtocolError("EPROTO", "message is not valid JSON");
    if (!j.is_object()) throw ProtocolError("EPROTO", "message is not a JSON object");
    return j;
}

PeerCredentials peer_credentials(int socket_fd) {
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
        throw_errno("getsockopt(SO_PEERCRED)");
    }
    PeerCredentials c{cred.pid, cred.uid, cred.gid, {}};
    // SO_PEERGROUPS answers ERANGE with the size it needs when the buffer is too small.
    for (std::size_t n = 16;;) {
        c.groups.resize(n);
        len = socklen_t(n * sizeof(gid_t));
        if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERGROUPS, c.groups.data(), &len) == 0) {
            c.groups.resize(len / sizeof(gid_t));
            return c;
        }
        if (errno != ERANGE || len / sizeof(gid_t) <= n) throw_errno("getsockopt(SO_PEERGROUPS)");
        n = len / sizeof(gid_t);
    }
}

Client::Client(const std::string& path) : path_(path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path)) {
        throw ProtocolError("EINVAL", fmt::format("socket path too long: {}", path));
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd_) throw ProtocolError("EIO", fmt::format("socket: {}", std::strerror(errno)));
    if (::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) < 0) {
        const int err = errno;
        throw ProtocolError(err == ENOENT   ? "ENOENT"
                            : err == EACCES ? "EACCES"
                                            : "ECONNREFUSED",
                            fmt::format("cannot connect to cdsmd at {}: {} (is cdsmd running?)",
                                        path, std::strerror(err)));
    }
}

Json Client::request(const Json& request) {
    std::string line = encode_line(request);
    line.pop_back();
    return request_line(line);
}

void Client::send_raw(std::string_view line) {
    for (std::size_t done = 0; done < line.size();) {
        const ssize_t n = ::send(fd_.get(), line.data() + done, line.size() - done, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            // The server may have refused the request and hung up: read its answer.
            if (errno == EPIPE || errno == ECONNRESET) break;
            throw ProtocolError(
                "EIO", fmt::format("sending to cdsmd at {}: {}", path_, std::strerror(errno)));
        }
        done += static_cast<std::size_t>(n);
    }
}

Json Client::request_line(std::string_view line) {
    send_raw(std::string(line) + "\n");
    for (;;) {
        if (auto reply = buffer_.next_line()) {
            Json r = parse_line(*reply);
            if (r.value("ok", false)) {
                r.erase("ok");
                return r;
            }
            throw ProtocolError(r.value("code", "EIO"),
                                r.value("error", std::string("cdsmd reported an error")));
        }
        char buf[65536];
        const ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            throw ProtocolError("EIO", fmt::format("cdsmd at {} closed the connection{}", path_,
                                                   n < 0 ? std::string(": ") + std::strerror(errno)
                                                         : std::string()));
        }
        buffer_.append(std::string_view(buf, static_cast<std::size_t>(n)));
    }
}

}  // namespace cdsm::control
