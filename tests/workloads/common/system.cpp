// SPDX-License-Identifier: GPL-2.0
#include "system.hpp"

#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
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

namespace {

volatile std::sig_atomic_t g_stop_requested = 0;
volatile std::sig_atomic_t g_switch_requested = 0;

void on_sigusr1(int) {
    request_stop();
}

void on_sigusr2(int) {
    g_switch_requested = 1;
}

// Installs `handler` for `sig`, restarting interrupted system calls.
void install_handler(int sig, void (*handler)(int), const char* name) {
    struct sigaction action {};
    action.sa_handler = handler;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(sig, &action, nullptr) != 0) throw_errno(std::string("sigaction(") + name + ")");
}

}  // namespace

void request_stop() {
    g_stop_requested = 1;
}

bool stop_requested() {
    return g_stop_requested != 0;
}

void stop_early_on_sigusr1() {
    install_handler(SIGUSR1, on_sigusr1, "SIGUSR1");
}

void switch_on_sigusr2() {
    install_handler(SIGUSR2, on_sigusr2, "SIGUSR2");
}

bool switch_requested() {
    return g_switch_requested != 0;
}

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

double process_cpu_seconds() noexcept {
    timespec ts{};
    if (::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return std::nan("");
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace cdsm::workloads
