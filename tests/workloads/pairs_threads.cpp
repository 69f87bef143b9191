// SPDX-License-Identifier: GPL-2.0
// cdsm-pairs-threads: N threads, thread i shares data only with its partner in a seeded
// non-neighbour pairing. See README.md.
#include <barrier>
#include <thread>
#include <vector>

#include "common/cli.hpp"
#include "common/pairs_team.hpp"

using namespace cdsm::workloads;

int main(int argc, char** argv) {
    CLI::App app{"Threads that share memory in known pairs (ground truth for cdsm).",
                 "cdsm-pairs-threads"};
    PairsOptions options;
    options.add_options(app, true);
    return run_workload(app, argc, argv, [&] {
        options.validate();
        PairsTeam team(options);
        std::barrier sync(options.tasks);
        const auto barrier = [&sync] { sync.arrive_and_wait(); };
        {
            // The main thread is member 0: the program's tasks are exactly the team.
            std::vector<std::jthread> threads;
            for (int i = 1; i < options.tasks; ++i) {
                threads.emplace_back([&team, &barrier, i] { team.member(i, barrier); });
            }
            team.member(0, barrier);
        }
        return team.finish(app.get_name());
    });
}
