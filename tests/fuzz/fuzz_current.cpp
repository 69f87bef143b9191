// SPDX-License-Identifier: GPL-2.0
// `cdsmctl map --matrix FILE --topology SYNTHETIC --current CPUS`: the CPU list as
// libcdsm's parse_cpu_list reads it (also for cgroup cpusets), then, when it names one CPU per
// task, the whole offline mapping from that placement (8 tasks on 2 packages x 2 cores x 2 PUs).
#include <cdsm/error.hpp>
#include <cdsm/migrator.hpp>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <sstream>
#include <string>

#include "commands.hpp"

namespace {

cdsm::cdsmctl::MapOptions options;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    options.matrix_file = CDSM_FUZZ_DATA "/ring8.csv";  // a ring of 8 tasks
    options.topology = "pack:2 core:2 pu:2";
    options.json = true;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string list(reinterpret_cast<const char*>(data), size);
    try {
        if (cdsm::parse_cpu_list(list).size() != 8) return 0;
    } catch (const cdsm::Error&) {
        return 0;
    }
    options.current = list;
    std::ostringstream out;
    try {
        cdsm::cdsmctl::map_offline(options, out);
    } catch (const std::exception&) {
    }
    return 0;
}
