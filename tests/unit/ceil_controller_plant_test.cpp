// SPDX-License-Identifier: GPL-2.0-or-later
// The ceil controller in a closed loop with a simulated plant: the fabric of
// bench/closed_loop.sh (two training nodes and inference behind one 200
// Mbit/s FIFO) in one-second steps, the five phases of the benchmark (low,
// high, low, a ramp, a spike), the controller deciding at every dwell on the
// p99 of the last seconds as Prometheus would give it. Counts, per phase, the
// changes per node, the seconds over the SLO after the first decision that can
// see a load step, and training's throughput against the best fixed ceil at
// that load: the goals, deterministic, no timing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "agent/ceil_controller.hpp"

namespace lanes::agent {
namespace {

constexpr double kSlo = 0.010;     // seconds
constexpr double kClassCeil = 94;  // Mbit/s per node
constexpr double kFloor = 10;
constexpr int kDwell = 7;  // seconds, as bench/closed_loop.sh
constexpr int kDelay = 4;  // the signal's: 1 s fetch + a 3 s rate window

// bench/fabric.sh's uplink: a FIFO of 300 frames of 9000 B at 200 Mbit/s, two
// training nodes at their ceil, inference at 4 KB per request (1500 req/s:
// 50 Mbit/s). Below the knee p99 grows as 1/(1 - utilisation); above it the
// queue fills within a second or two and p99 is the queue's length.
struct Plant {
    double capacity = 200;
    double queue_max = 21.6;
    double per_request = 1.0 / 30;
    int nodes = 2;
    // From this utilisation on (0: never), the queue comes in bursts, as TCP's
    // does on a real FIFO near its knee: the switch's queue reads 4 ms, p99
    // sits in the band just under the SLO (9 ms, without margin), and one
    // second in five is over it.
    double bursts_above = 0;
    int burst_clock = 0;
    // From this utilisation on (0: never), a standing queue of 6 ms that
    // inference does not feel (p99 as below the knee, with margin): what the
    // benchmark's real FIFO showed at its best fixed ceil.
    double stands_above = 0;
    // From this utilisation on (0: never), the knee is a band, as the real
    // FIFO's at 200 req/s: p99 keeps its margin in most seconds, one second in
    // 20 is over the SLO, and the switch's queue reads 4 ms in one second of 4.
    double sporadic_above = 0;
    int sporadic_clock = 0;
    // From this utilisation on (0: never), a queue of 1 ms in every second,
    // under any congestion_above and p99 with its margin: the queue a real
    // FIFO builds some way under its knee (the bench's sweep at 1500 req/s:
    // quiet at 65 Mbit/s per node, 1-3 ms from 70, the knee over 75).
    double early_queue_above = 0;
    double queue = 0;
    double p99 = 0, training = 0;
    double congestion = 0;  // the switch's queueing delay, seconds
    void second(double ceil, double load) {
        const double inference = load * per_request;
        const double offered = nodes * ceil + inference;
        queue = std::clamp(queue + offered - capacity, 0.0, queue_max);
        const double utilisation = std::min(offered / capacity, 0.999);
        p99 = 0.0002 / (1 - utilisation) + queue / capacity;
        congestion = queue / capacity;
        if (bursts_above > 0 && offered / capacity >= bursts_above) {
            congestion = std::max(congestion, 0.004);
            p99 = std::max(p99, ++burst_clock % 5 == 0 ? 0.015 : 0.009);
        }
        if (stands_above > 0 && offered / capacity >= stands_above) congestion = std::max(congestion, 0.006);
        if (early_queue_above > 0 && offered / capacity >= early_queue_above) congestion = std::max(congestion, 0.001);
        if (sporadic_above > 0 && offered / capacity >= sporadic_above) {
            ++sporadic_clock;
            if (sporadic_clock % 4 == 0) congestion = std::max(congestion, 0.004);
            if (sporadic_clock % 20 == 0) p99 = std::max(p99, 0.015);
        }
        training = std::min(nodes * ceil, capacity - inference);
    }
    // The highest ceil (on a 0.5 Mbit/s grid) whose p99 meets the SLO in
    // every second of 30 once the first 5 are over.
    double best_fixed(double load) const {
        for (double c = kClassCeil; c >= kFloor; c -= 0.5) {
            Plant p = *this;
            p.queue = 0;
            bool met = true;
            for (int i = 0; i < 30; ++i) {
                p.second(c, load);
                if (i >= 5 && p.p99 > kSlo) met = false;
            }
            if (met) return c;
        }
        return kFloor;
    }
};

struct Phase {
    std::string name;
    std::vector<std::pair<int, double>> steps;  // (seconds, req/s)
};

// The benchmark's phases, each long enough for a few decisions after a step.
std::vector<Phase> bench_phases(int scale) {
    return {{"low", {{20 * scale, 200}}},
            {"high", {{45 * scale, 1500}}},
            {"fall", {{30 * scale, 200}}},
            {"ramp", {{8 * scale, 460}, {8 * scale, 720}, {8 * scale, 980}, {8 * scale, 1240}, {8 * scale, 1500}}},
            {"spike", {{6, 1500}, {30 * scale - 6, 200}}}};
}

struct PhaseFigures {
    std::string name;
    int changes = 0;            // per node (both nodes make the same)
    int late_over_seconds = 0;  // over the SLO, dwell + delay + 1 s after a step
    int over_seconds = 0;
    int probes_broken = 0;  // breaks not caused by a load step
    double training = 0;    // mean Mbit/s
    double best_fixed = 0;  // the best fixed ceil's, for the constant-load phases
};

struct LoopRun {
    std::vector<PhaseFigures> phases;
    bool nodes_agree = true;
    uint64_t final_ceil = 0;
};

// `noise`: seconds (from the start) whose p99 is 15 ms whatever the ceil (a
// stall of the machine, the probe's reconnections).
// `plant`: the fabric (a copy is run).
LoopRun run(const ControlLimits& limits, bool load_signal, int offset, int scale = 1, std::vector<int> noise = {},
            Plant plant = {}) {
    CeilController a(limits), b(limits);  // two nodes, fed the same samples
    LoopRun out;
    std::vector<double> p99s, loads, congestions;
    int t = offset;  // seconds; decisions at multiples of kDwell
    int since_step = 1000;
    for (const auto& phase : bench_phases(scale)) {
        PhaseFigures f;
        f.name = phase.name;
        double sum = 0;
        int n = 0;
        for (const auto& [seconds, load] : phase.steps) {
            since_step = 0;
            if (phase.steps.size() == 1) f.best_fixed = 2 * plant.best_fixed(load);
            for (int s = 0; s < seconds; ++s, ++t, ++since_step) {
                if (t % kDwell == 0 && p99s.size() >= kDelay) {
                    // The p99 of the 3 s before the last fetch, and the load.
                    const size_t end = p99s.size() - 1;
                    ControlSample sample;
                    sample.value = *std::max_element(p99s.begin() + static_cast<long>(end - 3),
                                                     p99s.begin() + static_cast<long>(end));
                    if (load_signal) sample.load = (loads[end - 3] + loads[end - 2] + loads[end - 1]) / 3;
                    sample.congestion = *std::max_element(congestions.begin() + static_cast<long>(end - 3),
                                                          congestions.begin() + static_cast<long>(end));
                    const auto da = a.decide(t / kDwell, sample);
                    b.decide(t / kDwell, sample);
                    if (da.changed()) ++f.changes;
                    if (da.cause == ControlCause::OverSlo && since_step > kDwell + kDelay) ++f.probes_broken;
                    if (a.ceil_bits() != b.ceil_bits()) out.nodes_agree = false;
                }
                plant.second(static_cast<double>(a.ceil_bits()) / 1e6, load);
                if (std::find(noise.begin(), noise.end(), t - offset) != noise.end()) plant.p99 = 0.015;
                p99s.push_back(plant.p99);
                congestions.push_back(plant.congestion);
                loads.push_back(load);
                sum += plant.training;
                ++n;
                if (plant.p99 > kSlo) {
                    ++f.over_seconds;
                    if (since_step > kDwell + kDelay + 1) ++f.late_over_seconds;
                }
            }
        }
        f.training = sum / n;
        out.phases.push_back(f);
    }
    out.final_ceil = a.ceil_bits();
    return out;
}

ControlLimits bench_limits() {
    // bench/closed_loop.sh's [classes.training.control]: steps of up to half
    // the class's ceil, no probe once held and broken are within a quarter.
    ControlLimits l;
    l.floor_bits = 10'000'000;
    l.ceil_bits = 94'000'000;
    l.step_bits = 47'000'000;
    l.min_gap_bits = 24'000'000;
    l.decrease = 0.5;
    l.slo = kSlo;
    l.margin = 0.2;
    l.backoff_ticks = 4;
    return l;
}

void print(const char* what, int offset, const LoopRun& r) {
    for (const auto& f : r.phases) {
        std::printf(
            "%s offset %d s: %-5s changes %d, seconds over the SLO %d (%d late), failed probes %d, training "
            "%.1f Mbit/s",
            what, offset, f.name.c_str(), f.changes, f.over_seconds, f.late_over_seconds, f.probes_broken, f.training);
        if (f.best_fixed > 0) std::printf(" = %.0f %% of the best fixed ceil", 100 * f.training / f.best_fixed);
        std::printf("\n");
    }
}

// The goals in one phase: at most 3 changes, no second over the SLO
// once a decision could see the step, training at least `share` of the best
// fixed ceil (in the phases at one load).
void expect_goals(const PhaseFigures& f, double share) {
    EXPECT_LE(f.changes, 3);
    EXPECT_EQ(f.late_over_seconds, 0);
    if (f.best_fixed > 0) {
        EXPECT_GE(f.training, share * f.best_fixed);
    }
}

TEST(CeilControllerPlant, BenchSettingsMeetTheGoals) {
    // Every alignment of the load steps to the decision instants.
    for (int offset = 0; offset < kDwell; ++offset) {
        const LoopRun r = run(bench_limits(), true, offset);
        print("bench", offset, r);
        EXPECT_TRUE(r.nodes_agree);
        for (const auto& f : r.phases) {
            SCOPED_TRACE(f.name + " offset " + std::to_string(offset));
            expect_goals(f, 0.9);
            EXPECT_EQ(f.probes_broken, 0);
        }
    }
}

TEST(CeilControllerPlant, LongPhasesStaySettled) {
    // Phases four times as long: no more changes, no probe at a steady load.
    for (int offset = 0; offset < kDwell; ++offset) {
        const LoopRun r = run(bench_limits(), true, offset, 4);
        for (const auto& f : r.phases) {
            SCOPED_TRACE(f.name + " offset " + std::to_string(offset));
            expect_goals(f, 0.9);
        }
    }
}

TEST(CeilControllerPlant, NoiseAtALowLoadCostsOneBackoff) {
    // Three noisy seconds 20 s into the low phase after the high one: the
    // class's ceil, which held there, is cut, and comes back after the
    // back-off (4 dwells) instead of staying cut while the load stays.
    for (int offset = 0; offset < kDwell; ++offset) {
        const LoopRun r =
            run(bench_limits(), true, offset, 2, {20 * 2 + 45 * 2 + 20, 20 * 2 + 45 * 2 + 21, 20 * 2 + 45 * 2 + 22});
        print("noise", offset, r);
        const auto& fall = r.phases[2];
        SCOPED_TRACE("offset " + std::to_string(offset));
        EXPECT_LE(fall.changes, 3);
        EXPECT_GE(fall.training, 0.8 * fall.best_fixed);
        // And the ramp and the spike after it are as without noise: the run
        // ends at the low load, at the class's ceil.
        EXPECT_LE(r.phases[3].changes, 1);
        EXPECT_LE(r.phases[4].changes, 1);
        EXPECT_EQ(r.final_ceil, 94'000'000u);
    }
}

TEST(CeilControllerPlant, AFinerMinGapTradesProbesForThroughput) {
    // min_gap 6 Mbit/s: the bisection goes on below the 23.5 Mbit/s gap
    // (70.5 held, 94 broke): 82.25 breaks, 76.4 breaks, the gap is 5.9, it
    // rests at 70.5. Each failed probe costs seconds over the SLO and three
    // changes; log2(23.5 / 6) rounds up to two failed probes at most.
    auto l = bench_limits();
    l.min_gap_bits = 6'000'000;
    const LoopRun r = run(l, true, 3);
    print("min_gap 6Mbit", 3, r);
    const auto& high = r.phases[1];
    EXPECT_GE(high.probes_broken, 1);
    EXPECT_LE(high.probes_broken, 2);
    EXPECT_LE(high.changes, 2 + 3 * high.probes_broken);
    EXPECT_GT(high.late_over_seconds, 0);
}

TEST(CeilControllerPlant, NoMarginInTheNetworkStepsDownBeforeTheRowsMiss) {
    // A FIFO whose queue comes in bursts from 93 % utilisation on: there
    // p99 over the 3 s range is mostly under the SLO (without margin), and
    // one second in five is over it. With p99 alone, the search rests where
    // a decision happened to see no burst, and the seconds over the SLO come
    // back while the load stays (8 late seconds over the seven offsets, up
    // to 4 changes in a phase). With the switch's queue as the congestion
    // signal (a bound of 2 ms), every decision there sees no margin: a step
    // down by the margin, and no second over the SLO once a decision could
    // see a step (at most 2 changes in a phase).
    Plant bursty;
    bursty.bursts_above = 0.93;
    auto with_queue = bench_limits();
    with_queue.congestion_above = 0.002;
    int late_without = 0;
    for (int offset = 0; offset < kDwell; ++offset) {
        const LoopRun without = run(bench_limits(), true, offset, 1, {}, bursty);
        print("bursts, p99 alone", offset, without);
        for (const auto& f : without.phases) late_without += f.late_over_seconds;
        const LoopRun r = run(with_queue, true, offset, 1, {}, bursty);
        print("bursts", offset, r);
        EXPECT_TRUE(r.nodes_agree);
        for (const auto& f : r.phases) {
            SCOPED_TRACE(f.name + " offset " + std::to_string(offset));
            // Training as with p99 alone (74-97 % of the best fixed ceil
            // over the offsets, 76-95 % here): at 200 req/s the class's ceil
            // is at the knee, and the search rests at 70.5 or 75.2 Mbit/s
            // per node of a best fixed 89.5, within min_gap (24) of the
            // ceil that broke or strained.
            expect_goals(f, 0.75);
        }
    }
    EXPECT_GT(late_without, 0) << "the bursts never cost a second without the congestion signal";
}

TEST(CeilControllerPlant, AStandingQueueInferenceDoesNotFeelCostsNoTraining) {
    // A queue of 6 ms from 85 % utilisation on, p99 with its margin: the
    // congestion signal is over its bound at every ceil near the knee, and
    // inference meets the SLO there. No strain: the same decisions as with
    // p99 alone, to the bit.
    Plant standing;
    standing.stands_above = 0.85;
    auto with_queue = bench_limits();
    with_queue.congestion_above = 0.002;
    for (int offset = 0; offset < kDwell; ++offset) {
        SCOPED_TRACE("offset " + std::to_string(offset));
        const LoopRun without = run(bench_limits(), true, offset, 1, {}, standing);
        const LoopRun r = run(with_queue, true, offset, 1, {}, standing);
        print("standing queue", offset, r);
        ASSERT_EQ(r.phases.size(), without.phases.size());
        for (size_t i = 0; i < r.phases.size(); ++i) {
            SCOPED_TRACE(r.phases[i].name);
            EXPECT_EQ(r.phases[i].changes, without.phases[i].changes);
            EXPECT_DOUBLE_EQ(r.phases[i].training, without.phases[i].training);
            expect_goals(r.phases[i], 0.9);
        }
    }
}

// The bench's strain by count: 2 of the last 6 decisions, a step of 0.92.
ControlLimits strain_counted(ControlLimits l) {
    l.strain_count = 2;
    l.strain_window = 6;
    l.strain_decrease = 0.92;
    return l;
}

TEST(CeilControllerPlant, AQueueCountedOverDecisionsFindsAKneeThatIsABand) {
    // A knee that is a band (from 90 % utilisation: one second in 20 over the
    // SLO, a queue in one of 4, p99 with its margin otherwise): the class's
    // ceil at 200 req/s and the search's midpoint at 1500 are in it, and
    // decisions see p99 with margin there nearly always. Without the count
    // the controller rests in the band and the seconds over the SLO come back
    // while the load stays; with strain_count = 2 of 6 and a step of 0.92 it
    // steps under the band (86.48 and 64.86 Mbit/s per node) within a few
    // decisions and stays: fewer seconds over the SLO at every offset (0-1
    // late at six offsets and 3 at one, against 5-9 over the five phases:
    // the count starts again at each step of the load, so a queue before the
    // step does not strain the ceil after it), at most 3 changes a phase,
    // training at 92-104 % of the best fixed ceil but at one offset, where a
    // second over the SLO met a decision in the band before the count did:
    // 94 broke at 200 req/s where 70.5 held, within min_gap (24), and the
    // fall rests at 70.5, 84 % (the trade min_gap makes).
    Plant band;
    band.sporadic_above = 0.9;
    auto queue_only = bench_limits();
    queue_only.congestion_above = 0.002;
    const auto counted = strain_counted(queue_only);
    for (int offset = 0; offset < kDwell; ++offset) {
        SCOPED_TRACE("offset " + std::to_string(offset));
        const LoopRun without = run(queue_only, true, offset, 2, {}, band);
        const LoopRun r = run(counted, true, offset, 2, {}, band);
        print("band, no count", offset, without);
        print("band, 2 of 6", offset, r);
        EXPECT_TRUE(r.nodes_agree);
        int late = 0, late_without = 0;
        for (size_t i = 0; i < r.phases.size(); ++i) {
            SCOPED_TRACE(r.phases[i].name);
            late += r.phases[i].late_over_seconds;
            late_without += without.phases[i].late_over_seconds;
            EXPECT_LE(r.phases[i].changes, 3);
            if (r.phases[i].best_fixed > 0) {
                EXPECT_GE(r.phases[i].training, 0.8 * r.phases[i].best_fixed);
            }
        }
        EXPECT_LE(late, 3);
        EXPECT_LT(late, late_without);
        EXPECT_LE(r.final_ceil, 86'480'000u) << "the run ends at 200 req/s, under the band";
    }
}

TEST(CeilControllerPlant, RestingUnderTheBandsTopMeetsEveryGoal) {
    // The same band, with rest_below = 0.1 on top of the count: the class's
    // ceil at 200 req/s is no resting point (94 -> 84.6 at the first
    // decision), and every search rests a tenth under the ceil that broke
    // or strained at its load. At every offset: no second over the SLO once
    // a decision could see the step (0-3 with the count alone), 1-2 changes
    // a phase, training at 94-101 % of the best fixed ceil.
    Plant band;
    band.sporadic_above = 0.9;
    auto counted = bench_limits();
    counted.congestion_above = 0.002;
    counted = strain_counted(counted);
    auto resting = counted;
    resting.rest_below = 0.1;
    for (int offset = 0; offset < kDwell; ++offset) {
        SCOPED_TRACE("offset " + std::to_string(offset));
        const LoopRun before = run(counted, true, offset, 2, {}, band);
        const LoopRun r = run(resting, true, offset, 2, {}, band);
        print("band, rest_below 0.1", offset, r);
        EXPECT_TRUE(r.nodes_agree);
        int late = 0, late_before = 0;
        for (size_t i = 0; i < r.phases.size(); ++i) {
            SCOPED_TRACE(r.phases[i].name);
            late += r.phases[i].late_over_seconds;
            late_before += before.phases[i].late_over_seconds;
            expect_goals(r.phases[i], 0.9);
        }
        EXPECT_EQ(late, 0);
        EXPECT_LE(late, late_before);
        EXPECT_LE(r.final_ceil, 84'600'000u) << "the run ends at 200 req/s, a tenth under the class's ceil";
    }
}

TEST(CeilControllerPlant, AQuietQueueRestsNearerTheKnee) {
    // The bench's day with the knee high: 75 Mbit/s per node at 1500 req/s,
    // over the class's ceil at 200, a queue from 95 % utilisation on (70 at
    // 1500 req/s, 91.7 at 200). rest_below 0.1 alone rests 84.6 at 200, and
    // at 1500 at the midpoint between the cut and the break (63.45 under
    // 84.6: 85 % of the best fixed ceil). With quiet_below, three quiet
    // decisions raise the ceil: 89.3 at 200, 75.9 at 1500.
    Plant early;
    early.early_queue_above = 0.95;
    auto resting = bench_limits();
    resting.congestion_above = 0.002;
    resting.rest_below = 0.1;
    auto quiet = resting;
    quiet.quiet_below = 0.0005;
    for (int offset = 0; offset < kDwell; ++offset) {
        SCOPED_TRACE("offset " + std::to_string(offset));
        const LoopRun before = run(resting, true, offset, 2, {}, early);
        const LoopRun r = run(quiet, true, offset, 2, {}, early);
        print("early queue, rest_below 0.1", offset, before);
        print("early queue, quiet_below", offset, r);
        EXPECT_TRUE(r.nodes_agree);
        for (size_t i = 0; i < r.phases.size(); ++i) {
            SCOPED_TRACE(r.phases[i].name);
            expect_goals(r.phases[i], 0.9);
            EXPECT_EQ(r.phases[i].probes_broken, 0);
            if (r.phases[i].best_fixed > 0) {
                EXPECT_GT(r.phases[i].training, before.phases[i].training);
            }
        }
        EXPECT_LT(before.phases[1].training, 0.9 * before.phases[1].best_fixed) << "the high phase without it";
        EXPECT_EQ(r.final_ceil, 89'300'000u) << "the run ends at 200 req/s, rest_below / 2 under the class's ceil";
    }
}

TEST(CeilControllerPlant, WithoutALoadSignalTheBackoffSpacesTheProbes) {
    // No load signal: one memory for every load, a break forgotten after the
    // back-off (4 dwells, doubling on each repeat). A long high phase sees
    // ever rarer probes of the ceil that broke.
    for (int offset = 0; offset < kDwell; ++offset) {
        const LoopRun r = run(bench_limits(), false, offset, 8);
        const auto& high = r.phases[1];
        SCOPED_TRACE("offset " + std::to_string(offset));
        // 360 s = 51 decisions: probes after 4, 8, 16 (and 32) dwells.
        EXPECT_LE(high.probes_broken, 4);
        EXPECT_LE(high.changes, 2 + 3 * high.probes_broken);
        EXPECT_GE(high.training, 0.85 * high.best_fixed);
    }
}

// A steady load on a bottleneck whose capacity changes under it (another job's
// traffic on the uplink starts or ends): the knee moves, the load signal does
// not. Figures per segment of constant capacity.
struct Segment {
    int seconds = 0;
    double capacity = 0;  // Mbit/s
};
struct SegmentFigures {
    int changes = 0;  // per node
    int breaks = 0;
    double training_end = 0;  // mean Mbit/s over the segment's last minute
    double best_fixed = 0;
};

std::vector<SegmentFigures> run_steady(const ControlLimits& limits, double load, const std::vector<Segment>& segments) {
    Plant plant;
    CeilController c(limits);
    std::vector<double> p99s;
    std::vector<SegmentFigures> out;
    int t = 0;
    for (const auto& segment : segments) {
        plant.capacity = segment.capacity;
        SegmentFigures f;
        f.best_fixed = 2 * plant.best_fixed(load);
        double sum = 0;
        int n = 0;
        for (int s = 0; s < segment.seconds; ++s, ++t) {
            if (t % kDwell == 0 && p99s.size() >= kDelay) {
                const size_t end = p99s.size() - 1;
                ControlSample sample;
                sample.value =
                    *std::max_element(p99s.begin() + static_cast<long>(end - 3), p99s.begin() + static_cast<long>(end));
                sample.load = load;
                const auto d = c.decide(t / kDwell, sample);
                if (d.changed()) ++f.changes;
                if (d.cause == ControlCause::OverSlo) ++f.breaks;
            }
            plant.second(static_cast<double>(c.ceil_bits()) / 1e6, load);
            p99s.push_back(plant.p99);
            if (s >= segment.seconds - 60) {
                sum += plant.training;
                ++n;
            }
        }
        f.training_end = sum / n;
        std::printf(
            "capacity %.0f Mbit/s, %d s: changes %d, breaks %d, training at the end %.1f Mbit/s = %.0f %% of "
            "the best fixed ceil\n",
            segment.capacity, segment.seconds, f.changes, f.breaks, f.training_end,
            100 * f.training_end / f.best_fixed);
        out.push_back(f);
    }
    return out;
}

TEST(CeilControllerPlant, AKneeThatRoseUnderASteadyLoadGetsItsCeilBack) {
    // 150 Mbit/s at 1500 req/s: the search rests under 94 Mbit/s, which broke
    // at this load and never held. Then the uplink's other traffic ends (200
    // Mbit/s): the break counts for the longest back-off (64 x 4 dwells), then
    // the ceil is tried again and the search goes on above it.
    const auto l = bench_limits();
    const int longest = static_cast<int>(l.backoff_ticks) * 64 * kDwell;
    const auto r = run_steady(l, 1500, {{600, 150}, {longest + 600, 200}});
    EXPECT_LE(r[0].breaks, 2);
    EXPECT_GE(r[0].training_end, 0.9 * r[0].best_fixed);
    EXPECT_GT(r[1].best_fixed, 1.2 * r[0].training_end) << "the plant's knee did not rise";
    EXPECT_GE(r[1].training_end, 0.9 * r[1].best_fixed);
    EXPECT_LE(r[1].breaks, 2);
    EXPECT_LE(r[1].changes, 6);
}

TEST(CeilControllerPlant, AKneeThatFellUnderASteadyLoadIsFoundAfterTwoBreaks) {
    // The other way: the ceil that held at 200 Mbit/s breaks at 150. Once may
    // be noise (a back-off); broken again when tried after it, what held is
    // forgotten and the search goes on below: it rests within min_gap under
    // the new knee, with no probe every doubled back-off (kept, the held
    // ceil was tried 6 times in these 30 minutes).
    const auto l = bench_limits();
    const auto r = run_steady(l, 1500, {{600, 200}, {1800, 150}});
    EXPECT_GE(r[0].training_end, 0.9 * r[0].best_fixed);
    EXPECT_LE(r[1].training_end, r[1].best_fixed * 1.0001) << "resting above the knee";
    EXPECT_GE(r[1].training_end, r[1].best_fixed - 2 * static_cast<double>(l.min_gap_bits) / 1e6);
    EXPECT_LE(r[1].breaks, 3);
    EXPECT_LE(r[1].changes, 6);
}

}  // namespace
}  // namespace lanes::agent
