// SPDX-License-Identifier: GPL-2.0
// `cdsmctl show --matrix FILE` in the text formats: they parse back, the heatmap has one row and
// two characters per task (pictures: picture_test.cpp).
#include <gtest/gtest.h>

#include <sstream>

#include "cdsm/matrix_io.hpp"
#include "labelled_matrix.hpp"
#include "support.hpp"

namespace cdsm::cdsmctl::test {
namespace {

// A matrix whose pairs all differ, so that ordering mistakes show.
cdsm::CommMatrix graded(std::size_t n) {
    cdsm::CommMatrix m(n);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) m.set(i, j, (i * 7 + j * 13) % 50);
    return m;
}

std::string heatmap(const std::string& file, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"show", "--matrix", file, "--format", "heatmap"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = cdsmctl(args);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
}

// Rows of the heatmap: the lines drawn between two bars, without the bars.
std::vector<std::string> heatmap_rows(const std::string& out, const std::string& bar) {
    std::vector<std::string> rows;
    for (const auto& line : lines(out)) {
        const auto open = line.find(bar);
        if (open == std::string::npos) continue;
        const auto close = line.rfind(bar);
        EXPECT_NE(open, close) << line;
        rows.push_back(line.substr(open + bar.size(), close - open - bar.size()));
    }
    return rows;
}

std::size_t code_points(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

TEST(Show, CsvParsesBackToTheSameMatrix) {
    TempDir dir;
    const auto m = graded(7);
    const auto file = dir.write("m.json", cdsm::format_matrix_json(m));
    const Result r = cdsmctl({"show", "--matrix", file, "--format", "csv"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(cdsm::parse_matrix_csv(r.out, "output"), m);
}

TEST(Show, JsonParsesBackWithTaskIdsInDisplayOrder) {
    TempDir dir;
    const auto m = graded(5);
    const std::vector<std::int64_t> tids{505, 101, 303, 404, 202};
    const auto file = dir.write("m.json", cdsm::format_matrix_json(m, tids));
    const Result r = cdsmctl({"show", "--matrix", file, "--format", "json", "--by", "tid"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto back = cdsm::parse_matrix_json(r.out, "output");
    // Sorted by tid: display row k is the file's row order[k].
    const std::vector<std::size_t> order{1, 4, 2, 3, 0};
    ASSERT_EQ(back.matrix.size(), 5u);
    for (std::size_t k = 0; k < 5; ++k) {
        EXPECT_EQ(back.tasks[k], tids[order[k]]);
        for (std::size_t l = 0; l < 5; ++l)
            EXPECT_EQ(back.matrix.at(k, l), m.at(order[k], order[l])) << k << "," << l;
    }
    const auto json = nlohmann::json::parse(r.out);
    EXPECT_EQ(json.at("by"), "tid");
    EXPECT_EQ(json.at("labels"), (std::vector<std::string>{"101", "202", "303", "404", "505"}));
}

TEST(Show, TableHasAHeaderAndOneRowPerTask) {
    TempDir dir;
    const auto m = graded(6);
    const auto file = dir.write("m.csv", cdsm::format_matrix_csv(m));
    const Result r = cdsmctl({"show", "--matrix", file, "--format", "table"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto rows = lines(r.out);
    ASSERT_EQ(rows.size(), 7u) << r.out;
    for (std::size_t i = 0; i < 6; ++i) {
        std::istringstream row(rows[i + 1]);
        std::size_t label = 99;
        row >> label;
        EXPECT_EQ(label, i);
        for (std::size_t j = 0; j < 6; ++j) {
            std::uint64_t v = 0;
            row >> v;
            EXPECT_EQ(v, m.at(i, j)) << i << "," << j;
        }
    }
}

TEST(Show, AsciiHeatmapHasOneRowAndTwoCharactersPerTask) {
    TempDir dir;
    const auto m = mirrored_pairs(10, 100, 0);
    const auto file = dir.write("m.csv", cdsm::format_matrix_csv(m));
    const auto rows = heatmap_rows(heatmap(file, {"--charset", "ascii", "--color", "never"}), "|");
    ASSERT_EQ(rows.size(), 10u);
    for (std::size_t i = 0; i < 10; ++i) {
        ASSERT_EQ(rows[i].size(), 20u) << rows[i];
        for (std::size_t j = 0; j < 10; ++j) {
            const char c = rows[i][2 * j];
            // Partners are at the maximum ('@'), everything else is blank.
            EXPECT_EQ(c, m.at(i, j) ? '@' : ' ') << i << "," << j;
        }
    }
}

TEST(Show, Utf8HeatmapUsesShadeBlocks) {
    TempDir dir;
    const auto file = dir.write("m.csv", cdsm::format_matrix_csv(graded(9)));
    const auto out = heatmap(file, {"--charset", "utf8", "--color", "never"});
    const auto rows = heatmap_rows(out, "│");
    ASSERT_EQ(rows.size(), 9u) << out;
    for (const auto& row : rows) EXPECT_EQ(code_points(row), 18u) << row;
    EXPECT_NE(out.find("█"), std::string::npos) << "the maximum is drawn full";
    EXPECT_NE(out.find("max 49 events"), std::string::npos) << out;
}

TEST(Show, ColourHeatmapUses256ColourBackgrounds) {
    TempDir dir;
    const auto file = dir.write("m.csv", cdsm::format_matrix_csv(mirrored_pairs(4)));
    const auto out = heatmap(file, {"--charset", "ascii", "--color", "always"});
    EXPECT_NE(out.find("\x1b[48;5;"), std::string::npos);
    EXPECT_EQ(heatmap_rows(out, "|").size(), 4u);
}

TEST(Show, WideMatrixIsSummedInBlocksToFitTheWidth) {
    TempDir dir;
    const auto file = dir.write("m.csv", cdsm::format_matrix_csv(mirrored_pairs(64)));
    const auto out = heatmap(file, {"--charset", "ascii", "--width", "60"});
    const auto rows = heatmap_rows(out, "|");
    ASSERT_FALSE(rows.empty());
    for (const auto& line : lines(out)) EXPECT_LE(line.size(), 60u) << line;
    EXPECT_LT(rows.size(), 64u);
    EXPECT_EQ(rows.size() * 2, rows.front().size());
    EXPECT_NE(out.find("blocks of"), std::string::npos) << out;
}

TEST(Show, DefaultsToAHeatmapAndPrintsNothingWhenOnlyPicturesAreAsked) {
    TempDir dir;
    const auto file = dir.write("m.csv", cdsm::format_matrix_csv(graded(4)));
    const Result plain = cdsmctl({"show", "--matrix", file, "--charset", "ascii"});
    EXPECT_EQ(heatmap_rows(plain.out, "|").size(), 4u);
    const auto png = (dir.path() / "m.png").string();
    const Result picture = cdsmctl({"show", "--matrix", file, "--png", png});
    EXPECT_EQ(picture.status, 0) << picture.err;
    EXPECT_EQ(picture.out, "");
    EXPECT_TRUE(std::filesystem::exists(png));
}

}  // namespace
}  // namespace cdsm::cdsmctl::test
