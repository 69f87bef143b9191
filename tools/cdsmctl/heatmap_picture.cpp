// SPDX-License-Identifier: GPL-2.0
#include "heatmap_picture.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

#include "bitmap_font.hpp"
#include "cdsm/error.hpp"
#include "output.hpp"
#include "png_image.hpp"

namespace cdsm::cdsmctl {
namespace {

constexpr int kPad = 12;
constexpr int kGap = 6;
constexpr int kLegendBar = 14;
// The matrix is about this many pixels wide, whatever the number of tasks.
constexpr int kMatrixTarget = 720;

int glyph_height(const PictureLayout& l) {
    return font::kGlyphHeight * l.font_scale;
}

std::string legend_text(const LabelledMatrix& m) {
    return fmt::format("0 .. {} events per pair", m.matrix.max());
}

std::string title_text(const LabelledMatrix& m) {
    return fmt::format("{}: {} tasks by {}", m.title, m.matrix.size(), m.axis);
}

bool labelled(const PictureLayout& l, std::size_t task) {
    return task % static_cast<std::size_t>(l.label_step) == 0;
}

std::string xml_escape(std::string_view s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '&':
                out += "&amp;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                // Control characters are not allowed in XML 1.0.
                if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out += c;
        }
    }
    return out;
}

}  // namespace

PictureLayout picture_layout(const LabelledMatrix& m) {
    PictureLayout l;
    const int n = static_cast<int>(m.matrix.size());
    l.cell = std::clamp(kMatrixTarget / std::max(n, 1), 1, 32);
    l.font_scale = 2;
    const int line = font::kGlyphHeight * l.font_scale + 2;
    l.label_step = std::max(1, (line + l.cell - 1) / l.cell);
    int label_width = 0;
    for (std::size_t i = 0; i < m.labels.size(); ++i)
        if (labelled(l, i))
            label_width = std::max(label_width, font::text_width(m.labels[i], l.font_scale));
    l.matrix_x = kPad + label_width + kGap;
    l.matrix_y = kPad + line + kGap + label_width + kGap;
    const int side = n * l.cell;
    l.legend_y = l.matrix_y + side + 2 * kGap;
    l.legend_width = std::max(side, font::text_width(legend_text(m), l.font_scale));
    l.width = std::max(l.matrix_x + std::max(side, l.legend_width) + kPad,
                       kPad + font::text_width(title_text(m), l.font_scale) + kPad);
    l.height = l.legend_y + kLegendBar + kGap + line + kPad;
    return l;
}

std::uint8_t cell_grey(double value, double max) noexcept {
    if (value <= 0 || max <= 0) return 255;
    return static_cast<std::uint8_t>(std::lround(235.0 * (1.0 - std::min(value / max, 1.0))));
}

void write_heatmap_png(const LabelledMatrix& m, const std::filesystem::path& path) {
    const PictureLayout l = picture_layout(m);
    const std::size_t n = m.matrix.size();
    const double max = static_cast<double>(m.matrix.max());
    GreyImage image(l.width, l.height);
    auto text = [&](std::string_view s, int x, int y) {
        font::for_each_pixel(s, l.font_scale,
                             [&](int px, int py) { image.plot(x + px, y + py, 0); });
    };
    // Column labels read upwards, their ends just above the matrix.
    auto vertical_text = [&](std::string_view s, int x, int bottom) {
        font::for_each_pixel(s, l.font_scale,
                             [&](int px, int py) { image.plot(x + py, bottom - px, 0); });
    };
    text(title_text(m), kPad, kPad);
    const int g = glyph_height(l);
    for (std::size_t i = 0; i < n; ++i) {
        if (!labelled(l, i)) continue;
        const int centre = static_cast<int>(i) * l.cell + l.cell / 2;
        text(m.labels[i], l.matrix_x - kGap - font::text_width(m.labels[i], l.font_scale),
             l.matrix_y + centre - g / 2);
        vertical_text(m.labels[i], l.matrix_x + centre - g / 2, l.matrix_y - kGap);
    }
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
            image.fill(l.matrix_x + static_cast<int>(j) * l.cell,
                       l.matrix_y + static_cast<int>(i) * l.cell, l.cell, l.cell,
                       cell_grey(static_cast<double>(m.matrix.at(i, j)), max));
    // A frame around the matrix and the legend bar, so that white cells have an edge.
    const int side = static_cast<int>(n) * l.cell;
    auto frame = [&](int x, int y, int w, int h) {
        image.fill(x - 1, y - 1, w + 2, 1, 0);
        image.fill(x - 1, y + h, w + 2, 1, 0);
        image.fill(x - 1, y - 1, 1, h + 2, 0);
        image.fill(x + w, y - 1, 1, h + 2, 0);
    };
    frame(l.matrix_x, l.matrix_y, side, side);
    for (int x = 0; x < l.legend_width; ++x)
        image.fill(l.matrix_x + x, l.legend_y, 1, kLegendBar,
                   cell_grey(x == 0 ? 0.0 : x, l.legend_width - 1));
    frame(l.matrix_x, l.legend_y, l.legend_width, kLegendBar);
    text(legend_text(m), l.matrix_x, l.legend_y + kLegendBar + kGap);
    image.write_png(path);
}

