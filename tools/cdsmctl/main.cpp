// SPDX-License-Identifier: GPL-2.0
#include "cdsm/topology.hpp"
#include "cli.hpp"

int main(int argc, char** argv) {
    cdsm::Topology::skip_io_plugins();
    return cdsm::cdsmctl::main(argc, argv);
}
