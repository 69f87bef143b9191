// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace cdsm {

/// The version of libcdsm, as "MAJOR.MINOR.PATCH": the one version of every part of cdsm (the
/// file VERSION), cdsm.ko's included.
std::string_view version() noexcept;

/// The version of the loaded cdsm.ko (its /sys/module/cdsm/version), or nullopt when the module
/// is not loaded. `sysfs_module` is the module's sysfs directory (tests point it elsewhere).
std::optional<std::string> module_version(
    const std::filesystem::path& sysfs_module = "/sys/module/cdsm");

/// What `PROGRAM --version` prints: "PROGRAM VERSION", then the loaded module's version, and
/// whether it agrees: "cdsm.ko VERSION (loaded)", "cdsm.ko VERSION (loaded; differs from
/// PROGRAM VERSION: ...)" or "cdsm.ko not loaded". Lines end in '\n'.
std::string version_report(std::string_view program,
                           const std::filesystem::path& sysfs_module = "/sys/module/cdsm");

}  // namespace cdsm
