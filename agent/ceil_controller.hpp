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
// The design: a bracket search (binary increase, as BIC-TCP does for a
// congestion window) with a dead band, a dwell and a memory per load.
//
// The plant has a knee, not a slope: on a FIFO shared with inference, p99 is
// low until the training ceils plus inference fill the bottleneck, then the
// queue fills within a second and p99 jumps tenfold. p99 below the knee says
// nothing about the distance to it, so the only way to learn where it is, is
// to try a ceil; and every try above the knee costs inference a bad 10-second
// row. The last version (AIMD with a memory one step below the ceil that
// broke) measured 5 changes per node at a high load, one bad row per probe,
// and rested a whole step below the knee: its step was both how fast it
// climbed and how close it came, and no step does both well. So the controller keeps, per load, the
// highest ceil that held the SLO with margin (h) and the lowest that broke it
// (b), and halves the gap between them:
//  - At each decision instant, the value v of the SLO signal:
//      v > slo                    break: remember b = ceil; ceil * f(v), no
//                                 lower than h when h is known at this load
//                                 (after a probe from h, below h: next)
//      slo*(1-margin) < v <= slo, strained (with a congestion_signal, below):
//        queue over               ceil * strain_decrease (1 - margin unless
//        congestion_above         set), no lower than h
//      v <= slo, the queue over   strained by count (strain_count, below):
//        congestion_above at      h at or above the ceil forgotten; ceil *
//        strain_count of the last strain_decrease, no lower than a lower h
//        strain_window decisions
//      slo*(1-margin) < v <= slo  hold: close to the SLO, not over it
//      v <= slo*(1-margin)        headroom: remember h = ceil; then
//                                   b known, b - h > min_gap: h + min(increase,
//                                     (b - h) / 2), the midpoint
//                                   b known, b - h <= min_gap: h (converged:
//                                     no more probes at this load)
//                                   nothing broke at this load: h if above the
//                                     ceil, else ceil + increase (without a
//                                     load signal, no higher than the last
//                                     break: the retry after the back-off)
//      no usable value            ceil * decrease, no memory (protect
//                                 inference, as a window's when_unknown =
//                                 "busy" does)
//    Each probe that breaks halves the gap, so a load sees at most
//    log2((b - h) / min_gap) failed probes, and none once the gap is under
//    min_gap: min_gap is what the operator trades, the distance under the
//    knee the ceil may rest at against the bad rows its probes cost.
//  - A probe (a ceil above every one that held at this load) that breaks is
//    not stepped back to h itself but to h - (probe -
//    h), never deeper than the factor: at h the bottleneck may be nearly full
//    and drain the queue the probe filled too slowly for the next decision to
//    see the SLO met (measured: 80 -> 75 Mbit/s did not drain a 75+75+49
//    Mbit/s FIFO of 200). Going as far below h as the probe went above it
//    drains at least as fast as the probe filled. The next headroom goes on
//    from h (the next midpoint, or h itself): two changes per failed probe.
//    A return to a ceil that held here (the load fell back, straight to the
//    ceil that held at it) is no probe: it rests there. (Measured: 94 Mbit/s
//    per node, back at 200 req/s where it had held, broke at 18 ms with a
//    9 ms queue; taken as a failed probe from the 70.5 that held at 1500
//    req/s, it went to 47, and training had 83 % of the best fixed ceil in
//    that phase.)
//  - Every other break's cut follows how far the SLO broke:
//    f(v) = 1 - (1 - decrease) * clamp((v/slo - 1) / (full_decrease_at - 1),
//    0.1, 1): the whole decrease from full_decrease_at * slo, a tenth of it
//    just over the SLO (full_decrease_at = 1: always the whole). A FIFO's p99
//    is a knee: a ceil far over it fills the queue and p99 jumps to several
//    times the SLO; one at the knee breaks it by a little, now and then. (On
//    the benchmark's plant, steps to a high load broke with p99 at 2.5-5
//    times the SLO; the class's ceil at the knee of the low load, 1.3-2
//    times, in 7 of 21 runs, while 96 % of its 10-second rows met the SLO;
//    the whole cut, 94 to 47 and back to 70.5 Mbit/s, cost training a
//    quarter for the rest of the phase.) A mild cut that is not enough
//    breaks again one dwell later and cuts again. Never below h: a resting
//    ceil that breaks by a little is noise at the knee more often than a
//    plant that moved.
//  - A ceil that was resting and broke, without a load to tell why, says the
//    load or the plant changed: what held before is forgotten, and the cut
//    is f(v).
//  - The memory is per load (`load_signal`): a ceil that held at load L holds
//    at any load up to L (plus kLoadNoise); a ceil that broke at L breaks at
//    any load above L * (1 - margin). When the load steps to one seen before,
//    the first decision goes straight to the ceil that held there (one change,
//    no probe: the ramp and the spike after a high phase), and when it falls,
//    straight back up to the ceil that held at the lower load. A new
//    observation that a ceil held removes the breaks it contradicts, and a
//    break hides the held ceils it contradicts for the back-off (below), so
//    the memory follows a plant that changed. Without a load signal, every
//    sample counts as one load.
//  - A load well above any where the ceil held (by more than margin), under
//    one where a ceil at or under it broke and a lower one held: the knee at
//    this load is somewhere between the two, and the first sign of it would
//    be a bad row. The ceil goes to the one that held higher up (cause
//    "load_rose"), and counts as broken at this load, so the search goes on
//    under it. (Measured on the benchmark's ramp, 200 to 1500 req/s in steps
//    of 260: the ceil that held at 200 and 460 rested at 720 for three
//    decisions and broke, a row at 97 %, in 3 of 20 runs.) A ceil never
//    seen to hold (a probe, a return to the class's ceil), or a rise within
//    the margin, is no such guess: the SLO signal decides. Nor is a break:
//    it is cut as any other, no lower than what held up there. Nor is the
//    decision right after a break: the break's cut is what it judges.
//    (Measured: a guess right after a break remembered the ceil as broken
//    for the back-off only; the search climbed back to it and the guess
//    came again, 4 changes in a ramp.) Nor is a ceil the load has not risen
//    since (beyond kLoadNoise; a rise from a load of 0 or none counts as
//    none): one set at this load or above it, whatever held at a lower
//    one. (Measured: the class's ceil held at the load of 0
//    before the bench's first phase; a quiet raise to 89.3 Mbit/s per node
//    at 200 req/s was taken as a rise from there and cut to 80.37 at the
//    next decision, at the same load.)
//  - A decision whose load rose by more than margin over the last
//    decision's may read both loads: the signals' ranges end at the same
//    instant, but a step inside them mixes the two, and p99 then says little
//    of the ceil at the new load (the queue takes a second or two to fill).
//    With the SLO met with margin, such a decision changes nothing and
//    remembers nothing held; the next one, whose ranges hold the new load
//    only, judges the ceil there. Right after a break it is no such
//    decision: the break's cut is what it judges, at the load it read,
//    which is at most the load now, and the search goes on. A fall needs no
//    such rule for what held (the load read is more than the load now, so
//    what held at it holds now), but for what a probe is: a ceil raised at
//    the load read is no probe at a lower load where it, or a higher ceil,
//    held, and if it breaks there it takes a resting ceil's cut. (Measured
//    on the benchmark: at a fall from 1500 to 200 req/s the load read 1067;
//    66 Mbit/s per node went up to 85 as a probe there, broke at 200, where
//    94 had held, and was drained as a failed probe to 47: training had 88 %
//    of the best fixed ceil in the phase.)
//  - A break of a ceil never seen to hold at that load is remembered for as
//    long as the load stays (with a load signal), up to the longest back-off
//    (64 times `backoff`: a plant whose knee rose under a steady load, when
//    another job's traffic on the bottleneck ended, gets the ceil back after
//    it, for one probe over the SLO each time when it did not), unless the
//    decision before it was a break too: the queue the last ceil filled may
//    not have drained yet, or the host stalled, and p99 then says little
//    about the ceil.
//    (Measured on a busy host: 47, 23.5 and 11.75 Mbit/s broke at one load
//    in a row and the floor, 10, held; the break of 11.75 kept the ceil at
//    the floor for the rest of the run, 190 s, with p99 at 1 ms.) Such a
//    break counts for the back-off. A break that contradicts
//    the memory (a ceil that held there: the plant changed, or p99 was noise,
//    as the probe's reconnections at each load step make it) and every break
//    without a load signal, or while the load is unknown, is remembered for
//    `backoff` ticks only; what held is kept, and counts again after it (at
//    the loads where it held: above them, the break still bounds the ceil). A
//    ceil that breaks again within min_gap of the last break doubles the
//    back-off (at most 64 times the base); a ceil that holds at or above it
//    resets it. (Measured: one noisy p99 of 15 ms at 200 req/s, remembered
//    for as long as the load stayed, held training at 70.5 of 94 Mbit/s for
//    the rest of the run.) But when such a break is the second of that ceil
//    at that load (within min_gap and margin) with nothing at or above it
//    seen to hold there in between, and not right after another break, the
//    plant changed (the knee fell: more traffic on the bottleneck): what
//    held at or above it there is forgotten, the break counts while the load
//    stays, and the search goes on below it.
//  - An SLO break is the network's only if the network queued. p99 also
//    rises when the inference host stalls or its GPU is saturated, and a cut
//    of training then costs training without helping inference (measured on
//    a busy host: 28 of 42 late rows under the SLO came with no queue in the
//    switch, and cuts on them kept training at 27-53 % of the best fixed
//    ceil). With a `congestion_signal` (a switch queue's delay, ECN marks), a
//    break while its value is known and at or under `congestion_above` is
//    held: no change, nothing remembered, counted and logged as
//    "uncongested". A probe stays a probe until a decision judges it. An
//    unknown congestion value counts as congested: the cut, as without one.
//  - The same signal says when a ceil that meets the SLO has no margin in the
//    network. On a FIFO near its knee the queue comes in bursts: p99 over a
//    few seconds is often under the SLO there and a 10-second row still
//    misses it. (Measured in the benchmark's sweep at 1500 req/s: 56 Mbit/s
//    per node, the switch's queue never over 1 ms and every row met; 70,
//    over 5 ms in 57 % of the seconds and rows at 96 %; the search rested at
//    70.5 whenever one decision there saw p99 under the SLO with margin.)
//    A decision whose SLO signal is in the band where the ceil rests (over
//    slo * (1 - margin), at most the SLO) while the congestion signal is over
//    congestion_above is strained: at a ceil that
//    has not held at this load it steps down (ceil * strain_decrease, by
//    default 1 - margin, never below the ceil that held, nor the floor), and the ceil
//    bounds the search as a break does (the midpoints stay under it). At a
//    ceil that held here, no change, but it no longer counts as held (one
//    decision between the bursts made it so): a second strain before it
//    holds again steps down. Right after a break (whose queue may still be
//    draining), nothing. Never an increase, never remembered as held. An
//    unknown congestion value is no strain: the SLO signal alone decides.
//    Nor is a queue while the SLO signal has its margin. On the benchmark's
//    real FIFO, 10 of 12 strains in 13 runs came with p99 at 0.8-5 ms and
//    the queue signal (the worst instant of 3 s) at 2.5-12 ms, at ceils the
//    sweep says hold (75 Mbit/s per node at 1500 req/s met every row with
//    that signal over 2 ms in every second); the 6 runs with strains all
//    missed the training goal, and no row gained.
//  - Near the knee the queue comes in bursts a few seconds apart, and one
//    decision's p99 rarely sees them: 94 Mbit/s per node at 200 req/s (the
//    class's ceil) held with margin in most decisions, and missed 1 of 58 rows
//    in a 300 s sweep and 4 % in the closed loop; 85 missed none. What tells
//    the two apart is how often the queue is there: in the bench's sweeps the
//    congestion signal (the worst of 3 s) was over 2 ms at the decision
//    instants in 5-18 % of them at 94 and 2-6 % at 85; at 1500 req/s in 31 %
//    at 70 (3 of 11 rows missed) and 6 % at 65 (none). With strain_count, a ceil
//    whose congestion value was over congestion_above in strain_count of the
//    last strain_window decisions at it, the SLO met each time, is strained
//    whatever p99's margin: what held there no longer counts, and it steps
//    down by strain_decrease at once (the count is the repeat). A count, not
//    one decision: one queued decision is common at a ceil that holds (up to
//    6 % of decisions at 85); a window of several is what a ceil at the knee
//    fills. The count starts again whenever the ceil moves, and whenever
//    the load moves by more than margin from where it began: the queue read
//    before a load step was the last load's. (Measured: one queued decision
//    at 1500 req/s and the first at 200, whose 6 s range held the end of
//    the high load's queue, made 2 of 6; the strain at 200 bounded the ceil
//    at 64.86 of 94 Mbit/s there, and training had 71 % of the best fixed
//    ceil in the phase.) The signal is
//    weak at 200 req/s (2 of 6 came in 4 runs of 10 on the bench): a 3 s
//    window sees 3 of the dwell's 7 seconds.
//  - A strain is the resting point at its load. Once the lowest ceil that
//    bounds the search at a load is one that strained there (within margin
//    of that load, either way), the knee is at it, not somewhere under it:
//    with headroom the ceil goes straight to where that strain stepped down
//    to (bound * strain_decrease, or a higher ceil that held), one change,
//    no midpoints toward it. A break there is a resting ceil's (the
//    proportional cut), not a failed probe's. At another load the strain
//    bounds the search as a break does and the midpoints go on. (Measured
//    before: 94 strained at 200 req/s, the load rose and fell, and the
//    search from 62, which held at 1500, rested at the midpoint 78.12: 87-89
//    % of the best fixed ceil in 2 of 10 runs' last phase.)
//  - With rest_below, no ceil is a resting point within that fraction under
//    the lowest ceil known to be too much at its load: a break or a strain
//    there while the memory keeps it, or else the class's ceil. Whatever the
//    branch, a decision ends no higher than (1 - rest_below) times it (cause
//    "rest_below" where it would have kept or raised the ceil), never under
//    the floor. Near a knee a ceil holds with margin at most decisions and
//    misses a row now and then: the class's ceil, 94 Mbit/s per node at 200
//    req/s on the bench, held through a 35 s phase and missed a row at 97.9 %
//    in the next; the strain's rest 86.48 and a probe to 70.5 at 1500 req/s
//    missed too, each with a queue in the switch. The knee bands there
//    (85-94, 65-70.5) are about a tenth of the ceil wide. The price is that
//    tenth of training where the class's ceil was under the knee.
//  - With quiet_below (and rest_below, and a congestion signal), a quiet
//    queue says the knee is further up than where the search stopped. A FIFO
//    builds its queue some way under the knee and none far under it: in the
//    bench's sweep at 1500 req/s, two quiet decisions in a row (the worst
//    instant of 6 s under 0.5 ms) came in 13 of 15 pairs at 65 Mbit/s per
//    node, 6 of 15 at 70, none at 75 (the best fixed ceil); at 200 req/s in
//    11-16 of 15 at every ceil up to the class's. Where the ceil would stay
//    (the gap under min_gap, or at the rest cap), after kQuietDecisions
//    decisions in a row at this ceil and load with the SLO met with margin
//    and the queue quiet, it goes up once by the smallest of the increase,
//    half the gap to the bound and half of rest_below times the bound, no
//    higher than rest_below / 2 under the bound (from above that, straight
//    to it); the bound is rest_below's (the lowest break or strain here, or
//    the class's ceil). Half a band, not a band: the knee may be just over
//    the best fixed ceil (the simulated plant's is at 75 exactly), and a
//    raise that breaks costs a row and two changes. One raise per bound at a
//    load: the next needs a new break or strain there, so the raise is the
//    third change of a step at most (the cut, the midpoint, the raise). A
//    ceil a quiet raise reached, once it held, may rest above the rest cap
//    (up to rest_below / 2 under the bound), and the ceil returns straight to
//    it at that load; what it would cost without: the bench's last batch
//    (rest_below 0.1 alone) gave training 90 % of the best fixed ceil at 200
//    req/s, 80-84 % at 1500 and 85-89 % after the fall, every row met. A
//    quiet raise that breaks is a failed probe.
//  - A quiet raise needs a load that has not risen since the ceil was set
//    (beyond kLoadNoise; a rise from a load of 0 or none, the first load of
//    a phase, counts as none, and a fall is none: what holds at a load holds
//    under it), or 2 * kQuietDecisions decisions within kLoadNoise of one
//    load. A load that rose since is a ramp: the bench's steps of 25 s hold
//    three or four decisions, and a raise at one step was pulled back at
//    the next (load_rose, or the rest cap at the higher load), 5 changes in
//    a ramp.
//  - A quiet raise is remembered with the ceil it went up from and its
//    load. Back at that load (within margin below it, kLoadNoise above),
//    where the search lands at or above that ceil and the queue is not over
//    congestion_above, the ceil goes to the raise's in the same decision,
//    under the quiet cap there; a break at or under it at that load or a
//    lower one forgets it. A raise at the last decision before a load step
//    is never judged at its load: on the bench the low phase's raise came 2 s
//    before the high load, and after the fall the ceil rested at the rest cap
//    for three more decisions before the same raise (21 s of the phase's 40
//    at 84.6 instead of 89.3 Mbit/s per node).
//  - Decisions are taken only at wall-clock instants that are multiples of the
//    dwell (tick k = floor(unix time / dwell)), never in between. A dwell at
//    least the signal's delay (fetch interval plus the query's range) means the
//    next decision sees the effect of the previous one: no decision is taken on
//    a value the last change has not yet moved, which is what makes a loop on a
//    slow signal oscillate.
//
// All nodes of a training job move together. A ring all-reduce runs at the
// speed of its slowest link, so a ceil that differs between the job's nodes is
// wasted on the faster ones. The controller has no channel to the other nodes;
// instead every agent runs the same function on the same input: the state
// after tick k (the ceil and the memory) depends only on the settings, the
// link speed and the samples at ticks <= k, and the ticks are wall-clock
// instants shared by every node (NTP). Each decision waits for the signal's
// value at its last fetch instant before the tick (decision_wait()), which
// every node asks Prometheus for with time= (signals.hpp): agents reading the
// same cluster-wide query therefore reach the same ceil. (Measured before:
// values fetched whenever each node's thread ran, a second apart, gave one
// node a p99 of 24.8 ms and the other one under the SLO at the same tick.)
// Where they do not (an agent started later, a fetch that failed on one
// node), the memories differ until both have seen the same
// loads; a decrease multiplies the difference between two nodes' ceils by
// `decrease` (< 1), and the floor and the class's ceil (where every
// controller rests at low and high load) erase it. The memory makes such a
// difference last longer than a memoryless AIMD would.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/ceil_shift.hpp"  // CeilTarget
#include "core/lanes_toml.hpp"
#include "signals/signals.hpp"

