// SPDX-License-Identifier: GPL-2.0
// The Canvas as an SVG document: labels and titles are <text> (searchable, selectable, and read
// by screen readers), rasters are PNG <image>s drawn without smoothing.
#pragma once

#include <string>

#include "canvas.hpp"

namespace cdsm::cdsmctl::picture {

class SvgCanvas final : public Canvas {
  public:
    /// `title` becomes the document's <title>.
    SvgCanvas(int width, int height, const std::string& title);

    void fill(const Box& box, Rgb colour) override;
    void frame(const Box& box) override;
    void line(double x1, double y1, double x2, double y2) override;
    void text(const Text& text) override;
    void raster(const Box& box, const Raster& raster) override;

    /// The finished document.
    std::string finish();

  private:
    std::string out_;
};

}  // namespace cdsm::cdsmctl::picture
