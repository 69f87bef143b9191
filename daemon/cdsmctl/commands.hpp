// SPDX-License-Identifier: GPL-2.0
// The subcommands of cdsmctl. Each returns the process's exit status or throws: UsageError
// (exit 2), cdsm::Error, cdsm::control::ProtocolError or any std::exception (exit 1). cli.cpp
// parses the command line into these option structs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cdsm/distances.hpp"
#include "cdsm/mapper.hpp"
#include "cdsm/placement_rules.hpp"
#include "cdsm/time_model.hpp"
#include "cdsm/topology.hpp"
#include "client.hpp"
#include "labelled_matrix.hpp"
#include "pictures.hpp"

namespace cdsm::cdsmctl {

struct ShowOptions {
    std::string app;          ///< APP, or empty with `matrix_file`
    std::string matrix_file;  ///< --matrix: show a saved matrix instead ("-" = stdin)
    std::string format;       ///< table, csv, json, heatmap; empty = heatmap unless a picture
    std::string by = "index";
    std::string view = "whole";  ///< --view: cdsmd's "whole" run or "aged" matrix
    std::string png;
    std::string svg;
    std::string pdf;
    std::string colour = "auto";
    std::string charset = "auto";
    std::size_t width = 0;
};

struct MapOptions {
    std::string app;          ///< APP, or empty with `matrix_file`
    std::string matrix_file;  ///< --matrix (offline)
    std::string topology;     ///< --topology FILE.xml|SYNTHETIC (offline)
    std::string algorithm{cdsm::mapper_names().front()};
    std::string current;     ///< --current CPU list (offline): where the tasks run now
    std::uint64_t seed = 1;  ///< of the random mapper
    /// --smt avoid|allow and --spread balanced|pack: PlacementRules{}'s defaults, as cdsmd's.
    std::string smt{cdsm::to_string(cdsm::PlacementRules{}.smt)};
    std::string spread{cdsm::to_string(cdsm::PlacementRules{}.spread)};
    bool dry_run = false;
    bool json = false;
    std::string time_model;  ///< --time-model (offline): the model for the predicted time
};

struct RunOptions {
    std::string name;
    std::string mode;  ///< "" (cdsmd's default, map), "map" or "detect"
    std::vector<std::string> command;
    bool verbose = false;
    std::string mpi_monitor = "auto";  ///< --mpi-monitor auto|on|off
    std::string monitoring_dir;        ///< --monitoring-dir
    std::string job_matrix;            ///< --job-matrix FILE
};

struct TrackOptions {
    std::optional<pid_t> pid;
    std::string cgroup;
    std::string name;
    std::string mode;  ///< "" (cdsmd's default, map), "map" or "detect"
    bool json = false;
};

// Offline: libcdsm only, no kernel, no daemon (cmd_offline.cpp).

/// An hwloc XML file (an existing file or a name ending in .xml) or a synthetic description.
cdsm::Topology load_topology(const std::string& spec);
/// The time model of `path`, or without one of /etc/cdsm/time-model.json when it exists (what
/// cdsmctl calibrate writes); nothing when neither.
std::optional<cdsm::TimeModel> load_time_model(const std::string& path);
/// A matrix file, CSV or JSON ("-": standard input, either format).
cdsm::TaskMatrix load_matrix(const std::string& path);
int map_offline(const MapOptions& options, std::ostream& out);
int show_file(const ShowOptions& options, std::ostream& out);
void print_topology(const nlohmann::json& topology, std::ostream& out);
/// Prints a placement with its costs: map_offline's JSON or cdsmd's map reply.
void print_mapping(const nlohmann::json& mapping, std::ostream& out);
/// Writes what `show` asked for (pictures, then the format on `out`).
void show_matrix(const LabelledMatrix& m, const ShowOptions& options, std::ostream& out,
                 const PictureCaption& caption = {});
/// Whether `show` was asked for a picture (--png, --svg, --pdf) (pictures.cpp).
bool wants_picture(const ShowOptions& options) noexcept;
/// Writes the pictures `show` was asked for (pictures.cpp).
void write_pictures(const LabelledMatrix& m, const ShowOptions& options,
                    const PictureCaption& caption);

// Through cdsmd (cmd_online.cpp).

/// APP as the protocol wants it: a number for an application id, else a name.
nlohmann::json app_argument(const std::string& app);
int list_apps(CdsmdClient& client, bool json, std::ostream& out);
int show_tasks(CdsmdClient& client, const std::string& app, bool json, std::ostream& out);
int show_app(CdsmdClient& client, const ShowOptions& options, std::ostream& out);
int map_app(CdsmdClient& client, const MapOptions& options, std::ostream& out);
int show_stats(CdsmdClient& client, bool json, std::ostream& out);
int show_topology(CdsmdClient& client, bool json, std::ostream& out);
int track(CdsmdClient& client, const TrackOptions& options, std::ostream& out);
int untrack(CdsmdClient& client, const std::string& app, std::ostream& out);

// cmd_run.cpp
/// Starts the command tracked by cdsmd and returns its exit status (128+signal if killed).
int run_tracked(CdsmdClient& client, const RunOptions& options);

}  // namespace cdsm::cdsmctl
