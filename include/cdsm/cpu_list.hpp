// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

/// CPU lists in the kernel's format, "0-3,8,10-11" (sysfs, Cpus_allowed_list, cpuset.cpus).
namespace cdsm {

/// The largest CPU number parse_cpu_list() accepts (Linux has at most 8192 CPUs, NR_CPUS).
inline constexpr std::uint32_t kMaxCpu = 65535;

/// Parses a Linux CPU list such as "0-3,8,10-11". Throws Error unless every item is a CPU
/// number or a range N-M with N <= M, each at most kMaxCpu.
std::vector<std::uint32_t> parse_cpu_list(std::string_view list);

/// The CPUs as a Linux CPU list, sorted, each once, runs as ranges: {3, 0, 1, 2, 8} gives
/// "0-3,8"; no CPU gives "".
std::string format_cpu_list(std::span<const std::uint32_t> cpus);

}  // namespace cdsm
