// SPDX-License-Identifier: GPL-2.0
#include "cdsm/daemon/fd.hpp"

#include <unistd.h>

namespace cdsm::daemon {

void Fd::reset(int fd) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
}

}  // namespace cdsm::daemon
