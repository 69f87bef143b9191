// SPDX-License-Identifier: GPL-2.0
#include "svg_canvas.hpp"

#include <fmt/format.h>

#include <string_view>

#include "cairo_canvas.hpp"

namespace cdsm::cdsmctl::picture {
namespace {

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

std::string base64(std::string_view bytes) {
    static constexpr char kDigits[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (std::size_t i = 0; i < bytes.size(); i += 3) {
        const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
        std::uint32_t v = 0;
        for (std::size_t k = 0; k < 3; ++k)
            v = (v << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
        for (std::size_t k = 0; k < 4; ++k) out += k <= n ? kDigits[(v >> (18 - 6 * k)) & 63] : '=';
    }
    return out;
}

std::string hex(Rgb c) {
    return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b);
}

}  // namespace

SvgCanvas::SvgCanvas(int width, int height, const std::string& title) {
    out_ = fmt::format(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" "
        "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" font-family=\"{2}\">\n"
        "<title>{3}</title>\n",
        width, height, kFontFamilies, xml_escape(title));
}

void SvgCanvas::fill(const Box& b, Rgb c) {
    out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n", b.x,
                        b.y, b.w, b.h, hex(c));
}

void SvgCanvas::frame(const Box& b) {
    out_ += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#000000\"/>\n",
        b.x - 0.5, b.y - 0.5, b.w + 1, b.h + 1);
}

void SvgCanvas::line(double x1, double y1, double x2, double y2) {
    out_ += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#000000\"/>\n", x1,
                        y1, x2, y2);
}

void SvgCanvas::text(const Text& t) {
    const char* anchor = t.anchor == Anchor::kStart    ? "start"
                         : t.anchor == Anchor::kMiddle ? "middle"
                                                       : "end";
    std::string place = t.vertical
                            ? fmt::format("transform=\"translate({},{}) rotate(-90)\"", t.x, t.y)
                            : fmt::format("x=\"{}\" y=\"{}\"", t.x, t.y);
    out_ +=
        fmt::format("<text {} font-size=\"{}\"{}{}>{}</text>\n", place, t.size,
                    t.bold ? " font-weight=\"bold\"" : "",
                    t.anchor == Anchor::kStart ? "" : fmt::format(" text-anchor=\"{}\"", anchor),
                    xml_escape(t.text));
}

void SvgCanvas::raster(const Box& b, const Raster& r) {
    if (r.width <= 0 || r.height <= 0) return;
    // image-rendering: SVG 1.1's hint, and CSS's pixelated, which browsers honour.
    out_ += fmt::format(
        "<image x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" preserveAspectRatio=\"none\" "
        "image-rendering=\"optimizeSpeed\" style=\"image-rendering:pixelated\" "
        "xlink:href=\"data:image/png;base64,{}\"/>\n",
        b.x, b.y, b.w, b.h, base64(raster_png(r)));
}

std::string SvgCanvas::finish() {
    return out_ + "</svg>\n";
}

}  // namespace cdsm::cdsmctl::picture
