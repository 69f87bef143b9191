// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <span>
#include <string>

#include "pairing.hpp"

namespace cdsm::workloads {

/// Writes the ground truth: one line per task, "TID PARTNER_TID [PARTNER_TID...]", tasks in index
/// order, partners in the order of `partners`. Writes FILE.tmp and renames it to FILE, so a reader
/// sees either no file or the whole file. Throws std::system_error on failure.
void write_truth(const std::string& file, std::span<const pid_t> tids,
                 const PartnerGraph& partners);

}  // namespace cdsm::workloads
