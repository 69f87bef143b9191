// SPDX-License-Identifier: GPL-2.0
#include "cdsm/matrix_io.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <string>

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

// Large matrices take the reader's other paths: sparse storage (256 tasks and more) checked by
// columns, and storage that turns dense while the rows are read.
TEST(MatrixIo, LargeCsvRoundTripsExactly) {
    const CommMatrix stencil = patterns::stencil_2d(1024);
    ASSERT_TRUE(stencil.is_sparse());
    const CommMatrix back = parse_matrix_csv(format_matrix_csv(stencil), "stencil.csv");
    EXPECT_EQ(back, stencil);
    EXPECT_TRUE(back.is_sparse());

    // Every pair, some of 20 digits (the reader takes counts below 1.8e19): the sparse storage
    // the reader starts with turns dense a quarter of the way in.
    CommMatrix dense(300);
    std::mt19937_64 random(3);
    for (std::size_t i = 0; i < 300; ++i)
        for (std::size_t j = i + 1; j < 300; ++j)
            dense.set(i, j, j == i + 1 ? 17'999'999'999'999'999'999u - i : random() % 1000 + 1);
    ASSERT_FALSE(dense.is_sparse());
    EXPECT_EQ(parse_matrix_csv(format_matrix_csv(dense), "dense.csv"), dense);
}

TEST(MatrixIo, CsvCellsReadAlikeWhateverTheirForm) {
    // Task 0 and 1 exchange 7 in every spelling the reader accepts, in a sparse 300-task matrix.
    for (const char* seven : {"7", " 7", "7 ", "\t7\t", "7\r", "0007", "7.0", "7e0", "0.7e1"}) {
        std::string text;
        for (std::size_t i = 0; i < 300; ++i) {
            for (std::size_t j = 0; j < 300; ++j) {
                if (j > 0) text += ',';
                text += (i == 0 && j == 1) ? seven : (i == 1 && j == 0) ? "7" : "0";
            }
            text += '\n';
        }
        const CommMatrix m = parse_matrix_csv(text, "m.csv");
        EXPECT_EQ(m.at(0, 1), 7u) << seven;
        EXPECT_EQ(m.total(), 7.0) << seven;
    }
}

// The first cell in row order whose mirror differs is named, whichever side is zero, and
// whether the matrix is stored sparsely or has turned dense by then.
TEST(MatrixIo, CsvAsymmetryIsNamedAtTheFirstCellBelowTheDiagonal) {
    struct Cell {
        std::size_t row, column;
        const char* text;
    };
    // n tasks, the first `busy` of which talk to everyone (2), with some cells overridden.
    auto matrix_csv = [](std::size_t n, std::size_t busy, std::vector<Cell> cells) {
        std::string text;
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                if (j > 0) text += ',';
                const auto it = std::find_if(cells.begin(), cells.end(), [&](const Cell& c) {
                    return c.row == i && c.column == j;
                });
                text += it != cells.end() ? it->text : i != j && std::min(i, j) < busy ? "2" : "0";
            }
            text += '\n';
        }
        return text;
    };
    auto error = [](const std::string& text) {
        return error_of([&] { parse_matrix_csv(text, "m.csv"); });
    };
    // Sparse: row 7 says 0 where row 3 said 5, or 5 where row 3 said 0.
    EXPECT_THAT(error(matrix_csv(300, 0, {{3, 7, "5"}})),
                HasSubstr("m.csv: is not symmetric: cell (3, 7) = 5.000000 but cell (7, 3) = "
                          "0.000000"));
    EXPECT_THAT(error(matrix_csv(300, 0, {{7, 3, "5"}})),
                HasSubstr("cell (3, 7) = 0.000000 but cell (7, 3) = 5.000000"));
    // Rows 0..99 talk to everyone: the storage is dense from about row 40 on.
    EXPECT_THAT(error(matrix_csv(300, 100, {{250, 120, "9"}})),
                HasSubstr("cell (120, 250) = 0.000000 but cell (250, 120) = 9.000000"));
    EXPECT_THAT(error(matrix_csv(300, 100, {{250, 60, "9"}})),
                HasSubstr("cell (60, 250) = 2.000000 but cell (250, 60) = 9.000000"));
    // Cells are read in order: what comes first in the text is named.
    EXPECT_THAT(error(matrix_csv(300, 0, {{7, 3, "5"}, {7, 200, "x"}})),
                HasSubstr("is not symmetric: cell (3, 7)"));
    EXPECT_THAT(error(matrix_csv(300, 0, {{7, 3, "x"}, {7, 5, "5"}})),
                HasSubstr("row 7, column 3: 'x' is not a number"));
}

TEST(MatrixIo, LargeCsvWithARowOfTheWrongLengthNamesIt) {
    std::string text;
    for (std::size_t i = 0; i < 300; ++i) {
        for (std::size_t j = 0; j < (i == 200 ? 302 : 300); ++j) text += j > 0 ? ",0" : "0";
        text += '\n';
    }
    EXPECT_THAT(error_of([&] { parse_matrix_csv(text, "m.csv"); }),
                HasSubstr("m.csv: row 200 has 302 values but there are 300 rows"));
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
