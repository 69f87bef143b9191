// SPDX-License-Identifier: GPL-2.0
// `show --png`, `--svg` and `--pdf`: what a heatmap picture shows, and the one entry point of the
// picture module (cdsmctl-picture.so), which draws it with cairo and pango. cdsmctl loads the
// module only when a picture is asked for (picture_loader.hpp): cairo, pango, fontconfig and
// their two dozen libraries would otherwise be loaded and relocated at every start of cdsmctl.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cdsm::cdsmctl {

enum class PictureFormat { kPng, kSvg, kPdf };

/// A picture's matrix and words, in display order; the module decides the layout.
struct HeatmapPicture {
    std::size_t tasks = 0;
    /// Row-major tasks x tasks counts (symmetric, zero diagonal).
    std::vector<std::uint64_t> counts;
    /// One label per row and column ("3", "3.1", a thread id, a matrix index).
    std::vector<std::string> labels;
    /// What the labels are, for the corner of the axes: "rank", "tid" or "index".
    std::string axis;
    /// First line: which application, e.g. "lmp (application 7), Slurm job 42 step 0".
    std::string title;
    /// Second line: the time the matrix covers and how many tasks.
    std::string subtitle;
    /// Along the colour bar: what the shades count, e.g. "communication events per task pair".
    std::string unit;
};

/// Draws `picture` into `path`. Throws cdsm::Error naming the file if it cannot be written.
void write_heatmap(const HeatmapPicture& picture, PictureFormat format,
                   const std::filesystem::path& path);

/// The module's entry point, resolved with dlsym. `abi` must equal kPictureAbi (the module and
/// cdsmctl come from one build: a mismatch is a broken installation). Returns 0, or -1 with a
/// message in `error` (never throws across the boundary).
inline constexpr int kPictureAbi = 1;
inline constexpr const char* kPictureEntry = "cdsmctl_write_heatmap";
using PictureEntry = int (*)(int abi, const HeatmapPicture* picture, int format, const char* path,
                             char* error, std::size_t error_size);

}  // namespace cdsm::cdsmctl
