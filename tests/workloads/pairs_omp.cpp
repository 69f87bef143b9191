// SPDX-License-Identifier: GPL-2.0
// cdsm-pairs-omp: the pairs workload as an OpenMP parallel region. See README.md.
#include <omp.h>

#include "common/cli.hpp"
#include "common/pairs_team.hpp"

using namespace cdsm::workloads;

int main(int argc, char** argv) {
    CLI::App app{"OpenMP threads that share memory in known pairs (ground truth for cdsm).",
                 "cdsm-pairs-omp"};
    PairsOptions options;
    options.add_options(app, false);
    return run_workload(app, argc, argv, [&] {
        options.validate();
        PairsTeam team(options);
        bool full_team = true;
        omp_set_dynamic(0);
#pragma omp parallel num_threads(options.tasks)
        {
            if (omp_get_num_threads() != options.tasks) {
#pragma omp single
                full_team = false;
            } else {
                team.member(omp_get_thread_num(), [] {
#pragma omp barrier
                });
            }
        }
        if (!full_team) throw std::runtime_error("OpenMP gave fewer threads than --threads");
        return team.finish(app.get_name());
    });
}
