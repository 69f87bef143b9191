// SPDX-License-Identifier: GPL-2.0
// The Canvas on cairo: PNG (an image surface at one pixel per unit) and PDF (one page of the
// picture's size, in points), text through pango.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "canvas.hpp"
#include "heatmap_picture.hpp"

namespace cdsm::cdsmctl::picture {

/// Bytes of the output file as cairo produces them.
using Sink = std::function<void(std::string_view bytes)>;

/// Renders `draw` on a width x height PNG or PDF into `sink`. Throws cdsm::Error if cairo fails.
void render_with_cairo(PictureFormat format, int width, int height,
                       const std::function<void(Canvas&)>& draw, const Sink& sink);

/// The raster as a PNG file (one pixel per cell), for SVG's <image>.
std::string raster_png(const Raster& raster);

}  // namespace cdsm::cdsmctl::picture
