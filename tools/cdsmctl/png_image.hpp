// SPDX-License-Identifier: GPL-2.0
// An 8-bit grey-scale raster and its PNG file (libpng's simplified write API).
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace cdsm::cdsmctl {

class GreyImage {
  public:
    /// A white image.
    GreyImage(int width, int height);

    int width() const noexcept { return width_; }
    int height() const noexcept { return height_; }
    std::uint8_t at(int x, int y) const { return pixels_.at(index(x, y)); }
    /// Sets one pixel; pixels outside the image are ignored (labels may be clipped).
    void plot(int x, int y, std::uint8_t grey) noexcept;
    void fill(int x, int y, int w, int h, std::uint8_t grey) noexcept;
    /// Throws cdsm::Error naming the file if it cannot be written.
    void write_png(const std::filesystem::path& path) const;

  private:
    std::size_t index(int x, int y) const {
        return static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) +
               static_cast<std::size_t>(x);
    }
    int width_;
    int height_;
    std::vector<std::uint8_t> pixels_;
};

}  // namespace cdsm::cdsmctl
