// SPDX-License-Identifier: GPL-2.0
#include "pictures.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <ctime>

#include "cdsm/error.hpp"
#include "commands.hpp"
#include "output.hpp"

namespace cdsm::cdsmctl {
namespace {

std::uint64_t clock_ns(clockid_t clock) {
    timespec ts{};
    clock_gettime(clock, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

std::string local_time(std::uint64_t boottime_ns, const char* format) {
    const std::uint64_t now_boot = clock_ns(CLOCK_BOOTTIME);
    const std::uint64_t now_wall = clock_ns(CLOCK_REALTIME);
    const auto wall = static_cast<std::time_t>(
        (now_wall - (now_boot - std::min(boottime_ns, now_boot))) / 1'000'000'000u);
    std::tm tm{};
    localtime_r(&wall, &tm);
    std::array<char, 64> text{};
    return std::string(text.data(), std::strftime(text.data(), text.size(), format, &tm));
}

std::string duration(std::uint64_t ns) {
    const std::uint64_t s = ns / 1'000'000'000u;
    if (s < 10) return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9);
    if (s < 60) return fmt::format("{} s", s);
    if (s < 3600) return fmt::format("{} min {} s", s / 60, s % 60);
    return fmt::format("{} h {} min", s / 3600, s % 3600 / 60);
}

std::string axis_words(const LabelledMatrix& m) {
    if (m.axis == "rank") {
        const bool threads = std::any_of(m.labels.begin(), m.labels.end(), [](const auto& l) {
            return l.find('.') != std::string::npos;
        });
        return threads ? "MPI rank (R.n: thread n of rank R)" : "MPI rank";
    }
    return m.axis == "tid" ? "thread id" : "matrix index";
}

// Where cdsmctl-picture.so may be: beside the binary (a build tree), where the package puts it
// relative to the binary (an unpacked package, another prefix), and where it is installed.
std::vector<std::filesystem::path> module_candidates() {
    std::vector<std::filesystem::path> out;
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        out.push_back(self.parent_path() / "cdsmctl-picture.so");
        out.push_back((self.parent_path() / CDSMCTL_PICTURE_FROM_BINDIR).lexically_normal());
    }
    if (std::find(out.begin(), out.end(), CDSMCTL_PICTURE_MODULE) == out.end())
        out.emplace_back(CDSMCTL_PICTURE_MODULE);
    return out;
}

PictureEntry load_module() {
    std::string tried;
    for (const auto& path : module_candidates()) {
        // Never unloaded: cairo and fontconfig keep state for the process's life.
        if (void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
            if (void* entry = dlsym(module, kPictureEntry))
                return reinterpret_cast<PictureEntry>(entry);
            tried += fmt::format("; {}: no {}", path.string(), kPictureEntry);
        } else {
            tried += fmt::format("; {}", dlerror());
        }
    }
    throw cdsm::Error("the picture module cdsmctl-picture.so",
                      "cannot be loaded (cdsm's package installs it with cairo and pango)" + tried);
}

}  // namespace

std::string boottime_as_wall_clock(std::uint64_t boottime_ns) {
    return local_time(boottime_ns, "%Y-%m-%d %H:%M:%S %Z");
}

PictureCaption cdsmd_caption(const nlohmann::json& matrix, const nlohmann::json& app) {
    PictureCaption c;
    const std::string id = cell(field(matrix, "app_id"));
    const auto& name = field(app, "name");
    c.title = name.is_string() && !name.get<std::string>().empty()
                  ? fmt::format("{} (application {})", name.get<std::string>(), id)
                  : "application " + id;
    if (const auto& slurm = field(app, "slurm"); slurm.is_object()) {
        c.title += fmt::format(", Slurm job {}", cell(field(slurm, "job_id")));
        if (const auto& step = field(slurm, "step"); step.is_string())
            c.title += " step " + step.get<std::string>();
    }

    const auto snapshot = optional_int(matrix, "snapshot_ns");
    if (!snapshot) return c;
    // An older cdsmd sends no "view": it knew the aged matrix only.
    if (matrix.value("view", "aged") != "whole") {
        c.window = "aged matrix (recent events weigh most), taken " +
                   boottime_as_wall_clock(static_cast<std::uint64_t>(*snapshot));
        return c;
    }
    auto end = *snapshot;
    if (const auto ended = optional_int(app, "end_ns");
        field(app, "ended") == true && ended && *ended > 0)
        end = std::min(end, *ended);
    const auto start = optional_int(app, "start_ns");
    if (!start || *start > end) {
        c.window = "whole run, up to " + boottime_as_wall_clock(static_cast<std::uint64_t>(end));
        return c;
    }
    const auto from = static_cast<std::uint64_t>(*start), to = static_cast<std::uint64_t>(end);
    const bool same_day = local_time(from, "%F") == local_time(to, "%F");
    c.window = fmt::format("whole run, tracked {} to {} ({})", boottime_as_wall_clock(from),
                           same_day ? local_time(to, "%H:%M:%S") : boottime_as_wall_clock(to),
                           duration(to - from));
    return c;
}

HeatmapPicture heatmap_picture(const LabelledMatrix& m, const PictureCaption& caption) {
    HeatmapPicture p;
    p.tasks = m.matrix.size();
    p.counts.resize(p.tasks * p.tasks);
    m.matrix.for_each_pair([&](std::size_t i, std::size_t j, std::uint64_t v) {
        p.counts[i * p.tasks + j] = v;
        p.counts[j * p.tasks + i] = v;
    });
    p.labels = m.labels;
    p.axis = m.axis;
    p.title = caption.title.empty() ? m.title : caption.title;
    const std::string tasks =
        fmt::format("{} task{} by {}", p.tasks, p.tasks == 1 ? "" : "s", axis_words(m));
    p.subtitle = caption.window.empty() ? tasks : caption.window + "; " + tasks;
    if (m.matrix.max() == 0) p.subtitle += "; no communication recorded";
    p.unit = "communication events per task pair";
    if (m.view == "whole") p.unit += ", whole run";
    if (m.view == "aged") p.unit += ", aged";
    return p;
}

void write_picture(const HeatmapPicture& picture, PictureFormat format,
                   const std::filesystem::path& path) {
    static const PictureEntry entry = load_module();
    std::array<char, 1024> error{};
    if (entry(kPictureAbi, &picture, static_cast<int>(format), path.c_str(), error.data(),
              error.size()) != 0)
        throw cdsm::Error(error.data());
}

bool wants_picture(const ShowOptions& options) noexcept {
    return !options.png.empty() || !options.svg.empty() || !options.pdf.empty();
}

void write_pictures(const LabelledMatrix& m, const ShowOptions& options,
                    const PictureCaption& caption) {
    if (!wants_picture(options)) return;
    const HeatmapPicture picture = heatmap_picture(m, caption);
    if (!options.png.empty()) write_picture(picture, PictureFormat::kPng, options.png);
    if (!options.svg.empty()) write_picture(picture, PictureFormat::kSvg, options.svg);
    if (!options.pdf.empty()) write_picture(picture, PictureFormat::kPdf, options.pdf);
}

}  // namespace cdsm::cdsmctl
