// SPDX-License-Identifier: GPL-2.0
#include "client.hpp"

#include <fmt/format.h>

namespace cdsm::cdsmctl {

nlohmann::json CdsmdClient::request(const nlohmann::json& request) {
    try {
        if (!client_) client_.emplace(path_);
        return client_->request(request);
    } catch (const cdsm::control::ProtocolError& e) {
        // The shared client says what was wrong with a line, not whose line it was.
        if (e.code() == "EPROTO")
            throw cdsm::control::ProtocolError(
                "EPROTO", fmt::format("cdsmd at {} sent a broken reply: {}", path_, e.what()));
        throw;
    }
}

}  // namespace cdsm::cdsmctl
