// SPDX-License-Identifier: GPL-2.0
#include "cdsm/monitoring.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <map>
#include <optional>
#include <string>

#include "cdsm/error.hpp"
#include "cdsm/fd.hpp"
#include "text_lines.hpp"

namespace cdsm {
namespace {

namespace fs = std::filesystem;

enum class Section { kNone, kPointToPoint, kOneSided, kCollectives };

// One line of a monitoring file, consumed from the front as it is read.
class Fields {
  public:
    explicit Fields(std::string_view line) : rest_(line) {}

    std::optional<std::uint64_t> number() {
        std::uint64_t value = 0;
        const auto [end, ec] = std::from_chars(rest_.data(), rest_.data() + rest_.size(), value);
        if (ec != std::errc()) return std::nullopt;
        rest_.remove_prefix(static_cast<std::size_t>(end - rest_.data()));
        return value;
    }
    bool literal(std::string_view text) {
        if (!rest_.starts_with(text)) return false;
        rest_.remove_prefix(text.size());
        return true;
    }
    // The end of the record: the line's end or the tab before the size histogram.
    bool end() const { return rest_.empty() || rest_.front() == '\t'; }

  private:
    std::string_view rest_;
};

struct Record {
    std::uint64_t first, second, bytes, messages;
};

// "\tA\tB\tN bytes\tM msgs sent" after the record's letter.
std::optional<Record> parse_record(std::string_view after_letter) {
    Fields f(after_letter);
    if (!f.literal("\t")) return std::nullopt;
    const auto a = f.number();
    if (!a || !f.literal("\t")) return std::nullopt;
    const auto b = f.number();
    if (!b || !f.literal("\t")) return std::nullopt;
    const auto bytes = f.number();
    if (!bytes || !f.literal(" bytes\t")) return std::nullopt;
    const auto msgs = f.number();
    if (!msgs || !f.literal(" msgs sent") || !f.end()) return std::nullopt;
    return Record{*a, *b, *bytes, *msgs};
}

[[noreturn]] void bad_line(std::string_view name, std::size_t number, std::string_view line,
                           std::string_view why) {
    constexpr std::size_t kShown = 60;
    std::string shown(line.substr(0, kShown));
    for (char& c : shown)
        if (c == '\t') c = ' ';
    if (line.size() > kShown) shown += "...";
    throw Error(name,
                "line " + std::to_string(number) + ": " + std::string(why) + " ('" + shown + "')");
}

// The rank of a file name "PREFIX.<rank>.prof", and its prefix.
std::optional<std::pair<std::string, std::uint32_t>> split_name(const std::string& file) {
    constexpr std::string_view kSuffix = ".prof";
    if (!std::string_view(file).ends_with(kSuffix)) return std::nullopt;
    const std::string_view stem(file.data(), file.size() - kSuffix.size());
    const std::size_t dot = stem.rfind('.');
    if (dot == std::string_view::npos || dot + 1 == stem.size()) return std::nullopt;
    std::uint32_t rank = 0;
    const auto [end, ec] = std::from_chars(stem.data() + dot + 1, stem.data() + stem.size(), rank);
    if (ec != std::errc() || end != stem.data() + stem.size()) return std::nullopt;
    return std::pair{std::string(stem.substr(0, dot)), rank};
}

std::string read_whole(const fs::path& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw_errno("open " + path.string());
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) throw_errno("fstat " + path.string());
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t done = 0;
    for (;;) {
        if (done == text.size()) text.resize(text.size() + 4096);
        const ssize_t got = ::read(fd.get(), text.data() + done, text.size() - done);
        if (got < 0) throw_errno("read " + path.string());
        if (got == 0) break;
        done += static_cast<std::size_t>(got);
    }
    text.resize(done);
    return text;
}

}  // namespace

