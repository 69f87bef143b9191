// SPDX-License-Identifier: GPL-2.0
// cdsmctl's connection to cdsmd: libcdsm's protocol client (cdsm/control.hpp), opened at the
// first request so that offline subcommands never touch the socket.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cdsm/control.hpp"

namespace cdsm::cdsmctl {

class CdsmdClient {
  public:
    explicit CdsmdClient(std::string socket_path) : path_(std::move(socket_path)) {}

    /// Sends one request and returns the reply's members. Throws cdsm::control::ProtocolError:
    /// "cannot connect to cdsmd at PATH: ... (is cdsmd running?)", cdsmd's own one-line refusal,
    /// or a broken reply named as coming from cdsmd at PATH.
    nlohmann::json request(const nlohmann::json& request);

  private:
    std::string path_;
    std::optional<cdsm::control::Client> client_;
};

}  // namespace cdsm::cdsmctl
