// SPDX-License-Identifier: GPL-2.0
// A user of the installed libcdsm: maps 4 communicating pairs onto a machine it does not run on,
// and checks that each pair shares a core. Prints the library version; exits 1 on a wrong
// placement, 2 on an error.
#include <cdsm/cost.hpp>
#include <cdsm/error.hpp>
#include <cdsm/patterns.hpp>
#include <cdsm/scotch_mapper.hpp>
#include <cdsm/version.hpp>
#include <cstdio>

int main() {
    try {
        const cdsm::Topology machine = cdsm::Topology::from_synthetic("pack:2 core:2 pu:2");
        const cdsm::Distances distances(machine);
        const cdsm::CommMatrix pairs = cdsm::patterns::random_pairs(8);
        const cdsm::Placement placement = cdsm::ScotchMapper().map({pairs, machine, distances});
        const double cost = cdsm::mapping_cost(pairs, placement, distances);
        std::printf("libcdsm %.*s: cost %.0f on %s\n", static_cast<int>(cdsm::version().size()),
                    cdsm::version().data(), cost, machine.describe().c_str());
        // 4 pairs of weight 100, each on the two PUs of one core (distance 1).
        return cost == 400 ? 0 : 1;
    } catch (const cdsm::Error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
}
