// SPDX-License-Identifier: GPL-2.0
// cdsmd's configuration file (cdsmd.toml): parse_config() must accept it or throw cdsm::Error
// naming the file and line, never anything else, whatever the bytes.
#include <cdsm/error.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const cdsm::cdsmd::Config c = cdsm::cdsmd::parse_config(text, "fuzz.toml");
        // What the daemon relies on once a configuration was accepted.
        if (c.interval.min_ms == 0 || c.interval.min_ms > c.interval.max_ms) __builtin_trap();
        if (!(c.min_gain >= 0 && c.min_gain < 1)) __builtin_trap();
        c.costs.validate();
    } catch (const cdsm::Error&) {
    }
    return 0;
}
