// SPDX-License-Identifier: GPL-2.0
#include "png_image.hpp"

#include <png.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "cdsm/error.hpp"

namespace cdsm::cdsmctl {

GreyImage::GreyImage(int width, int height)
    : width_(width),
      height_(height),
      pixels_(static_cast<std::size_t>(width) * static_cast<std::size_t>(height), 255) {}

void GreyImage::plot(int x, int y, std::uint8_t grey) noexcept {
    if (x >= 0 && y >= 0 && x < width_ && y < height_) pixels_[index(x, y)] = grey;
}

void GreyImage::fill(int x, int y, int w, int h, std::uint8_t grey) noexcept {
    for (int dy = 0; dy < h; ++dy)
        for (int dx = 0; dx < w; ++dx) plot(x + dx, y + dy, grey);
}

void GreyImage::write_png(const std::filesystem::path& path) const {
    std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
    if (!file)
        throw cdsm::Error(path.string(),
                          std::string("cannot be written (") + std::strerror(errno) + ")");
    png_image image;
    std::memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = static_cast<png_uint_32>(width_);
    image.height = static_cast<png_uint_32>(height_);
    image.format = PNG_FORMAT_GRAY;
    const bool ok = png_image_write_to_stdio(&image, file.get(), 0, pixels_.data(), 0, nullptr);
    const std::string message = image.message;
    png_image_free(&image);
    if (!ok || std::fflush(file.get()) != 0 || std::ferror(file.get()))
        throw cdsm::Error(path.string(),
                          "cannot be written (" + (ok ? std::strerror(errno) : message) + ")");
}

}  // namespace cdsm::cdsmctl