namespace lanes::agent {

// The settings resolved against one NIC's link speed.
struct ControlLimits {
    uint64_t floor_bits = 0;
    uint64_t ceil_bits = 0;     // the class's ceil on this NIC
    uint64_t step_bits = 0;     // the increase: the largest step up
    uint64_t min_gap_bits = 0;  // no probe between a held and a broken ceil closer than this
    double decrease = 0.5;
    double full_decrease_at = 1;  // a multiple of slo (CeilControlConfig)
    double slo = 0;
    double margin = 0.2;
    int64_t backoff_ticks = 4;
    // With a congestion signal: an SLO break while its value is known and at
    // or under this is not the network's (a host stall, a busy GPU): held.
    std::optional<double> congestion_above;
    // The strain by count (strain_count of the last strain_window decisions at
    // a ceil queued, the SLO met); 0: off. And the factor a strain steps by.
    int strain_count = 0;
    int strain_window = 0;
    double strain_decrease = 0.8;
    // The ceil rests no higher than (1 - rest_below) times the lowest ceil too
    // much at its load (a break, a strain, or else the class's ceil). 0: off.
    double rest_below = 0;
    // With rest_below and a congestion signal: a congestion value at or under
    // this is a quiet queue, and lets the ceil rise past where the search
    // stopped (ceil_controller.hpp). Unset: off.
    std::optional<double> quiet_below;
};
ControlLimits resolve_control(const CeilControlConfig& config, const Rate& class_ceil, uint64_t link_bits);

// One decision instant's input.
struct ControlSample {
    std::optional<double> value;  // the SLO signal (nullopt: no usable value)
    std::optional<double> load;   // the load signal, when configured and usable
    // The congestion signal, when configured and usable. Unknown counts as
    // congested: the break is the network's (the safe side for inference).
    std::optional<double> congestion;
};

enum class ControlCause {
    None,         // no change
    OverSlo,      // decrease: the SLO broke
    NoValue,      // decrease: the SLO signal has no usable value
    Headroom,     // increase: the SLO holds with margin
    Uncongested,  // no change: the SLO broke, but the congestion signal says the network did not queue
    Congested,    // decrease: the SLO holds, but the network queues past congestion_above
    LoadRose,     // decrease: the load rose well above any where the ceil held, to a lower one that held higher
    RestBelow,    // decrease: the ceil was within rest_below of the lowest ceil too much at this load
    Quiet         // increase: the search had stopped, and the network's queue is quiet (quiet_below)
};
// "over_slo", "no_value", "headroom", "uncongested", "congested", "load_rose",
// "rest_below", "quiet", "none": metric labels.
const char* control_cause_name(ControlCause cause);

struct ControlDecision {
    int64_t tick = 0;
    uint64_t from_bits = 0;
    uint64_t to_bits = 0;
    ControlCause cause = ControlCause::None;
    // A Congested decision by count: how many of the last `of` decisions at
    // this ceil queued (0: a strain without margin, one decision).
    int queued = 0;
    int of = 0;
    // A RestBelow decision: the lowest ceil too much at this load (a break, a
    // strain, or the class's ceil) that the ceil rests rest_below under.
    uint64_t rest_bound_bits = 0;
    // A Quiet decision that made a quiet raise of this load again (the load
    // came back), not one after a run of quiet decisions.
    bool quiet_again = false;
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
    // The memory at `tick` and `load`: the lowest ceil that broke the SLO
    // (b), and the highest below it that held it with margin (h).
    std::optional<uint64_t> broken_ceil(int64_t tick, const std::optional<double>& load) const;
    std::optional<uint64_t> held_ceil(int64_t tick, const std::optional<double>& load) const;
    int64_t backoff_ticks() const { return backoff_; }

