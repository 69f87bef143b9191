// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>

#include "cdsm/mapper.hpp"

namespace cdsm {

/// Baselines that ignore the communication matrix, to compare mappings against.

/// The placement a launcher gives busy tasks without cdsm, one task per core (the core's first
/// PU; a launcher binds to the whole core): "map-by-core" is Open MPI's `mpirun --map-by core
/// --bind-to core` (consecutive ranks on consecutive cores, package after package);
/// "map-by-socket" is `--map-by socket --bind-to core` (rank i on package i mod S, on that
/// package's next core). Within one node Slurm's task distribution gives the same:
/// "slurm-block-block" (`srun -m block:block`, the cores of a socket filled before the next) and
/// "slurm-block-cyclic" (`-m block:cyclic`, Slurm's default, round-robin over the sockets).
/// With more tasks than cores the order goes round again over the cores' second PUs (Open MPI
/// needs `--use-hwthread-cpus` or `--oversubscribe` for that, Slurm `--threads-per-core`), and
/// over every PU again when there are more tasks than PUs. A fixed recipe: the placement rules
/// do not apply.
class LauncherMapper final : public Mapper {
  public:
    static constexpr std::string_view kMapByCore = "map-by-core";
    static constexpr std::string_view kMapBySocket = "map-by-socket";
    static constexpr std::string_view kSlurmBlockBlock = "slurm-block-block";
    static constexpr std::string_view kSlurmBlockCyclic = "slurm-block-cyclic";
    /// One of the four names above; throws Error otherwise.
    explicit LauncherMapper(std::string_view name);
    std::string_view name() const noexcept override { return name_; }
    bool follows_rules() const noexcept override { return false; }
    bool communication_aware() const noexcept override { return false; }

  protected:
    Placement place(const MappingProblem& problem) const override;

  private:
    std::string_view name_;
    bool cyclic_;  // round-robin over the packages
};

/// "pack" (once "compact"): fills PUs in logical order (SMT siblings, then cores, then packages):
/// task i on PU i. With more tasks than PUs, consecutive tasks share a PU (blocks of N/P tasks).
/// What the CDSM paper's placements looked like on a machine with idle PUs. A fixed recipe.
class CompactMapper final : public Mapper {
  public:
    static constexpr std::string_view kName = "pack";
    static constexpr std::string_view kOldName = "compact";
    std::string_view name() const noexcept override { return kName; }
    bool follows_rules() const noexcept override { return false; }
    bool communication_aware() const noexcept override { return false; }

  protected:
    Placement place(const MappingProblem& problem) const override;
};

/// Spreads consecutive tasks as far apart as the hierarchy allows: one per package first, then
/// one per L3, per core, and only then SMT siblings. With more tasks than PUs it wraps around.
/// A fixed recipe.
class ScatterMapper final : public Mapper {
  public:
    static constexpr std::string_view kName = "scatter";
    std::string_view name() const noexcept override { return kName; }
    bool follows_rules() const noexcept override { return false; }
    bool communication_aware() const noexcept override { return false; }

  protected:
    Placement place(const MappingProblem& problem) const override;
};

/// A random balanced placement within the resources the rules choose, the same for the same seed.
class RandomMapper final : public Mapper {
  public:
    explicit RandomMapper(std::uint64_t seed = 1) : seed_(seed) {}
    static constexpr std::string_view kName = "random";
    std::string_view name() const noexcept override { return kName; }
    bool communication_aware() const noexcept override { return false; }

  protected:
    Placement place(const MappingProblem& problem) const override;

  private:
    std::uint64_t seed_;
};

/// Keeps the current placement; throws Error if the problem has none.
class CurrentMapper final : public Mapper {
  public:
    static constexpr std::string_view kName = "current";
    std::string_view name() const noexcept override { return kName; }
    bool follows_rules() const noexcept override { return false; }
    bool communication_aware() const noexcept override { return false; }

  protected:
    Placement place(const MappingProblem& problem) const override;
};

}  // namespace cdsm
