// SPDX-License-Identifier: GPL-2.0
// cdsmd's log lines: every message is escaped where it is written (one formatter for every
// line), so that no string a user controls (a thread's or command's name, an application's
// name, a cgroup path, a request's text in an error) can start a line of its own or carry bytes
// that are not UTF-8.
#pragma once

#include <spdlog/logger.h>

#include <string>
#include <string_view>

namespace cdsm::cdsmd {

/// `text` with every byte below 0x20, 0x7f, a backslash and every byte that is not part of a
/// well-formed UTF-8 sequence written as \xNN (a backslash as \x5c); well-formed UTF-8 is kept.
std::string escape_for_log(std::string_view text);

/// Sets cdsmd's line format on `logger`: the syslog priority as a "<N>" prefix for the journal
/// (`journal`), else a time stamp and the level; the message escaped (escape_for_log) either way.
void set_log_format(spdlog::logger& logger, bool journal);

}  // namespace cdsm::cdsmd
