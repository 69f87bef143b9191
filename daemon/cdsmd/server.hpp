// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <functional>
#include <map>
#include <string>

#include "cdsm/daemon/protocol.hpp"

namespace cdsm::cdsmd {

/// The control socket (daemon/PROTOCOL.md): a non-blocking Unix stream server that reads request
/// lines, passes each with the peer's credentials (SO_PEERCRED) to a handler, and writes back
/// the responses in order. Single-threaded: poll fd() and call dispatch() when it is readable.
class ControlServer {
  public:
    /// Returns the response members; throws ProtocolError (its code), SystemError (errno code),
    /// cdsm::Error ("EINVAL") or anything else ("EIO") to answer an error.
    using Handler =
        std::function<daemon::Json(const daemon::Json&, const daemon::PeerCredentials&)>;

    /// Creates the socket's directory (0755) if needed, refuses to start when another server
    /// answers on `path`, removes a stale socket, binds, and makes the socket 0666 (access is
    /// decided per request, from the peer's credentials). Throws SystemError.
    ControlServer(std::string path, Handler handler);
    ~ControlServer();
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    /// An epoll descriptor that is readable when dispatch() has work.
    int fd() const noexcept { return epoll_.get(); }
    /// Accepts, reads, answers and writes whatever is ready, without blocking.
    void dispatch();
    const std::string& path() const noexcept { return path_; }

    /// Runs a handler and turns its exception into an error response.
    static daemon::Json answer(const Handler& handler, const std::string& line,
                               const daemon::PeerCredentials& peer);

  private:
    struct Connection {
        daemon::Fd fd;
        daemon::PeerCredentials peer;
        daemon::LineBuffer in{daemon::kMaxRequestBytes};
        std::string out;
    };
    void accept_all();
    void serve(int fd, std::uint32_t events);
    void update_interest(Connection& c);

    std::string path_;
    Handler handler_;
    daemon::Fd epoll_;
    daemon::Fd listen_;
    std::map<int, Connection> connections_;
};

}  // namespace cdsm::cdsmd
