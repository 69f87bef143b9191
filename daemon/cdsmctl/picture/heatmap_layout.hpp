// SPDX-License-Identifier: GPL-2.0
// Where everything of a heatmap picture goes, in picture units, and the shades: the picture
// module's inside, in a header of its own for the tests.
//
// The shades are the CDSM paper's: white for no communication, then greys from light to black
// for the most. The grey is linear in CIE lightness L* (from 92 down to 0), not in sRGB value, so
// that equal steps in events look like equal steps in darkness; a grey ramp also prints on any
// printer and reads the same to colour-blind eyes, and "darker = more" needs no legend to guess.
#pragma once

#include <cstdint>
#include <vector>

#include "canvas.hpp"
#include "heatmap_picture.hpp"

namespace cdsm::cdsmctl::picture {

struct HeatmapLayout {
    int width = 0, height = 0;
    int cell = 0;        ///< side of one task pair (whole units, so that PNG cells are sharp)
    int label_step = 1;  ///< every label_step-th task is labelled (a power of two)
    bool vertical_columns = true;  ///< column labels read upwards (else horizontal, centred)
    double matrix_x = 0, matrix_y = 0;
    Box bar;            ///< the colour bar
    double unit_x = 0;  ///< baseline of the colour bar's unit, which reads upwards beside it
    std::vector<std::uint64_t> ticks;  ///< values named along the bar
};

HeatmapLayout heatmap_layout(const HeatmapPicture& picture, const TextMeasure& measure);

/// The shade of `value` among counts up to `max`: white for 0, light grey (L* 92) for the
/// smallest count, black for `max`.
Rgb shade(std::uint64_t value, std::uint64_t max) noexcept;

/// Draws the picture laid out by `layout`.
void draw_heatmap(const HeatmapPicture& picture, const HeatmapLayout& layout, Canvas& canvas);

}  // namespace cdsm::cdsmctl::picture
