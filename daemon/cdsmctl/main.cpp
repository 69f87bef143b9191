// SPDX-License-Identifier: GPL-2.0
#include "cli.hpp"

int main(int argc, char** argv) {
    return cdsmctl::main(argc, argv);
}
