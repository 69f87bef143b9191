// SPDX-License-Identifier: GPL-2.0
#include "server.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cdsm/error.hpp>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

namespace cdsm::cdsmd {

using control::Json;

namespace {

sockaddr_un address(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path)) {
        throw SystemError(ENAMETOOLONG, "control socket " + path);
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    return addr;
}

bool someone_listens(const sockaddr_un& addr) {
    Fd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    return probe &&
           ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
}

}  // namespace

ControlServer::ControlServer(std::string path, Handler handler, ServerLimits limits)
    : path_(std::move(path)), handler_(std::move(handler)), limits_(limits) {
    const sockaddr_un addr = address(path_);
    const auto dir = std::filesystem::path(path_).parent_path();
    if (!dir.empty() && !std::filesystem::exists(dir)) {
        std::filesystem::create_directories(dir);
        ::chmod(dir.c_str(), 0755);
    }
    if (someone_listens(addr)) {
        throw SystemError(EADDRINUSE,
                          fmt::format("control socket {}: another cdsmd answers there", path_));
    }
    ::unlink(path_.c_str());
    listen_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!listen_) throw_errno("socket");
    if (::bind(listen_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) < 0) {
        throw_errno("bind " + path_);
    }
    if (::chmod(path_.c_str(), 0666) < 0) throw_errno("chmod " + path_);
    if (::listen(listen_.get(), 64) < 0) throw_errno("listen " + path_);
    epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_) throw_errno("epoll_create1");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_.get();
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listen_.get(), &ev) < 0) {
        throw_errno("epoll_ctl");
    }
}

ControlServer::~ControlServer() {
    ::unlink(path_.c_str());
}

Json ControlServer::answer(const Handler& handler, const std::string& line,
                           const control::PeerCredentials& peer) {
    try {
        return control::ok_response(handler(control::parse_line(line), peer));
    } catch (const control::ProtocolError& e) {
        return control::error_response(e.code(), e.what());
    } catch (const SystemError& e) {
        return control::error_response(control::errno_code(e.err()), e.what());
    } catch (const cdsm::Error& e) {
        return control::error_response("EINVAL", e.what());
    } catch (const Json::exception& e) {
        return control::error_response("EINVAL", fmt::format("bad request: {}", e.what()));
    } catch (const std::exception& e) {
        return control::error_response("EIO", e.what());
    }
}

void ControlServer::dispatch() {
    epoll_event events[32];
    const int n = ::epoll_wait(epoll_.get(), events, 32, 0);
    std::set<int> served;
    for (int i = 0; i < n; ++i) {
        if (events[i].data.fd == listen_.get()) {
            accept_all();
        } else {
            serve(events[i].data.fd, events[i].events);
            served.insert(events[i].data.fd);
        }
    }
    // The others with requests read and not answered yet get their turn too.
    for (int fd : std::vector<int>(backlog_.begin(), backlog_.end())) {
        if (!served.count(fd)) serve(fd, 0);
    }
}

namespace {

// refusal() when every slot is taken (make_room() may free one).
constexpr std::string_view kFull =
    "cdsmd has as many connections open as it takes, and no other uid holds two more than this "
    "one";

}  // namespace

std::string ControlServer::refusal(const control::PeerCredentials& peer) const {
    std::size_t mine = 0, others = 0;
    for (const auto& [fd, c] : connections_) {
        mine += c.peer.uid == peer.uid;
        others += c.peer.uid != 0;
    }
    if (mine >= limits_.max_clients_per_user) {
        return fmt::format("uid {} has {} connections open to cdsmd, the most one user may have",
                           peer.uid, mine);
    }
    if (peer.uid != 0 && others >= limits_.max_clients) return std::string(kFull);
    return {};
}

std::optional<std::size_t> connection_to_evict(const std::vector<HeldConnection>& held,
                                               uid_t newcomer) {
    // cdsmd is full of others' connections. A user with subordinate uids (a different kernel
    // uid each) could hold every slot under the per-uid limit and keep other users, and the
    // Slurm plugin's report children (the job's uid), out for good. So a newcomer whose uid
    // holds fewer connections than the uid holding the most, by two or more, takes the slot of
    // that uid's least recently active connection: every uid can get its share, and two uids
    // one apart do not take turns.
    std::map<uid_t, std::size_t> count;
    for (const HeldConnection& h : held)
        if (h.uid != 0) ++count[h.uid];
    uid_t top = 0;
    std::size_t most = 0;
    for (const auto& [uid, n] : count) {
        if (n > most) top = uid, most = n;
    }
    const std::size_t mine = count.count(newcomer) ? count.at(newcomer) : 0;
    if (most < mine + 2) return std::nullopt;
    std::optional<std::size_t> oldest;
    for (std::size_t k = 0; k < held.size(); ++k) {
        if (held[k].uid == top && (!oldest || held[k].active < held[*oldest].active)) oldest = k;
    }
    return oldest;
}

