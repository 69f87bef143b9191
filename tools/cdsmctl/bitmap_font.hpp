// SPDX-License-Identifier: GPL-2.0
// A 5x7 pixel font (digits, capital letters, a little punctuation) for the labels of PNG
// heatmaps: enough for task numbers and titles without depending on a font library.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace cdsm::cdsmctl::font {

constexpr int kGlyphWidth = 5;
constexpr int kGlyphHeight = 7;
/// Horizontal distance between the starts of two glyphs, in font pixels.
constexpr int kAdvance = 6;

/// Rows of a glyph, top first; bit 4 is the leftmost pixel. Lower-case letters are drawn as
/// capitals; characters the font lacks as '?'.
const std::array<std::uint8_t, kGlyphHeight>& glyph(char c) noexcept;

/// Width in image pixels of `text` drawn at `scale` image pixels per font pixel.
inline int text_width(std::string_view text, int scale) noexcept {
    return text.empty() ? 0 : (static_cast<int>(text.size()) * kAdvance - 1) * scale;
}

/// Calls plot(x, y) for every set pixel of `text` at `scale`, x along the text from 0, y down
/// from 0; the caller decides where that lands (rotated for column labels).
template <class Plot>
void for_each_pixel(std::string_view text, int scale, Plot plot) {
    for (std::size_t k = 0; k < text.size(); ++k) {
        const auto& rows = glyph(text[k]);
        for (int gy = 0; gy < kGlyphHeight; ++gy)
            for (int gx = 0; gx < kGlyphWidth; ++gx)
                if (rows[gy] & (0x10 >> gx))
                    for (int sy = 0; sy < scale; ++sy)
                        for (int sx = 0; sx < scale; ++sx)
                            plot((static_cast<int>(k) * kAdvance + gx) * scale + sx,
                                 gy * scale + sy);
    }
}

}  // namespace cdsm::cdsmctl::font
