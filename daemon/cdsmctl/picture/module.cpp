// SPDX-License-Identifier: GPL-2.0
// cdsmctl-picture.so: the picture module's one exported function (heatmap_picture.hpp).
#include <cstdio>
#include <exception>

#include "heatmap_picture.hpp"

extern "C" __attribute__((visibility("default"))) int cdsmctl_write_heatmap(
    int abi, const cdsm::cdsmctl::HeatmapPicture* picture, int format, const char* path,
    char* error, std::size_t error_size) {
    using cdsm::cdsmctl::PictureFormat;
    try {
        if (abi != cdsm::cdsmctl::kPictureAbi) {
            std::snprintf(error, error_size,
                          "the picture module is of another cdsmctl (interface %d, not %d): "
                          "reinstall cdsm",
                          cdsm::cdsmctl::kPictureAbi, abi);
            return -1;
        }
        if (format < static_cast<int>(PictureFormat::kPng) ||
            format > static_cast<int>(PictureFormat::kPdf)) {
            std::snprintf(error, error_size, "%s: unknown picture format %d", path, format);
            return -1;
        }
        cdsm::cdsmctl::write_heatmap(*picture, static_cast<PictureFormat>(format), path);
        return 0;
    } catch (const std::exception& e) {
        std::snprintf(error, error_size, "%s", e.what());
    } catch (...) {
        std::snprintf(error, error_size, "%s: the picture failed", path);
    }
    return -1;
}
