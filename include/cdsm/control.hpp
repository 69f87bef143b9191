// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cdsm/error.hpp"
#include "cdsm/fd.hpp"

/// The control protocol between cdsmd and its clients (docs/protocol.md): one JSON object per
/// `\n`-terminated line over a Unix stream socket, request then response.
namespace cdsm::control {

using Json = nlohmann::json;

inline constexpr std::string_view kDefaultSocketPath = "/run/cdsm/cdsmd.sock";
/// The environment variable that overrides the default socket path.
inline constexpr const char* kSocketEnv = "CDSM_SOCKET";
/// The longest request line the server accepts.
inline constexpr std::size_t kMaxRequestBytes = 1u << 20;
/// The deepest nesting of objects and arrays a message may have (requests have 2 levels, the
/// largest responses 4).
inline constexpr int kMaxDepth = 16;
/// The longest response line a client accepts (a matrix of thousands of tasks is large).
inline constexpr std::size_t kMaxResponseBytes = 256u << 20;

/// The socket to use: `option` if not empty, else $CDSM_SOCKET if set, else the default.
std::string socket_path(std::string_view option = {});

/// An error with a protocol code ("ENOENT", "EPERM", "EINVAL", "EIO", "EPROTO", ...): thrown by
/// the server's handlers to answer {"ok":false,...}, and by Client when the server answered so.
class ProtocolError : public std::runtime_error {
  public:
    ProtocolError(std::string code, const std::string& message)
        : std::runtime_error(message), code_(std::move(code)) {}
    const std::string& code() const noexcept { return code_; }

  private:
    std::string code_;
};

/// The protocol code of an errno value: "ENOENT", "EPERM", ... ("EIO" for the unusual ones).
std::string errno_code(int err);

/// {"ok":true} merged with the members of `result` (an object, or null for none).
Json ok_response(Json result = Json::object());
/// {"ok":false,"error":message,"code":code}.
Json error_response(std::string_view code, std::string_view message);
/// The object serialised on one line, with its terminating '\n'.
std::string encode_line(const Json& message);

/// Splits a byte stream into lines. Throws ProtocolError("EPROTO") when a line grows beyond
/// `max_bytes` before its '\n' arrives.
class LineBuffer {
  public:
    explicit LineBuffer(std::size_t max_bytes) : max_bytes_(max_bytes) {}
    void append(std::string_view bytes);
    /// The next complete line without its '\n', if one is there.
    std::optional<std::string> next_line();
    bool empty() const noexcept { return data_.empty(); }
    /// A complete line is there.
    bool has_line() const noexcept { return data_.find('\n', scanned_) != std::string::npos; }

  private:
    std::size_t max_bytes_;
    std::string data_;
    std::size_t scanned_ = 0;  // bytes of data_ known to hold no '\n'
};

/// Parses one request or response line; throws ProtocolError("EPROTO") unless it is a JSON
/// object nested at most kMaxDepth levels deep.
Json parse_line(std::string_view line);

/// Who is at the other end of a Unix socket: the credentials the kernel recorded when the peer
/// called connect() (SO_PEERCRED, SO_PEERGROUPS), seen from the caller's user namespace. They
/// do not change afterwards, whatever the peer becomes (a setuid program it execs, a user
/// namespace it enters).
struct PeerCredentials {
    pid_t pid = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;  ///< supplementary groups
};
PeerCredentials peer_credentials(int socket_fd);

/// A blocking client connection to cdsmd.
class Client {
  public:
    /// Connects; throws ProtocolError("ECONNREFUSED"/"ENOENT"...) with a message such as
    /// "cannot connect to cdsmd at /run/cdsm/cdsmd.sock: No such file or directory (is cdsmd
    /// running?)".
    explicit Client(const std::string& path = socket_path());

    /// Sends a request and returns the response's members. Throws ProtocolError with the
    /// server's code and message when it answered {"ok":false}, or "EPROTO"/"EIO" when the
    /// connection broke or the answer was not a protocol line.
    Json request(const Json& request);
    /// Sends one line as it is (it need not be valid JSON; without its '\n') and returns the
    /// answer as request() does.
    Json request_line(std::string_view line);
    /// Sends bytes as they are, without waiting for an answer.
    void send_raw(std::string_view bytes);

  private:
    std::string path_;
    Fd fd_;
    LineBuffer buffer_{kMaxResponseBytes};
};

}  // namespace cdsm::control
