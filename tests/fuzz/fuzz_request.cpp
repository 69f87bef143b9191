// SPDX-License-Identifier: GPL-2.0
// cdsmd's control requests as any local user can send them: the bytes arrive in reads of varying
// size, are framed into lines (LineBuffer, 1 MiB limit), parsed (parse_line: depth limit),
// checked (validate_request) and answered as the control socket answers them
// (ControlServer::answer, encode_line) by cdsmd's own dispatch (Service::handle), once for root,
// once for a member of the admin group and once for an unprivileged user.
//
// The Service never opened /dev/cdsm; its machine is synthetic (2 packages x 2 cores x 2 PUs) and
// it holds three applications of two users, as if the module had listed them. Every command runs
// cdsmd's code up to its first ioctl, which is answered ENODEV (Service::device()): list, show,
// topology, reload without kernel parameters, unknown commands and every refusal run entirely;
// the others after their checks, their rights and the application lookup.
//
// Beyond "no crash, no sanitizer report": every answer is a response object, and an
// unprivileged user is never answered "ok" to a command that changes something, nor shown an
// application of another user.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cdsm/topology.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "planner.hpp"
#include "policy.hpp"
#include "service.hpp"

namespace cdsm::cdsmd {

using control::Json;

struct ServiceFuzzAccess {
    static Service& instance() {
        static Service* d = [] {
            spdlog::set_level(spdlog::level::off);
            Options options;
            options.config_path = CDSM_FUZZ_DATA "/cdsmd.toml";
            options.config_explicit = true;
            auto* daemon = new Service(options, load_config(options.config_path, true));
            daemon->planner_ = std::make_unique<Planner>(
                Topology::from_synthetic("pack:2 core:2 pu:2"), daemon->config_.costs);
            const auto add = [daemon](std::uint32_t id, uid_t uid, const char* comm,
                                      const std::string& name) {
                cdsm_app_info info{};
                info.app_id = id;
                info.uid = uid;
                info.root_pid = static_cast<std::int32_t>(1000 + id);
                info.kind = CDSM_TRACK_PID;
                info.nr_tasks = id == 7 ? 2000 : 4;  // 7: a matrix too large for one answer
                std::strncpy(info.comm, comm, sizeof(info.comm) - 1);
                daemon->adopt(info, name);
            };
            add(1, 0, "pairs", "");
            add(2, 1000, "mpi_ring", "job 42");
            add(7, 1000, "lmp", "3");  // a name that reads as another application's id
            initial() = daemon->config_;
            return daemon;
        }();
        return *d;
    }
    static Config& initial() {
        static Config c;
        return c;
    }
    // "set" changes the configuration before its ioctl: every input starts from the same one.
    static void reset() { instance().config_ = initial(); }
    static Json handle(const Json& request, const control::PeerCredentials& creds) {
        return instance().handle(request, creds);
    }
    static uid_t owner(std::uint32_t app_id) { return instance().apps_.at(app_id).info.uid; }
};

}  // namespace cdsm::cdsmd

namespace {

using cdsm::cdsmd::ControlServer;
using cdsm::cdsmd::ServiceFuzzAccess;
namespace control = cdsm::control;

// An unprivileged peer's "ok": never for a command that changes something, and only with its
// own applications.
void check_unprivileged(const std::string& line, const control::Json& reply, uid_t uid) {
    if (!reply.at("ok").get<bool>()) return;
    const control::Json request = control::parse_line(line);  // parsed and valid: it was answered
    const auto dry_run = request.find("dry_run");
    if (cdsm::cdsmd::is_control_request(request.at("cmd").get<std::string>(),
                                        dry_run != request.end() && dry_run->get<bool>())) {
        __builtin_trap();
    }
    if (reply.contains("uid") && reply["uid"] != uid) __builtin_trap();
    if (reply.contains("app_id") && ServiceFuzzAccess::owner(reply["app_id"]) != uid)
        __builtin_trap();
    for (const auto& app : reply.value("apps", control::Json::array())) {
        if (app.at("uid") != uid) __builtin_trap();
    }
}

void answer(const std::string& line) {
    const pid_t pid = ::getpid();
    const control::PeerCredentials root{pid, 0, 0, {}}, admin{pid, 2000, 2000, {100, 4242}},
        user{pid, 1000, 1000, {100}};
    for (const auto* peer : {&root, &admin, &user}) {
        ServiceFuzzAccess::reset();
        const control::Json reply = ControlServer::answer(ServiceFuzzAccess::handle, line, *peer);
        if (!reply.is_object() || !reply.contains("ok") || !reply["ok"].is_boolean())
            __builtin_trap();
        if (peer == &user) check_unprivileged(line, reply, user.uid);
        (void)control::encode_line(reply);
    }
}

// Feeds the bytes to a LineBuffer in reads of 1, 2, 4, ... 4096 bytes, answering every line, as
// the server does; stops at the first framing error, after which the server hangs up.
void frame(std::string_view bytes, std::size_t max_bytes, bool answer_lines) {
    control::LineBuffer in(max_bytes);
    try {
        for (std::size_t read = 1; !bytes.empty(); read = read < 4096 ? read * 2 : 1) {
            const std::size_t n = std::min(read, bytes.size());
            in.append(bytes.substr(0, n));
            bytes.remove_prefix(n);
            while (auto line = in.next_line()) {
                if (line->size() > max_bytes) __builtin_trap();
                if (answer_lines) answer(*line);
            }
        }
    } catch (const control::ProtocolError& e) {
        if (e.code() != "EPROTO") __builtin_trap();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    frame(bytes, control::kMaxRequestBytes, true);
    frame(bytes, 64, false);  // the same framing with a limit that inputs reach
    return 0;
}
