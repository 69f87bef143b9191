// SPDX-License-Identifier: GPL-2.0
#include "cdsm/error.hpp"

#include <string>

namespace cdsm {

Error::Error(std::string_view input, std::string_view problem)
    : std::runtime_error(std::string(input) + ": " + std::string(problem)) {}

}  // namespace cdsm
