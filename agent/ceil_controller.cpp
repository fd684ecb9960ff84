// SPDX-License-Identifier: GPL-2.0-or-later
// See ceil_controller.hpp.
#include "agent/ceil_controller.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace lanes::agent {

namespace {
constexpr int64_t kMaxBackoffFactor = 64;
// A load within this fraction above the one a ceil held at counts as the same
// load: the rate of a steady load over a few seconds varies by about that.
constexpr double kLoadNoise = 0.05;
// A quiet raise needs this many decisions in a row at the ceil and the load
// with the queue quiet: one decision's range can miss the bursts a ceil near
// the knee makes (in the bench's sweep at 1500 req/s, two quiet decisions in
// a row came in 13 of 15 pairs at 65 Mbit/s per node, 6 of 15 at 70 and none
// at 75), and a load that steps every few dwells (a ramp) is no steady load.
constexpr int kQuietDecisions = 3;

uint64_t scaled(uint64_t bits, double factor) {
    return static_cast<uint64_t>(std::floor(static_cast<double>(bits) * factor));
}
}  // namespace

ControlLimits resolve_control(const CeilControlConfig& config, const Rate& class_ceil, uint64_t link_bits) {
    ControlLimits l;
    l.ceil_bits = class_ceil.resolve(link_bits);
    l.floor_bits = std::min(config.floor.resolve(link_bits), l.ceil_bits);
    l.step_bits = std::max<uint64_t>(1, config.increase.resolve(link_bits));
    l.min_gap_bits = config.min_gap ? std::max<uint64_t>(1, config.min_gap->resolve(link_bits)) : l.step_bits;
    l.decrease = config.decrease;
    l.full_decrease_at = config.full_decrease_at;
    l.slo = config.slo;
    l.margin = config.margin;
    const int64_t dwell = std::max<int64_t>(1, config.dwell.count());
    l.backoff_ticks =
        config.backoff.count() > 0 ? std::max<int64_t>(1, (config.backoff.count() + dwell - 1) / dwell) : 4;
    if (!config.congestion_signal.empty()) {
        l.congestion_above = config.congestion_above;
        l.strain_count = config.strain_count;
        l.strain_window = std::max(config.strain_window, config.strain_count);
    }
    l.strain_decrease = config.strain_decrease.value_or(1 - config.margin);
    l.rest_below = config.rest_below;
    if (!config.congestion_signal.empty() && config.rest_below > 0) l.quiet_below = config.quiet_below;
    return l;
}

const char* control_cause_name(ControlCause cause) {
    switch (cause) {
        case ControlCause::OverSlo: return "over_slo";
        case ControlCause::NoValue: return "no_value";
        case ControlCause::Headroom: return "headroom";
        case ControlCause::Uncongested: return "uncongested";
        case ControlCause::Congested: return "congested";
        case ControlCause::LoadRose: return "load_rose";
        case ControlCause::RestBelow: return "rest_below";
        case ControlCause::Quiet: return "quiet";
        case ControlCause::None: break;
    }
    return "none";
}

CeilController::CeilController(ControlLimits limits) : limits_(limits), ceil_(limits.ceil_bits) {
    backoff_ = limits_.backoff_ticks;
}

double CeilController::break_factor(double value) const {
    const double full = limits_.decrease;
    if (limits_.full_decrease_at <= 1 || limits_.slo <= 0) return full;
    const double over = (value / limits_.slo - 1) / (limits_.full_decrease_at - 1);
    if (std::isnan(over)) return full;  // the safe side
    // At least a tenth of the whole cut: a break always moves the ceil.
    return 1 - (1 - full) * std::clamp(over, 0.1, 1.0);
}

int64_t CeilController::longest_backoff() const { return limits_.backoff_ticks * kMaxBackoffFactor; }

void CeilController::set_limits(const ControlLimits& limits) {
    limits_ = limits;
    ceil_ = std::clamp(ceil_, limits_.floor_bits, limits_.ceil_bits);
    backoff_ = std::clamp(backoff_, limits_.backoff_ticks, longest_backoff());
}

