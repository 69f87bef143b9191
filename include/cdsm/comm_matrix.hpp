// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace cdsm {

/// How much each pair of tasks communicates: a symmetric N x N matrix of event counts with an
/// empty diagonal (a task does not communicate with itself). Only the upper triangle is stored:
/// densely, or for large matrices (kSparseMinTasks tasks or more) sparsely, as each row's
/// non-zero pairs, until a quarter of the pairs are non-zero (then densely: a sparse pair takes
/// twice a dense one's memory). A 2-D stencil of 4096 tasks takes 0.3 MB instead of 67 MB.
/// Both behave alike; only memory and the speed of at() differ.
class CommMatrix {
  public:
    using Value = std::uint64_t;

    /// How from_square() treats a square matrix that is not symmetric.
    enum class Symmetry {
        kRequire,       ///< reject it: cell (i,j) must equal cell (j,i).
        kAddTranspose,  ///< pair (i,j) gets cell (i,j) + cell (j,i) (directional counters).
    };

    /// Matrices of fewer tasks are always dense.
    static constexpr std::size_t kSparseMinTasks = 256;

    /// An all-zero matrix for n tasks.
    explicit CommMatrix(std::size_t n = 0);

    /// From n*n values in row-major order. Throws Error naming `input` if there are not n*n
    /// values, a value is NaN, infinite, negative or not a whole number, or the matrix is not
    /// symmetric under Symmetry::kRequire. The diagonal is ignored.
    static CommMatrix from_square(std::span<const double> values, std::size_t n,
                                  std::string_view input, Symmetry symmetry = Symmetry::kRequire);

    std::size_t size() const noexcept { return n_; }
    /// Communication between tasks i and j (0 when i == j). Throws Error if i or j >= size().
    Value at(std::size_t i, std::size_t j) const {
        if (i == j && i < n_) return 0;
        return sparse_ ? sparse_at(i, j) : upper_[index(i, j)];
    }
    /// Sets the pair (i, j), i != j.
    void set(std::size_t i, std::size_t j, Value value);
    /// Adds to the pair (i, j), i != j.
    void add(std::size_t i, std::size_t j, Value value);

    /// Calls f(i, j, value) for every pair i < j with a non-zero value, by rows (i, then j).
    template <typename F>
    void for_each_pair(F&& f) const {
        if (sparse_) {
            for (std::size_t i = 0; i < n_; ++i)
                for (const Entry& e : rows_[i])
                    if (e.value) f(i, std::size_t{e.column}, e.value);
            return;
        }
        for (std::size_t i = 0, k = 0; i < n_; ++i)
            for (std::size_t j = i + 1; j < n_; ++j, ++k)
                if (const Value v = upper_[k]) f(i, j, v);
    }
    /// Whether the pairs are stored sparsely (see the class comment).
    bool is_sparse() const noexcept { return sparse_; }

    /// Sum of all pairs, each counted once.
    double total() const noexcept;
    /// Largest pair value.
    Value max() const noexcept;
    /// Sum of row i: everything task i exchanges.
    Value row_total(std::size_t i) const;

    /// Ages the matrix after a migration so that old events fade: M = M - (M >> 2) (CDSM paper;
    /// factors between 0.5 and 0.9 behaved alike).
    void age() noexcept;
    /// A copy scaled so that the largest pair equals `max_value` (rounded; a non-zero pair never
    /// becomes 0). An all-zero matrix stays zero.
    CommMatrix normalised(Value max_value) const;

    /// How much mapping can gain from this pattern, in [0, 1]: the mean over tasks, weighted by
    /// what they exchange, of the coefficient of variation of their row divided by its largest
    /// possible value sqrt(N-2). 0 for all-to-all (every partner equal: no placement is better
    /// than another), 1 when every task talks to one partner only; a ring of N tasks gives about
    /// 0.71, k partners about 1/sqrt(k).
    double structuredness() const;

    /// Equal sizes and pairs, however they are stored.
    friend bool operator==(const CommMatrix& a, const CommMatrix& b);

  private:
    std::size_t index(std::size_t i, std::size_t j) const {
        if (i >= n_ || j >= n_ || i == j) no_pair(i, j);
        if (i > j) std::swap(i, j);
        return i * (2 * n_ - i - 1) / 2 + (j - i - 1);
    }
    [[noreturn]] void no_pair(std::size_t i, std::size_t j) const;
    Value sparse_at(std::size_t i, std::size_t j) const;
    // The stored value of pair (i, j), created as 0 if absent (may make the matrix dense).
    Value& cell(std::size_t i, std::size_t j);
    void make_dense();

    // A pair (i, column) of row i < column; rows are sorted by column. A value may be 0 after
    // set(i, j, 0) or age(): for_each_pair skips it.
    struct Entry {
        std::uint32_t column;
        Value value;
    };

    std::size_t n_;
    bool sparse_ = false;
    std::size_t entries_ = 0;               // stored sparse entries
    std::vector<Value> upper_;              // dense: row-major upper triangle, diagonal excluded
    std::vector<std::vector<Entry>> rows_;  // sparse
};

}  // namespace cdsm
