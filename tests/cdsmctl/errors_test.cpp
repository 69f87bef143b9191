// SPDX-License-Identifier: GPL-2.0
// Bad input gives one clear line on stderr naming the input, and exit status 1 (failure) or 2
// (usage); nothing on stdout.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cdsm/matrix_io.hpp"
#include "support.hpp"

namespace cdsm::cdsmctl::test {
namespace {

constexpr const char* kSmall = "pack:2 core:2 pu:2";

void expect_error(const Result& r, int status, const std::vector<std::string>& mentions) {
    EXPECT_EQ(r.status, status) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(one_line(r.err)) << "stderr: " << r.err;
    EXPECT_EQ(r.err.rfind("cdsmctl: ", 0), 0u) << r.err;
    for (const auto& m : mentions) EXPECT_NE(r.err.find(m), std::string::npos) << r.err;
}

Result map_file(const TempDir& dir, const std::string& name, const std::string& text,
                const std::string& topology = kSmall) {
    return cdsmctl({"map", "--matrix", dir.write(name, text), "--topology", topology});
}

TEST(Errors, MissingMatrixFile) {
    const Result r = cdsmctl({"map", "--matrix", "/nonexistent/m.csv", "--topology", kSmall});
    expect_error(r, 1, {"/nonexistent/m.csv", "No such file"});
}

TEST(Errors, MatrixThatIsADirectory) {
    TempDir dir;
    const Result r = cdsmctl({"show", "--matrix", dir.path().string()});
    expect_error(r, 1, {dir.path().string(), "directory"});
}

TEST(Errors, NonSquareMatrix) {
    TempDir dir;
    expect_error(map_file(dir, "m.csv", "0,1,2\n1,0,3\n"), 1, {"m.csv", "square"});
    expect_error(map_file(dir, "m.json", R"({"matrix": [[0, 1], [1]]})"), 1, {"m.json", "square"});
}

TEST(Errors, NegativeNanFractionalOrTextCells) {
    TempDir dir;
    expect_error(map_file(dir, "neg.csv", "0,-1\n-1,0\n"), 1, {"neg.csv", "negative"});
    expect_error(map_file(dir, "nan.csv", "0,nan\nnan,0\n"), 1, {"nan.csv", "NaN"});
    expect_error(map_file(dir, "frac.csv", "0,1.5\n1.5,0\n"), 1, {"frac.csv", "whole"});
    expect_error(map_file(dir, "text.csv", "0,x\nx,0\n"), 1, {"text.csv", "'x' is not a number"});
    expect_error(map_file(dir, "null.json", R"({"matrix": [[0, null], [null, 0]]})"), 1,
                 {"null.json", "not a number"});
}

TEST(Errors, AsymmetricMatrix) {
    TempDir dir;
    expect_error(map_file(dir, "m.csv", "0,1\n2,0\n"), 1, {"m.csv", "symmetric"});
}

TEST(Errors, EmptyOrMalformedMatrixFiles) {
    TempDir dir;
    expect_error(map_file(dir, "empty.csv", ""), 1, {"empty.csv", "no matrix"});
    expect_error(map_file(dir, "bad.json", "{\"matrix\": [[0, 1], [1, 0]"), 1,
                 {"bad.json", "malformed JSON"});
    expect_error(map_file(dir, "nomatrix.json", "{\"cells\": []}"), 1, {"nomatrix.json", "matrix"});
}

TEST(Errors, MalformedXmlTopology) {
    TempDir dir;
    const auto matrix = dir.write("m.csv", cdsm::format_matrix_csv(mirrored_pairs(4)));
    const auto xml = dir.write("broken.xml", "<?xml version=\"1.0\"?>\n<topology><object");
    const Result r = cdsmctl({"map", "--matrix", matrix, "--topology", xml});
    expect_error(r, 1, {"broken.xml"});
    const Result missing = cdsmctl({"topology", "--topology", "/nonexistent/machine.xml"});
    expect_error(missing, 1, {"/nonexistent/machine.xml"});
}

TEST(Errors, BadSyntheticTopology) {
    const Result r = cdsmctl({"topology", "--topology", "pack:two pu:x"});
    expect_error(r, 1, {"pack:two pu:x"});
}

// Found by tests/fuzz/fuzz_topology: hwloc accepts this description, and --json failed on the
// bytes of its name that are not UTF-8 ("[json.exception.type_error.316] invalid UTF-8 byte").
TEST(Errors, JsonOutputReplacesBytesThatAreNotUtf8) {
    const Result r = cdsmctl({"topology", "--json", "--topology",
                              "pack\xcc\xcd\xdf\x93\xcc\xc5\xce\xdf"
                              "core:8 pu:2"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["pu_count"], 16);
}

TEST(Errors, BadCurrentPlacement) {
    TempDir dir;
    const auto matrix = dir.write("m.csv", cdsm::format_matrix_csv(mirrored_pairs(4)));
    expect_error(cdsmctl({"map", "--matrix", matrix, "--topology", kSmall, "--current", "0,1"}), 1,
                 {"--current", "2 CPUs", "4 tasks"});
    expect_error(
        cdsmctl({"map", "--matrix", matrix, "--topology", kSmall, "--current", "0,1,2,99"}), 1,
        {"--current", "CPU 99"});
}

TEST(Errors, UsageErrorsExitWithTwo) {
    expect_error(cdsmctl({"frobnicate"}), 2, {"unknown subcommand 'frobnicate'"});
    expect_error(cdsmctl({}), 2, {"subcommand"});
    expect_error(cdsmctl({"list", "--bogus"}), 2, {"--bogus"});
    expect_error(cdsmctl({"map", "--matrix", "m.csv"}), 2, {"--topology"});
    expect_error(cdsmctl({"map"}), 2, {"APP"});
    expect_error(cdsmctl({"map", "app", "--matrix", "m.csv", "--topology", kSmall}), 2,
                 {"not both"});
    expect_error(cdsmctl({"map", "--matrix", "m.csv", "--topology", kSmall, "-a", "greedy"}), 2,
                 {"greedy"});
    expect_error(cdsmctl({"show"}), 2, {"APP or --matrix"});
    expect_error(cdsmctl({"show", "x", "--format", "xml"}), 2, {"xml"});
    expect_error(cdsmctl({"show", "--matrix", "m.csv", "--by", "rank"}), 2, {"rank"});
    expect_error(cdsmctl({"show", "--matrix", "m.csv", "--view", "aged"}), 2, {"--view"});
    expect_error(cdsmctl({"tasks"}), 2, {"APP"});
    expect_error(cdsmctl({"track"}), 2, {"--pid"});
    expect_error(cdsmctl({"track", "--pid", "1", "--cgroup", "/x"}), 2, {"--cgroup"});
    expect_error(cdsmctl({"run"}), 2, {"COMMAND"});
}

TEST(Errors, NoDaemon) {
    TempDir dir;
    const auto socket = (dir.path() / "cdsmd.sock").string();
    for (const std::vector<std::string>& args : {std::vector<std::string>{"list"},
                                                 {"tasks", "3"},
                                                 {"show", "app"},
                                                 {"stats"},
                                                 {"topology"},
                                                 {"map", "3"},
                                                 {"untrack", "3"},
                                                 {"track", "--pid", "1"}}) {
        std::vector<std::string> all{"--socket", socket};
        all.insert(all.end(), args.begin(), args.end());
        expect_error(cdsmctl(all), 1,
                     {"cannot connect to cdsmd at " + socket +
                      ": No such file or directory (is cdsmd running?)"});
    }
}

TEST(Errors, NoDaemonAtTheDefaultOrEnvironmentSocket) {
    TempDir dir;
    const auto socket = (dir.path() / "env.sock").string();
    expect_error(cdsmctl({"list"}, {"CDSM_SOCKET=" + socket}), 1,
                 {"cannot connect to cdsmd at " + socket});
    if (!std::filesystem::exists("/run/cdsm/cdsmd.sock"))
        expect_error(cdsmctl({"list"}), 1, {"cannot connect to cdsmd at /run/cdsm/cdsmd.sock"});
}

TEST(Errors, UnwritablePicture) {
    TempDir dir;
    const auto matrix = dir.write("m.csv", cdsm::format_matrix_csv(mirrored_pairs(4)));
    for (const char* format : {"png", "svg", "pdf"}) {
        const std::string missing = fmt::format("/nonexistent/m.{}", format);
        expect_error(cdsmctl({"show", "--matrix", matrix, std::string("--") + format, missing}), 1,
                     {missing + ": cannot be written (No such file or directory)"});
        expect_error(
            cdsmctl({"show", "--matrix", matrix, std::string("--") + format, dir.path().string()}),
            1, {dir.path().string() + ": cannot be written (Is a directory)"});
    }
}

TEST(Help, EverySubcommandHasHelp) {
    const Result top = cdsmctl({"--help"});
    EXPECT_EQ(top.status, 0);
    for (const char* sub : {"list", "tasks", "show", "map", "run", "track", "untrack", "stats",
                            "topology", "cluster-map", "job-matrix", "calibrate"}) {
        EXPECT_NE(top.out.find(std::string("  ") + sub + " "), std::string::npos) << sub;
        const Result r = cdsmctl({sub, "--help"});
        EXPECT_EQ(r.status, 0) << sub;
        EXPECT_NE(r.out.find(std::string("Usage: cdsmctl ") + sub), std::string::npos) << r.out;
    }
}

}  // namespace
}  // namespace cdsm::cdsmctl::test
