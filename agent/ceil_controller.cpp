// SPDX-License-Identifier: GPL-2.0-or-later
// See ceil_controller.hpp.
#include "agent/ceil_controller.hpp"

#include <algorithm>
#include <cmath>

namespace lanes::agent {

namespace {
constexpr int64_t kMaxBackoffFactor = 64;
}

ControlLimits resolve_control(const CeilControlConfig& config, const Rate& class_ceil, uint64_t link_bits) {
    ControlLimits l;
    l.ceil_bits = class_ceil.resolve(link_bits);
    l.floor_bits = std::min(config.floor.resolve(link_bits), l.ceil_bits);
    l.step_bits = std::max<uint64_t>(1, config.increase.resolve(link_bits));
    l.decrease = config.decrease;
    l.slo = config.slo;
    l.margin = config.margin;
    const int64_t dwell = std::max<int64_t>(1, config.dwell.count());
    l.backoff_ticks =
        config.backoff.count() > 0 ? std::max<int64_t>(1, (config.backoff.count() + dwell - 1) / dwell) : 4;
    return l;
}

const char* control_cause_name(ControlCause cause) {
    switch (cause) {
        case ControlCause::OverSlo: return "over_slo";
        case ControlCause::NoValue: return "no_value";
        case ControlCause::Headroom: return "headroom";
        case ControlCause::None: break;
    }
    return "none";
}

CeilController::CeilController(ControlLimits limits) : limits_(limits), ceil_(limits.ceil_bits) {
    backoff_ = limits_.backoff_ticks;
}

void CeilController::set_limits(const ControlLimits& limits) {
    limits_ = limits;
    ceil_ = std::clamp(ceil_, limits_.floor_bits, limits_.ceil_bits);
    backoff_ = std::clamp(backoff_, limits_.backoff_ticks, limits_.backoff_ticks * kMaxBackoffFactor);
}

std::optional<uint64_t> CeilController::held_below(int64_t tick, const std::optional<double>& load) const {
    if (!broken_ceil_) return std::nullopt;
    if (broken_load_ && load) {
        // With a load signal: held while the load has not clearly fallen.
        if (*load < *broken_load_ * (1 - limits_.margin)) return std::nullopt;
        return broken_ceil_;
    }
    if (tick >= broken_tick_ + backoff_) return std::nullopt;
    return broken_ceil_;
}

ControlDecision CeilController::decide(int64_t tick, const ControlSample& sample) {
    ControlDecision d;
    d.tick = tick;
    d.from_bits = d.to_bits = ceil_;
    if (last_tick_ && tick <= *last_tick_) return d;
    last_tick_ = tick;
    const bool over = !sample.value || *sample.value > limits_.slo;
    const std::optional<uint64_t> raised_from = raised_from_;
    raised_from_.reset();
    if (over) {
        const uint64_t lowered = static_cast<uint64_t>(std::floor(static_cast<double>(ceil_) * limits_.decrease));
        d.to_bits = std::max(limits_.floor_bits, lowered);
        // Right after an increase: the increase broke it. One step below the
        // ceil that held before it, not the ceil itself: the probe filled the
        // bottleneck's queue, and the ceil that held from an empty queue may
        // not drain a full one. Never a deeper cut than the factor gives.
        if (raised_from && sample.value) {
            const uint64_t below = *raised_from > limits_.step_bits ? *raised_from - limits_.step_bits : 0;
            d.to_bits = std::max(d.to_bits, std::min(below, ceil_));
        }
        d.cause = sample.value ? ControlCause::OverSlo : ControlCause::NoValue;
        if (sample.value) {
            // Remember the ceil that broke the SLO. Again within a step of the
            // remembered one: the back-off doubles; elsewhere it starts over.
            const bool repeat = broken_ceil_ && ceil_ + limits_.step_bits >= *broken_ceil_ &&
                                *broken_ceil_ + limits_.step_bits >= ceil_;
            backoff_ =
                repeat ? std::min(backoff_ * 2, limits_.backoff_ticks * kMaxBackoffFactor) : limits_.backoff_ticks;
            broken_ceil_ = ceil_;
            broken_tick_ = tick;
            broken_load_ = sample.load;
        }
    } else if (*sample.value <= limits_.slo * (1 - limits_.margin)) {
        uint64_t raised = std::min(limits_.ceil_bits, ceil_ + limits_.step_bits);
        if (auto held = held_below(tick, sample.load)) {
            // Stop one step below the ceil that broke the SLO.
            const uint64_t cap = *held > limits_.step_bits ? *held - limits_.step_bits : 0;
            raised = std::max(ceil_, std::min(raised, cap));
        } else if (broken_ceil_ && ceil_ >= *broken_ceil_) {
            // The remembered ceil held with margin: it is forgotten.
            broken_ceil_.reset();
            backoff_ = limits_.backoff_ticks;
        }
        d.to_bits = raised;
        d.cause = ControlCause::Headroom;
        if (raised > ceil_) raised_from_ = ceil_;
    }
    if (d.to_bits == d.from_bits) d.cause = ControlCause::None;
    ceil_ = d.to_bits;
    return d;
}

std::vector<CeilTarget> plan_controlled_targets(const Config& config, const std::vector<JobState>& jobs,
                                                const std::map<ClassDevice, uint64_t>& ceils) {
    std::vector<CeilTarget> out;
    for (const auto& job : jobs) {
        const ClassConfig* cls = config.find_class(job.class_name);
        if (!cls || !cls->control || !job.unshaped.empty()) continue;
        for (const auto& dev : job.devices) {
            uint64_t ceil = dev.ceil_bits;
            if (auto it = ceils.find({job.class_name, dev.device}); it != ceils.end())
                ceil = std::max(std::min(it->second, dev.ceil_bits), dev.rate_bits);
            CeilTarget t;
            t.job_id = job.job_id;
            t.class_name = job.class_name;
            t.busy = ceil != dev.ceil_bits;
            t.device = dev.device;
            t.ceil_bits = ceil;
            t.normal_ceil_bits = dev.ceil_bits;
            t.current_ceil_bits = dev.ceil_in_force();
            out.push_back(std::move(t));
        }
    }
    return out;
}

int64_t next_tick(double unix_now, int64_t dwell_seconds) {
    const int64_t dwell = std::max<int64_t>(1, dwell_seconds);
    return static_cast<int64_t>(std::floor(unix_now / static_cast<double>(dwell))) + 1;
}

}  // namespace lanes::agent
