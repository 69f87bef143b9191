// SPDX-License-Identifier: GPL-2.0
#include "cdsm/comm_matrix.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "cdsm/error.hpp"
#include "matrix_check.hpp"

namespace cdsm {

CommMatrix::CommMatrix(std::size_t n) : n_(n), sparse_(n >= kSparseMinTasks) {
    if (sparse_)
        rows_.resize(n);
    else
        upper_.assign(n < 2 ? 0 : n * (n - 1) / 2, 0);
}

bool operator==(const CommMatrix& a, const CommMatrix& b) {
    if (a.n_ != b.n_) return false;
    if (!a.sparse_ && !b.sparse_) return a.upper_ == b.upper_;
    std::size_t pairs_a = 0, pairs_b = 0;
    bool equal = true;
    a.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value v) {
        ++pairs_a;
        equal = equal && b.at(i, j) == v;
    });
    b.for_each_pair([&](std::size_t, std::size_t, CommMatrix::Value) { ++pairs_b; });
    return equal && pairs_a == pairs_b;
}

CommMatrix::Value CommMatrix::sparse_at(std::size_t i, std::size_t j) const {
    if (i >= n_ || j >= n_ || i == j) no_pair(i, j);
    if (i > j) std::swap(i, j);
    const auto& row = rows_[i];
    const auto it = std::lower_bound(row.begin(), row.end(), j,
                                     [](const Entry& e, std::size_t c) { return e.column < c; });
    return it != row.end() && it->column == j ? it->value : 0;
}

CommMatrix::Value& CommMatrix::cell(std::size_t i, std::size_t j) {
    if (!sparse_) return upper_[index(i, j)];
    if (i >= n_ || j >= n_ || i == j) no_pair(i, j);
    if (i > j) std::swap(i, j);
    auto& row = rows_[i];
    // Rows are mostly filled in column order: try the end first.
    auto it = !row.empty() && row.back().column < j
                  ? row.end()
                  : std::lower_bound(row.begin(), row.end(), j,
                                     [](const Entry& e, std::size_t c) { return e.column < c; });
    if (it != row.end() && it->column == j) return it->value;
    if ((entries_ + 1) * 4 > n_ * (n_ - 1) / 2) {
        make_dense();
        return upper_[index(i, j)];
    }
    ++entries_;
    return row.insert(it, Entry{static_cast<std::uint32_t>(j), 0})->value;
}

void CommMatrix::make_dense() {
    upper_.assign(n_ * (n_ - 1) / 2, 0);
    for (std::size_t i = 0; i < n_; ++i)
        for (const Entry& e : rows_[i]) upper_[index(i, e.column)] = e.value;
    rows_ = {};
    entries_ = 0;
    sparse_ = false;
}

void CommMatrix::no_pair(std::size_t i, std::size_t j) const {
    throw Error("communication matrix of " + std::to_string(n_) + " tasks",
                "no pair (" + std::to_string(i) + ", " + std::to_string(j) + ")");
}

void CommMatrix::set(std::size_t i, std::size_t j, Value value) {
    if (value == 0 && sparse_ && sparse_at(i, j) == 0) return;
    cell(i, j) = value;
}

void CommMatrix::add(std::size_t i, std::size_t j, Value value) {
    if (value == 0) {
        if (i >= n_ || j >= n_ || i == j) no_pair(i, j);
        return;
    }
    cell(i, j) += value;
}

CommMatrix::Value detail::checked_count(double v, std::string_view input, std::size_t row,
                                        std::size_t column) {
    auto where = [&] {
        return "cell (" + std::to_string(row) + ", " + std::to_string(column) + ")";
    };
    if (std::isnan(v)) throw Error(input, where() + " is NaN");
    if (std::isinf(v)) throw Error(input, where() + " is infinite");
    if (v < 0) throw Error(input, where() + " is negative (" + std::to_string(v) + ")");
    if (v != std::floor(v) || v >= 1.8e19)
        throw Error(input, where() + " is not a whole event count (" + std::to_string(v) + ")");
    return static_cast<CommMatrix::Value>(v);
}

void detail::asymmetric(std::string_view input, std::size_t i, std::size_t j, double upper,
                        double lower) {
    throw Error(input, "is not symmetric: cell (" + std::to_string(i) + ", " + std::to_string(j) +
                           ") = " + std::to_string(upper) + " but cell (" + std::to_string(j) +
                           ", " + std::to_string(i) + ") = " + std::to_string(lower));
}

CommMatrix CommMatrix::from_square(std::span<const double> values, std::size_t n,
                                   std::string_view input, Symmetry symmetry) {
    if (values.size() != n * n)
        throw Error(input, "has " + std::to_string(values.size()) + " values, a " +
                               std::to_string(n) + "x" + std::to_string(n) + " matrix needs " +
                               std::to_string(n * n));
    for (std::size_t k = 0; k < values.size(); ++k)
        detail::checked_count(values[k], input, k / n, k % n);
    CommMatrix m(n);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j) {
            const double upper = values[i * n + j], lower = values[j * n + i];
            if (symmetry == Symmetry::kRequire && upper != lower)
                detail::asymmetric(input, i, j, upper, lower);
            m.set(i, j,
                  static_cast<Value>(upper) +
                      (symmetry == Symmetry::kAddTranspose ? static_cast<Value>(lower) : 0));
        }
    }
    return m;
}

double CommMatrix::total() const noexcept {
    double sum = 0;
    for_each_pair([&](std::size_t, std::size_t, Value v) { sum += static_cast<double>(v); });
    return sum;
}

CommMatrix::Value CommMatrix::max() const noexcept {
    Value top = 0;
    for_each_pair([&](std::size_t, std::size_t, Value v) { top = std::max(top, v); });
    return top;
}

CommMatrix::Value CommMatrix::row_total(std::size_t i) const {
    Value sum = 0;
    for (std::size_t j = 0; j < n_; ++j) sum += at(i, j);
    return sum;
}

void CommMatrix::age() noexcept {
    for (Value& v : upper_) v -= v >> 2;
    for (auto& row : rows_)
        for (Entry& e : row) e.value -= e.value >> 2;
}

CommMatrix CommMatrix::normalised(Value max_value) const {
    CommMatrix out = *this;
    const Value top = max();
    if (top == 0) return out;
    const double scale = static_cast<double>(max_value) / static_cast<double>(top);
    auto scaled = [scale](Value& v) {
        if (v != 0)
            v = std::max<Value>(1,
                                static_cast<Value>(std::llround(static_cast<double>(v) * scale)));
    };
    for (Value& v : out.upper_) scaled(v);
    for (auto& row : out.rows_)
        for (Entry& e : row) scaled(e.value);
    return out;
}

double CommMatrix::structuredness() const {
    if (n_ < 3) return 0;
    const double partners = static_cast<double>(n_ - 1);
    std::vector<double> sums(n_, 0.0), squares_of(n_, 0.0);
    for_each_pair([&](std::size_t i, std::size_t j, Value value) {
        const double v = static_cast<double>(value);
        sums[i] += v;
        sums[j] += v;
        squares_of[i] += v * v;
        squares_of[j] += v * v;
    });
    double weighted = 0, weight = 0;
    for (std::size_t i = 0; i < n_; ++i) {
        const double sum = sums[i], squares = squares_of[i];
        if (sum == 0) continue;
        const double mean = sum / partners;
        const double variance = std::max(0.0, squares / partners - mean * mean);
        const double cv = std::sqrt(variance) / mean;
        weighted += sum * cv / std::sqrt(partners - 1);
        weight += sum;
    }
    return weight == 0 ? 0 : weighted / weight;
}

}  // namespace cdsm