    // At most this many observations of each kind are kept (the oldest go).
    static constexpr size_t kMemory = 16;

private:
    // How long a break counts once its back-off is over, shortest first.
    enum class AfterBackoff {
        Gone,            // a break right after a break (and any break without a load)
        AboveHeld,       // it contradicted a held ceil: at loads where nothing at or above it held
        WhileLoadStays,  // never seen to hold at its load: while the load stays, up to 64 back-offs
    };
    struct Observation {
        uint64_t ceil_bits = 0;
        std::optional<double> load;
        int64_t tick = 0;
        int64_t expires = 0;                      // breaks: the end of the back-off
        AfterBackoff after = AfterBackoff::Gone;  // breaks
        bool strained = false;                    // breaks: a strain (the SLO met, the network queued)
        bool quiet = false;                       // held: at a ceil a quiet raise reached (quiet_below)
    };
    bool held_applies(const Observation& o, const std::optional<double>& load) const;
    bool broken_applies(const Observation& o, int64_t tick, const std::optional<double>& load) const;
    bool breaks_again(const std::optional<double>& load) const;
    // f(v), the factor a break with this value cuts by (but a probe's):
    // decrease at or over full_decrease_at * slo, nearer 1 just over slo.
    double break_factor(double value) const;
    int64_t longest_backoff() const;  // the back-off's cap, and the longest any break counts
    void remember_held(int64_t tick, const std::optional<double>& load);
    void remember_broken(int64_t tick, const std::optional<double>& load, bool strained = false);
    // Where the lowest ceil that bounds the search at this load is one that
    // strained here (within margin of this load): the ceil a strain steps to,
    // the resting point at this load (ceil_controller.hpp).
    std::optional<uint64_t> strained_rest(int64_t tick, const std::optional<double>& load) const;
    // A strained ceil (congested, the SLO met): it bounds the search as a
    // break would, and the ceil steps down by strain_decrease, never below a
    // lower ceil that held here nor the floor.
    uint64_t step_down_strained(int64_t tick, const std::optional<double>& load);
    // The ceil that held at a higher load, when the load is well above any
    // where this ceil held and a ceil at or under it broke at a higher load.
    std::optional<uint64_t> held_higher_up(int64_t tick, const std::optional<double>& load) const;
    // The highest ceil the controller rests at here: rest_below under the
    // lowest ceil that broke or strained at this load, or under the class's
    // ceil where none did; never under the floor.
    uint64_t rest_cap(int64_t tick, const std::optional<double>& load) const;
    uint64_t rest_bound(int64_t tick, const std::optional<double>& load) const;
    // With quiet_below: the highest ceil a quiet raise may reach here,
    // rest_below / 2 under the bound (else rest_cap()); and the highest ceil
    // that held here after a quiet raise reached it, which may rest above
    // rest_cap(), no higher than that.
    uint64_t quiet_cap(int64_t tick, const std::optional<double>& load) const;
    std::optional<uint64_t> quiet_held(int64_t tick, const std::optional<double>& load) const;
    // The cap a decision ends under: rest_cap(), or a ceil up to quiet_cap()
    // that held after a quiet raise.
    uint64_t resting_cap(int64_t tick, const std::optional<double>& load) const;
    // Whether a quiet raise already went up at this load under its bound now.
    bool quiet_raised_here(int64_t tick, const std::optional<double>& load) const;
    // A quiet raise: from the ceil whose queue was quiet, to the ceil it
    // reached, at a load. Forgotten when a ceil at or under `to` breaks at
    // that load or a lower one.
    struct QuietRaise {
        uint64_t from_bits = 0;
        uint64_t to_bits = 0;
        std::optional<double> load;
    };
    // A load within margin below `at` or kLoadNoise above it.
    bool same_load_band(const std::optional<double>& at, const std::optional<double>& load) const;
    void remember_quiet_raise(const std::optional<double>& load, uint64_t to_bits);
    // The highest ceil a quiet raise reached at this load from a ceil at or
    // under `landing` (where the search lands now), under quiet_cap() here.
    std::optional<uint64_t> quiet_return(int64_t tick, const std::optional<double>& load, uint64_t landing) const;

