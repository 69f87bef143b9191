// SPDX-License-Identifier: GPL-2.0
// A user of the installed libcdsm reading a tracked application's matrix from cdsm.ko:
//   cdsm-read-matrix APP
// prints "dim N events E", then one line "TID PARTNER" per task that communicates: its thread
// id and that of the task it exchanged most with. Exits 1 on an error (no module, no such
// application), 2 on a usage error.
#include <cdsm/kernel.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: cdsm-read-matrix APP\n");
        return 2;
    }
    try {
        const auto app = static_cast<std::uint32_t>(std::stoul(argv[1]));
        const cdsm::kernel::Device device;
        const auto tasks = device.tasks(app);
        const cdsm::kernel::MatrixSnapshot snapshot = device.matrix(app);
        const cdsm::CommMatrix& m = snapshot.matrix;
        std::vector<pid_t> tid(m.size(), 0);
        for (const cdsm_task_info& t : tasks)
            if (t.index < m.size()) tid[t.index] = t.tid;
        std::printf("dim %zu events %llu\n", m.size(),
                    static_cast<unsigned long long>(snapshot.events));
        for (std::size_t i = 0; i < m.size(); ++i) {
            std::size_t partner = i;
            for (std::size_t j = 0; j < m.size(); ++j)
                if (m.at(i, j) > (partner == i ? 0 : m.at(i, partner))) partner = j;
            if (partner != i) std::printf("%d %d\n", tid[i], tid[partner]);
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cdsm-read-matrix: %s\n", e.what());
    }
    return 1;
}
