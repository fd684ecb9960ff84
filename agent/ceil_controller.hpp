// SPDX-License-Identifier: GPL-2.0-or-later
// The node agent's ceil controller ([classes.NAME.control]): moves the HTB ceil
// of a class's running jobs between a floor and the class's ceil so that an SLO
// signal (inference p99, say) stays under its target, giving training the most
// the SLO allows. Pure: a function of the settings and the samples it is fed.
//
// Why a controller. The two-level busy_window/busy_ceil switch cannot rest when
// the normal ceil itself breaks the SLO: the window ends, the ceil comes back,
// the SLO breaks, the window begins again (issue 23: 10 shifts in 30 s of low
// load). A resting point needs a ceil between the two that the switch cannot
// express.
//
// The design: AIMD with a dead band, a dwell and a memory.
//  - At each decision instant, the value v of the SLO signal:
//      v > slo                    decrease: ceil = max(floor, ceil * decrease),
//                                 or, right after an increase, one step below
//                                 the ceil before it (the one that held)
//      slo*(1-margin) < v <= slo  hold: close to the SLO, not over it
//      v <= slo*(1-margin)        increase: ceil = min(class ceil, ceil + increase)
//      no usable value            decrease (protect inference, as a signal
//                                 window's when_unknown = "busy" does)
//    The dead band is the resting point: a ceil under which the SLO holds
//    without margin is kept, not probed again. Stepping back after a probe
//    that broke the SLO costs three changes per probe (up, a step below the
//    ceil that held, which drains the queue the probe filled, and up to the
//    highest ceil the memory allows) instead of a multiplicative cut and a
//    climb of several steps; a load that rose at the same instant is met one
//    dwell later by the multiplicative cut (the step back is no increase, so
//    the next break cuts).
//  - Decisions are taken only at wall-clock instants that are multiples of the
//    dwell (tick k = floor(unix time / dwell)), never in between. A dwell at
//    least the signal's delay (fetch interval plus the query's range) means the
//    next decision sees the effect of the previous one: no decision is taken on
//    a value the last change has not yet moved, which is what makes a loop on a
//    slow signal oscillate.
//  - Memory: the ceil in force when the SLO broke is remembered, with the tick
//    and (when `load_signal` is set) the load. Increases stop one step below it
//    for `backoff` ticks, or, with a load signal, for as long as the load has
//    not fallen clearly (by `margin`) below the load of the break. A ceil that
//    breaks the SLO again within one step of the remembered one doubles the
//    back-off (at most 64 times the base), so a stable load sees a probe of the
//    remembered ceil ever more rarely; a climb that passes it without a break
//    resets the back-off.
//
// All nodes of a training job move together. A ring all-reduce runs at the
// speed of its slowest link, so a ceil that differs between the job's nodes is
// wasted on the faster ones. The controller has no channel to the other nodes;
// instead every agent runs the same function on the same input: the state
// after tick k depends only on the settings, the link speed and the samples at
// ticks <= k, and the ticks are wall-clock instants shared by every node (NTP).
// Agents reading the same cluster-wide query from the same Prometheus at the
// same instant therefore reach the same ceil. Where they do not (an agent
// started later, a fetch that straddled a Prometheus evaluation), the states
// still converge: a decrease multiplies the difference between two nodes' ceils
// by `decrease` (< 1), an increase keeps it, and the floor and the class's ceil
// (where every controller rests at low and high load) erase it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/ceil_shift.hpp"  // CeilTarget
#include "core/lanes_toml.hpp"

namespace lanes::agent {

// The settings resolved against one NIC's link speed.
struct ControlLimits {
    uint64_t floor_bits = 0;
    uint64_t ceil_bits = 0;  // the class's ceil on this NIC
    uint64_t step_bits = 0;  // the increase
    double decrease = 0.5;
    double slo = 0;
    double margin = 0.2;
    int64_t backoff_ticks = 4;
};
ControlLimits resolve_control(const CeilControlConfig& config, const Rate& class_ceil, uint64_t link_bits);

// One decision instant's input.
struct ControlSample {
    std::optional<double> value;  // the SLO signal (nullopt: no usable value)
    std::optional<double> load;   // the load signal, when configured and usable
};

enum class ControlCause {
    None,     // no change
    OverSlo,  // decrease: the SLO broke
    NoValue,  // decrease: the SLO signal has no usable value
    Headroom  // increase: the SLO holds with margin
};
// "over_slo", "no_value", "headroom", "none": metric labels.
const char* control_cause_name(ControlCause cause);

struct ControlDecision {
    int64_t tick = 0;
    uint64_t from_bits = 0;
    uint64_t to_bits = 0;
    ControlCause cause = ControlCause::None;
    bool changed() const { return from_bits != to_bits; }
};

class CeilController {
public:
    // Starts at the class's ceil: what a job has before any decision.
    explicit CeilController(ControlLimits limits);

    // The decision at tick `tick` (floor(unix seconds / dwell)). Ticks must not
    // go back; the same tick twice returns a no-change decision. Ticks skipped
    // (the agent was late) count as elapsed for the back-off.
    ControlDecision decide(int64_t tick, const ControlSample& sample);

    uint64_t ceil_bits() const { return ceil_; }
    const ControlLimits& limits() const { return limits_; }
    // New limits (the link speed or lanes.toml changed): the ceil is clamped.
    void set_limits(const ControlLimits& limits);
    // The ceil that last broke the SLO while it still holds increases back.
    std::optional<uint64_t> held_below(int64_t tick, const std::optional<double>& load) const;
    int64_t backoff_ticks() const { return backoff_; }

private:
    ControlLimits limits_;
    uint64_t ceil_;
    std::optional<int64_t> last_tick_;
    std::optional<uint64_t> raised_from_;  // the last decision raised the ceil from this
    // The memory of the last break.
    std::optional<uint64_t> broken_ceil_;
    int64_t broken_tick_ = 0;
    std::optional<double> broken_load_;
    int64_t backoff_ = 0;
};

// Every running job of a class with a controller, on every NIC of the job:
// the controller's ceil for (class, device) in `ceils`, never above the job's
// own ceil nor below its rate; absent from `ceils` (no decision yet, or the
// agent stopping): the job's own ceil.
using ClassDevice = std::pair<std::string, std::string>;
std::vector<CeilTarget> plan_controlled_targets(const Config& config, const std::vector<JobState>& jobs,
                                                const std::map<ClassDevice, uint64_t>& ceils);

// The instant (unix seconds) of the first tick after `unix_now`, and its index.
int64_t next_tick(double unix_now, int64_t dwell_seconds);

}  // namespace lanes::agent
