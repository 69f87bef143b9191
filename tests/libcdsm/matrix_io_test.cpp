// SPDX-License-Identifier: GPL-2.0
#include "cdsm/matrix_io.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "cdsm/patterns.hpp"
#include "test_support.hpp"

namespace cdsm {
namespace {

using test::error_of;
using ::testing::HasSubstr;

TEST(MatrixIo, CsvAndJsonRoundTrip) {
    const CommMatrix m = patterns::random_sparse(12, 3, 9);
    EXPECT_EQ(parse_matrix_csv(format_matrix_csv(m), "m.csv"), m);
    const std::vector<std::int64_t> tids = {100, 101, 102, 103, 104, 105,
                                            106, 107, 108, 109, 110, 111};
    const TaskMatrix back = parse_matrix_json(format_matrix_json(m, tids), "m.json");
    EXPECT_EQ(back.matrix, m);
    EXPECT_EQ(back.tasks, tids);
    const auto dir = std::filesystem::temp_directory_path();
    for (const char* ext : {".csv", ".json"}) {
        const auto path = dir / ("cdsm-matrix-" + std::to_string(getpid()) + ext);
        write_matrix_file(path, m, tids);
        EXPECT_EQ(read_matrix_file(path).matrix, m) << ext;
        std::filesystem::remove(path);
    }
}

TEST(MatrixIo, CsvToleratesSpacesAndBlankLines) {
    const CommMatrix m = parse_matrix_csv(" 0, 5 ,1\r\n5,0,0\n\n1,0,0\n", "m.csv");
    EXPECT_EQ(m.at(0, 1), 5u);
    EXPECT_EQ(m.at(2, 0), 1u);
}

TEST(MatrixIo, BadCsvNamesTheProblemAndTheInput) {
    EXPECT_THAT(
        error_of([] { parse_matrix_csv("0,1\n1,0,3\n", "m.csv"); }),
        HasSubstr("m.csv: row 1 has 3 values but there are 2 rows (the matrix must be square)"));
    EXPECT_THAT(error_of([] { parse_matrix_csv("0,x\n1,0\n", "m.csv"); }),
                HasSubstr("m.csv: row 0, column 1: 'x' is not a number"));
    EXPECT_THAT(error_of([] { parse_matrix_csv("0,-1\n-1,0\n", "m.csv"); }),
                HasSubstr("m.csv: cell (0, 1) is negative"));
    EXPECT_THAT(error_of([] { parse_matrix_csv("0,nan\nnan,0\n", "m.csv"); }),
                HasSubstr("m.csv: cell (0, 1) is NaN"));
    EXPECT_THAT(error_of([] { parse_matrix_csv("0,1\n2,0\n", "m.csv"); }),
                HasSubstr("m.csv: is not symmetric"));
    EXPECT_THAT(error_of([] { read_matrix_file("/nonexistent/m.csv"); }),
                HasSubstr("/nonexistent/m.csv: cannot be opened"));
    EXPECT_THAT(error_of([] { write_matrix_file("m.txt", CommMatrix(1)); }),
                HasSubstr("m.txt: unknown matrix format"));
}

TEST(MatrixIo, BadJsonNamesTheProblemAndTheInput) {
    EXPECT_THAT(error_of([] { parse_matrix_json("{\"matrix\": [[0,1],", "m.json"); }),
                HasSubstr("m.json: malformed JSON"));
    EXPECT_THAT(error_of([] { parse_matrix_json("{\"rows\": []}", "m.json"); }),
                HasSubstr("m.json: has no \"matrix\" array"));
    EXPECT_THAT(error_of([] { parse_matrix_json("{\"matrix\": [[0,1],[1]]}", "m.json"); }),
                HasSubstr("row 1 has 1 values but there are 2 rows"));
    EXPECT_THAT(error_of([] { parse_matrix_json("{\"matrix\": [[0,null],[1,0]]}", "m.json"); }),
                HasSubstr("row 0, column 1: null is not a number"));
    EXPECT_THAT(error_of([] {
                    parse_matrix_json("{\"tasks\": [1,2,3], \"matrix\": [[0,1],[1,0]]}", "m.json");
                }),
                HasSubstr("m.json: lists 3 tasks but the matrix has 2 rows"));
    EXPECT_THAT(error_of([] { format_matrix_json(CommMatrix(2), std::vector<std::int64_t>{1}); }),
                HasSubstr("task list of 1 ids: does not match the matrix of 2 tasks"));
}

TEST(MatrixJson, ACdsmdMatrixAnswerSavedAsItCameReadsWithItsTaskIds) {
    // As the Slurm plugin saves it: task objects, not ids; a task object without a tid is not one.
    const auto read = parse_matrix_json(
        R"({"app_id":1,"cells":[[0,5],[5,0]],"dim":2,"events":10,"ok":true,)"
        R"("tasks":[{"index":0,"tid":341,"rank":null},{"index":1,"tid":342,"rank":null}]})",
        "reply.json");
    EXPECT_EQ(read.tasks, (std::vector<std::int64_t>{341, 342}));
    EXPECT_EQ(read.matrix.at(0, 1), 5u);
    EXPECT_THAT(error_of([] {
                    parse_matrix_json(R"({"cells":[[0,1],[1,0]],"tasks":[{"index":0},{"tid":2}]})",
                                      "reply.json");
                }),
                HasSubstr("reply.json: task id {\"index\":0} is not an integer"));
}

TEST(MatrixJson, OneSchemaDenseOrSparseReadBackTheSame) {
    const CommMatrix m = patterns::random_sparse(300, 3, 9);  // stored sparsely
    const nlohmann::json dense = matrix_json(m, MatrixLayout::kDense);
    const nlohmann::json sparse = matrix_json(m, MatrixLayout::kSparse);
    for (const auto* j : {&dense, &sparse}) {
        EXPECT_EQ(j->at("schema"), kMatrixSchema);
        EXPECT_EQ(j->at("dim"), 300);
        EXPECT_EQ(matrix_from_json(*j, "m"), m);
    }
    EXPECT_EQ(dense.at("matrix").size(), 300u);
    std::size_t pairs = 0;
    m.for_each_pair([&](std::size_t, std::size_t, CommMatrix::Value) { ++pairs; });
    EXPECT_EQ(sparse.at("entries").size(), pairs);
    // cdsmd's protocol 1 names the dense rows "cells".
    const nlohmann::json reply{{"dim", 2}, {"cells", {{0, 4}, {4, 0}}}};
    EXPECT_EQ(matrix_from_json(reply, "reply").at(0, 1), 4u);
}

TEST(MatrixJson, BadEntriesNameTheEntry) {
    EXPECT_THAT(error_of([] {
                    matrix_from_json(nlohmann::json{{"entries", {{0, 1, 2}}}}, "m");
                }),
                HasSubstr("m: has \"entries\" but no \"dim\""));
    EXPECT_THAT(error_of([] {
                    matrix_from_json(nlohmann::json{{"dim", 2}, {"entries", {{0, 2, 1}}}}, "m");
                }),
                HasSubstr("m: entry 0 [0,2,1]: is not a pair of two tasks below dim"));
    EXPECT_THAT(error_of([] {
                    matrix_from_json(nlohmann::json{{"dim", 2}, {"entries", {{0, 1, -1}}}}, "m");
                }),
                HasSubstr("is not [i, j, value] of whole numbers"));
    EXPECT_THAT(error_of([] {
                    matrix_from_json(
                        nlohmann::json{{"dim", 1u << 20}, {"entries", nlohmann::json::array()}},
                        "m");
                }),
                HasSubstr("\"dim\" 1048576 is above 65536"));
}

}  // namespace
}  // namespace cdsm
