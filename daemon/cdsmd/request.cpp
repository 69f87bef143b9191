// SPDX-License-Identifier: GPL-2.0
#include "request.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits.h>

#include <algorithm>
#include <cdsm/mapper.hpp>
#include <cdsm/matrix_io.hpp>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "app_state.hpp"

namespace cdsm::cdsmd {

using control::Json;
using control::ProtocolError;

namespace {

constexpr std::string_view kCommands[] = {"ping",  "list",    "show",     "tasks", "matrix",
                                          "track", "untrack", "age",      "reset", "release",
                                          "map",   "stats",   "topology", "set",   "reload"};
constexpr std::string_view kWithApp[] = {"show", "tasks", "matrix",  "untrack",
                                         "age",  "reset", "release", "map"};
// The fields each command reads besides "cmd"; any other is refused, so that a field a newer
// client sends (one that may change what the command does) is never silently ignored.
struct Fields {
    std::string_view cmd;
    std::initializer_list<std::string_view> fields;
};
const Fields kFields[] = {{"ping", {}},
                          {"list", {}},
                          {"show", {"app"}},
                          {"tasks", {"app"}},
                          {"matrix", {"app", "sparse", "view"}},
                          {"track", {"pid", "cgroup", "name", "mode", "smt", "spread"}},
                          {"untrack", {"app"}},
                          {"age", {"app"}},
                          {"reset", {"app"}},
                          {"release", {"app"}},
                          {"map", {"app", "dry_run", "algorithm"}},
                          {"stats", {}},
                          {"topology", {}},
                          {"set", {"params"}},
                          {"reload", {}}};
// Names and paths longer than this are no application's.
constexpr std::size_t kMaxString = 4096;

template <std::size_t N>
bool one_of(std::string_view s, const std::string_view (&list)[N]) {
    return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

[[noreturn]] void bad(std::string_view cmd, std::string_view field, std::string_view what) {
    throw ProtocolError("EINVAL", fmt::format("'{}': \"{}\" must be {}", cmd, field, what));
}

bool whole_at_most(const Json& v, std::uint64_t max) {
    return v.is_number_unsigned() && v.get<std::uint64_t>() <= max;
}

void check_string(const Json& r, std::string_view cmd, const char* field) {
    if (!r.contains(field)) return;
    const Json& v = r[field];
    if (!v.is_string() || v.get_ref<const std::string&>().size() > kMaxString) {
        bad(cmd, field, fmt::format("a string of at most {} bytes", kMaxString));
    }
}

void check_bool(const Json& r, std::string_view cmd, const char* field) {
    if (r.contains(field) && !r[field].is_boolean()) bad(cmd, field, "true or false");
}

}  // namespace

void validate_request(const Json& r) {
    if (!r.is_object()) throw ProtocolError("EPROTO", "message is not a JSON object");
    if (!r.contains("cmd") || !r["cmd"].is_string()) {
        throw ProtocolError("EINVAL", "a request needs \"cmd\": a command name");
    }
    const std::string& cmd = r["cmd"].get_ref<const std::string&>();
    if (!one_of(cmd, kCommands)) {
        throw ProtocolError("EINVAL",
                            fmt::format("unknown command '{}'",
                                        cmd.substr(0, std::min<std::size_t>(64, cmd.size()))));
    }
    for (const Fields& f : kFields) {
        if (f.cmd != cmd) continue;
        for (const auto& [name, value] : r.items()) {
            if (name == "cmd" ||
                std::find(f.fields.begin(), f.fields.end(), name) != f.fields.end())
                continue;
            throw ProtocolError(
                "EINVAL", fmt::format("'{}': unknown field \"{}\" (it takes {})", cmd,
                                      name.substr(0, std::min<std::size_t>(64, name.size())),
                                      f.fields.size() == 0
                                          ? std::string("none")
                                          : fmt::format("\"{}\"", fmt::join(f.fields, "\", \""))));
        }
    }
    check_bool(r, cmd, "dry_run");
    if (one_of(cmd, kWithApp)) {
        if (!r.contains("app")) throw ProtocolError("EINVAL", "missing \"app\"");
        const Json& a = r["app"];
        const bool name = a.is_string() && a.get_ref<const std::string&>().size() <= kMaxString;
        if (!name && !whole_at_most(a, UINT32_MAX)) {
            bad(cmd, "app", "an application id (a whole number) or name (a string)");
        }
    }
    if (cmd == "matrix") {
        check_bool(r, cmd, "sparse");
        if (r.contains("view") && !(r["view"] == "aged" || r["view"] == "whole")) {
            bad(cmd, "view", "\"aged\" or \"whole\"");
        }
    }
    if (cmd == "map" && r.contains("algorithm")) {
        // Only the mappers the protocol documents (libcdsm's mapper_names()): make_mapper() also
        // builds others for tests and benchmarks (an exhaustive search that takes minutes on a
        // node's PUs), which no socket client may start.
        const auto names = mapper_names();
        const Json& a = r["algorithm"];
        if (!a.is_string() ||
            std::find(names.begin(), names.end(), a.get_ref<const std::string&>()) == names.end()) {
            bad(cmd, "algorithm", fmt::format("one of {}", fmt::join(names, ", ")));
        }
    }
    if (cmd == "track") {
        check_string(r, cmd, "name");
        check_string(r, cmd, "cgroup");
        if (r.contains("pid") && r.contains("cgroup")) {
            throw ProtocolError("EINVAL", "'track': give \"pid\" or \"cgroup\", not both");
        }
        if (r.contains("mode") &&
            !(r["mode"].is_string() && parse_mode(r["mode"].get_ref<const std::string&>()))) {
            bad(cmd, "mode", "\"map\" or \"detect\"");
        }
        if (r.contains("smt") && !(r["smt"] == "avoid" || r["smt"] == "allow"))
            bad(cmd, "smt", "\"avoid\" or \"allow\"");
        if (r.contains("spread") && !(r["spread"] == "balanced" || r["spread"] == "pack"))
            bad(cmd, "spread", "\"balanced\" or \"pack\"");
        if (r.contains("pid") && !(whole_at_most(r["pid"], INT_MAX) && r["pid"] != 0)) {
            bad(cmd, "pid", "a process id (a whole number from 1)");
        }
    }
    if (cmd == "set") {
        if (!r.contains("params") || !r["params"].is_object()) {
            throw ProtocolError("EINVAL", "set needs \"params\": {NAME: VALUE}");
        }
        for (const auto& [name, value] : r["params"].items()) {
            if (!whole_at_most(value, UINT32_MAX)) {
                throw ProtocolError(
                    "EINVAL", fmt::format("'set': parameter '{}' must be a whole number "
                                          "from 0 to {}",
                                          name.substr(0, std::min<std::size_t>(64, name.size())),
                                          UINT32_MAX));
            }
        }
    }
}

void check_matrix_cells(std::uint64_t cells, bool sparse, std::uint32_t app_id) {
    if (cells <= kMaxMatrixCells) return;
    throw ProtocolError(
        "E2BIG", fmt::format("the matrix of application {} has {} {}cells, more than the {} one "
                             "answer carries{}",
                             app_id, cells, sparse ? "non-zero " : "", kMaxMatrixCells,
                             sparse ? "" : "; ask for its non-zero cells (\"sparse\":true)"));
}

Json matrix_cells(const CommMatrix& m, bool sparse, std::uint32_t app_id) {
    if (!sparse) {
        check_matrix_cells(std::uint64_t(m.size()) * m.size(), false, app_id);
    } else {
        std::uint64_t nonzero = 0;
        m.for_each_pair([&](std::size_t, std::size_t, CommMatrix::Value) { ++nonzero; });
        check_matrix_cells(nonzero, true, app_id);
    }
    Json j = matrix_json(m, sparse ? MatrixLayout::kSparse : MatrixLayout::kDense);
    // Protocol 1 predates the schema cdsm-matrix/1: it names the dense rows "cells" and has no
    // "schema" member (docs/json.md).
    j.erase("schema");
    if (!sparse) {
        j["cells"] = std::move(j["matrix"]);
        j.erase("matrix");
    }
    return j;
}

}  // namespace cdsm::cdsmd
