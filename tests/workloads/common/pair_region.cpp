// SPDX-License-Identifier: GPL-2.0
#include "pair_region.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>

#include "memory.hpp"

namespace cdsm::workloads {

namespace {

// Side 0 adds to the low half of each word, side 1 to the high half; the word's index enters the
// increment, so data that moved is caught, not only data that was lost.
std::uint64_t increment(std::size_t word, int side) {
    const std::uint64_t base = 2 * word + 1;
    return side == 0 ? base : base << 32;
}

// The spin-wait hint (x86 PAUSE: tens of cycles on a core, nothing beside a pass over the pages)
// after each pass. Under the VM lab's single-threaded TCG it ends the vCPU's turn: QEMU runs the
// vCPUs in turn on one host thread, each until it halts or for 100 ms, and busy workloads on
// every vCPU held the thread from the test's shell, cdsmd and every program starting (5-20 s a
// start with 16 busy threads on 8 vCPUs, tests/cdsmd/CMakeLists.txt).
void spin_hint() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

}  // namespace

std::size_t PairRegion::bytes(std::size_t data_pages) {
    return (1 + data_pages) * page_size();
}

PairRegion::PairRegion(std::span<std::byte> memory) : memory_(memory) {
    if (memory.size() < 2 * page_size() || memory.size() % page_size() != 0) {
        throw std::invalid_argument("PairRegion needs whole pages: a control page and data");
    }
}

std::span<std::uint64_t> PairRegion::data() const {
    const auto bytes = memory_.subspan(page_size());
    return {reinterpret_cast<std::uint64_t*>(bytes.data()), bytes.size() / sizeof(std::uint64_t)};
}

void PairRegion::sweep(int side) const {
    const auto words = data();
    for (std::size_t w = 0; w < words.size(); ++w) {
        std::atomic_ref<std::uint64_t>(words[w]).fetch_add(increment(w, side),
                                                           std::memory_order_relaxed);
    }
}

std::uint64_t PairRegion::sweep_until(int side, const StopRule& stop,
                                      std::chrono::microseconds pause) const {
    std::uint64_t passes = 0;
    while (!stop.done(passes)) {
        sweep(side);
        ++passes;
        spin_hint();
        if (pause.count() > 0) std::this_thread::sleep_for(pause);
    }
    return passes;
}

void PairRegion::publish(int side, std::uint64_t passes) const {
    std::atomic_ref<std::uint64_t>(control().passes[side]).store(passes, std::memory_order_relaxed);
    std::atomic_ref<std::uint32_t>(control().published).fetch_add(1, std::memory_order_acq_rel);
}

std::size_t PairRegion::verify() const {
    std::atomic_ref<std::uint32_t> published(control().published);
    while (published.load(std::memory_order_acquire) < 2) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const std::uint64_t p0 = control().passes[0];
    const std::uint64_t p1 = control().passes[1];
    const auto words = data();
    std::size_t wrong = 0;
    for (std::size_t w = 0; w < words.size(); ++w) {
        const std::uint64_t expected = p0 * increment(w, 0) + p1 * increment(w, 1);
        wrong +=
            std::atomic_ref<std::uint64_t>(words[w]).load(std::memory_order_relaxed) != expected;
    }
    return wrong;
}

PairTotals::PairTotals(const PerTaskPages<PairTaskResult>& results, int tasks) {
    for (int i = 0; i < tasks; ++i) {
        min_passes = std::min(min_passes, results[i].passes);
        max_passes = std::max(max_passes, results[i].passes);
        wrong_words += results[i].wrong_words;
    }
}

std::string PairTotals::describe(const char* task_noun) const {
    return "passes per " + std::string(task_noun) + " " + std::to_string(min_passes) + ".." +
           std::to_string(max_passes) + ", wrong words " + std::to_string(wrong_words);
}

}  // namespace cdsm::workloads