bool CeilController::held_applies(const Observation& o, const std::optional<double>& load) const {
    // Held at a load: holds at any lower load (and at one within the noise).
    if (!o.load || !load) return true;
    return *load <= *o.load * (1 + kLoadNoise);
}

bool CeilController::broken_applies(const Observation& o, int64_t tick, const std::optional<double>& load) const {
    // Broke at a load: breaks at any higher load, and at one that has not
    // clearly (by margin) fallen below it. Without loads: for the back-off.
    if (o.load && load && *load < *o.load * (1 - limits_.margin)) return false;
    if (tick < o.expires) return true;
    if (!o.load || !load) return false;
    // No break counts longer than the longest back-off: the knee may have
    // risen under a steady load (another job's traffic on the bottleneck
    // ended), and only a probe can tell.
    if (tick >= o.tick + longest_backoff()) return false;
    if (o.after == AfterBackoff::WhileLoadStays) return true;
    if (o.after == AfterBackoff::Gone) return false;
    // It contradicted a ceil that held at its load, and its back-off is over:
    // where that ceil (or a higher one) held, what held counts again; at a
    // higher load, where nothing held at it, the break still bounds the
    // ceil. (Measured: 94 Mbit/s broke at 200 req/s, where it had held; the
    // back-off ran out, and at the step to 1500 req/s the controller tried
    // 94 again from 70.5, a row at 43 % of the SLO.)
    return std::none_of(held_.begin(), held_.end(),
                        [&](const Observation& h) { return h.ceil_bits >= o.ceil_bits && held_applies(h, load); });
}

std::optional<uint64_t> CeilController::broken_ceil(int64_t tick, const std::optional<double>& load) const {
    std::optional<uint64_t> out;
    for (const auto& o : broken_)
        if (broken_applies(o, tick, load) && (!out || o.ceil_bits < *out)) out = o.ceil_bits;
    return out;
}

std::optional<uint64_t> CeilController::held_ceil(int64_t tick, const std::optional<double>& load) const {
    // Below the lowest that broke: where the two disagree (held at a lower
    // load than a break nearby), the break wins.
    const std::optional<uint64_t> broken = broken_ceil(tick, load);
    std::optional<uint64_t> out;
    for (const auto& o : held_)
        if (held_applies(o, load) && (!broken || o.ceil_bits < *broken) && (!out || o.ceil_bits > *out))
            out = o.ceil_bits;
    return out;
}

void CeilController::remember_held(int64_t tick, const std::optional<double>& load) {
    // At a ceil a quiet raise reached, or under one that held here after
    // one: it may rest above rest_cap() (quiet_held()).
    const bool quiet =
        (quiet_ceil_ && *quiet_ceil_ == ceil_) || std::any_of(held_.begin(), held_.end(), [&](const Observation& o) {
            return o.quiet && o.ceil_bits >= ceil_ && held_applies(o, load);
        });
    // Breaks it contradicts go: a ceil at or below this one broke at this load.
    std::erase_if(broken_, [&](const Observation& o) { return o.ceil_bits <= ceil_ && broken_applies(o, tick, load); });
    if (last_broken_ && ceil_ >= *last_broken_) {
        last_broken_.reset();
        backoff_ = limits_.backoff_ticks;
    }
    // Observations this one implies go (a lower ceil at a lower load).
    std::erase_if(held_,
                  [&](const Observation& o) { return o.ceil_bits <= ceil_ && (!o.load || !load || *o.load <= *load); });
    held_.push_back(Observation{ceil_, load, tick, 0, AfterBackoff::Gone, false, quiet});
    if (held_.size() > kMemory) held_.erase(held_.begin());
}

