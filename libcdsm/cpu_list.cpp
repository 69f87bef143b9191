// SPDX-License-Identifier: GPL-2.0
#include "cdsm/cpu_list.hpp"

#include <algorithm>
#include <charconv>

#include "cdsm/error.hpp"

namespace cdsm {

std::vector<std::uint32_t> parse_cpu_list(std::string_view list) {
    std::vector<std::uint32_t> cpus;
    while (!list.empty()) {
        const auto comma = list.find(',');
        const std::string_view range = list.substr(0, comma);
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
        const auto bad = [&range] {
            return Error("CPU list '" + std::string(range) + "'",
                         "is not a CPU number or range (N or N-M, N <= M, at most " +
                             std::to_string(kMaxCpu) + ")");
        };
        const char* const end = range.data() + range.size();
        std::uint32_t first = 0, last = 0;
        auto r = std::from_chars(range.data(), end, first);
        last = first;
        if (r.ec == std::errc() && r.ptr != end && *r.ptr == '-')
            r = std::from_chars(r.ptr + 1, end, last);
        if (r.ec != std::errc() || r.ptr != end || last < first || last > kMaxCpu) throw bad();
        for (std::uint32_t cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    }
    return cpus;
}

std::string format_cpu_list(std::span<const std::uint32_t> cpus) {
    std::vector<std::uint32_t> sorted(cpus.begin(), cpus.end());
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    std::string out;
    for (std::size_t i = 0; i < sorted.size();) {
        std::size_t j = i;
        while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
        if (!out.empty()) out += ',';
        out += std::to_string(sorted[i]);
        if (j > i) out += '-' + std::to_string(sorted[j]);
        i = j + 1;
    }
    return out;
}

}  // namespace cdsm
