// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cdsm/control.hpp"

namespace cdsm::cdsmd {

/// What one user may hold of the control server (cdsmd.toml [daemon], docs/protocol.md).
struct ServerLimits {
    /// Connections open at once, root's not counted (root always gets one). When they are all
    /// taken, a uid holding fewer than another by two or more takes the slot of that one's least
    /// recently active connection (ControlServer::make_room).
    std::size_t max_clients = 128;
    /// Connections one uid may have open at once (root's too).
    std::size_t max_clients_per_user = 16;
    /// A connection with no request answered and no answer byte taken for this long is closed
    /// (a request sent in part does not count).
    std::chrono::milliseconds client_timeout{30000};
    /// A connection whose unsent answers exceed this many bytes is not read (and its buffered
    /// requests not answered) until they are below it: one answer is at most one request late.
    std::size_t output_cap = 256u << 10;
};

/// A connection as ControlServer's fairness sees it.
struct HeldConnection {
    uid_t uid = 0;
    std::chrono::steady_clock::time_point active;  ///< last request answered or answer byte sent
};
/// When every connection slot is taken: which of `held` a new peer of uid `newcomer` takes the
/// place of, if any: the least recently active connection of the uid holding the most (root's
/// not counted), if that uid holds two more than `newcomer`.
std::optional<std::size_t> connection_to_evict(const std::vector<HeldConnection>& held,
                                               uid_t newcomer);

/// The control socket (docs/protocol.md): a non-blocking Unix stream server that reads request
/// lines, passes each with the peer's credentials (SO_PEERCRED, SO_PEERGROUPS, taken when it
/// connected) to a handler, and writes back the responses in order. Single-threaded: poll fd()
/// and call dispatch() when it is readable, and expire() now and then (every second will do).
class ControlServer {
  public:
    /// Returns the response members; throws ProtocolError (its code), SystemError (errno code),
    /// cdsm::Error ("EINVAL") or anything else ("EIO") to answer an error.
    using Handler =
        std::function<control::Json(const control::Json&, const control::PeerCredentials&)>;

    /// Creates the socket's directory (0755) if needed, refuses to start when another server
    /// answers on `path`, removes a stale socket, binds, and makes the socket 0666 (access is
    /// decided per request, from the peer's credentials). Throws SystemError.
    ControlServer(std::string path, Handler handler, ServerLimits limits = {});
    ~ControlServer();
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    /// An epoll descriptor that is readable when dispatch() has work.
    int fd() const noexcept { return epoll_.get(); }
    /// Accepts, reads, answers and writes whatever is ready, without blocking: one request per
    /// connection and call, round robin.
    void dispatch();
    /// Requests were read and are not answered yet: call dispatch() again without waiting.
    bool busy() const noexcept { return !backlog_.empty(); }
    /// Closes the connections idle for longer than the limit.
    void expire();
    const std::string& path() const noexcept { return path_; }
    void set_limits(const ServerLimits& limits) { limits_ = limits; }
    std::size_t connections() const noexcept { return connections_.size(); }

    /// Runs a handler and turns its exception into an error response.
    static control::Json answer(const Handler& handler, const std::string& line,
                                const control::PeerCredentials& peer);

  private:
    using Clock = std::chrono::steady_clock;
    struct Connection {
        Fd fd;
        control::PeerCredentials peer;
        control::LineBuffer in{control::kMaxRequestBytes};
        std::string out;
        Clock::time_point active;  ///< last request answered or answer byte sent
        bool eof = false;          ///< the peer sent all it will send
        bool broken = false;       ///< an overlong request: answered, then hung up on
    };
    /// Why a new peer may not connect now (empty: it may).
    std::string refusal(const control::PeerCredentials& peer) const;
    /// With every slot taken: closes the least recently active connection of the uid holding
    /// the most, if it holds two more than `peer`'s uid; whether it did.
    bool make_room(const control::PeerCredentials& peer);
    void accept_all();
    void serve(int fd, std::uint32_t events);
    void read_requests(Connection& c);
    void answer_one(Connection& c);
    /// Sends what it can; false when the connection broke.
    bool flush(Connection& c);
    /// Read more only when every request read is answered and the answers are under the cap:
    /// what a connection holds stays bounded by one read and one answer.
    bool reading(const Connection& c) const {
        return !c.eof && !c.broken && c.out.size() <= limits_.output_cap && !c.in.has_line();
    }
    void update_interest(Connection& c);
    void close(int fd);

    std::string path_;
    Handler handler_;
    ServerLimits limits_;
    Fd epoll_;
    Fd listen_;
    std::map<int, Connection> connections_;
    std::set<int> backlog_;  ///< connections with requests read and not yet answered
};

}  // namespace cdsm::cdsmd
