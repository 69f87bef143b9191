// SPDX-License-Identifier: GPL-2.0
#include "cdsm/kernel_events.hpp"

#include <fmt/format.h>
#include <linux/cdsm.h>
#include <netlink/errno.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "cdsm/error.hpp"

namespace cdsm::kernel {

namespace {

[[noreturn]] void throw_nl(int nl_err, const std::string& step) {
    throw SystemError(EIO, fmt::format("netlink: {}: {}", step, nl_geterror(nl_err)));
}

struct SockDeleter {
    void operator()(nl_sock* s) const noexcept { nl_socket_free(s); }
};

}  // namespace

const char* to_string(Event::Kind kind) noexcept {
    switch (kind) {
        case Event::Kind::kAppStarted:
            return "app-started";
        case Event::Kind::kAppEnded:
            return "app-ended";
        case Event::Kind::kTaskJoined:
            return "task-joined";
        case Event::Kind::kTaskExited:
            return "task-exited";
    }
    return "unknown";
}

struct EventListener::Impl {
    std::unique_ptr<nl_sock, SockDeleter> sock;
    std::vector<Event>* sink = nullptr;

    static int on_message(nl_msg* msg, void* arg) {
        auto* self = static_cast<Impl*>(arg);
        nlattr* attrs[CDSM_A_MAX + 1];
        if (genlmsg_parse(nlmsg_hdr(msg), 0, attrs, CDSM_A_MAX, nullptr) < 0) return NL_SKIP;
        if (!attrs[CDSM_A_EVENT] || !attrs[CDSM_A_APP_ID]) return NL_SKIP;
        const std::uint32_t kind = nla_get_u32(attrs[CDSM_A_EVENT]);
        if (kind < CDSM_EVENT_APP_STARTED || kind > CDSM_EVENT_TASK_EXITED) return NL_SKIP;
        Event e;
        e.kind = static_cast<Event::Kind>(kind);
        e.app_id = nla_get_u32(attrs[CDSM_A_APP_ID]);
        if (attrs[CDSM_A_TID]) e.tid = static_cast<pid_t>(nla_get_u32(attrs[CDSM_A_TID]));
        if (attrs[CDSM_A_TGID]) e.tgid = static_cast<pid_t>(nla_get_u32(attrs[CDSM_A_TGID]));
        if (attrs[CDSM_A_TASK_INDEX]) e.index = nla_get_u32(attrs[CDSM_A_TASK_INDEX]);
        if (attrs[CDSM_A_COMM]) e.comm = nla_get_string(attrs[CDSM_A_COMM]);
        if (self->sink) self->sink->push_back(std::move(e));
        return NL_OK;
    }
};

EventListener::EventListener() : impl_(std::make_unique<Impl>()) {
    impl_->sock.reset(nl_socket_alloc());
    if (!impl_->sock) throw SystemError(ENOMEM, "nl_socket_alloc");
    nl_sock* s = impl_->sock.get();
    if (int err = genl_connect(s); err < 0) throw_nl(err, "genl_connect");
    const int group = genl_ctrl_resolve_grp(s, CDSM_GENL_NAME, CDSM_GENL_MCGRP);
    if (group < 0) {
        throw_nl(group, fmt::format("resolving family '{}' group '{}' (is cdsm.ko loaded?)",
                                    CDSM_GENL_NAME, CDSM_GENL_MCGRP));
    }
    // Multicast messages carry no sequence numbers of ours.
    nl_socket_disable_seq_check(s);
    if (int err = nl_socket_modify_cb(s, NL_CB_VALID, NL_CB_CUSTOM, &Impl::on_message, impl_.get());
        err < 0) {
        throw_nl(err, "nl_socket_modify_cb");
    }
    if (int err = nl_socket_add_membership(s, group); err < 0) {
        throw_nl(err, "cannot join the events group");
    }
    if (int err = nl_socket_set_nonblocking(s); err < 0) throw_nl(err, "nl_socket_set_nonblocking");
    // A larger buffer makes overruns rarer during bursts (a 64-thread program starting).
    nl_socket_set_buffer_size(s, 4 << 20, 0);
}

EventListener::~EventListener() = default;
EventListener::EventListener(EventListener&&) noexcept = default;
EventListener& EventListener::operator=(EventListener&&) noexcept = default;

int EventListener::fd() const noexcept {
    return nl_socket_get_fd(impl_->sock.get());
}

EventListener::Batch EventListener::receive() {
    Batch batch;
    impl_->sink = &batch.events;
    for (;;) {
        const int err = nl_recvmsgs_default(impl_->sock.get());
        if (err >= 0) continue;
        if (err == -NLE_AGAIN) break;
        // ENOBUFS (reported as NLE_NOMEM): the kernel dropped messages for this socket.
        batch.lost = true;
        if (err != -NLE_NOMEM) break;
    }
    impl_->sink = nullptr;
    return batch;
}

}  // namespace cdsm::kernel
