// SPDX-License-Identifier: GPL-2.0
// The control protocol's framing and the client, against a real Unix socket.
#include "cdsm/control.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

namespace cdsm::control {
namespace {

TEST(LineBuffer, SplitsLinesAcrossChunks) {
    LineBuffer b(100);
    b.append("{\"a\":");
    EXPECT_FALSE(b.next_line());
    b.append("1}\n{\"b\":2}\n{\"c\"");
    EXPECT_EQ(b.next_line(), "{\"a\":1}");
    EXPECT_EQ(b.next_line(), "{\"b\":2}");
    EXPECT_FALSE(b.next_line());
    b.append(":3}\n");
    EXPECT_EQ(b.next_line(), "{\"c\":3}");
    EXPECT_TRUE(b.empty());
}

TEST(LineBuffer, RefusesAnOverlongLineBeforeItsEnd) {
    LineBuffer b(10);
    b.append("0123456789");
    EXPECT_THROW(b.append("x"), ProtocolError);
}

TEST(LineBuffer, RefusesAnOverlongLineArrivingWhole) {
    LineBuffer b(4);
    b.append("12345678\n");
    try {
        b.next_line();
        FAIL() << "no error";
    } catch (const ProtocolError& e) {
        EXPECT_EQ(e.code(), "EPROTO");
    }
}

TEST(Encoding, OneLinePerMessageEvenWithNewlinesInStrings) {
    const Json m = {{"comm", "a\nb"}, {"n", 3}};
    const std::string line = encode_line(m);
    EXPECT_EQ(line.find('\n'), line.size() - 1);
    EXPECT_EQ(parse_line(line.substr(0, line.size() - 1)), m);
}

TEST(Encoding, InvalidUtf8IsReplacedNotThrown) {
    const Json m = {{"comm", std::string("x\xff")}};
    EXPECT_NO_THROW(encode_line(m));
}

TEST(Encoding, ParseLineRejectsNonObjects) {
    EXPECT_THROW(parse_line("[1,2]"), ProtocolError);
    EXPECT_THROW(parse_line("{nope"), ProtocolError);
    EXPECT_THROW(parse_line(""), ProtocolError);
}

TEST(Responses, OkMergesTheResultAndErrorNamesTheCode) {
    EXPECT_EQ(ok_response({{"apps", Json::array()}}),
              (Json{{"ok", true}, {"apps", Json::array()}}));
    EXPECT_EQ(error_response("ENOENT", "no application 4"),
              (Json{{"ok", false}, {"error", "no application 4"}, {"code", "ENOENT"}}));
}

TEST(SocketPath, OptionThenEnvironmentThenDefault) {
    ::unsetenv(kSocketEnv);
    EXPECT_EQ(socket_path(), kDefaultSocketPath);
    ::setenv(kSocketEnv, "/tmp/env.sock", 1);
    EXPECT_EQ(socket_path(), "/tmp/env.sock");
    EXPECT_EQ(socket_path("/tmp/opt.sock"), "/tmp/opt.sock");
    ::unsetenv(kSocketEnv);
}

TEST(PeerCredentials, AreTheCallersOwn) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    Fd a(sv[0]), b(sv[1]);
    const PeerCredentials c = peer_credentials(a.get());
    EXPECT_EQ(c.pid, ::getpid());
    EXPECT_EQ(c.uid, ::getuid());
    EXPECT_EQ(c.gid, ::getgid());
    std::vector<gid_t> groups(std::size_t(::getgroups(0, nullptr)));
    groups.resize(std::size_t(::getgroups(int(groups.size()), groups.data())));
    EXPECT_EQ(c.groups, groups);
}

// A server that answers each request line by echoing its "cmd", or an error for "fail".
class EchoServer {
  public:
    EchoServer()
        : path_(std::filesystem::temp_directory_path() /
                ("cdsm-proto-test-" + std::to_string(::getpid()) + ".sock")) {
        std::filesystem::remove(path_);
        listen_.reset(::socket(AF_UNIX, SOCK_STREAM, 0));
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strcpy(addr.sun_path, path_.c_str());
        EXPECT_EQ(::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
        EXPECT_EQ(::listen(listen_.get(), 1), 0);
        thread_ = std::thread([this] { serve(); });
    }
    ~EchoServer() {
        thread_.join();
        std::filesystem::remove(path_);
    }
    std::string path() const { return path_; }

  private:
    void serve() {
        Fd c(::accept(listen_.get(), nullptr, nullptr));
        LineBuffer in(kMaxRequestBytes);
        char buf[7];  // small reads: requests arrive in pieces
        for (;;) {
            const ssize_t n = ::read(c.get(), buf, sizeof(buf));
            if (n <= 0) return;
            in.append(std::string_view(buf, static_cast<std::size_t>(n)));
            while (auto line = in.next_line()) {
                const Json req = parse_line(*line);
                const Json resp = req["cmd"] == "fail"
                                      ? error_response("EPERM", "control needs root")
                                      : ok_response({{"echo", req["cmd"]}});
                const std::string out = encode_line(resp);
                ASSERT_EQ(::write(c.get(), out.data(), out.size()), ssize_t(out.size()));
            }
        }
    }

    std::filesystem::path path_;
    Fd listen_;
    std::thread thread_;
};

TEST(Client, RequestsAndErrorsOnOneConnection) {
    EchoServer server;
    Client client(server.path());
    EXPECT_EQ(client.request({{"cmd", "list"}}), (Json{{"echo", "list"}}));
    try {
        client.request({{"cmd", "fail"}});
        FAIL() << "no error";
    } catch (const ProtocolError& e) {
        EXPECT_EQ(e.code(), "EPERM");
        EXPECT_STREQ(e.what(), "control needs root");
    }
    EXPECT_EQ(client.request({{"cmd", "ping"}}), (Json{{"echo", "ping"}}));
}

TEST(Client, NoDaemonIsOneClearError) {
    try {
        Client client("/nonexistent/cdsmd.sock");
        FAIL() << "connected";
    } catch (const ProtocolError& e) {
        EXPECT_EQ(e.code(), "ENOENT");
        EXPECT_NE(std::string(e.what()).find("cannot connect to cdsmd at /nonexistent/cdsmd.sock"),
                  std::string::npos);
    }
}

}  // namespace
}  // namespace cdsm::control
