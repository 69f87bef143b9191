// SPDX-License-Identifier: GPL-2.0
#include "atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cdsm/error.hpp>
#include <cdsm/fd.hpp>

namespace cdsm::cdsmd {

void write_file_atomically(const std::filesystem::path& path, std::string_view text, mode_t mode) {
    const std::string tmp = path.string() + ".tmp";
    try {
        Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode));
        if (!fd) throw_errno("open " + tmp);
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

}  // namespace cdsm::cdsmd