bool CeilController::breaks_again(const std::optional<double>& load) const {
    // Not right after a break (a stall, an undrained queue), and at a known
    // load: an earlier break of this ceil (within min_gap) at this load (within
    // margin either way) that contradicted what held, with nothing at or above
    // it seen to hold here since.
    if (broke_ || !load) return false;
    int64_t held_last = -1;
    for (const auto& o : held_)
        if (o.ceil_bits >= ceil_ && held_applies(o, load)) held_last = std::max(held_last, o.tick);
    const double margin = limits_.margin;
    return std::any_of(broken_.begin(), broken_.end(), [&](const Observation& o) {
        return o.after == AfterBackoff::AboveHeld && o.load && *o.load >= *load * (1 - margin) &&
               *load >= *o.load * (1 - margin) && o.ceil_bits + limits_.min_gap_bits >= ceil_ &&
               ceil_ + limits_.min_gap_bits >= o.ceil_bits && o.tick > held_last;
    });
}

void CeilController::remember_broken(int64_t tick, const std::optional<double>& load, bool strained) {
    // A break where a ceil at or above this one held at this load: the plant
    // changed, or the value was noise. Remembered for the back-off only, and
    // what held is kept (held_ceil() ignores it while the break counts).
    const auto contradicted = [&](const Observation& o) { return o.ceil_bits >= ceil_ && held_applies(o, load); };
    bool contradicts = std::any_of(held_.begin(), held_.end(), contradicted);
    // Once may be noise; a ceil that held, broke, and breaks again when tried
    // after its back-off says the plant changed (the knee fell: more traffic
    // on the bottleneck): what held at or above it here is forgotten, and the
    // search goes on below it. (Measured in the simulated plant: kept, it was
    // tried again at every doubled back-off, 6 breaks and 14 changes in 30
    // minutes at one load; forgotten, 2 and 4.)
    if (contradicts && breaks_again(load)) {
        std::erase_if(held_, contradicted);
        contradicts = false;
    }
    // Again within min_gap of the last break: the back-off doubles; elsewhere
    // it starts over.
    const bool repeat =
        last_broken_ && ceil_ + limits_.min_gap_bits >= *last_broken_ && *last_broken_ + limits_.min_gap_bits >= ceil_;
    backoff_ = repeat ? std::min(backoff_ * 2, longest_backoff()) : limits_.backoff_ticks;
    last_broken_ = ceil_;
    if (quiet_ceil_ && ceil_ <= *quiet_ceil_) quiet_ceil_.reset();
    // A quiet raise to this ceil or above at this load or a higher one.
    std::erase_if(quiet_raises_, [&](const QuietRaise& r) {
        return r.to_bits >= ceil_ && (!r.load || !load || *load <= *r.load * (1 + kLoadNoise));
    });
    // A break right after a break, or without a load: the back-off only
    // (ceil_controller.hpp).
    const AfterBackoff after = broke_ || !load ? AfterBackoff::Gone
                               : contradicts   ? AfterBackoff::AboveHeld
                                               : AfterBackoff::WhileLoadStays;
    // Breaks this one implies go (a higher ceil at a higher load), unless
    // they would last longer.
    std::erase_if(broken_, [&](const Observation& o) {
        return o.ceil_bits >= ceil_ && (!o.load || !load || *o.load >= *load) && after >= o.after;
    });
    broken_.push_back(Observation{ceil_, load, tick, tick + backoff_, after, strained});
    if (broken_.size() > kMemory) broken_.erase(broken_.begin());
}

std::optional<uint64_t> CeilController::strained_rest(int64_t tick, const std::optional<double>& load) const {
    // Only at the load it strained at: at a higher one the knee is lower by
    // an amount the strain does not tell.
    const std::optional<uint64_t> bound = broken_ceil(tick, load);
    if (!bound || !load) return {};
    const double margin = limits_.margin;
    const bool here = std::any_of(broken_.begin(), broken_.end(), [&](const Observation& o) {
        return o.strained && o.ceil_bits == *bound && o.load && *o.load >= *load * (1 - margin) &&
               *load >= *o.load * (1 - margin) && broken_applies(o, tick, load);
    });
    if (!here) return {};
    return std::max(limits_.floor_bits, scaled(*bound, limits_.strain_decrease));
}

