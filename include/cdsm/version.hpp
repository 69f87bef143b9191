// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <string_view>

namespace cdsm {

/// The version of libcdsm, as "MAJOR.MINOR.PATCH".
std::string_view version() noexcept;

}  // namespace cdsm
