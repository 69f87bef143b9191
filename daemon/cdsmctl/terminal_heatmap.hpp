// SPDX-License-Identifier: GPL-2.0
// `show --format heatmap`: the matrix as shaded blocks in a terminal, two characters per cell
// so that cells are roughly square, with row and column labels and a legend.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "labelled_matrix.hpp"

namespace cdsm::cdsmctl {

struct HeatmapStyle {
    /// Unicode shade blocks (" ░▒▓█") when true, an ASCII ramp (" .:-=+*#%@") otherwise.
    bool utf8 = true;
    /// 256-colour backgrounds instead of shade characters.
    bool colour = false;
    /// Columns the heatmap may use; 0 for no limit. Wider matrices are shown in blocks of
    /// k x k tasks, each the sum of its pairs.
    std::size_t max_width = 0;
};

/// The style for output to file descriptor `fd`: `colour` and `charset` are "auto", "always"/
/// "utf8" or "never"/"ascii"; auto means colour on a terminal whose TERM has 256 colours (and no
/// NO_COLOR), Unicode when the locale's character set is UTF-8. `width` 0 means the terminal's
/// width ($COLUMNS, else the terminal's, else no limit when not a terminal).
HeatmapStyle detect_style(int fd, std::string_view colour, std::string_view charset,
                          std::size_t width);

/// The shade level, 0 (no communication) .. levels-1 (the maximum), of a value. Any non-zero
/// value gets at least level 1, so that no communication is hidden.
std::size_t shade_level(double value, double max, std::size_t levels);

std::string render_terminal_heatmap(const LabelledMatrix& m, const HeatmapStyle& style);

}  // namespace cdsm::cdsmctl
