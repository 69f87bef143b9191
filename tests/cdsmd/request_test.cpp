// SPDX-License-Identifier: GPL-2.0
// Requests are checked before use: every field of the type it must have, nothing nested deep
// enough to overflow a recursive walk; matrix answers have a bounded size.
#include "request.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cdsm/mapper.hpp>
#include <string>

namespace cdsm::cdsmd {
namespace {

using control::Json;
using control::ProtocolError;

std::string code_of(const std::string& line) {
    try {
        validate_request(control::parse_line(line));
    } catch (const ProtocolError& e) {
        return e.code() + ": " + e.what();
    }
    return "ok";
}

TEST(Request, ADeepRequestIsRefusedBeforeAnythingWalksIt) {
    // Nested 300000 deep under the 1 MiB limit: a recursive dump of it overflowed the stack.
    const std::size_t deep = 300000;
    const std::string line =
        R"({"cmd":"show","app":)" + std::string(deep, '[') + std::string(deep, ']') + "}";
    ASSERT_LT(line.size(), control::kMaxRequestBytes);
    EXPECT_EQ(code_of(line), "EPROTO: message nested more than 16 levels deep");
    // 16 levels are allowed (then the unknown field is refused), 17 are not.
    EXPECT_EQ(code_of(R"({"cmd":"ping","x":)" + std::string(15, '[') + std::string(15, ']') + "}"),
              R"(EINVAL: 'ping': unknown field "x" (it takes none))");
    EXPECT_EQ(code_of(R"({"cmd":"ping","x":)" + std::string(16, '[') + std::string(16, ']') + "}"),
              "EPROTO: message nested more than 16 levels deep");
}

TEST(Request, EveryFieldReadHasItsType) {
    EXPECT_EQ(code_of(R"({"cmd":"list"})"), "ok");
    EXPECT_EQ(code_of(R"({"cmd":"show","app":7})"), "ok");
    EXPECT_EQ(code_of(R"({"cmd":"show","app":"lulesh"})"), "ok");
    EXPECT_EQ(code_of(R"({"cmd":"track","pid":42,"name":"x"})"), "ok");
    EXPECT_EQ(code_of(R"({"cmd":"track","cgroup":"/a/b"})"), "ok");
    EXPECT_EQ(code_of(R"({"cmd":"track","cgroup":"/a/b","smt":"allow","spread":"pack"})"), "ok");
    EXPECT_EQ(code_of(R"({"cmd":"track","cgroup":"/a/b","smt":"sometimes"})"),
              R"(EINVAL: 'track': "smt" must be "avoid" or "allow")");
    EXPECT_EQ(code_of(R"({"cmd":"track","cgroup":"/a/b","spread":["pack"]})"),
              R"(EINVAL: 'track': "spread" must be "balanced" or "pack")");
    EXPECT_EQ(code_of(R"({"cmd":"track","cgroup":"/a/b","mode":"detect"})"), "ok");
    EXPECT_EQ(code_of(R"({"cmd":"track","pid":42,"mode":"map"})"), "ok");
    EXPECT_EQ(code_of(R"({"cmd":"map","app":1,"dry_run":true,"algorithm":"pack"})"), "ok");
    EXPECT_EQ(code_of(R"({"cmd":"set","params":{"auto_threads":4}})"), "ok");
    EXPECT_EQ(code_of(R"({"cmd":"matrix","app":1,"sparse":true})"), "ok");

    EXPECT_EQ(code_of(R"({})"), R"(EINVAL: a request needs "cmd": a command name)");
    EXPECT_EQ(code_of(R"({"cmd":["list"]})"), R"(EINVAL: a request needs "cmd": a command name)");
    EXPECT_EQ(code_of(R"({"cmd":"rm -rf"})"), "EINVAL: unknown command 'rm -rf'");
    EXPECT_EQ(code_of(R"({"cmd":"show"})"), R"(EINVAL: missing "app")");
    for (const char* app : {R"({"a":1})", "[1]", "-1", "1.5", "4294967296", "null", "true"}) {
        EXPECT_EQ(code_of(std::string(R"({"cmd":"show","app":)") + app + "}"),
                  R"(EINVAL: 'show': "app" must be an application id (a whole number) or name )"
                  R"((a string))")
            << app;
    }
    EXPECT_EQ(code_of(R"({"cmd":"show","app":")" + std::string(5000, 'x') + "\"}"),
              R"(EINVAL: 'show': "app" must be an application id (a whole number) or name )"
              R"((a string))");
    EXPECT_EQ(code_of(R"({"cmd":"map","app":1,"dry_run":"yes"})"),
              R"(EINVAL: 'map': "dry_run" must be true or false)");
    for (const char* pid : {R"("42")", "-1", "0", "2147483648", "1.0"}) {
        EXPECT_EQ(code_of(std::string(R"({"cmd":"track","pid":)") + pid + "}"),
                  R"(EINVAL: 'track': "pid" must be a process id (a whole number from 1))")
            << pid;
    }
    EXPECT_EQ(code_of(R"({"cmd":"track","cgroup":7})"),
              R"(EINVAL: 'track': "cgroup" must be a string of at most 4096 bytes)");
    // Only the documented mappers (mapper_names()): make_mapper() also builds an exhaustive
    // search, which took 13.8 s for 10 tasks on 42 of 64 PUs (issue 26), and "current".
    const std::string algorithms = fmt::format(R"(EINVAL: 'map': "algorithm" must be one of {})",
                                               fmt::join(mapper_names(), ", "));
    for (const char* a : {"{}", R"("exhaustive")", R"("current")", R"("")", R"("Scotch")", "7"}) {
        EXPECT_EQ(
            code_of(std::string(R"({"cmd":"map","app":1,"dry_run":true,"algorithm":)") + a + "}"),
            algorithms)
            << a;
    }
    for (const std::string_view name : mapper_names()) {
        EXPECT_EQ(code_of(fmt::format(R"({{"cmd":"map","app":1,"dry_run":true,"algorithm":"{}"}})",
                                      name)),
                  "ok")
            << name;
    }
    EXPECT_EQ(code_of(R"({"cmd":"set","params":[1]})"),
              R"(EINVAL: set needs "params": {NAME: VALUE})");
    EXPECT_EQ(code_of(R"({"cmd":"set","params":{"max_tasks":-3}})"),
              "EINVAL: 'set': parameter 'max_tasks' must be a whole number from 0 to 4294967295");
    EXPECT_EQ(code_of(R"({"cmd":"matrix","app":1,"sparse":1})"),
              R"(EINVAL: 'matrix': "sparse" must be true or false)");
    EXPECT_EQ(code_of(R"({"cmd":"matrix","app":1,"view":"whole"})"), "ok");
    EXPECT_EQ(code_of(R"({"cmd":"matrix","app":1,"view":"all"})"),
              R"(EINVAL: 'matrix': "view" must be "aged" or "whole")");
    EXPECT_EQ(code_of(R"({"cmd":"matrix","app":1,"view":1})"),
              R"(EINVAL: 'matrix': "view" must be "aged" or "whole")");
    for (const char* mode : {R"("off")", R"("Detect")", R"("")", "1", "null"}) {
        EXPECT_EQ(code_of(std::string(R"({"cmd":"track","pid":42,"mode":)") + mode + "}"),
                  R"(EINVAL: 'track': "mode" must be "map" or "detect")")
            << mode;
    }
    EXPECT_EQ(code_of(R"({"cmd":"track","pid":42,"cgroup":"/a"})"),
              R"(EINVAL: 'track': give "pid" or "cgroup", not both)");
}

TEST(Request, AFieldTheCommandDoesNotTakeIsRefused) {
    // A newer client's field may change what a command does: never ignored silently.
    EXPECT_EQ(code_of(R"({"cmd":"list","anything":[{}]})"),
              R"(EINVAL: 'list': unknown field "anything" (it takes none))");
    EXPECT_EQ(code_of(R"({"cmd":"track","pid":42,"dry_run":true})"),
              R"(EINVAL: 'track': unknown field "dry_run" (it takes "pid", "cgroup", "name", )"
              R"("mode", "smt", "spread"))");
    EXPECT_EQ(code_of(R"({"cmd":"show","app":1,"sparse":true})"),
              R"(EINVAL: 'show': unknown field "sparse" (it takes "app"))");
    EXPECT_EQ(code_of(R"({"cmd":"map","app":1,"apply":false})"),
              R"(EINVAL: 'map': unknown field "apply" (it takes "app", "dry_run", "algorithm"))");
    EXPECT_EQ(code_of(R"({"cmd":"reload","file":"/etc/x"})"),
              R"(EINVAL: 'reload': unknown field "file" (it takes none))");
}

TEST(MatrixAnswer, DenseRowsOrSparseCellsAboveTheDiagonal) {
    CommMatrix m(3);
    m.set(0, 1, 5);
    m.set(1, 2, 7);
    EXPECT_EQ(matrix_cells(m, false, 1),
              (Json{{"dim", 3}, {"cells", {{0, 5, 0}, {5, 0, 7}, {0, 7, 0}}}}));
    EXPECT_EQ(matrix_cells(m, true, 1), (Json{{"dim", 3}, {"entries", {{0, 1, 5}, {1, 2, 7}}}}));
}

TEST(MatrixAnswer, IsBounded) {
    // 1024 tasks are sent dense; 1025 are not (a matrix of 4096 tasks was ~200 MB of JSON).
    EXPECT_NO_THROW(check_matrix_cells(1024u * 1024u, false, 3));
    try {
        matrix_cells(CommMatrix(1025), false, 3);
        FAIL() << "a dense matrix of 1025 tasks was sent";
    } catch (const ProtocolError& e) {
        EXPECT_EQ(e.code(), "E2BIG");
        EXPECT_EQ(std::string(e.what()),
                  "the matrix of application 3 has 1050625 cells, more than the 1048576 one "
                  "answer carries; ask for its non-zero cells (\"sparse\":true)");
    }
    // Sparse: what counts is the non-zero cells.
    CommMatrix m(1025);
    m.set(0, 1, 9);
    EXPECT_EQ(matrix_cells(m, true, 3), (Json{{"dim", 1025}, {"entries", {{0, 1, 9}}}}));
    EXPECT_THROW(check_matrix_cells(kMaxMatrixCells + 1, true, 3), ProtocolError);
}

}  // namespace
}  // namespace cdsm::cdsmd
