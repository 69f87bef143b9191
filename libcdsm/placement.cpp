// SPDX-License-Identifier: GPL-2.0
#include "cdsm/placement.hpp"

#include <algorithm>
#include <string>

#include "cdsm/error.hpp"

namespace cdsm {

std::vector<std::size_t> Placement::loads(std::size_t pu_count) const {
    check(pu_count, "placement");
    std::vector<std::size_t> load(pu_count, 0);
    for (PuId pu : pus_) ++load[pu];
    return load;
}

bool Placement::is_balanced(std::size_t pu_count) const {
    const std::size_t low = size() / pu_count, high = (size() + pu_count - 1) / pu_count;
    for (std::size_t load : loads(pu_count))
        if (load < low || load > high) return false;
    return true;
}

bool Placement::is_stacked(std::size_t pu_count) const {
    const std::vector<std::size_t> load = loads(pu_count);
    return std::any_of(load.begin(), load.end(), [](std::size_t n) { return n > 1; }) &&
           std::find(load.begin(), load.end(), 0u) != load.end();
}

std::size_t Placement::moves_from(const Placement& before) const {
    if (before.size() != size())
        throw Error("placement of " + std::to_string(size()) + " tasks",
                    "cannot be compared with one of " + std::to_string(before.size()) + " tasks");
    std::size_t moved = 0;
    for (std::size_t t = 0; t < size(); ++t) moved += pus_[t] != before.pus_[t];
    return moved;
}

void Placement::check(std::size_t pu_count, std::string_view what) const {
    for (std::size_t t = 0; t < size(); ++t)
        if (pus_[t] >= pu_count)
            throw Error(what, "task " + std::to_string(t) + " is on PU " + std::to_string(pus_[t]) +
                                  " but the topology has only " + std::to_string(pu_count) +
                                  " PUs");
}

}  // namespace cdsm
