// SPDX-License-Identifier: GPL-2.0
#include "cdsm/version.hpp"

#include <fstream>

namespace cdsm {

std::string_view version() noexcept {
    return CDSM_VERSION_STRING;
}

std::optional<std::string> module_version(const std::filesystem::path& sysfs_module) {
    std::ifstream in(sysfs_module / "version");
    std::string v;
    if (!in || !std::getline(in, v) || v.empty()) return std::nullopt;
    return v;
}

std::string version_report(std::string_view program, const std::filesystem::path& sysfs_module) {
    std::string out = std::string(program) + " " + std::string(version()) + "\n";
    const std::optional<std::string> m = module_version(sysfs_module);
    if (!m) return out + "cdsm.ko not loaded\n";
    if (*m == version()) return out + "cdsm.ko " + *m + " (loaded)\n";
    return out + "cdsm.ko " + *m + " (loaded; differs from " + std::string(program) + " " +
           std::string(version()) + ": install matching packages and reload the module)\n";
}

}  // namespace cdsm
