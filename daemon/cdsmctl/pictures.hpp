// SPDX-License-Identifier: GPL-2.0
// `show --png/--svg/--pdf`: the words of a heatmap picture, and the picture module
// (cdsmctl-picture.so, picture/heatmap_picture.hpp) that draws it, loaded on first use.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "labelled_matrix.hpp"
#include "picture/heatmap_picture.hpp"

namespace cdsm::cdsmctl {

/// What a picture says beyond the matrix: whose it is and when it was taken.
struct PictureCaption {
    /// The application, e.g. "lmp (application 7), Slurm job 42 step 0"; empty: LabelledMatrix's
    /// title.
    std::string title;
    /// The time the matrix covers, e.g. "whole run, 2026-11-26 12:01:02 to 12:05:10 UTC
    /// (4 min 8 s)"; empty when unknown (a file).
    std::string window;
};

/// The caption of cdsmd's matrix reply, with `app` (cdsmd's "show" reply, or null when cdsmd
/// could not say) naming the application, its Slurm job and when its tracking began. cdsmd's
/// times are CLOCK_BOOTTIME: they are shown as this machine's wall-clock time.
PictureCaption cdsmd_caption(const nlohmann::json& matrix_reply, const nlohmann::json& app);

/// The picture of `m`.
HeatmapPicture heatmap_picture(const LabelledMatrix& m, const PictureCaption& caption);

/// Draws the picture into `path` through cdsmctl-picture.so. Throws cdsm::Error naming the
/// file, or saying that the module cannot be loaded and where it was looked for.
void write_picture(const HeatmapPicture& picture, PictureFormat format,
                   const std::filesystem::path& path);

/// A CLOCK_BOOTTIME time of this machine as local wall-clock time: "2026-11-26 12:01:02 UTC".
std::string boottime_as_wall_clock(std::uint64_t boottime_ns);

}  // namespace cdsm::cdsmctl
