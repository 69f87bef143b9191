// SPDX-License-Identifier: GPL-2.0
// `show --png` and `--svg`: the matrix as a picture in the style of the CDSM paper's figures
// (grey levels, darker = more communication, white = none), with the tasks labelled along both
// axes, a title and a legend. PNG and SVG share one layout.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "labelled_matrix.hpp"

namespace cdsm::cdsmctl {

/// Where everything goes, in pixels.
struct PictureLayout {
    int cell = 0;        ///< side of one task pair
    int font_scale = 1;  ///< image pixels per font pixel
    int label_step = 1;  ///< every label_step-th task is labelled
    int matrix_x = 0;    ///< top-left corner of the matrix
    int matrix_y = 0;
    int legend_y = 0;  ///< top of the legend bar
    int legend_width = 0;
    int width = 0;
    int height = 0;
};

PictureLayout picture_layout(const LabelledMatrix& m);

/// The grey of a cell: 255 (white) for no communication, 0 (black) for the maximum, and at most
/// 235 for any non-zero value so that a little communication is still visible.
std::uint8_t cell_grey(double value, double max) noexcept;

/// Writes the PNG. Throws cdsm::Error naming the file if it cannot be written.
void write_heatmap_png(const LabelledMatrix& m, const std::filesystem::path& path);

/// The SVG document.
std::string heatmap_svg(const LabelledMatrix& m);
/// Writes heatmap_svg() to a file. Throws cdsm::Error naming the file if it cannot be written.
void write_heatmap_svg(const LabelledMatrix& m, const std::filesystem::path& path);

}  // namespace cdsm::cdsmctl