void parse_monitoring_file(std::string_view text, std::string_view name, std::uint32_t rank,
                           std::size_t ranks, const MonitoringOptions& options,
                           std::vector<Flow>& flows) {
    Section section = Section::kNone;
    detail::TextLines lines(text);
    for (std::string_view line; lines.next(line);) {
        const std::size_t number = lines.number();
        if (line.empty()) continue;
        if (line.front() == '#') {
            if (line == "# POINT TO POINT")
                section = Section::kPointToPoint;
            else if (line == "# OSC")
                section = Section::kOneSided;
            else if (line == "# COLLECTIVES")
                section = Section::kCollectives;
            else
                bad_line(name, number, line, "unknown section");
            continue;
        }
        if (section == Section::kCollectives) continue;
        const char kind = line.front();
        const bool p2p = section == Section::kPointToPoint && (kind == 'E' || kind == 'I');
        const bool osc = section == Section::kOneSided && (kind == 'S' || kind == 'R');
        if (!p2p && !osc)
            bad_line(name, number, line,
                     section == Section::kNone
                         ? "a record before the first section ('# POINT TO POINT')"
                         : "not a record of this section (E or I under POINT TO POINT, S or R "
                           "under OSC)");
        const auto record = parse_record(line.substr(1));
        if (!record)
            bad_line(name, number, line,
                     "expected '<kind>\\t<rank>\\t<rank>\\t<N> bytes\\t<M> msgs sent'");
        if (record->first != rank)
            bad_line(name, number, line,
                     "the record is rank " + std::to_string(record->first) + "'s, the file rank " +
                         std::to_string(rank) + "'s (files of two jobs mixed?)");
        if (record->second >= ranks)
            bad_line(name, number, line,
                     "rank " + std::to_string(record->second) + " is beyond the job's " +
                         std::to_string(ranks) + " ranks (a rank's file is missing?)");
        if ((kind == 'I' && !options.internal) || (osc && !options.one_sided)) continue;
        const auto me = static_cast<std::uint32_t>(record->first);
        const auto peer = static_cast<std::uint32_t>(record->second);
        // R: this rank read (MPI_Get) the peer's memory, so the data went peer -> this rank.
        if (kind == 'R')
            flows.push_back({peer, me, record->bytes, record->messages});
        else
            flows.push_back({me, peer, record->bytes, record->messages});
    }
}

std::vector<fs::path> monitoring_files(const fs::path& path) {
    std::error_code ec;
    const bool is_dir = fs::is_directory(path, ec);
    const fs::path dir = is_dir ? path : path.parent_path().empty() ? "." : path.parent_path();
    const std::string wanted = is_dir ? std::string() : path.filename().string();
    if (!fs::is_directory(dir, ec))
        throw Error(path.string(),
                    "no such directory (give the directory of the monitoring files, or the "
                    "prefix given to --mca pml_monitoring_filename)");
    std::map<std::string, std::map<std::uint32_t, fs::path>> by_prefix;
    for (const auto& entry : fs::directory_iterator(dir)) {
        const auto split = split_name(entry.path().filename().string());
        if (!split || (!wanted.empty() && split->first != wanted)) continue;
        by_prefix[split->first].emplace(split->second, entry.path());
    }
    if (by_prefix.empty() && !is_dir && !fs::exists(path, ec))
        throw Error(path.string(), "neither a directory nor the prefix of monitoring files (no " +
                                       path.filename().string() + ".<rank>.prof in " +
                                       dir.string() + ")");
    if (by_prefix.empty())
        throw Error(path.string(),
                    "no monitoring files (PREFIX.<rank>.prof): was the job run with --mca "
                    "pml_monitoring_enable 2 --mca pml_monitoring_enable_output 3 --mca "
                    "pml_monitoring_filename DIR/PREFIX, and does its Open MPI have the "
                    "monitoring components (static builds do not)?");
    if (by_prefix.size() > 1)
        throw Error(path.string(), "files of several prefixes ('" + by_prefix.begin()->first +
                                       "', '" + std::next(by_prefix.begin())->first +
                                       "'): give the prefix, e.g. " +
                                       (dir / by_prefix.begin()->first).string());
    const auto& files = by_prefix.begin()->second;
    std::vector<fs::path> out;
    out.reserve(files.size());
    for (const auto& [rank, file] : files) {
        if (rank != out.size())
            throw Error(path.string(), "the file of rank " + std::to_string(out.size()) +
                                           " is missing (found " + file.filename().string() + ", " +
                                           std::to_string(files.size()) + " files)");
        out.push_back(file);
    }
    return out;
}

RankTraffic read_monitoring(const fs::path& path, const MonitoringOptions& options) {
    const std::vector<fs::path> files = monitoring_files(path);
    std::vector<Flow> flows;
    for (std::uint32_t rank = 0; rank < files.size(); ++rank)
        parse_monitoring_file(read_whole(files[rank]), files[rank].string(), rank, files.size(),
                              options, flows);
    return RankTraffic::from_flows(files.size(), std::move(flows));
}

}  // namespace cdsm
