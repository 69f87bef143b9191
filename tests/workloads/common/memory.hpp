// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "system.hpp"

namespace cdsm::workloads {

/// The page size, from sysconf.
std::size_t page_size();

/// `bytes` rounded up to whole pages.
std::size_t round_up_to_pages(std::size_t bytes);

/// An owned memory mapping of whole pages, unmapped on destruction. Whole pages keep what one task
/// or pair owns off every page that others touch: no false sharing between pairs.
class Mapping {
  public:
    /// Anonymous memory; `shared` selects MAP_SHARED (shmem, shared with children after fork).
    static Mapping anonymous(std::size_t bytes, bool shared);
    /// `bytes` of the file or shared-memory object `fd` from offset 0, MAP_SHARED.
    static Mapping shared_file(int fd, std::size_t bytes);

    /// Keeps the mapping in base pages (MADV_NOHUGEPAGE): a transparent huge page would make the
    /// data of neighbouring mappings one page. Returns *this.
    Mapping&& in_base_pages() &&;

    Mapping() = default;
    Mapping(Mapping&& other) noexcept;
    Mapping& operator=(Mapping&& other) noexcept;
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping();

    std::byte* data() const { return addr_; }
    std::size_t size() const { return bytes_; }
    std::span<std::byte> bytes() const { return {addr_, bytes_}; }
    /// The mapping as 64-bit words.
    std::span<std::uint64_t> words() const {
        return {reinterpret_cast<std::uint64_t*>(addr_), bytes_ / sizeof(std::uint64_t)};
    }

  private:
    Mapping(std::byte* addr, std::size_t bytes) : addr_(addr), bytes_(bytes) {}
    std::byte* addr_ = nullptr;
    std::size_t bytes_ = 0;
};

/// One T per task, each on its own page(s), so that tasks never share a page through their own
/// data. Private anonymous memory (threads) or shared (processes forked after construction).
template <class T>
class PerTaskPages {
  public:
    PerTaskPages(std::size_t tasks, bool shared)
        : stride_(round_up_to_pages(sizeof(T))),
          map_(Mapping::anonymous(tasks * stride_, shared)) {}
    T& operator[](std::size_t i) const { return *reinterpret_cast<T*>(map_.data() + i * stride_); }

  private:
    std::size_t stride_;
    Mapping map_;
};

}  // namespace cdsm::workloads
