// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace cdsm::workloads {

/// x -> mul * x + add (mod 2^64): the known transformation the workloads apply to their data, so
/// that the content expected after any number of steps is computable in O(log steps).
struct Affine {
    std::uint64_t mul;
    std::uint64_t add;

    std::uint64_t operator()(std::uint64_t x) const { return mul * x + add; }

    /// This map applied after `first`.
    Affine after(const Affine& first) const { return {mul * first.mul, mul * first.add + add}; }

    /// This map applied `n` times.
    Affine power(std::uint64_t n) const {
        Affine result{1, 0};
        Affine square = *this;
        for (; n != 0; n >>= 1) {
            if (n & 1) result = square.after(result);
            square = square.after(square);
        }
        return result;
    }
};

/// The step applied to word j of a data array: x -> kDataStep.mul * x + (2j + 1). After n steps
/// word j holds P.mul * x0 + P.add * (2j + 1) with P = kDataStep.power(n): the add term scales.
inline constexpr Affine kDataStep{6364136223846793005ULL, 1};

/// The word-dependent constant of kDataStep for word j.
inline std::uint64_t data_step_add(std::uint64_t j) {
    return 2 * j + 1;
}

/// A deterministic initial value for word j of array `stream` (a splitmix64 finaliser).
inline std::uint64_t initial_word(std::uint64_t stream, std::uint64_t j) {
    std::uint64_t z = stream * 0x9e3779b97f4a7c15ULL + j + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// Fills words with their initial values; word k of the span is word first + k of `stream`.
inline void fill_initial(std::span<std::uint64_t> words, std::uint64_t stream,
                         std::uint64_t first) {
    for (std::size_t k = 0; k < words.size(); ++k) words[k] = initial_word(stream, first + k);
}

/// Applies kDataStep `steps` times to every word (a read-modify-write of each).
inline void apply_steps(std::span<std::uint64_t> words, std::uint64_t first, unsigned steps) {
    for (std::size_t k = 0; k < words.size(); ++k) {
        const std::uint64_t add = data_step_add(first + k);
        std::uint64_t x = words[k];
        for (unsigned s = 0; s < steps; ++s) x = kDataStep.mul * x + add;
        words[k] = x;
    }
}

/// The number of words that differ from their initial value after `steps` steps.
inline std::size_t count_wrong(std::span<const std::uint64_t> words, std::uint64_t stream,
                               std::uint64_t first, std::uint64_t steps) {
    const Affine p = kDataStep.power(steps);
    std::size_t wrong = 0;
    for (std::size_t k = 0; k < words.size(); ++k) {
        wrong +=
            words[k] != p.mul * initial_word(stream, first + k) + p.add * data_step_add(first + k);
    }
    return wrong;
}

}  // namespace cdsm::workloads
