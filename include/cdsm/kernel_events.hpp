// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cdsm::kernel {

/// One message of the module's netlink event group (include/uapi/linux/cdsm.h).
struct Event {
    enum class Kind : std::uint32_t {
        kAppStarted = 1,  // CDSM_EVENT_APP_STARTED
        kAppEnded = 2,
        kTaskJoined = 3,
        kTaskExited = 4,
    };
    Kind kind = Kind::kAppStarted;
    std::uint32_t app_id = 0;
    pid_t tid = 0;  ///< task events only
    pid_t tgid = 0;
    std::uint32_t index = 0;
    std::string comm;
};

/// "app-started", "app-ended", "task-joined" or "task-exited".
const char* to_string(Event::Kind kind) noexcept;

/// A subscription to the generic netlink family "cdsm", multicast group "events" (libnl-genl-3).
/// Non-blocking: poll fd() for input, then call receive().
class EventListener {
  public:
    /// Resolves the family and joins the group. Throws SystemError naming the step that failed
    /// (the family is missing when cdsm.ko is not loaded).
    EventListener();
    ~EventListener();
    EventListener(EventListener&&) noexcept;
    EventListener& operator=(EventListener&&) noexcept;

    int fd() const noexcept;

    /// What receive() got: the events in arrival order, and whether some were lost (socket
    /// buffer overrun) so that the caller must re-read the module's state.
    struct Batch {
        std::vector<Event> events;
        bool lost = false;
    };
    /// Reads every message waiting on the socket without blocking.
    Batch receive();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace cdsm::kernel
