// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

namespace cdsm::daemon {

/// A system call that failed: the message names the call (and its object) and the errno text,
/// e.g. "CDSM_IOC_GET_MATRIX (application 3): No such file or directory". code() holds the errno.
class SystemError : public std::system_error {
  public:
    SystemError(int err, const std::string& call)
        : std::system_error(err, std::generic_category(), call) {}
    int err() const noexcept { return code().value(); }
};

/// Throws SystemError(errno, call).
[[noreturn]] inline void throw_errno(const std::string& call) {
    throw SystemError(errno, call);
}

/// An owned file descriptor, closed on destruction.
class Fd {
  public:
    Fd() = default;
    explicit Fd(int fd) noexcept : fd_(fd) {}
    Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd& operator=(Fd&& other) noexcept {
        if (this != &other) reset(std::exchange(other.fd_, -1));
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { reset(); }

    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    /// Closes the descriptor held now and takes `fd`.
    void reset(int fd = -1) noexcept;

  private:
    int fd_ = -1;
};

}  // namespace cdsm::daemon
