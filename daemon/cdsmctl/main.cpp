// SPDX-License-Identifier: GPL-2.0
#include "cli.hpp"

int main(int argc, char** argv) {
    return cdsm::cdsmctl::main(argc, argv);
}
