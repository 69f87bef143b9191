// SPDX-License-Identifier: GPL-2.0
#include "truth.hpp"

#include <cerrno>
#include <cstdio>
#include <system_error>

#include "system.hpp"

namespace cdsm::workloads {

void write_truth(const std::string& file, std::span<const pid_t> tids,
                 const PartnerGraph& partners) {
    const std::string tmp = file + ".tmp";
    std::FILE* out = std::fopen(tmp.c_str(), "w");
    if (out == nullptr) throw_errno("cannot create " + tmp);
    bool ok = true;
    for (std::size_t i = 0; i < tids.size(); ++i) {
        ok = ok && std::fprintf(out, "%d", tids[i]) > 0;
        for (const int p : partners[i]) ok = ok && std::fprintf(out, " %d", tids[p]) > 0;
        ok = ok && std::fputc('\n', out) != EOF;
    }
    const int saved = errno;
    if (std::fclose(out) != 0 || !ok) {
        errno = ok ? errno : saved;
        std::remove(tmp.c_str());
        throw_errno("cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), file.c_str()) != 0) {
        const int err = errno;
        std::remove(tmp.c_str());
        throw std::system_error(err, std::generic_category(),
                                "cannot rename " + tmp + " to " + file);
    }
}

}  // namespace cdsm::workloads
