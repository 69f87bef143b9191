// SPDX-License-Identifier: GPL-2.0
// What the heatmap is drawn with: rectangles, lines, text and nearest-neighbour rasters, in
// picture units (PNG pixels, PDF points, SVG user units). heatmap_picture.cpp draws once on this;
// cairo_canvas.cpp renders it to PNG and PDF, svg_canvas.cpp writes SVG whose labels stay text
// (cairo's SVG surface would turn every glyph into an outline).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cdsm::cdsmctl::picture {

struct Rgb {
    std::uint8_t r = 0, g = 0, b = 0;
};

struct Box {
    double x = 0, y = 0, w = 0, h = 0;
};

/// A width x height raster, row-major, scaled to its box without smoothing: one cell per task.
struct Raster {
    int width = 0;
    int height = 0;
    std::vector<Rgb> pixels;
};

enum class Anchor { kStart, kMiddle, kEnd };

/// One line of text. (x, y) is the anchor point on the baseline; a vertical text reads
/// upwards (rotated 90 degrees anticlockwise about that point).
struct Text {
    std::string text;
    double x = 0, y = 0;
    double size = 10;  ///< font size in picture units
    bool bold = false;
    Anchor anchor = Anchor::kStart;
    bool vertical = false;
};

/// The font of every text, as a fontconfig family list: DejaVu Sans (fonts-dejavu-core, the
/// package's dependency) first, then whatever sans-serif face the machine has.
inline constexpr const char* kFontFamilies = "DejaVu Sans,Bitstream Vera Sans,sans-serif";

class Canvas {
  public:
    virtual ~Canvas() = default;
    virtual void fill(const Box& box, Rgb colour) = 0;
    /// A black outline just outside `box`, so that white cells along the edge have a border.
    virtual void frame(const Box& box) = 0;
    virtual void line(double x1, double y1, double x2, double y2) = 0;
    virtual void text(const Text& text) = 0;
    virtual void raster(const Box& box, const Raster& raster) = 0;
};

/// Measures text as it will be drawn (pango with the fonts fontconfig finds).
class TextMeasure {
  public:
    TextMeasure();
    ~TextMeasure();
    TextMeasure(const TextMeasure&) = delete;
    TextMeasure& operator=(const TextMeasure&) = delete;
    /// Advance width of `text` in picture units.
    double width(const std::string& text, double size, bool bold = false) const;

  private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace cdsm::cdsmctl::picture
