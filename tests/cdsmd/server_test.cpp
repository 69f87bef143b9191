// SPDX-License-Identifier: GPL-2.0
// The control socket server: framing, errors as codes, peer credentials, stale sockets.
#include "server.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cdsm/error.hpp>
#include <filesystem>
#include <mutex>
#include <thread>

namespace cdsm::cdsmd {
namespace {

using control::Client;
using control::Json;
using control::ProtocolError;

std::string temp_socket(const char* name) {
    return (std::filesystem::temp_directory_path() /
            (std::string("cdsmd-test-") + std::to_string(::getpid()) + "/" + name))
        .string();
}

std::atomic<int> big_answers{0};
std::mutex order_mutex;
std::vector<std::string> order;  // the "slow" and "after" requests, as answered

Json handler(const Json& r, const control::PeerCredentials& peer) {
    const std::string cmd = r.value("cmd", "");
    if (cmd == "whoami") return {{"uid", peer.uid}, {"pid", peer.pid}};
    if (cmd == "denied") throw ProtocolError("EPERM", "'track' needs root");
    if (cmd == "kernel") throw SystemError(ENOENT, "CDSM_IOC_AGE (application 9)");
    if (cmd == "libcdsm") throw cdsm::Error("matrix.csv", "row 2 is short");
    if (cmd == "slow" || cmd == "after") {
        if (cmd == "slow") std::this_thread::sleep_for(std::chrono::milliseconds(10));
        const std::lock_guard<std::mutex> lock(order_mutex);
        order.push_back(cmd);
    }
    if (cmd == "big") {
        ++big_answers;
        return {{"data", std::string(3u << 20, 'x')}};
    }
    return {{"echo", cmd}};
}

// Runs the server loop on a thread while the test talks to it.
class Running {
  public:
    explicit Running(const std::string& path, ServerLimits limits = {})
        : server_(path, handler, limits) {
        thread_ = std::thread([this] {
            while (!stop_) {
                server_.dispatch();
                server_.expire();
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        });
    }
    ~Running() {
        stop_ = true;
        thread_.join();
    }
    const ControlServer& server() const { return server_; }

  private:
    ControlServer server_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

Fd connect_raw(const std::string& path) {
    Fd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    return fd;
}

TEST(ControlServer, AnswersWithThePeersCredentialsAndErrorCodes) {
    const std::string path = temp_socket("a.sock");
    Running running(path);
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0666u);  // access is decided per request, not by mode

    Client c(path);
    const Json me = c.request({{"cmd", "whoami"}});
    EXPECT_EQ(me["uid"], ::getuid());
    EXPECT_EQ(me["pid"], ::getpid());
    const auto code_of = [&](const char* cmd) {
        try {
            c.request({{"cmd", cmd}});
        } catch (const ProtocolError& e) {
            return e.code() + ": " + e.what();
        }
        return std::string("no error");
    };
    EXPECT_EQ(code_of("denied"), "EPERM: 'track' needs root");
    EXPECT_EQ(code_of("kernel"), "ENOENT: CDSM_IOC_AGE (application 9): No such file or directory");
    EXPECT_EQ(code_of("libcdsm"), "EINVAL: matrix.csv: row 2 is short");
    // Responses larger than a request may be are fine.
    EXPECT_EQ(c.request({{"cmd", "big"}})["data"].get<std::string>().size(), 3u << 20);
    EXPECT_EQ(c.request({{"cmd", "ping"}}), (Json{{"echo", "ping"}}));
}

TEST(ControlServer, MalformedRequestsGetAnErrorAndTheConnectionSurvives) {
    const std::string path = temp_socket("b.sock");
    Running running(path);
    const Fd fd = connect_raw(path);
    const std::string req = "not json\n[1]\n{\"cmd\":\"x\"}\n";
    ASSERT_EQ(::write(fd.get(), req.data(), req.size()), ssize_t(req.size()));
    std::string got;
    char buf[4096];
    while (std::count(got.begin(), got.end(), '\n') < 3) {
        const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
        ASSERT_GT(n, 0);
        got.append(buf, size_t(n));
    }
    EXPECT_EQ(got,
              "{\"code\":\"EPROTO\",\"error\":\"message is not valid JSON\",\"ok\":false}\n"
              "{\"code\":\"EPROTO\",\"error\":\"message is not a JSON object\",\"ok\":false}\n"
              "{\"echo\":\"x\",\"ok\":true}\n");
}

TEST(ControlServer, AnOverlongRequestIsRefused) {
    const std::string path = temp_socket("c.sock");
    Running running(path);
    Client c(path);
    try {
        c.request({{"cmd", std::string(control::kMaxRequestBytes + 10, 'y')}});
        FAIL() << "accepted";
    } catch (const ProtocolError& e) {
        EXPECT_EQ(e.code(), "EPROTO");
    }
}

TEST(ControlServer, ReplacesAStaleSocketButNotALiveServer) {
    const std::string path = temp_socket("d.sock");
    {
        Running first(path);
        EXPECT_THROW(ControlServer(path, handler), SystemError);
    }
    // A socket file left by a killed daemon: nobody answers, so it is replaced.
    Fd stale(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    ASSERT_EQ(::bind(stale.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    stale.reset();
    ASSERT_TRUE(std::filesystem::exists(path));
    Running second(path);
    EXPECT_EQ(Client(path).request({{"cmd", "ok"}}), (Json{{"echo", "ok"}}));
}

TEST(ControlServer, AClientThatDoesNotReadIsNotReadEither) {
    // 20 pipelined requests for 3 MiB answers each, none read: cdsmd used to answer them all
    // at once (60 MiB held for a client that may never read); now at most one answer waits
    // beyond the cap, and the rest are answered as the client reads.
    const std::string path = temp_socket("e.sock");
    Running running(path);
    const Fd fd = connect_raw(path);
    big_answers = 0;
    std::string pipelined;
    for (int i = 0; i < 20; ++i) pipelined += "{\"cmd\":\"big\"}\n";
    ASSERT_EQ(::write(fd.get(), pipelined.data(), pipelined.size()), ssize_t(pipelined.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_LE(big_answers.load(), 2);
    std::size_t lines = 0, bytes = 0;
    std::vector<char> buf(1u << 20);
    while (lines < 20) {
        const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
        ASSERT_GT(n, 0);
        lines += std::size_t(std::count(buf.begin(), buf.begin() + n, '\n'));
        bytes += std::size_t(n);
    }
    EXPECT_EQ(big_answers.load(), 20);
    EXPECT_GT(bytes, 20u * (3u << 20));
}

TEST(ControlServer, PipelinedRequestsWaitTheirTurnBehindOtherClients) {
    // 20 pipelined requests of 10 ms each: a request from another client is answered between
    // them (one request per connection and turn), not after all 20.
    const std::string path = temp_socket("h.sock");
    Running running(path);
    const Fd fd = connect_raw(path);
    Client other(path);
    order.clear();
    std::string pipelined;
    for (int i = 0; i < 20; ++i) pipelined += "{\"cmd\":\"slow\"}\n";
    ASSERT_EQ(::write(fd.get(), pipelined.data(), pipelined.size()), ssize_t(pipelined.size()));
    EXPECT_EQ(other.request({{"cmd", "after"}}), (Json{{"echo", "after"}}));
    const std::lock_guard<std::mutex> lock(order_mutex);
    const auto at = std::find(order.begin(), order.end(), "after") - order.begin();
    EXPECT_LT(at, 20) << "answered after all of the other client's requests";
}

TEST(ControlServer, ConnectionsPerUserAreLimited) {
    const std::string path = temp_socket("f.sock");
    ServerLimits limits;
    limits.max_clients_per_user = 2;
    Running running(path, limits);
    Client a(path), b(path), refused(path);
    EXPECT_EQ(a.request({{"cmd", "ping"}}), (Json{{"echo", "ping"}}));
    EXPECT_EQ(b.request({{"cmd", "ping"}}), (Json{{"echo", "ping"}}));
    try {
        refused.request({{"cmd", "ping"}});
        FAIL() << "a third connection was served";
    } catch (const ProtocolError& e) {
        EXPECT_EQ(e.code(), "EBUSY");
        EXPECT_EQ(std::string(e.what()),
                  "uid " + std::to_string(::getuid()) +
                      " has 2 connections open to cdsmd, the most one user may have");
    }
    EXPECT_EQ(running.server().connections(), 2u);
}

TEST(ControlServer, IdleAndHalfSentRequestsTimeOut) {
    const std::string path = temp_socket("g.sock");
    ServerLimits limits;
    // Margins wide enough for a loaded machine, where a thread can wait hundreds of ms.
    limits.client_timeout = std::chrono::milliseconds(1500);
    Running running(path, limits);
    Client idle(path), partial(path), busy(path);
    partial.send_raw("{\"cmd\":");
    for (int i = 0; i < 25; ++i) {
        EXPECT_EQ(busy.request({{"cmd", "ping"}}), (Json{{"echo", "ping"}}));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_THROW(idle.request({{"cmd", "ping"}}), ProtocolError);
    EXPECT_THROW(partial.request_line("\"ping\"}"), ProtocolError);
    EXPECT_EQ(running.server().connections(), 1u);
}

TEST(ControlServer, WhenFullAUidWithFewerConnectionsTakesASlotOfTheUidWithMost) {
    // One user's subordinate uids (100-107) hold every slot, 16 each; each was active at t0+k.
    const auto t0 = std::chrono::steady_clock::time_point{};
    std::vector<HeldConnection> held;
    for (uid_t uid = 100; uid < 108; ++uid)
        for (int k = 0; k < 16; ++k)
            held.push_back({uid, t0 + std::chrono::seconds((k * 7 + uid * 3) % 50)});
    held.push_back({0, t0});  // root's do not count
    // Another user, and the plugin's report child as the job's user: the least recently active
    // connection of the uid holding the most (all hold 16: the first such) makes room.
    const auto k = connection_to_evict(held, 2000);
    ASSERT_TRUE(k);
    EXPECT_EQ(held[*k].uid, 100u);
    for (const HeldConnection& h : held) {
        if (h.uid == 100) {
            EXPECT_LE(held[*k].active, h.active);
        }
    }
    // Once every uid holds about as many, nobody is evicted: the attacker's own uid with 15
    // cannot take a slot of one with 16, nor a newcomer's single one.
    held.erase(held.begin() + std::ptrdiff_t(*k));
    held.push_back({2000, t0 + std::chrono::seconds(60)});
    EXPECT_FALSE(connection_to_evict(held, 101));
    EXPECT_FALSE(connection_to_evict(held, 100));
    EXPECT_EQ(held[*connection_to_evict(held, 2001)].uid, 101u);  // the next uid with 16
    // A uid holding one fewer than the most does not evict (two uids would take turns).
    EXPECT_FALSE(connection_to_evict({{5, t0}, {5, t0}, {6, t0}}, 6));
    EXPECT_TRUE(connection_to_evict({{5, t0}, {5, t0}, {6, t0}}, 7));
    EXPECT_FALSE(connection_to_evict({{0, t0}, {0, t0}, {0, t0}}, 7));
}

}  // namespace
}  // namespace cdsm::cdsmd
