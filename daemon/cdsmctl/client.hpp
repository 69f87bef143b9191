// SPDX-License-Identifier: GPL-2.0
// The client side of cdsmd's control socket (daemon/PROTOCOL.md): one JSON object per line,
// request then reply, several requests per connection.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace cdsmctl {

/// Where cdsmd listens unless --socket or $CDSM_SOCKET say otherwise.
inline constexpr const char* kDefaultSocket = "/run/cdsm/cdsmd.sock";

/// cdsmd answered {"ok": false, "error": ..., "code": ...}.
class DaemonError : public std::runtime_error {
  public:
    DaemonError(const std::string& message, std::string code)
        : std::runtime_error(message), code_(std::move(code)) {}
    /// "ENOENT", "EPERM", "EINVAL", "EIO", ...
    const std::string& code() const noexcept { return code_; }

  private:
    std::string code_;
};

class DaemonClient {
  public:
    /// Connects at the first request.
    explicit DaemonClient(std::string socket_path);
    ~DaemonClient();
    DaemonClient(const DaemonClient&) = delete;
    DaemonClient& operator=(const DaemonClient&) = delete;

    /// Sends one request and returns the reply without its "ok" member. Throws cdsm::Error
    /// when cdsmd cannot be reached or replies with something that is not protocol
    /// ("cannot connect to cdsmd at PATH: ... (is cdsmd running?)"), DaemonError when it
    /// refuses the request.
    nlohmann::json request(const nlohmann::json& request);

    const std::string& socket_path() const noexcept { return path_; }

  private:
    void connect();
    std::string read_line();

    std::string path_;
    int fd_ = -1;
    std::string buffer_;
};

}  // namespace cdsmctl