std::string heatmap_svg(const LabelledMatrix& m) {
    const PictureLayout l = picture_layout(m);
    const std::size_t n = m.matrix.size();
    const double max = static_cast<double>(m.matrix.max());
    const int g = glyph_height(l);
    const int side = static_cast<int>(n) * l.cell;
    std::string out = fmt::format(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
        "viewBox=\"0 0 {0} {1}\" font-family=\"monospace\" font-size=\"{2}\">\n"
        "<title>{3}</title>\n"
        "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
        "<text x=\"{4}\" y=\"{5}\">{3}</text>\n",
        l.width, l.height, g + 2, xml_escape(title_text(m)), kPad, kPad + g);
    out += "<g text-anchor=\"end\">\n";
    for (std::size_t i = 0; i < n; ++i) {
        if (!labelled(l, i)) continue;
        const int centre = static_cast<int>(i) * l.cell + l.cell / 2;
        const std::string label = xml_escape(m.labels[i]);
        out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", l.matrix_x - kGap,
                           l.matrix_y + centre + g / 2, label);
        out += fmt::format("<text transform=\"translate({},{}) rotate(-90)\">{}</text>\n",
                           l.matrix_x + centre + g / 2, l.matrix_y - kGap, label);
    }
    out += "</g>\n<g shape-rendering=\"crispEdges\">\n";
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
            const auto value = m.matrix.at(i, j);
            if (value == 0) continue;
            const auto grey = cell_grey(static_cast<double>(value), max);
            out += fmt::format(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#{:02x}{:02x}{:02x}\">"
                "<title>{} {} - {}: {}</title></rect>\n",
                l.matrix_x + static_cast<int>(j) * l.cell,
                l.matrix_y + static_cast<int>(i) * l.cell, l.cell, l.cell, grey, grey, grey,
                xml_escape(m.axis), xml_escape(m.labels[i]), xml_escape(m.labels[j]), value);
        }
    }
    out += fmt::format(
        "</g>\n"
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#000000\"/>\n"
        "<defs><linearGradient id=\"legend\"><stop offset=\"0\" stop-color=\"#ebebeb\"/>"
        "<stop offset=\"1\" stop-color=\"#000000\"/></linearGradient></defs>\n"
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#legend)\" "
        "stroke=\"#000000\"/>\n"
        "<text x=\"{}\" y=\"{}\">{}</text>\n"
        "</svg>\n",
        l.matrix_x, l.matrix_y, side, side, l.matrix_x, l.legend_y, l.legend_width, kLegendBar,
        l.matrix_x, l.legend_y + kLegendBar + kGap + g, xml_escape(legend_text(m)));
    return out;
}

void write_heatmap_svg(const LabelledMatrix& m, const std::filesystem::path& path) {
    std::ofstream out(path, std::ios::binary);
    if (!out)
        throw cdsm::Error(path.string(),
                          std::string("cannot be written (") + std::strerror(errno) + ")");
    out << heatmap_svg(m);
    out.flush();
    if (!out) throw cdsm::Error(path.string(), "cannot be written");
}

}  // namespace cdsm::cdsmctl
