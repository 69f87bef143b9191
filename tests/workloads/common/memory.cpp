// SPDX-License-Identifier: GPL-2.0
#include "memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <utility>

namespace cdsm::workloads {

std::size_t page_size() {
    static const std::size_t size = [] {
        const long s = sysconf(_SC_PAGESIZE);
        if (s <= 0) throw_errno("sysconf(_SC_PAGESIZE)");
        return static_cast<std::size_t>(s);
    }();
    return size;
}

std::size_t round_up_to_pages(std::size_t bytes) {
    const std::size_t page = page_size();
    return (bytes + page - 1) / page * page;
}

namespace {

std::byte* map_or_throw(std::size_t bytes, int flags, int fd) {
    void* addr = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, fd, 0);
    if (addr == MAP_FAILED) throw_errno("mmap of " + std::to_string(bytes) + " bytes");
    return static_cast<std::byte*>(addr);
}

}  // namespace

Mapping Mapping::anonymous(std::size_t bytes, bool shared) {
    bytes = round_up_to_pages(bytes);
    return {map_or_throw(bytes, (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1), bytes};
}

Mapping Mapping::shared_file(int fd, std::size_t bytes) {
    bytes = round_up_to_pages(bytes);
    return {map_or_throw(bytes, MAP_SHARED, fd), bytes};
}

Mapping&& Mapping::in_base_pages() && {
    if (madvise(addr_, bytes_, MADV_NOHUGEPAGE) != 0) throw_errno("madvise(MADV_NOHUGEPAGE)");
    return std::move(*this);
}

Mapping::Mapping(Mapping&& other) noexcept
    : addr_(std::exchange(other.addr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
    if (this != &other) {
        if (addr_ != nullptr) munmap(addr_, bytes_);
        addr_ = std::exchange(other.addr_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
}

Mapping::~Mapping() {
    if (addr_ != nullptr) munmap(addr_, bytes_);
}

}  // namespace cdsm::workloads