bool ControlServer::make_room(const control::PeerCredentials& peer) {
    std::vector<HeldConnection> held;
    std::vector<int> fds;
    for (const auto& [fd, c] : connections_) {
        held.push_back({c.peer.uid, c.active});
        fds.push_back(fd);
    }
    const auto k = connection_to_evict(held, peer.uid);
    if (!k) return false;
    Connection& c = connections_.at(fds[*k]);
    const std::string why = fmt::format(
        "closed to make room for another user: cdsmd has {} connections open, the most it "
        "takes, and uid {} holds the most of them",
        limits_.max_clients, c.peer.uid);
    const std::string line = control::encode_line(control::error_response("EBUSY", why));
    (void)!::send(c.fd.get(), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    spdlog::info(
        "control socket: closing the connection of pid {} (uid {}) to make room for uid {}",
        c.peer.pid, c.peer.uid, peer.uid);
    close(fds[*k]);
    return true;
}

void ControlServer::accept_all() {
    for (;;) {
        Fd fd(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
        if (!fd) return;
        Connection c;
        try {
            c.peer = control::peer_credentials(fd.get());
        } catch (const std::exception& e) {
            spdlog::warn("control socket: {}", e.what());
            continue;
        }
        std::string why = refusal(c.peer);
        if (why == kFull && make_room(c.peer)) why.clear();
        if (!why.empty()) {
            // Said once into the new socket's empty buffer, then hung up.
            const std::string line = control::encode_line(control::error_response("EBUSY", why));
            (void)!::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
            spdlog::warn("control socket: refused pid {}: {}", c.peer.pid, why);
            continue;
        }
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.fd = fd.get();
        if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd.get(), &ev) < 0) continue;
        const int key = fd.get();
        c.fd = std::move(fd);
        c.active = Clock::now();
        connections_.emplace(key, std::move(c));
    }
}

void ControlServer::update_interest(Connection& c) {
    epoll_event ev{};
    ev.events = (reading(c) ? unsigned(EPOLLIN | EPOLLRDHUP) : 0u) |
                (c.out.empty() ? 0u : unsigned(EPOLLOUT));
    ev.data.fd = c.fd.get();
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
}

void ControlServer::answer_one(Connection& c) {
    if (c.broken || c.out.size() > limits_.output_cap) return;
    try {
        if (const auto line = c.in.next_line()) {
            c.out += control::encode_line(answer(handler_, *line, c.peer));
            c.active = Clock::now();
        }
    } catch (const control::ProtocolError& e) {
        // An overlong request: answer once, then hang up (the rest of it is not read).
        c.out += control::encode_line(control::error_response(e.code(), e.what()));
        c.broken = true;
    }
}

void ControlServer::read_requests(Connection& c) {
    char buf[65536];
    while (reading(c)) {
        const ssize_t n = ::read(c.fd.get(), buf, sizeof(buf));
        if (n > 0) {
            try {
                c.in.append(std::string_view(buf, static_cast<std::size_t>(n)));
            } catch (const control::ProtocolError& e) {
                c.out += control::encode_line(control::error_response(e.code(), e.what()));
                c.broken = true;
            }
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || errno != EAGAIN) c.eof = true;
        return;
    }
}

bool ControlServer::flush(Connection& c) {
    while (!c.out.empty()) {
        const ssize_t n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN) return true;
            if (errno == EINTR) continue;
            return false;
        }
        c.out.erase(0, static_cast<std::size_t>(n));
        c.active = Clock::now();
    }
    return true;
}

void ControlServer::close(int fd) {
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
    connections_.erase(fd);
    backlog_.erase(fd);
}

void ControlServer::serve(int fd, std::uint32_t events) {
    const auto it = connections_.find(fd);
    if (it == connections_.end()) return;
    Connection& c = it->second;
    if (events & EPOLLERR) return close(fd);
    if (events & (EPOLLIN | EPOLLRDHUP)) read_requests(c);
    // One request per turn: a client that pipelines many waits its turn behind the others.
    answer_one(c);
    if (!flush(c) || (events & EPOLLHUP)) return close(fd);
    const bool more = !c.broken && c.in.has_line();
    // A peer that half-closed after its requests still gets its answers.
    if ((c.eof || c.broken) && c.out.empty() && !more) return close(fd);
    if (more && c.out.size() <= limits_.output_cap) {
        backlog_.insert(fd);
    } else {
        backlog_.erase(fd);
    }
    update_interest(c);
}

void ControlServer::expire() {
    const auto now = Clock::now();
    for (auto it = connections_.begin(); it != connections_.end();) {
        const Connection& c = it->second;
        const int fd = it->first;
        ++it;
        if (now - c.active > limits_.client_timeout) {
            spdlog::info(
                "control socket: closing the connection of pid {} (uid {}): idle for "
                "more than {} ms",
                c.peer.pid, c.peer.uid, limits_.client_timeout.count());
            close(fd);
        }
    }
}

}  // namespace cdsm::cdsmd
