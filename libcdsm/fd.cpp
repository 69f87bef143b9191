// SPDX-License-Identifier: GPL-2.0
#include "cdsm/fd.hpp"

#include <unistd.h>

namespace cdsm {

void Fd::reset(int fd) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
}

}  // namespace cdsm
