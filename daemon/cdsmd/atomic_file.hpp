// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string_view>

namespace cdsm::cdsmd {

/// Replaces the file `path` with `text` so that a reader sees the old file or the new one, never
/// a part: writes PATH.tmp in the same directory with `mode` (whatever the umask; also when a
/// temporary file was left with another), fsyncs it and renames it over `path`. Throws
/// SystemError naming the call and the file; the temporary file is removed then.
void write_file_atomically(const std::filesystem::path& path, std::string_view text, mode_t mode);

}  // namespace cdsm::cdsmd