uint64_t CeilController::step_down_strained(int64_t tick, const std::optional<double>& load) {
    remember_broken(tick, load, true);
    // What held below this ceil: the break just remembered is at this ceil,
    // above it, so it hides none of them.
    const std::optional<uint64_t> held = held_ceil(tick, load);
    const uint64_t to = std::max({limits_.floor_bits, scaled(ceil_, limits_.strain_decrease), held.value_or(0)});
    return std::min(ceil_, to);
}

std::optional<uint64_t> CeilController::held_higher_up(int64_t tick, const std::optional<double>& load) const {
    // Right after a break, its cut is what this decision judges. And the
    // load must have risen since the ceil was set (rose_since_set_): one
    // set at this load (a probe here, a quiet raise) or above it is the SLO
    // signal's to judge, whatever held at a lower load. (Measured: 94 Mbit/s
    // per node held at the load of 0 before the bench's first phase; the
    // quiet raise to 89.3 at 200 req/s was cut to the rest cap at the next
    // decision, at the same load.)
    if (!load || broke_ || !rose_since_set_) return {};
    // This ceil, or a higher one, held at a lower load, and none at this load
    // or near it (within the margin below): a rise. Never seen to hold (a
    // probe, a return to the class's ceil), or held near here: no guess, the
    // SLO signal decides.
    bool held_lower = false;
    for (const auto& o : held_) {
        if (o.ceil_bits < ceil_) continue;
        if (!o.load || *load <= *o.load * (1 + limits_.margin)) return {};
        held_lower = true;
    }
    if (!held_lower) return {};
    // Nothing broke at a higher load at or under this ceil: nothing says the
    // knee is below it.
    if (std::none_of(broken_.begin(), broken_.end(), [&](const Observation& o) {
            return o.ceil_bits <= ceil_ && o.load && *o.load > *load && broken_applies(o, tick, o.load);
        }))
        return {};
    const std::optional<uint64_t> held = held_ceil(tick, load);
    if (!held || *held >= ceil_) return {};
    return std::max(*held, limits_.floor_bits);
}

uint64_t CeilController::rest_bound(int64_t tick, const std::optional<double>& load) const {
    return std::min(limits_.ceil_bits, broken_ceil(tick, load).value_or(limits_.ceil_bits));
}

uint64_t CeilController::rest_cap(int64_t tick, const std::optional<double>& load) const {
    if (limits_.rest_below <= 0) return limits_.ceil_bits;
    return std::max(limits_.floor_bits, scaled(rest_bound(tick, load), 1 - limits_.rest_below));
}

uint64_t CeilController::quiet_cap(int64_t tick, const std::optional<double>& load) const {
    if (!limits_.quiet_below) return rest_cap(tick, load);
    return std::max(limits_.floor_bits, scaled(rest_bound(tick, load), 1 - limits_.rest_below / 2));
}

std::optional<uint64_t> CeilController::quiet_held(int64_t tick, const std::optional<double>& load) const {
    const std::optional<uint64_t> broken = broken_ceil(tick, load);
    std::optional<uint64_t> out;
    for (const auto& o : held_)
        if (o.quiet && held_applies(o, load) && (!broken || o.ceil_bits < *broken) && (!out || o.ceil_bits > *out))
            out = o.ceil_bits;
    return out;
}

bool CeilController::quiet_raised_here(int64_t tick, const std::optional<double>& load) const {
    // A ceil a quiet raise reached held at this load (within margin either
    // way), under the bound there now.
    const uint64_t bound = rest_bound(tick, load);
    return std::any_of(held_.begin(), held_.end(), [&](const Observation& o) {
        return o.quiet && o.ceil_bits < bound && held_applies(o, load) &&
               (!o.load || !load || *o.load * (1 - limits_.margin) <= *load);
    });
}

