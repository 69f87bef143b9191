// SPDX-License-Identifier: GPL-2.0
// A stand-in for cdsmd in the tests: a Unix socket that speaks the control protocol
// (docs/protocol.md) with replies the test chooses, and remembers every request.
#pragma once

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

namespace cdsm::cdsmctl::test {

class FakeCdsmd {
  public:
    /// The reply to a request. "ok": true is added unless the reply sets "ok". Two keys are
    /// not sent but act: "_raw" sends its string as the reply line instead, "_close" closes
    /// the connection without replying.
    using Handler = std::function<nlohmann::json(const nlohmann::json& request)>;

    explicit FakeCdsmd(Handler handler);
    ~FakeCdsmd();
    FakeCdsmd(const FakeCdsmd&) = delete;
    FakeCdsmd& operator=(const FakeCdsmd&) = delete;

    /// The socket, for --socket or CDSM_SOCKET.
    const std::string& path() const noexcept { return path_; }
    /// Every request received so far, in order.
    std::vector<nlohmann::json> requests() const;

  private:
    void serve();
    void serve_connection(int fd);

    Handler handler_;
    TempDir dir_;
    std::string path_;
    int listen_fd_ = -1;
    int stop_[2] = {-1, -1};
    mutable std::mutex mutex_;
    std::vector<nlohmann::json> requests_;
    std::thread thread_;
};

/// A reply cdsmd gives when it refuses.
nlohmann::json refusal(const std::string& error, const std::string& code);

}  // namespace cdsm::cdsmctl::test
