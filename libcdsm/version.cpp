// SPDX-License-Identifier: GPL-2.0
#include "cdsm/version.hpp"

namespace cdsm {

std::string_view version() noexcept {
    return CDSM_VERSION_STRING;
}

}  // namespace cdsm
