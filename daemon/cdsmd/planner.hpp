// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cdsm/comm_matrix.hpp>
#include <cdsm/distances.hpp>
#include <cdsm/remapper.hpp>
#include <cdsm/time_model.hpp>
#include <cdsm/topology.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cdsm::cdsmd {

/// The rows and columns `indices` of a kernel matrix (row k = task indices[k]). Indices beyond
/// the snapshot (tasks that joined after it) get empty rows.
CommMatrix submatrix(const CommMatrix& matrix, const std::vector<std::uint32_t>& indices);

/// Whether the tasks' masks keep some of them waiting for each other while one of the
/// `available` CPUs is idle: no assignment of tasks to CPUs of their masks gives every task a
/// CPU of its own (or, with more tasks than CPUs, every CPU a task). Tasks whose masks leave them
/// room are spread by the kernel's scheduler: two of them seen on one CPU at one moment are not
/// stacked, nor are 14 tasks bound by socket to 8 CPUs.
bool crowded(const std::vector<std::vector<std::uint32_t>>& masks,
             const std::vector<std::uint32_t>& available);

/// Whether tasks that last ran on the OS CPUs `current` share one of the `available` CPUs while
/// another of them ran none: a moment's view, which only persistence makes a wait (pass.cpp).
bool shares_a_cpu(const std::vector<std::uint32_t>& current,
                  const std::vector<std::uint32_t>& available);

/// Why a plan moves tasks.
enum class MoveReason {
    kNone,     ///< it does not move any
    kCheaper,  ///< the new placement is cheaper by min_gain
    kSpread,   ///< tasks shared a PU while another was free: they wait for each other, whatever
               ///< the cost says
    kOutside,  ///< tasks ran on CPUs not available to them (outside their cpuset, or held by
               ///< another application's placed tasks)
    kRule,     ///< the placement broke the placement rules ([mapping] smt, spread)
};
/// "cheaper", "spread", "outside", "rule" (the `why` of cdsmd's history), "" for kNone.
std::string_view reason_name(MoveReason reason) noexcept;
/// The reason as the end of a log line (": tasks shared a CPU..."), "" when the cost says it.
std::string_view reason_note(MoveReason reason) noexcept;

/// What plan() proposes for the tasks of one application.
struct Plan {
    std::vector<std::uint32_t> target_cpus;  ///< OS CPU per task
    bool changed = false;                    ///< target differs from where the tasks run now
    double cost_before = 0;                  ///< of the tasks where they run now
    double cost_after = 0;                   ///< of target_cpus (= cost_before when unchanged)
    /// The time model's prediction (TimeModel::node_time_s: each event one short message) where
    /// the tasks run now and on target_cpus, in seconds.
    double time_before_s = 0;
    double time_after_s = 0;
    std::size_t moved = 0;                    ///< tasks whose CPU changes
    MoveReason why = MoveReason::kNone;       ///< why the tasks move (when `changed`)
    std::map<std::string, double> baselines;  ///< cost by mapper name, when asked for
    std::string rule;  ///< which placement rule shaped the mapper's placement (Resources::rule)
};

/// Places the tasks of one application on a set of CPUs with libcdsm (mapper + Remapper: keep
/// the current placement unless the new one is better by the options' margins). Costs are always
/// computed on the whole machine's distances, so that placements inside different CPU sets compare.
class Planner {
  public:
    Planner(Topology machine, LevelCosts costs, TimeModel model = {});

    const Topology& machine() const noexcept { return machine_; }
    const Distances& distances() const noexcept { return distances_; }
    const TimeModel& model() const noexcept { return model_; }
    /// The OS CPUs of the machine's usable PUs.
    std::vector<std::uint32_t> machine_cpus() const;

    /// `current_cpus`: where each task runs now (OS CPU); `masks`: the CPUs each may run on now;
    /// `available_cpus`: where they may go (OS CPUs of the machine). Throws cdsm::Error if no
    /// available CPU is in the machine. `stuck`: the caller has seen the tasks share CPUs pass
    /// after pass, so they wait for each other whatever their masks allow. `placed` (empty, or a
    /// flag per task): tasks the caller placed before, which spreading leaves where they are
    /// unless moving them too is cheaper by min_gain (Remapper::decide).
    Plan plan(const CommMatrix& matrix, const std::vector<std::uint32_t>& current_cpus,
              const std::vector<std::vector<std::uint32_t>>& masks,
              const std::vector<std::uint32_t>& available_cpus, std::string_view algorithm,
              RemapOptions options, bool with_baselines = false, bool stuck = false,
              const std::vector<bool>& placed = {}) const;

    /// Cost of tasks on OS CPUs, on the machine's distances (CPUs not in the machine count as
    /// the farthest distance).
    double cost(const CommMatrix& matrix, const std::vector<std::uint32_t>& cpus) const;
    /// The time model's prediction for tasks on OS CPUs (TimeModel::node_time_s); the events
    /// of tasks on CPUs outside the machine each at the node's latency, their largest task's
    /// sum added (an upper bound).
    double time_s(const CommMatrix& matrix, const std::vector<std::uint32_t>& cpus) const;
    /// Counting noise of the difference of two placements' costs on OS CPUs (libcdsm's
    /// cost_difference_noise; CPUs not in the machine at the farthest distance).
    double difference_noise(const CommMatrix& matrix, const std::vector<std::uint32_t>& a,
                            const std::vector<std::uint32_t>& b) const;

  private:
    /// Tasks on OS CPUs as PUs of the machine: those on its CPUs (known), their PUs in task
    /// order, and the matrix among them; `all` when every task is on one.
    struct OnMachine {
        bool all = false;
        std::vector<bool> known;
        std::vector<PuId> pus;
        CommMatrix inside;
    };
    OnMachine on_machine(const CommMatrix& matrix, const std::vector<std::uint32_t>& cpus) const;

    Topology machine_;
    LevelCosts costs_;
    Distances distances_;
    TimeModel model_;
};

}  // namespace cdsm::cdsmd
