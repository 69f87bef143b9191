// SPDX-License-Identifier: GPL-2.0
#include "system.hpp"

#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

namespace cdsm::workloads {

void throw_errno(const std::string& what) {
    throw std::system_error(errno, std::generic_category(), what);
}

pid_t current_tid() {
    return gettid();
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) close(fd_);
        fd_ = other.release();
    }
    return *this;
}

UniqueFd::~UniqueFd() {
    if (fd_ >= 0) close(fd_);
}

int UniqueFd::release() {
    return std::exchange(fd_, -1);
}

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace cdsm::workloads
