// SPDX-License-Identifier: GPL-2.0
// The heatmap picture: layout, drawing on a Canvas, and the file in PNG, SVG or PDF.
#include "heatmap_picture.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

#include "cairo_canvas.hpp"
#include "cdsm/error.hpp"
#include "heatmap_layout.hpp"
#include "svg_canvas.hpp"

namespace cdsm::cdsmctl::picture {
namespace {

constexpr double kPad = 16;
constexpr double kGap = 6;
constexpr double kTick = 4;  // length of a tick mark
constexpr double kTitleSize = 15;
constexpr double kTextSize = 11;  // subtitle, labels, ticks, unit
// Distance between two labelled rows: a line of label text.
constexpr double kLabelLine = kTextSize * 1.3;
constexpr double kBarWidth = 16;
constexpr double kBarMinHeight = 160;
// The matrix is about this wide (cells of whole units, at most kMaxCell, at least 1).
constexpr int kMatrixTarget = 512;
constexpr int kMaxCell = 48;

// Where a text's digits are centred on y: the baseline sits this far below (digits are about
// 0.73 em high in DejaVu Sans and most sans-serif faces).
double centred_baseline(double y) {
    return y + 0.36 * kTextSize;
}

// Title and subtitle.
double header_height() {
    return kPad + kTitleSize * 1.3 + kTextSize * 1.5 + kGap;
}

std::uint64_t max_count(const HeatmapPicture& p) {
    return p.counts.empty() ? 0 : *std::max_element(p.counts.begin(), p.counts.end());
}

// About five round values (1, 2 or 5 times a power of ten) from 0 to max.
std::vector<std::uint64_t> bar_ticks(std::uint64_t max) {
    if (max == 0) return {0};
    const double raw = static_cast<double>(max) / 5;
    double step = std::pow(10.0, std::floor(std::log10(std::max(raw, 1.0))));
    for (const double f : {1.0, 2.0, 5.0, 10.0})
        if (f * step >= raw) {
            step *= f;
            break;
        }
    const auto whole = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(step));
    std::vector<std::uint64_t> ticks;
    for (std::uint64_t v = 0; v <= max; v += whole) ticks.push_back(v);
    return ticks;
}

// A count as a tick label: 950, 12000, 1.5M.
std::string short_count(std::uint64_t v) {
    if (v < 100'000) return fmt::format("{}", v);
    if (v < 100'000'000) return fmt::format("{:g}k", static_cast<double>(v) / 1e3);
    return fmt::format("{:g}M", static_cast<double>(v) / 1e6);
}

bool labelled(const HeatmapLayout& l, std::size_t task) {
    return task % static_cast<std::size_t>(l.label_step) == 0;
}

double bar_y(const HeatmapLayout& l, std::uint64_t value, std::uint64_t max) {
    const double t = max == 0 ? 0 : static_cast<double>(value) / static_cast<double>(max);
    return l.bar.y + l.bar.h * (1 - t);
}

// Written as the picture is rendered; errors keep errno and are reported naming the file.
class OutputFile {
  public:
    explicit OutputFile(const std::filesystem::path& path)
        : path_(path), file_(std::fopen(path.c_str(), "wb")) {
        if (!file_) fail();
    }
    ~OutputFile() {
        if (file_) std::fclose(file_);
    }
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void write(std::string_view bytes) {
        if (!error_ && std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
            error_ = errno;
    }
    /// Throws if a write failed.
    void check() const {
        if (error_) fail(error_);
    }
    void close() {
        check();
        std::FILE* f = std::exchange(file_, nullptr);
        if (std::fclose(f) != 0) fail();
    }

  private:
    [[noreturn]] void fail(int error = errno) const {
        throw cdsm::Error(path_.string(),
                          fmt::format("cannot be written ({})", std::strerror(error)));
    }
    std::filesystem::path path_;
    std::FILE* file_;
    int error_ = 0;
};

}  // namespace

Rgb shade(std::uint64_t value, std::uint64_t max) noexcept {
    if (value == 0 || max == 0) return {255, 255, 255};
    const double t = std::min(static_cast<double>(value) / static_cast<double>(max), 1.0);
    const double lightness = 92 * (1 - t);  // CIE L*
    const double y = lightness > 8 ? std::pow((lightness + 16) / 116, 3) : lightness / 903.3;
    const double srgb = y <= 0.0031308 ? 12.92 * y : 1.055 * std::pow(y, 1 / 2.4) - 0.055;
    const auto g = static_cast<std::uint8_t>(std::lround(255 * std::clamp(srgb, 0.0, 1.0)));
    return {g, g, g};
}

HeatmapLayout heatmap_layout(const HeatmapPicture& p, const TextMeasure& measure) {
    HeatmapLayout l;
    const int n = static_cast<int>(p.tasks);
    l.cell = std::clamp(kMatrixTarget / std::max(n, 1), 1, kMaxCell);
    while (l.label_step * l.cell < kLabelLine) l.label_step *= 2;
    double label_width = 0;
    for (std::size_t i = 0; i < p.tasks; ++i)
        if (labelled(l, i))
            label_width = std::max(label_width, measure.width(p.labels[i], kTextSize));
    const double ticks = l.label_step > 1 ? kTick : 0;
    // Column labels read across when they fit between their neighbours' (short ranks, few tasks).
    l.vertical_columns = label_width + 4 > l.label_step * l.cell;
    const double column_labels = l.vertical_columns ? label_width : kTextSize;

    const double header = header_height();
    const double row_labels = std::max(label_width, measure.width(p.axis, kTextSize));
    l.matrix_x = std::ceil(kPad + row_labels + kGap + ticks);
    l.matrix_y = std::ceil(header + column_labels + kGap + ticks);
    const double side = n * l.cell;

    const double unit_width = measure.width(p.unit, kTextSize);
    l.bar = {l.matrix_x + side + 3 * kGap, l.matrix_y, kBarWidth,
             std::max({side, kBarMinHeight, unit_width})};
    l.ticks = bar_ticks(max_count(p));
    // The maximum is named too, unless a round value is too close to it to have room.
    if (const auto max = max_count(p);
        max > 0 && static_cast<double>(max - l.ticks.back()) * l.bar.h >=
                       kLabelLine * static_cast<double>(max))
        l.ticks.push_back(max);
    double tick_width = 0;
    for (const auto v : l.ticks)
        tick_width = std::max(tick_width, measure.width(short_count(v), kTextSize));
    l.unit_x = l.bar.x + l.bar.w + kTick + kGap + tick_width + kGap + kTextSize;
    const double right =
        std::max({l.unit_x + kPad, kPad + measure.width(p.title, kTitleSize, true) + kPad,
                  kPad + measure.width(p.subtitle, kTextSize) + kPad});
    l.width = static_cast<int>(std::ceil(right));
    l.height = static_cast<int>(std::ceil(l.bar.y + l.bar.h + kTextSize + kPad));
    return l;
}

void draw_heatmap(const HeatmapPicture& p, const HeatmapLayout& l, Canvas& canvas) {
    const std::size_t n = p.tasks;
    const std::uint64_t max = max_count(p);
    canvas.fill({0, 0, static_cast<double>(l.width), static_cast<double>(l.height)},
                {255, 255, 255});
    const double title_baseline = kPad + kTitleSize;
    canvas.text({p.title, kPad, title_baseline, kTitleSize, true});
    canvas.text({p.subtitle, kPad, title_baseline + kTextSize * 1.6, kTextSize});

    // Labels and their ticks: every label_step-th task, the tick marking which row is meant.
    const double ticks = l.label_step > 1 ? kTick : 0;
    const double row_end = l.matrix_x - ticks - kGap / 2;
    const double column_end = l.matrix_y - ticks - kGap / 2;
    // The axis's name tops the row labels, clear of the column labels.
    canvas.text({p.axis, row_end, header_height() + kTextSize, kTextSize, false, Anchor::kEnd});
    for (std::size_t i = 0; i < n; ++i) {
        if (!labelled(l, i)) continue;
        const double centre = (static_cast<double>(i) + 0.5) * l.cell;
        if (ticks > 0) {
            canvas.line(l.matrix_x - ticks, l.matrix_y + centre, l.matrix_x, l.matrix_y + centre);
            canvas.line(l.matrix_x + centre, l.matrix_y - ticks, l.matrix_x + centre, l.matrix_y);
        }
        canvas.text({p.labels[i], row_end, centred_baseline(l.matrix_y + centre), kTextSize, false,
                     Anchor::kEnd});
        if (l.vertical_columns)
            canvas.text({p.labels[i], centred_baseline(l.matrix_x + centre), column_end, kTextSize,
                         false, Anchor::kStart, true});
        else
            canvas.text(
                {p.labels[i], l.matrix_x + centre, column_end, kTextSize, false, Anchor::kMiddle});
    }

    Raster cells{static_cast<int>(n), static_cast<int>(n), {}};
    cells.pixels.reserve(n * n);
    for (const auto v : p.counts) cells.pixels.push_back(shade(v, max));
    const double side = static_cast<double>(n) * l.cell;
    const Box matrix{l.matrix_x, l.matrix_y, side, side};
    canvas.raster(matrix, cells);
    canvas.frame(matrix);

    // The colour bar: the maximum at the top, no communication (white) at the bottom.
    constexpr int kBarSteps = 256;
    Raster bar{1, kBarSteps, {}};
    for (int r = 0; r < kBarSteps; ++r)
        bar.pixels.push_back(max == 0 ? shade(0, 0) : shade(kBarSteps - 1 - r, kBarSteps - 1));
    canvas.raster(l.bar, bar);
    canvas.frame(l.bar);
    const double tick_x = l.bar.x + l.bar.w;
    for (const auto v : l.ticks) {
        const double y = bar_y(l, v, max);
        canvas.line(tick_x, y, tick_x + kTick, y);
        canvas.text({short_count(v), tick_x + kTick + kGap / 2, centred_baseline(y), kTextSize});
    }
    canvas.text({p.unit, l.unit_x, l.bar.y + l.bar.h / 2, kTextSize, false, Anchor::kMiddle, true});
}

}  // namespace cdsm::cdsmctl::picture

namespace cdsm::cdsmctl {

void write_heatmap(const HeatmapPicture& p, PictureFormat format,
                   const std::filesystem::path& path) {
    if (p.counts.size() != p.tasks * p.tasks || p.labels.size() != p.tasks)
        throw cdsm::Error(path.string(), "the picture's matrix and labels do not agree");
    picture::OutputFile out(path);
    const picture::TextMeasure measure;
    const picture::HeatmapLayout layout = picture::heatmap_layout(p, measure);
    try {
        if (format == PictureFormat::kSvg) {
            picture::SvgCanvas canvas(layout.width, layout.height, p.title);
            picture::draw_heatmap(p, layout, canvas);
            out.write(canvas.finish());
        } else {
            picture::render_with_cairo(
                format, layout.width, layout.height,
                [&](picture::Canvas& c) { picture::draw_heatmap(p, layout, c); },
                [&](std::string_view bytes) { out.write(bytes); });
        }
    } catch (const cdsm::Error&) {
        out.check();  // a write error is the better message
        throw;
    }
    out.close();
}

}  // namespace cdsm::cdsmctl
