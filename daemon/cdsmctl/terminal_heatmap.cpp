// SPDX-License-Identifier: GPL-2.0
#include "terminal_heatmap.hpp"

#include <fmt/format.h>
#include <langinfo.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <clocale>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "output.hpp"

namespace cdsm::cdsmctl {
namespace {

constexpr std::array<std::string_view, 5> kUnicodeRamp{" ", "░", "▒", "▓", "█"};
constexpr std::string_view kAsciiRamp = " .:-=+*#%@";
// xterm-256 colours from dark blue through cyan and green to yellow and red.
constexpr std::array<int, 12> kColourRamp{17, 19, 21, 27, 33, 39, 45, 49, 118, 226, 208, 196};

// A matrix shrunk so that it fits: block (a, b) sums the pairs of tasks [a*k, a*k+k) x
// [b*k, b*k+k). Labels become the first and last label of each block.
struct Blocks {
    std::size_t k = 1;
    std::size_t n = 0;
    std::vector<double> cells;               // n x n
    std::vector<std::string> labels;         // rows: "first-last" of each block
    std::vector<std::string> column_labels;  // columns: the first, to keep them short
    std::vector<bool> boundary;              // a group (node) starts at this block
    double at(std::size_t i, std::size_t j) const { return cells[i * n + j]; }
};

Blocks blocks_of(const LabelledMatrix& m, std::size_t k) {
    Blocks b;
    b.k = k;
    const std::size_t size = m.matrix.size();
    b.n = (size + k - 1) / k;
    b.cells.assign(b.n * b.n, 0.0);
    for (std::size_t i = 0; i < size; ++i)
        for (std::size_t j = 0; j < size; ++j)
            b.cells[(i / k) * b.n + j / k] += static_cast<double>(m.matrix.at(i, j));
    for (std::size_t a = 0; a < b.n; ++a) {
        const std::size_t first = a * k, last = std::min(size, first + k) - 1;
        b.labels.push_back(first == last ? m.labels[first]
                                         : m.labels[first] + "-" + m.labels[last]);
        b.column_labels.push_back(m.labels[first]);
        b.boundary.push_back(a > 0 && !m.groups.empty() && m.groups[first] != m.groups[first - 1]);
    }
    return b;
}

std::string cell_text(std::size_t level, const HeatmapStyle& style) {
    if (style.colour) {
        if (level == 0) return "  ";
        return fmt::format("\x1b[48;5;{}m  \x1b[0m", kColourRamp[level - 1]);
    }
    if (style.utf8) return std::string(kUnicodeRamp[level]) + std::string(kUnicodeRamp[level]);
    return std::string(2, kAsciiRamp[level]);
}

std::size_t level_count(const HeatmapStyle& style) {
    if (style.colour) return kColourRamp.size() + 1;
    return style.utf8 ? kUnicodeRamp.size() : kAsciiRamp.size();
}

}  // namespace

HeatmapStyle detect_style(int fd, std::string_view colour, std::string_view charset,
                          std::size_t width) {
    HeatmapStyle style;
    const bool tty = isatty(fd) == 1;
    if (charset == "auto") {
        std::setlocale(LC_CTYPE, "");
        style.utf8 = std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
    } else {
        style.utf8 = charset == "utf8";
    }
    if (colour == "auto") {
        const char* term = std::getenv("TERM");
        style.colour = tty && !std::getenv("NO_COLOR") && term && std::strstr(term, "256");
    } else {
        style.colour = colour == "always";
    }
    style.max_width = width;
    if (width == 0) {
        winsize ws{};
        if (const char* columns = std::getenv("COLUMNS"); columns && std::atoi(columns) > 0)
            style.max_width = static_cast<std::size_t>(std::atoi(columns));
        else if (tty && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
            style.max_width = ws.ws_col;
    }
    return style;
}

std::size_t shade_level(double value, double max, std::size_t levels) {
    if (value <= 0 || max <= 0) return 0;
    const double scaled = std::ceil(value / max * static_cast<double>(levels - 1));
    return std::clamp<std::size_t>(static_cast<std::size_t>(scaled), 1, levels - 1);
}

std::string render_terminal_heatmap(const LabelledMatrix& m, const HeatmapStyle& style) {
    const std::size_t size = m.matrix.size();
    if (size == 0) return "(empty matrix)\n";
    std::size_t label_width = 0;
    for (const auto& l : m.labels) label_width = std::max(label_width, l.size());
    // Shrink until label column, separator and 2 characters per cell fit.
    std::size_t k = 1;
    if (style.max_width > 0) {
        while (k < size) {
            const std::size_t cells = (size + k - 1) / k;
            std::size_t width = 0;
            for (std::size_t a = 0; a < cells; ++a) {
                const std::size_t first = a * k, last = std::min(size, first + k) - 1;
                width = std::max(width, m.labels[first].size() +
                                            (first == last ? 0 : 1 + m.labels[last].size()));
            }
            if (width + 3 + 2 * cells <= style.max_width) break;
            ++k;
        }
    }
    const Blocks b = blocks_of(m, k);
    label_width = 0;
    for (const auto& l : b.labels) label_width = std::max(label_width, l.size());
    std::size_t column_height = 0;
    for (const auto& l : b.column_labels) column_height = std::max(column_height, l.size());
    double max = 0;
    for (double v : b.cells) max = std::max(max, v);
    const std::size_t levels = level_count(style);

    std::string out;
    const std::string_view bar = style.utf8 ? "│" : "|";
    // Column labels, written downwards, right-aligned on the row just above the cells.
    for (std::size_t line = 0; line < column_height; ++line) {
        std::string text(label_width + 3, ' ');
        for (std::size_t j = 0; j < b.n; ++j) {
            if (b.boundary[j]) text += ' ';
            const std::string& l = b.column_labels[j];
            const std::size_t pad = column_height - l.size();
            text += line < pad ? ' ' : l[line - pad];
            text += ' ';
        }
        while (!text.empty() && text.back() == ' ') text.pop_back();
        out += text + '\n';
    }
    // Groups (a job's nodes) are set apart by a line across and a bar down.
    const std::string_view rule = style.utf8 ? "─" : "-";
    const std::string_view cross = style.utf8 ? "┼" : "+";
    for (std::size_t i = 0; i < b.n; ++i) {
        if (b.boundary[i]) {
            std::string line = std::string(label_width + 2, ' ') + std::string(cross);
            for (std::size_t j = 0; j < b.n; ++j) {
                if (b.boundary[j]) line += cross;
                line += std::string(rule) + std::string(rule);
            }
            out += line + std::string(cross) + '\n';
        }
        out += fmt::format("{:>{}} {}", b.labels[i], label_width + 1, bar);
        for (std::size_t j = 0; j < b.n; ++j) {
            if (b.boundary[j]) out += bar;
            out += cell_text(shade_level(b.at(i, j), max, levels), style);
        }
        out += std::string(bar) + '\n';
    }
    // Legend: what each shade stands for, in events per pair (or per block).
    const std::string indent(label_width + 2, ' ');
    out += indent + "rows, columns: " + m.axis +
           (k > 1 ? fmt::format(", in blocks of {}x{} tasks", k, k) : "") +
           (m.groups.empty() ? "" : "; lines between nodes") + '\n';
    out += indent +
           fmt::format("max {} {} per {}\n", format_number(max), m.unit, k > 1 ? "block" : "pair");
    std::string legend = indent;
    for (std::size_t level = 1; level < levels; ++level) {
        const double upper = max * static_cast<double>(level) / static_cast<double>(levels - 1);
        legend += cell_text(level, style) + fmt::format("<={} ", format_number(std::ceil(upper)));
        if (level % 6 == 0 && level + 1 < levels) {
            out += legend + '\n';
            legend = indent;
        }
    }
    out += legend + '\n';
    return out;
}

}  // namespace cdsm::cdsmctl