uint64_t CeilController::resting_cap(int64_t tick, const std::optional<double>& load) const {
    const uint64_t cap = rest_cap(tick, load);
    if (!limits_.quiet_below) return cap;
    const std::optional<uint64_t> held = quiet_held(tick, load);
    return held && *held > cap ? std::min(*held, quiet_cap(tick, load)) : cap;
}

bool CeilController::same_load_band(const std::optional<double>& at, const std::optional<double>& load) const {
    // Within margin below, or kLoadNoise above (held_applies()), either way
    // unknown when one is.
    if (!at || !load) return !at && !load;
    return *at * (1 - limits_.margin) <= *load && *load <= *at * (1 + kLoadNoise);
}

void CeilController::remember_quiet_raise(const std::optional<double>& load, uint64_t to_bits) {
    std::erase_if(quiet_raises_, [&](const QuietRaise& r) { return same_load_band(r.load, load); });
    quiet_raises_.push_back(QuietRaise{ceil_, to_bits, load});
    if (quiet_raises_.size() > kMemory) quiet_raises_.erase(quiet_raises_.begin());
}

std::optional<uint64_t> CeilController::quiet_return(int64_t tick, const std::optional<double>& load,
                                                     uint64_t landing) const {
    // A raise at this load from at most where the search lands, still under
    // the quiet cap here (a break at or under it since moves the bound).
    const uint64_t top = quiet_cap(tick, load);
    std::optional<uint64_t> out;
    for (const auto& r : quiet_raises_)
        if (same_load_band(r.load, load) && r.from_bits <= landing && r.to_bits <= top && (!out || r.to_bits > *out))
            out = r.to_bits;
    return out;
}

