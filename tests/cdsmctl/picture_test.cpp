// SPDX-License-Identifier: GPL-2.0
// `cdsmctl show --png/--svg/--pdf`: the real binary writes the files (through its picture module,
// cdsmctl-picture.so); they are read back as a viewer would: the PNG's signature, size and pixels
// (decoded by cairo), the SVG as XML (libxml2) with its labels as text, the PDF's header and pages.
#include <cairo.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <libxml/parser.h>
#include <time.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <sstream>

#include "cdsm/matrix_io.hpp"
#include "fake_cdsmd.hpp"
#include "heatmap_layout.hpp"
#include "labelled_matrix.hpp"
#include "pictures.hpp"
#include "support.hpp"

namespace cdsm::cdsmctl::test {
namespace {

using nlohmann::json;

// A matrix whose pairs all differ, so that ordering mistakes show.
cdsm::CommMatrix graded(std::size_t n) {
    cdsm::CommMatrix m(n);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) m.set(i, j, (i * 7 + j * 13) % 50);
    return m;
}

// Neighbours in a ring talk, about `events` each.
cdsm::CommMatrix ring(std::size_t n, cdsm::CommMatrix::Value events = 100) {
    cdsm::CommMatrix m(n);
    for (std::size_t i = 0; i + 1 < n; ++i) m.set(i, i + 1, events + i % 7);
    return m;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The layout cdsmctl's picture of a matrix file has.
picture::HeatmapLayout layout_of(const cdsm::CommMatrix& m, const std::string& file) {
    const auto picture = heatmap_picture(from_task_matrix({{}, m}, Axis::kIndex, file), {});
    return picture::heatmap_layout(picture, picture::TextMeasure());
}

struct PngSize {
    int width = 0, height = 0;
};

// The signature and the IHDR chunk, which must come first (PNG specification, 5.2 and 5.6).
PngSize png_size(const std::string& path) {
    const std::string bytes = read_file(path);
    if (bytes.size() < 24 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 ||
        bytes.compare(12, 4, "IHDR") != 0) {
        ADD_FAILURE() << path << " does not start as a PNG file";
        return {};
    }
    auto be32 = [&](std::size_t at) {
        int v = 0;
        for (std::size_t k = 0; k < 4; ++k) v = v * 256 + static_cast<unsigned char>(bytes[at + k]);
        return v;
    };
    return {be32(16), be32(20)};
}

// A PNG decoded by cairo, as grey levels (the pictures are grey).
class Pixels {
  public:
    explicit Pixels(const std::string& path)
        : surface_(cairo_image_surface_create_from_png(path.c_str()), &cairo_surface_destroy) {
        EXPECT_EQ(cairo_surface_status(surface_.get()), CAIRO_STATUS_SUCCESS)
            << path << ": " << cairo_status_to_string(cairo_surface_status(surface_.get()));
    }
    int width() const { return cairo_image_surface_get_width(surface_.get()); }
    int height() const { return cairo_image_surface_get_height(surface_.get()); }
    /// The green channel of (x, y): the grey of a grey picture.
    int grey(int x, int y) const {
        const unsigned char* row = cairo_image_surface_get_data(surface_.get()) +
                                   y * cairo_image_surface_get_stride(surface_.get());
        return static_cast<int>((reinterpret_cast<const std::uint32_t*>(row)[x] >> 8) & 0xff);
    }

  private:
    std::unique_ptr<cairo_surface_t, void (*)(cairo_surface_t*)> surface_;
};

struct Svg {
    std::string width;
    std::vector<std::string> texts;  ///< every <text>, in document order
    std::size_t images = 0;
};

// Parses the SVG with libxml2; fails the test unless it is well-formed with an <svg> root.
Svg read_svg(const std::string& path) {
    Svg svg;
    std::unique_ptr<xmlDoc, void (*)(xmlDoc*)> doc(
        xmlReadFile(path.c_str(), nullptr, XML_PARSE_NONET | XML_PARSE_NOERROR), &xmlFreeDoc);
    if (!doc) {
        ADD_FAILURE() << path << " is not well-formed XML";
        return svg;
    }
    const xmlNode* root = xmlDocGetRootElement(doc.get());
    EXPECT_STREQ(reinterpret_cast<const char*>(root->name), "svg");
    auto* width = xmlGetProp(root, reinterpret_cast<const xmlChar*>("width"));
    svg.width = reinterpret_cast<const char*>(width);
    xmlFree(width);
    std::function<void(const xmlNode*)> walk = [&](const xmlNode* node) {
        for (; node; node = node->next) {
            if (node->type != XML_ELEMENT_NODE) continue;
            const std::string name = reinterpret_cast<const char*>(node->name);
            if (name == "text") {
                xmlChar* content = xmlNodeGetContent(node);
                svg.texts.emplace_back(reinterpret_cast<const char*>(content));
                xmlFree(content);
            }
            svg.images += name == "image";
            walk(node->children);
        }
    };
    walk(root->children);
    return svg;
}

std::size_t count(const std::vector<std::string>& texts, const std::string& text) {
    return static_cast<std::size_t>(std::count(texts.begin(), texts.end(), text));
}

bool has_text_containing(const std::vector<std::string>& texts, const std::string& part) {
    return std::any_of(texts.begin(), texts.end(),
                       [&](const auto& t) { return t.find(part) != std::string::npos; });
}

// The page count of a PDF as cairo writes it: its /Page objects and the /Count of /Pages.
void expect_one_page_pdf(const std::string& path) {
    const std::string pdf = read_file(path);
    ASSERT_EQ(pdf.rfind("%PDF-", 0), 0u) << path;
    const std::regex page(R"(/Type\s*/Page\b(?!s))");
    EXPECT_EQ(std::distance(std::sregex_iterator(pdf.begin(), pdf.end(), page), {}), 1) << path;
    std::smatch pages;
    ASSERT_TRUE(std::regex_search(pdf, pages, std::regex(R"(/Type\s*/Pages[^>]*/Count\s+(\d+))")))
        << path;
    EXPECT_EQ(pages[1], "1");
    EXPECT_NE(pdf.find("%%EOF"), std::string::npos) << path << " is cut short";
}

// Writes the three pictures of `m`; returns their paths (png, svg, pdf).
std::array<std::string, 3> pictures(const TempDir& dir, const cdsm::CommMatrix& m,
                                    const std::string& name = "m") {
    const auto file = dir.write(name + ".csv", cdsm::format_matrix_csv(m));
    const std::array<std::string, 3> out{(dir.path() / (name + ".png")).string(),
                                         (dir.path() / (name + ".svg")).string(),
                                         (dir.path() / (name + ".pdf")).string()};
    const Result r =
        cdsmctl({"show", "--matrix", file, "--png", out[0], "--svg", out[1], "--pdf", out[2]});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "") << "only pictures were asked for";
    EXPECT_EQ(r.err, "");
    return out;
}

TEST(Picture, PngIsValidOfTheLayoutsSizeAndDarkerWhereTasksTalkMore) {
    TempDir dir;
    const auto m = graded(12);
    const auto [png, svg, pdf] = pictures(dir, m);
    const auto layout = layout_of(m, "m.csv");
    const PngSize size = png_size(png);
    EXPECT_EQ(size.width, layout.width);
    EXPECT_EQ(size.height, layout.height);
    const Pixels pixels(png);
    ASSERT_EQ(pixels.width(), layout.width);
    ASSERT_GE(layout.cell, 4);
    auto centre = [&](std::size_t i, std::size_t j) {
        return pixels.grey(
            static_cast<int>(layout.matrix_x) + static_cast<int>(j) * layout.cell + layout.cell / 2,
            static_cast<int>(layout.matrix_y) + static_cast<int>(i) * layout.cell +
                layout.cell / 2);
    };
    for (std::size_t i = 0; i < 12; ++i) {
        EXPECT_EQ(centre(i, i), 255) << "the diagonal is white";
        for (std::size_t j = 0; j < 12; ++j)
            for (std::size_t k = 0; k < 12; ++k)
                if (m.at(i, j) > m.at(i, k)) {
                    EXPECT_LT(centre(i, j), centre(i, k)) << i << "," << j << " vs " << k;
                }
    }
}

TEST(Picture, SvgIsWellFormedWithItsLabelsAsText) {
    TempDir dir;
    const auto m = graded(8);
    const auto [png, svg_path, pdf] = pictures(dir, m);
    const Svg svg = read_svg(svg_path);
    EXPECT_EQ(svg.width, std::to_string(layout_of(m, "m.csv").width));
    for (int task = 1; task < 8; ++task)
        EXPECT_EQ(count(svg.texts, std::to_string(task)), 2u) << "task " << task << " on both axes";
    EXPECT_EQ(count(svg.texts, "0"), 3u) << "task 0 on both axes, and the colour bar's 0";
    EXPECT_EQ(count(svg.texts, "m.csv"), 1u) << "the title";
    EXPECT_EQ(count(svg.texts, "8 tasks by matrix index"), 1u);
    EXPECT_EQ(count(svg.texts, "index"), 1u) << "the axis";
    EXPECT_EQ(count(svg.texts, "communication events per task pair"), 1u) << "the colour bar";
    EXPECT_EQ(count(svg.texts, "49"), 1u) << "the colour bar names the maximum";
    EXPECT_EQ(svg.images, 2u) << "the matrix and the colour bar";
}

TEST(Picture, PdfIsOnePageOfTheLayoutsSize) {
    TempDir dir;
    const auto m = graded(6);
    const auto [png, svg, pdf] = pictures(dir, m);
    expect_one_page_pdf(pdf);
    const auto layout = layout_of(m, "m.csv");
    EXPECT_NE(
        read_file(pdf).find(fmt::format("/MediaBox [ 0 0 {} {} ]", layout.width, layout.height)),
        std::string::npos);
}

TEST(Picture, SizesGrowWithTheTaskCount) {
    TempDir dir;
    PngSize last;
    std::vector<int> widths;
    // (One task is never communicating: its subtitle is longer. OneTaskTwoTasks... renders it.)
    for (const std::size_t n : {2, 4, 16, 64, 512, 1024}) {
        const auto name = "ring" + std::to_string(n);
        const auto [png, svg, pdf] = pictures(dir, ring(n), name);
        const PngSize size = png_size(png);
        EXPECT_GE(size.width, last.width) << n << " tasks";
        EXPECT_GE(size.height, last.height) << n << " tasks";
        widths.push_back(size.width);
        last = size;
        EXPECT_EQ(read_svg(svg).width, std::to_string(size.width)) << n;
        expect_one_page_pdf(pdf);
    }
    EXPECT_LT(widths[1], widths[2]) << "4 < 16 tasks";
    EXPECT_LT(widths[4], widths[5]) << "512 < 1024 tasks";
    EXPECT_GE(widths[5], 1024) << "1024 tasks, at least one pixel each";
}

TEST(Picture, OneTaskTwoTasksAndNoCommunicationRender) {
    TempDir dir;
    for (const auto& [name, m] : {std::pair{"one", cdsm::CommMatrix(1)}, std::pair{"two", ring(2)},
                                  std::pair{"zero", cdsm::CommMatrix(5)}}) {
        const auto [png, svg_path, pdf] = pictures(dir, m, name);
        EXPECT_GT(png_size(png).width, 0) << name;
        expect_one_page_pdf(pdf);
        const Svg svg = read_svg(svg_path);
        EXPECT_EQ(has_text_containing(svg.texts, "no communication recorded"), m.max() == 0)
            << name;
        EXPECT_EQ(count(svg.texts, "0"), 3u) << name << ": task 0 on both axes, and the bar's 0";
    }
}

TEST(Picture, HundredsOfTasksAreLabelledEverySixteenth) {
    TempDir dir;
    const auto m = ring(512, 5000);  // the colour bar's values are not labels of tasks
    const auto [png, svg_path, pdf] = pictures(dir, m);
    const auto layout = layout_of(m, "m.csv");
    ASSERT_EQ(layout.label_step, 16) << "one pixel per task: a label every 16 rows";
    const Svg svg = read_svg(svg_path);
    for (int task = 0; task < 512; ++task)
        EXPECT_EQ(count(svg.texts, std::to_string(task)), task == 0        ? 3u
                                                          : task % 16 == 0 ? 2u
                                                                           : 0u)
            << task;
}

TEST(Picture, CairoAndPangoAreLoadedOnlyForPictures) {
    // The dynamic loader lists what a start of cdsmctl loads (as ldd does).
    const Result r = cdsmctl({"--version"}, {"LD_TRACE_LOADED_OBJECTS=1"});
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_NE(r.out.find("libc.so"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("libcairo"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("libpango"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("libfontconfig"), std::string::npos) << r.out;
}

TEST(Picture, WithoutItsModuleCdsmctlSaysWhatIsMissing) {
    TempDir dir;
    const auto alone = dir.path() / "cdsmctl";
    std::filesystem::copy_file(CDSMCTL_BINARY, alone);
    const auto file = dir.write("m.csv", cdsm::format_matrix_csv(ring(4)));
    const auto png = (dir.path() / "m.png").string();
    const Result r = run({alone.string(), "show", "--matrix", file, "--png", png});
    if (std::filesystem::exists(CDSMCTL_PICTURE_MODULE)) {
        // An installed cdsm: the copy finds the installed module.
        EXPECT_EQ(r.status, 0) << r.err;
        EXPECT_GT(png_size(png).width, 0);
        return;
    }
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(one_line(r.err)) << r.err;
    EXPECT_NE(r.err.find("cdsmctl-picture.so"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("cannot be loaded"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(CDSMCTL_PICTURE_MODULE), std::string::npos) << r.err;
    // Everything but pictures works without it.
    EXPECT_EQ(run({alone.string(), "show", "--matrix", file, "--format", "csv"}).status, 0);
}

std::int64_t boottime_ns() {
    timespec now{};
    clock_gettime(CLOCK_BOOTTIME, &now);
    return now.tv_sec * 1'000'000'000ll + now.tv_nsec;
}

// What cdsmd says of a Slurm step's hybrid application: ranks 0 and 1, each a main thread and a
// second thread, tracked for 65 s up to now_ns.
json hybrid_cdsmd(const json& request, const std::string& view, std::int64_t now_ns) {
    auto task = [](int index, int tid, int pid, int rank) {
        return json{{"index", index}, {"tid", tid}, {"pid", pid}, {"rank", rank}};
    };
    const auto cmd = request.at("cmd");
    if (cmd == "matrix")
        return {{"app_id", 7},
                {"view", view},
                {"dim", 4},
                {"snapshot_ns", now_ns},
                {"cells", {{0, 5, 90, 1}, {5, 0, 2, 30}, {90, 2, 0, 4}, {1, 30, 4, 0}}},
                {"tasks", json::array({task(0, 3001, 3000, 1), task(1, 2000, 2000, 0),
                                       task(2, 3000, 3000, 1), task(3, 2001, 2000, 0)})}};
    if (cmd == "show")
        return {{"app_id", 7},
                {"name", "lmp"},
                {"slurm", {{"job_id", 42}, {"step", "0"}, {"user", "alice"}}},
                {"start_ns", now_ns - 65'000'000'000ll},
                {"ended", false}};
    return refusal("no", "EINVAL");
}

TEST(Picture, OfAnApplicationNamesItsRanksThreadsJobAndTime) {
    FakeCdsmd daemon(
        [now = boottime_ns()](const json& request) { return hybrid_cdsmd(request, "whole", now); });
    TempDir dir;
    const auto path = (dir.path() / "app.svg").string();
    const Result r =
        cdsmctl({"--socket", daemon.path(), "show", "7", "--by", "rank", "--svg", path});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto requests = daemon.requests();
    ASSERT_EQ(requests.size(), 2u);
    EXPECT_EQ(requests[1], json({{"cmd", "show"}, {"app", 7}}));
    const Svg svg = read_svg(path);
    for (const char* label : {"0.1", "1", "1.1"}) EXPECT_EQ(count(svg.texts, label), 2u) << label;
    EXPECT_EQ(count(svg.texts, "0"), 3u) << "rank 0 on both axes, and the colour bar's 0";
    EXPECT_EQ(count(svg.texts, "lmp (application 7), Slurm job 42 step 0"), 1u);
    EXPECT_TRUE(has_text_containing(svg.texts, "whole run, tracked "));
    EXPECT_TRUE(has_text_containing(svg.texts,
                                    " (1 min 5 s); 4 tasks by MPI rank (R.n: thread n "
                                    "of rank R)"))
        << svg.texts.at(1);
    EXPECT_EQ(count(svg.texts, "communication events per task pair, whole run"), 1u);
    EXPECT_EQ(count(svg.texts, "rank"), 1u);
}

TEST(Picture, OfTheAgedMatrixSaysWhenItWasTaken) {
    FakeCdsmd daemon(
        [now = boottime_ns()](const json& request) { return hybrid_cdsmd(request, "aged", now); });
    TempDir dir;
    const auto path = (dir.path() / "app.svg").string();
    const Result r = cdsmctl(
        {"--socket", daemon.path(), "show", "7", "--view", "aged", "--by", "tid", "--svg", path});
    ASSERT_EQ(r.status, 0) << r.err;
    const Svg svg = read_svg(path);
    EXPECT_TRUE(has_text_containing(svg.texts, "aged matrix (recent events weigh most), taken "));
    EXPECT_TRUE(has_text_containing(svg.texts, "; 4 tasks by thread id"));
    EXPECT_EQ(count(svg.texts, "communication events per task pair, aged"), 1u);
    for (const char* tid : {"2000", "2001", "3000", "3001"}) EXPECT_EQ(count(svg.texts, tid), 2u);
}

TEST(Picture, ShadesAreWhiteForNothingAndDarkerForMore) {
    EXPECT_EQ(picture::shade(0, 100).g, 255);
    EXPECT_EQ(picture::shade(100, 100).g, 0);
    EXPECT_EQ(picture::shade(0, 0).g, 255);
    int last = 255;
    for (std::uint64_t v = 1; v <= 100; ++v) {
        const int g = picture::shade(v, 100).g;
        EXPECT_LT(g, last) << v;
        last = g;
    }
    EXPECT_GE(picture::shade(1, 100).g, 225) << "a little is light";
    EXPECT_LE(picture::shade(1, 100).g, 240) << "but not white";
}

}  // namespace
}  // namespace cdsm::cdsmctl::test
