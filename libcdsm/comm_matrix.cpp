// SPDX-License-Identifier: GPL-2.0
#include "cdsm/comm_matrix.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "cdsm/error.hpp"

namespace cdsm {

CommMatrix::CommMatrix(std::size_t n) : n_(n), upper_(n < 2 ? 0 : n * (n - 1) / 2, 0) {}

void CommMatrix::no_pair(std::size_t i, std::size_t j) const {
    throw Error("communication matrix of " + std::to_string(n_) + " tasks",
                "no pair (" + std::to_string(i) + ", " + std::to_string(j) + ")");
}

void CommMatrix::set(std::size_t i, std::size_t j, Value value) {
    upper_[index(i, j)] = value;
}

void CommMatrix::add(std::size_t i, std::size_t j, Value value) {
    upper_[index(i, j)] += value;
}

CommMatrix CommMatrix::from_square(std::span<const double> values, std::size_t n,
                                   std::string_view input, Symmetry symmetry) {
    if (values.size() != n * n)
        throw Error(input, "has " + std::to_string(values.size()) + " values, a " +
                               std::to_string(n) + "x" + std::to_string(n) + " matrix needs " +
                               std::to_string(n * n));
    auto where = [n](std::size_t k) {
        return "cell (" + std::to_string(k / n) + ", " + std::to_string(k % n) + ")";
    };
    for (std::size_t k = 0; k < values.size(); ++k) {
        const double v = values[k];
        if (std::isnan(v)) throw Error(input, where(k) + " is NaN");
        if (std::isinf(v)) throw Error(input, where(k) + " is infinite");
        if (v < 0) throw Error(input, where(k) + " is negative (" + std::to_string(v) + ")");
        if (v != std::floor(v) || v >= 1.8e19)
            throw Error(input,
                        where(k) + " is not a whole event count (" + std::to_string(v) + ")");
    }
    CommMatrix m(n);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j) {
            const double upper = values[i * n + j], lower = values[j * n + i];
            if (symmetry == Symmetry::kRequire && upper != lower)
                throw Error(input, "is not symmetric: " + where(i * n + j) + " = " +
                                       std::to_string(upper) + " but " + where(j * n + i) + " = " +
                                       std::to_string(lower));
            m.set(i, j,
                  static_cast<Value>(upper) +
                      (symmetry == Symmetry::kAddTranspose ? static_cast<Value>(lower) : 0));
        }
    }
    return m;
}

double CommMatrix::total() const noexcept {
    double sum = 0;
    for (Value v : upper_) sum += static_cast<double>(v);
    return sum;
}

CommMatrix::Value CommMatrix::max() const noexcept {
    return upper_.empty() ? 0 : *std::max_element(upper_.begin(), upper_.end());
}

CommMatrix::Value CommMatrix::row_total(std::size_t i) const {
    Value sum = 0;
    for (std::size_t j = 0; j < n_; ++j) sum += at(i, j);
    return sum;
}

void CommMatrix::age() noexcept {
    for (Value& v : upper_) v -= v >> 2;
}

CommMatrix CommMatrix::normalised(Value max_value) const {
    CommMatrix out(n_);
    const Value top = max();
    if (top == 0) return out;
    const double scale = static_cast<double>(max_value) / static_cast<double>(top);
    for (std::size_t k = 0; k < upper_.size(); ++k) {
        if (upper_[k] == 0) continue;
        out.upper_[k] = std::max<Value>(
            1, static_cast<Value>(std::llround(static_cast<double>(upper_[k]) * scale)));
    }
    return out;
}

double CommMatrix::structuredness() const {
    if (n_ < 3) return 0;
    const double partners = static_cast<double>(n_ - 1);
    double weighted = 0, weight = 0;
    for (std::size_t i = 0; i < n_; ++i) {
        double sum = 0, squares = 0;
        for (std::size_t j = 0; j < n_; ++j) {
            const double v = static_cast<double>(at(i, j));
            sum += v;
            squares += v * v;
        }
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
