// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <algorithm>
#include <chrono>

#include "config.hpp"

namespace cdsm::cdsmd {

/// The mapping interval of one application, as in CDSM: it grows by a step while the mapping
/// stays the same and halves when it changes, within [min, max]. It starts at the minimum, so a
/// new application is looked at often until its pattern settles.
class AdaptiveInterval {
  public:
    explicit AdaptiveInterval(IntervalConfig config = {}) : config_(config), ms_(config.min_ms) {}

    std::chrono::milliseconds current() const noexcept { return std::chrono::milliseconds(ms_); }

    /// After a mapping pass: `changed` when the new mapping differs from the previous one.
    void update(bool changed) noexcept {
        ms_ = changed ? ms_ / 2 : ms_ + config_.step_ms;
        ms_ = std::clamp(ms_, config_.min_ms, config_.max_ms);
    }

    /// New bounds (on reload); the current value is clamped into them.
    void reconfigure(IntervalConfig config) noexcept {
        config_ = config;
        ms_ = std::clamp(ms_, config_.min_ms, config_.max_ms);
    }

  private:
    IntervalConfig config_;
    std::uint32_t ms_;
};

}  // namespace cdsm::cdsmd
