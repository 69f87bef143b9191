// SPDX-License-Identifier: GPL-2.0
#include "atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cdsm/error.hpp>
#include <cdsm/fd.hpp>
#include <vector>

namespace cdsm::cdsmd {

void write_file_atomically(const std::filesystem::path& path, std::string_view text, mode_t mode) {
    std::string name = path.string() + ".XXXXXX";
    std::vector<char> tmpl(name.begin(), name.end());
    tmpl.push_back('\0');
    // mkostemp: O_CREAT | O_EXCL with a random name, mode 0600.
    Fd fd(::mkostemp(tmpl.data(), O_CLOEXEC));
    if (!fd) throw_errno("create a temporary file for " + path.string());
    const std::string tmp(tmpl.data());
    try {
        if (::fchmod(fd.get(), mode) < 0) throw_errno("fchmod " + tmp);
        for (std::size_t done = 0; done < text.size();) {
            const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw_errno("write " + tmp);
            done += std::size_t(n);
        }
        if (::fsync(fd.get()) < 0) throw_errno("fsync " + tmp);
        fd.reset();
        if (::rename(tmp.c_str(), path.c_str()) < 0)
            throw_errno("rename " + tmp + " to " + path.string());
    } catch (const SystemError&) {
        ::unlink(tmp.c_str());
        throw;
    }
}

std::optional<std::string> others_may_write(const std::filesystem::path& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return std::nullopt;
    if (st.st_uid != 0) return fmt::format("it belongs to uid {}", st.st_uid);
    if (st.st_mode & S_IWOTH)
        return fmt::format("every user may write it (mode {:o})", st.st_mode & 07777);
    if ((st.st_mode & S_IWGRP) && st.st_gid != 0)
        return fmt::format("group {} may write it (mode {:o})", st.st_gid, st.st_mode & 07777);
    return std::nullopt;
}

}  // namespace cdsm::cdsmd