    ControlLimits limits_;
    uint64_t ceil_;
    std::optional<int64_t> last_tick_;
    bool probing_ = false;  // the last decision raised the ceil
    bool broke_ = false;    // the last decision was a break (an uncongested hold is none)
    std::vector<Observation> held_;
    std::vector<Observation> broken_;
    std::optional<uint64_t> last_broken_;  // the ceil of the last break, for the back-off
    std::optional<uint64_t> quiet_ceil_;   // the ceil the last quiet raise reached, until a break at or under it
    std::vector<QuietRaise> quiet_raises_;
    int quiet_run_ = 0;                 // decisions in a row at this ceil with the queue quiet
    std::optional<double> quiet_load_;  // the load at the first of them
    // Decisions in a row with the load within kLoadNoise of the first's
    // (steady_load_), and whether such a run began at a higher load since
    // the ceil last moved.
    int steady_run_ = 0;
    std::optional<double> steady_load_;
    bool rose_since_set_ = false;
    int64_t backoff_ = 0;
    // The last decisions at this ceil with the SLO met: bit i set when the
    // i-th latest queued past congestion_above. Cleared when the ceil moves.
    uint64_t queued_bits_ = 0;
    int queued_known_ = 0;
    // The load at the first of them: one more than margin away starts again.
    std::optional<double> count_load_;
    // The last decision's load: one more than margin above it makes this
    // decision a rise's first (ceil_controller.hpp).
    std::optional<double> last_load_;
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

// When the decision of tick `tick` is taken. It uses each signal's value at
// that signal's last fetch instant at or before the tick's instant
// (signals.hpp: fetch instants), the same instant on every node, so it waits
// until each signal's last attempt asked for that instant or a later one. It
// waits no longer than that fetch can take (its longest delay plus the
// signal's timeout): a fetch that failed or is late leaves the value there is
// (which the nodes may then not share).
struct DecisionSignal {
    std::chrono::milliseconds interval{0};
    std::chrono::milliseconds timeout{0};
    std::optional<SignalClock::time_point> last_instant;  // SignalState::last_instant
};
struct DecisionWait {
    bool ready = false;
    SignalClock::time_point deadline;  // the decision is taken at this instant at the latest
};
DecisionWait decision_wait(int64_t tick, int64_t dwell_seconds, const std::vector<DecisionSignal>& signals,
                           SignalClock::time_point now);

}  // namespace lanes::agent
