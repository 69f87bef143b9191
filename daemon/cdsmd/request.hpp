// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>

#include "cdsm/comm_matrix.hpp"
#include "cdsm/control.hpp"

namespace cdsm::cdsmd {

/// Checks a parsed request (control::parse_line) before anything reads it: "cmd" is a known
/// command, each field that command reads has its type and range (docs/protocol.md), and
/// there is no other field (a newer client's field is refused, never silently ignored). Throws
/// ProtocolError("EINVAL") naming the field. After it, the handlers may read the fields with
/// get<>() and value() without a type error.
void validate_request(const control::Json& request);

/// The most matrix cells one answer carries: a dense matrix of 1024 tasks (a few MiB of JSON;
/// at 4096 tasks it would be ~200 MB), or as many non-zero cells of a sparse one.
inline constexpr std::uint64_t kMaxMatrixCells = 1u << 20;
/// Throws ProtocolError("E2BIG") when `cells` (dense: dim², sparse: the non-zero ones) exceed
/// kMaxMatrixCells, saying what to ask instead.
void check_matrix_cells(std::uint64_t cells, bool sparse, std::uint32_t app_id);
/// The cells of a matrix answer, checked: {"cells": [[row 0], [row 1], ...]}, or sparse
/// {"entries": [[i, j, value], ...]}: the non-zero cells above the diagonal (i < j; the matrix
/// is symmetric), in row order.
control::Json matrix_cells(const CommMatrix& m, bool sparse, std::uint32_t app_id);

}  // namespace cdsm::cdsmd
