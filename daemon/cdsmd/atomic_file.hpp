// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace cdsm::cdsmd {

/// Replaces the file `path` with `text` so that a reader sees the old file or the new one, never
/// a part: writes a new temporary file of a name nobody can guess in the same directory
/// (PATH.XXXXXX, created with O_EXCL: whatever another account made in the directory beforehand,
/// a FIFO, a link, a file, is never opened), with `mode` whatever the umask, fsyncs it and
/// renames it over `path`. Throws SystemError naming the call and the file; the temporary file is
/// removed then.
void write_file_atomically(const std::filesystem::path& path, std::string_view text, mode_t mode);

/// Why accounts other than root may change the entries of directory `dir` (writable by others,
/// or by a group other than root's, or owned by another user), if they may; nothing if it cannot
/// be read.
std::optional<std::string> others_may_write(const std::filesystem::path& dir);

}  // namespace cdsm::cdsmd