ControlDecision CeilController::decide(int64_t tick, const ControlSample& sample) {
    ControlDecision d;
    d.tick = tick;
    d.from_bits = d.to_bits = ceil_;
    if (last_tick_ && tick <= *last_tick_) return d;
    last_tick_ = tick;
    // A probe goes above every ceil that held at its load; at a load where
    // this ceil (or a higher one) held, it is none (the load fell since).
    const bool probing = probing_ && !(sample.load && held_ceil(tick, sample.load).value_or(0) >= ceil_);
    probing_ = false;
    const bool broke = sample.value && *sample.value > limits_.slo;
    // A rise's first decision: its ranges may hold both loads, and what
    // the SLO met then says little of the load now. Right after a break,
    // none: the break's cut is what it judges, at the load it read, which
    // is at most the load now.
    const bool load_step = sample.load && last_load_ && !broke_ && *sample.load > *last_load_ * (1 + limits_.margin);
    last_load_ = sample.load;
    // A steady load: this decision's within kLoadNoise of the first of a run
    // of decisions (no load signal: one load throughout). A quiet raise needs
    // a load that has not risen since the ceil was set (a rise from a load
    // of 0 or none, the first load of a phase, is no such rise; a fall is
    // none: what holds at a load holds under it), or a run of 2 *
    // kQuietDecisions at one load: a load that rose since is a ramp, whose
    // steps are shorter, and a raise at one step is undone at the next.
    const bool same_load = steady_run_ > 0 && sample.load.has_value() == steady_load_.has_value() &&
                           (!sample.load || (*sample.load <= *steady_load_ * (1 + kLoadNoise) &&
                                             *sample.load >= *steady_load_ * (1 - kLoadNoise)));
    if (!same_load) {
        if (steady_load_ && *steady_load_ > 0 && sample.load && *sample.load > *steady_load_) rose_since_set_ = true;
        steady_run_ = 0, steady_load_ = sample.load;
    }
    steady_run_ = std::min(steady_run_ + 1, 2 * kQuietDecisions);
    const bool steady = !rose_since_set_ || steady_run_ >= 2 * kQuietDecisions;
    if (broke && limits_.congestion_above && sample.congestion && *sample.congestion <= *limits_.congestion_above) {
        // Not the network's: nothing to learn about the ceil, which stays,
        // and a probe waits for a decision that can judge it. Nor is it a
        // break for the next decision: the ceil did not move and the queue
        // was empty, so a break with a queue right after it is the
        // network's, whole (not the back-off only).
        d.cause = ControlCause::Uncongested;
        probing_ = probing;
        broke_ = false;
        return d;
    }
    const uint64_t cut = std::max(limits_.floor_bits, scaled(ceil_, limits_.decrease));
    const bool queued = limits_.congestion_above && sample.congestion && *sample.congestion > *limits_.congestion_above;
    // The strain by count: this decision and the last ones at this ceil.
    int queued_count = 0;
    const int window = std::min(limits_.strain_window, 64);
    // A quiet raise's ceil, which the cap below lets through; and how many
    // decisions in a row at this ceil, this one included, saw the queue quiet
    // with the SLO met with margin (a rise's first starts again: it may read
    // both loads).
    std::optional<uint64_t> quiet_to;
    const bool quiet_now = limits_.quiet_below && sample.value && *sample.value <= limits_.slo * (1 - limits_.margin) &&
                           sample.congestion && *sample.congestion <= *limits_.quiet_below;
    if (quiet_run_ > 0 && sample.load && quiet_load_ &&
        (*sample.load > *quiet_load_ * (1 + limits_.margin) || *sample.load < *quiet_load_ * (1 - limits_.margin)))
        quiet_run_ = 0;
    quiet_run_ = quiet_now && !load_step ? quiet_run_ + 1 : 0;
    if (quiet_run_ == 1) quiet_load_ = sample.load;
    if (limits_.strain_count > 0 && sample.value && *sample.value <= limits_.slo) {
        // At this ceil and this load: a load that moved by more than margin
        // either way starts the count again, as a new ceil does. The queue
        // the decisions before it read was the last load's, and the first
        // one after it may read that load's too (its range spans the step).
        if (sample.load && count_load_ &&
            (*sample.load > *count_load_ * (1 + limits_.margin) || *sample.load < *count_load_ * (1 - limits_.margin)))
            queued_bits_ = 0, queued_known_ = 0;
        if (queued_known_ == 0) count_load_ = sample.load;
        queued_bits_ = (queued_bits_ << 1) | (queued ? 1 : 0);
        queued_known_ = std::min(queued_known_ + 1, window);
        const uint64_t mask = window >= 64 ? ~uint64_t{0} : (uint64_t{1} << window) - 1;
        queued_count = std::popcount(queued_bits_ & mask);
    }
    const bool strained_by_count = queued && queued_count >= limits_.strain_count && limits_.strain_count > 0;
    if (!sample.value) {
        // Nothing to learn from an absence; the safe side.
        d.to_bits = cut;
        d.cause = ControlCause::NoValue;
    } else if (*sample.value > limits_.slo) {
        remember_broken(tick, sample.load);
        // A ceil that was resting and broke, with no load to say what moved:
        // the load or the plant changed, and what held before says nothing.
        if (!probing && !sample.load) held_.clear();
        // A cut in proportion to how far the SLO broke (full_decrease_at).
        const uint64_t mild = std::max(limits_.floor_bits, scaled(ceil_, break_factor(*sample.value)));
        d.to_bits = mild;
        if (auto held = held_ceil(tick, sample.load)) {
            // A probe from the ceil that held at this load goes as far below
            // it as the probe went above, to drain the queue the probe filled,
            // but never deeper than decrease; a resting ceil takes its
            // proportional cut, no lower than the ceil that held.
            if (probing) d.to_bits = std::max(cut, 2 * *held > ceil_ ? 2 * *held - ceil_ : 0);
            else d.to_bits = std::max(mild, *held);
            d.to_bits = std::min(ceil_, d.to_bits);
        }
        d.cause = ControlCause::OverSlo;
    } else if (auto held_higher = held_higher_up(tick, sample.load)) {
        // The load rose well above any where this ceil held, and at a higher
        // load a ceil at or under it broke while a lower one held: the knee
        // is somewhere between, so the ceil goes to the one that held up
        // there before a bad row says where (ceil_controller.hpp). This ceil
        // counts as broken at this load: the search goes on under it.
        remember_broken(tick, sample.load);
        d.to_bits = *held_higher;
        d.cause = ControlCause::LoadRose;
    } else if (strained_by_count && !broke_) {
        // Queued in strain_count of the last decisions at this ceil: a ceil at
        // the knee, whatever p99's margin (ceil_controller.hpp). What held here
        // at or above it no longer counts, this ceil bounds the search while the
        // load stays, and it steps down by strain_decrease, never below a lower
        // ceil that held nor the floor.
        std::erase_if(held_,
                      [&](const Observation& o) { return o.ceil_bits >= ceil_ && held_applies(o, sample.load); });
        d.to_bits = step_down_strained(tick, sample.load);
        d.cause = ControlCause::Congested;
        d.queued = queued_count;
        d.of = queued_known_;
    } else if (queued && *sample.value > limits_.slo * (1 - limits_.margin)) {
        // Strained: the SLO holds without margin and the network queues past
        // the bound, the bottleneck at its knee (ceil_controller.hpp). With
        // margin, a queue inference did not feel says nothing against the
        // ceil (headroom, below). Not right after a break (its queue may
        // still be draining). At a ceil that held here: it no longer counts
        // as held (one decision may have missed the bursts), no change.
        // Elsewhere: a step down by the margin, never below what held, and
        // this ceil bounds the search as a break would.
        const std::optional<uint64_t> held = held_ceil(tick, sample.load);
        if (broke_) {
        } else if (held && *held >= ceil_) {
            std::erase_if(held_,
                          [&](const Observation& o) { return o.ceil_bits >= ceil_ && held_applies(o, sample.load); });
        } else {
            d.to_bits = step_down_strained(tick, sample.load);
            d.cause = ControlCause::Congested;
        }
    } else if (*sample.value <= limits_.slo * (1 - limits_.margin) && load_step) {
        // A rise's first decision (ceil_controller.hpp): no change, nothing
        // remembered; a probe stays one until a decision judges it.
        probing_ = probing;
    } else if (*sample.value <= limits_.slo * (1 - limits_.margin)) {
        remember_held(tick, sample.load);
        const uint64_t held = std::max(ceil_, held_ceil(tick, sample.load).value_or(0));
        bool to_strained_rest = false;
        if (auto rest = strained_rest(tick, sample.load)) {
            // The lowest bound here strained at this load: the knee is at
            // it, not somewhere under it, so the search is over. The ceil
            // rests where that strain stepped down to, straight from under
            // it (one change, no midpoints), or stays at a higher ceil that
            // held (ceil_controller.hpp).
            d.to_bits = std::max(held, *rest);
            to_strained_rest = true;
        } else if (auto broken = broken_ceil(tick, sample.load)) {
            // Between the highest that held and the lowest that broke: the
            // midpoint, or nothing once the gap is under min_gap.
            const uint64_t gap = *broken > held ? *broken - held : 0;
            d.to_bits = gap <= limits_.min_gap_bits ? held : held + std::min(limits_.step_bits, gap / 2);
        } else if (held > ceil_) {
            d.to_bits = held;
        } else {
            d.to_bits = ceil_ + limits_.step_bits;
            // Without a load, the back-off is over: the first probe retries
            // the ceil that broke, no higher.
            if (!sample.load && last_broken_ && *last_broken_ > ceil_) d.to_bits = std::min(d.to_bits, *last_broken_);
        }
        d.to_bits = std::min({limits_.ceil_bits, resting_cap(tick, sample.load), d.to_bits});
        d.cause = ControlCause::Headroom;
        if (d.to_bits < d.from_bits)
            d.cause = ControlCause::RestBelow, d.rest_bound_bits = rest_bound(tick, sample.load);
        // Where the search stopped (min_gap, the rest cap), a quiet queue
        // says the knee is further up: one more step, by at most half of
        // rest_below times the bound and half the gap to it, up to
        // rest_below / 2 under it; from above that, straight to it. One per
        // bound at a load (ceil_controller.hpp).
        if (quiet_run_ >= kQuietDecisions && steady && !to_strained_rest && d.to_bits <= ceil_ &&
            !quiet_raised_here(tick, sample.load)) {
            const uint64_t bound = rest_bound(tick, sample.load);
            const uint64_t top = quiet_cap(tick, sample.load);
            const uint64_t gap = bound > ceil_ ? bound - ceil_ : 0;
            const uint64_t to = ceil_ >= top ? top
                                             : std::min(top, ceil_ + std::min({limits_.step_bits, gap / 2,
                                                                               scaled(bound, limits_.rest_below / 2)}));
            if (to > d.to_bits) {
                d.to_bits = to;
                quiet_to = to;
                quiet_ceil_ = to;
                d.cause = to > d.from_bits ? ControlCause::Quiet : ControlCause::RestBelow;
                d.rest_bound_bits = bound;
                remember_quiet_raise(sample.load, to);
            }
        } else if (!to_strained_rest && !queued) {
            // Back at a load where a quiet raise went up from where the
            // search lands now: straight to it, no second run of quiet
            // decisions (its evidence is this load's). A raise right before
            // a load step is never judged at its load, and the search there
            // after the load falls back would rest at the cap once more.
            if (auto back = quiet_return(tick, sample.load, d.to_bits); back && *back > d.to_bits) {
                d.to_bits = *back;
                quiet_to = back;
                quiet_ceil_ = back;
                d.cause = *back > d.from_bits ? ControlCause::Quiet : ControlCause::RestBelow;
                d.rest_bound_bits = rest_bound(tick, sample.load);
                d.quiet_again = d.cause == ControlCause::Quiet;
            }
        }
        // A probe goes above every ceil that held here; a return to one that
        // held (the load fell, a cut is over) is a resting ceil: if it breaks,
        // the proportional cut, no lower than what held below it. So is the
        // rest under a strain: that strain met the SLO at this load.
        probing_ = d.to_bits > held && !to_strained_rest;
    }
    // Whatever the branch: never above the resting cap (rest_below). A
    // decision that would have kept or raised the ceil steps down to it, and
    // a probe waiting to be judged is none once the ceil came down.
    if (const uint64_t cap = std::max(resting_cap(tick, sample.load), quiet_to.value_or(0)); d.to_bits > cap) {
        if (d.to_bits >= d.from_bits && cap < d.from_bits)
            d.cause = ControlCause::RestBelow, d.rest_bound_bits = rest_bound(tick, sample.load);
        d.to_bits = cap;
    }
    if (d.to_bits < d.from_bits) probing_ = false;
    if (d.to_bits == d.from_bits) d.cause = ControlCause::None;
    if (d.to_bits != ceil_ || broke) queued_bits_ = 0, queued_known_ = 0, quiet_run_ = 0;
    if (d.to_bits != ceil_) rose_since_set_ = false;
    ceil_ = d.to_bits;
    broke_ = broke;
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

DecisionWait decision_wait(int64_t tick, int64_t dwell_seconds, const std::vector<DecisionSignal>& signals,
                           SignalClock::time_point now) {
    const SignalClock::time_point at{std::chrono::seconds{tick * std::max<int64_t>(1, dwell_seconds)}};
    DecisionWait w;
    w.deadline = at;
    bool all_in = true;
    for (const auto& s : signals) {
        const SignalClock::time_point instant = signal_instant_at_or_before(at, s.interval);
        // The longest delay is just under twice the seed-free one.
        w.deadline = std::max(w.deadline, instant + 2 * signal_fetch_delay(s.interval, 0) + s.timeout);
        if (!s.last_instant || *s.last_instant < instant) all_in = false;
    }
    w.ready = now >= at && (all_in || now >= w.deadline);
    return w;
}

}  // namespace lanes::agent
