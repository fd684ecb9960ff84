// SPDX-License-Identifier: GPL-2.0-or-later
// The ceil controller ([classes.NAME.control]): AIMD with a dead band, the
// memory of the ceil that broke the SLO, and nodes that agree.
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <vector>

#include "agent/ceil_controller.hpp"

namespace lanes::agent {
namespace {

constexpr uint64_t M = 1'000'000;

ControlLimits limits() {
    ControlLimits l;
    l.floor_bits = 10 * M;
    l.ceil_bits = 100 * M;
    l.step_bits = 10 * M;
    l.min_gap_bits = 10 * M;
    l.decrease = 0.5;
    l.slo = 10;
    l.margin = 0.2;  // increase at <= 8
    l.backoff_ticks = 4;
    return l;
}

ControlSample v(double value) { return ControlSample{value, std::nullopt}; }

TEST(CeilController, DecreasesMultiplicativelyDownToTheFloor) {
    CeilController c(limits());
    EXPECT_EQ(c.ceil_bits(), 100 * M);
    auto d = c.decide(1, v(12));
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(d.from_bits, 100 * M);
    EXPECT_EQ(d.to_bits, 50 * M);
    EXPECT_EQ(c.decide(2, v(12)).to_bits, 25 * M);
    EXPECT_EQ(c.decide(3, v(12)).to_bits, 12'500'000u);
    EXPECT_EQ(c.decide(4, v(12)).to_bits, 10 * M);  // the floor
    d = c.decide(5, v(12));
    EXPECT_FALSE(d.changed());
    EXPECT_EQ(d.cause, ControlCause::None);
}

TEST(CeilController, NoValueDecreasesWithItsOwnCause) {
    CeilController c(limits());
    auto d = c.decide(1, ControlSample{});
    EXPECT_EQ(d.cause, ControlCause::NoValue);
    EXPECT_EQ(d.to_bits, 50 * M);
    // No memory of a break: the value comes back with margin, it climbs.
    EXPECT_EQ(c.decide(2, v(1)).to_bits, 60 * M);
    EXPECT_FALSE(c.broken_ceil(2, std::nullopt));
}

TEST(CeilController, ABreakCutsInProportionToItsOvershootWhereNothingHeld) {
    ControlLimits l = limits();
    l.full_decrease_at = 3;  // the whole decrease from a value of 30
    auto first_cut = [&](std::optional<double> value) {
        CeilController c(l);
        return static_cast<double>(c.decide(1, ControlSample{value, std::nullopt}).to_bits);
    };
    EXPECT_NEAR(first_cut(12), 95.0 * M, 1);            // a tenth of the way: a tenth of the cut
    EXPECT_NEAR(first_cut(20), 75.0 * M, 1);            // half
    EXPECT_NEAR(first_cut(30), 50.0 * M, 1);            // the whole decrease
    EXPECT_NEAR(first_cut(300), 50.0 * M, 1);           // never deeper
    EXPECT_NEAR(first_cut(10.01), 95.0 * M, 1);         // at least a tenth of the cut
    EXPECT_NEAR(first_cut(std::nullopt), 50.0 * M, 1);  // no value: the whole
    EXPECT_NEAR(first_cut(std::numeric_limits<double>::infinity()), 50.0 * M, 1);
    l.full_decrease_at = 1;  // the default: every break the whole
    EXPECT_NEAR(first_cut(12), 50.0 * M, 1);
}

TEST(CeilController, AProbeThatBreaksMildlyStillGoesBelowTheCeilThatHeld) {
    ControlLimits l = limits();
    l.full_decrease_at = 3;
    CeilController c(l);
    EXPECT_NEAR(static_cast<double>(c.decide(1, v(16)).to_bits), 85.0 * M, 1);
    const uint64_t held = c.ceil_bits();
    const uint64_t probe = c.decide(2, v(1)).to_bits;  // held; the midpoint to the 100 that broke
    EXPECT_NEAR(static_cast<double>(probe), 92.5 * M, 1);
    // The probe breaks by a little: not to 95 % of it (above what held), but
    // as far below what held as the probe went above it, as without the key.
    auto d = c.decide(3, v(12));
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(d.to_bits, 2 * held - probe);
}

TEST(CeilController, AReturnToACeilThatHeldIsNoProbe) {
    ControlLimits l = limits();
    l.full_decrease_at = 3;
    CeilController c(l);
    EXPECT_FALSE(c.decide(1, ControlSample{1, 200}).changed());  // the class's ceil holds at 200
    EXPECT_EQ(c.decide(2, ControlSample{50, 1500}).to_bits, 50 * M);
    // Back at 200: straight to the 100 that held there, a return, not a probe.
    EXPECT_EQ(c.decide(3, ControlSample{1, 200}).to_bits, 100 * M);
    // It breaks by a little: the proportional cut (x0.85 at 1.6 times the
    // SLO), not as far below the 50 that held at 1500 as it is above it.
    auto d = c.decide(4, ControlSample{16, 200});
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_NEAR(static_cast<double>(d.to_bits), 85.0 * M, 1);
}

TEST(CeilController, ARestingCeilThatBreaksMildlyIsCutInProportion) {
    ControlLimits l = limits();
    l.full_decrease_at = 3;
    CeilController c(l);
    EXPECT_EQ(c.decide(1, ControlSample{30, 1000}).to_bits, 50 * M);  // the whole cut
    for (int64_t t = 2; t <= 5; ++t) c.decide(t, ControlSample{1, 1000});
    EXPECT_EQ(c.ceil_bits(), 90 * M);
    EXPECT_FALSE(c.decide(6, ControlSample{1, 1000}).changed());  // at rest: 100 - 90 <= min_gap
    // 90, which held here, breaks by a little (noise at the knee): 5 % off,
    // not back to a lower ceil that held.
    auto d = c.decide(7, ControlSample{12, 1000});
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_NEAR(static_cast<double>(d.to_bits), 85.5 * M, 1);
    // Without the key, back to the ceil that held below it.
    CeilController whole(limits());
    whole.decide(1, ControlSample{30, 1000});
    for (int64_t t = 2; t <= 6; ++t) whole.decide(t, ControlSample{1, 1000});
    EXPECT_EQ(whole.ceil_bits(), 90 * M);
    EXPECT_LT(whole.decide(7, ControlSample{12, 1000}).to_bits, 85 * M);
}

TEST(CeilController, DeadBandHolds) {
    CeilController c(limits());
    c.decide(1, v(12));  // 50
    for (int64_t t = 2; t < 20; ++t) {
        auto d = c.decide(t, v(9));  // within slo, not with margin
        EXPECT_FALSE(d.changed());
    }
    EXPECT_EQ(c.ceil_bits(), 50 * M);
}

TEST(CeilController, IncreasesAdditivelyUpToTheCeil) {
    auto l = limits();
    CeilController c(l);
    c.decide(2, ControlSample{});  // 50, nothing remembered
    uint64_t last = 50 * M;
    for (int64_t t = 3; t < 9; ++t) {
        auto d = c.decide(t, v(1));
        EXPECT_EQ(d.to_bits, std::min(100 * M, last + 10 * M));
        EXPECT_EQ(d.cause, d.changed() ? ControlCause::Headroom : ControlCause::None);
        last = d.to_bits;
    }
    EXPECT_EQ(c.ceil_bits(), 100 * M);
}

TEST(CeilController, DecidesOncePerTick) {
    CeilController c(limits());
    EXPECT_TRUE(c.decide(5, v(12)).changed());
    EXPECT_FALSE(c.decide(5, v(12)).changed());
    EXPECT_FALSE(c.decide(4, v(12)).changed());  // never back
    EXPECT_EQ(c.ceil_bits(), 50 * M);
}

TEST(CeilController, HoldsBelowTheCeilThatBrokeTheSlo) {
    CeilController c(limits());
    c.decide(10, v(12));  // 100 broke it: 50, held below 90 for 4 ticks
    ASSERT_TRUE(c.broken_ceil(11, std::nullopt));
    EXPECT_EQ(*c.broken_ceil(11, std::nullopt), 100 * M);
    EXPECT_EQ(c.decide(11, v(1)).to_bits, 60 * M);
    EXPECT_EQ(c.decide(12, v(1)).to_bits, 70 * M);
    EXPECT_EQ(c.decide(13, v(1)).to_bits, 80 * M);
    EXPECT_EQ(c.decide(13, v(1)).to_bits, 80 * M);
    // Tick 14 = break + back-off: the memory expires, the climb goes on.
    EXPECT_EQ(c.decide(14, v(1)).to_bits, 90 * M);
    EXPECT_EQ(c.decide(15, v(1)).to_bits, 100 * M);
}

TEST(CeilController, RepeatedBreaksDoubleTheBackoff) {
    auto l = limits();
    l.step_bits = l.min_gap_bits = 25 * M;  // 50 -> 75 -> 100 in two steps
    CeilController c(l);
    int64_t t = 0;
    c.decide(++t, v(12));  // 100 broke: 50; back-off 4
    EXPECT_EQ(c.backoff_ticks(), 4);
    // Climb to 75 (held below 100 - 25 = 75), wait out the back-off, try 100.
    while (c.ceil_bits() < 100 * M) c.decide(++t, v(1));
    EXPECT_EQ(t, 5);       // 75 at tick 2, held at 75 in ticks 3-4, 100 at tick 5
    c.decide(++t, v(12));  // 100 broke again: 50, back-off 8
    EXPECT_EQ(c.backoff_ticks(), 8);
    const int64_t broke = t;
    while (c.ceil_bits() < 100 * M) c.decide(++t, v(1));
    EXPECT_EQ(t, broke + 8);
    c.decide(++t, v(12));
    EXPECT_EQ(c.backoff_ticks(), 16);
    // A probe that breaks it steps back a step below the ceil that held
    // (here what the factor gives too): the cycles get longer.
    EXPECT_EQ(c.ceil_bits(), 50 * M);
}

TEST(CeilController, AProbeThatBreaksStepsBackBelowTheCeilThatHeld) {
    CeilController c(limits());
    EXPECT_EQ(c.decide(1, v(12)).to_bits, 50 * M);
    EXPECT_EQ(c.decide(2, v(1)).to_bits, 60 * M);
    // The increase from 50 broke it: a step below 50 (the factor would give 30),
    // which drains what the probe queued, then back up to 50 (one step below
    // the 60 that broke it), and no higher.
    auto d = c.decide(3, v(12));
    EXPECT_EQ(d.to_bits, 40 * M);
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(c.decide(4, v(1)).to_bits, 50 * M);
    EXPECT_FALSE(c.decide(5, v(1)).changed());
    // A second break right after (no increase in between): the factor.
    EXPECT_EQ(c.decide(6, v(12)).to_bits, 25 * M);
}

TEST(CeilController, BackoffIsBounded) {
    auto l = limits();
    l.step_bits = l.min_gap_bits = 50 * M;
    CeilController c(l);
    int64_t t = 0;
    for (int i = 0; i < 20; ++i) {
        c.decide(++t, v(12));
        while (c.ceil_bits() < 100 * M) c.decide(++t, v(1));
    }
    EXPECT_EQ(c.backoff_ticks(), 4 * 64);
}

TEST(CeilController, ALoadThatFellLiftsTheMemory) {
    CeilController c(limits());
    c.decide(1, ControlSample{12, 1000});  // break at load 1000
    EXPECT_EQ(c.decide(2, ControlSample{1, 1000}).to_bits, 60 * M);
    EXPECT_EQ(c.decide(3, ControlSample{1, 950}).to_bits, 70 * M);
    EXPECT_EQ(c.decide(4, ControlSample{1, 900}).to_bits, 80 * M);
    EXPECT_EQ(c.decide(5, ControlSample{1, 900}).to_bits, 90 * M);
    // Held as long as the load is high, back-off or not.
    for (int64_t t = 6; t < 100; ++t) EXPECT_FALSE(c.decide(t, ControlSample{1, 900}).changed());
    // The load fell by more than the margin: 100 may be tried again.
    EXPECT_EQ(c.decide(100, ControlSample{1, 700}).to_bits, 100 * M);
}

TEST(CeilController, ALoadSeenBeforeGoesStraightToTheCeilThatHeldThere) {
    CeilController c(limits());
    EXPECT_EQ(c.decide(1, ControlSample{12, 1000}).to_bits, 50 * M);  // 100 broke at 1000 req/s
    // Halving the gap between 50 (held) and 100 (broke), steps of at most 10.
    EXPECT_EQ(c.decide(2, ControlSample{1, 1000}).to_bits, 60 * M);
    EXPECT_EQ(c.decide(3, ControlSample{1, 1000}).to_bits, 70 * M);
    EXPECT_EQ(c.decide(4, ControlSample{1, 1000}).to_bits, 80 * M);
    EXPECT_EQ(c.decide(5, ControlSample{1, 1000}).to_bits, 90 * M);
    EXPECT_FALSE(c.decide(6, ControlSample{1, 1000}).changed());  // 100 - 90 <= min_gap
    EXPECT_EQ(*c.held_ceil(6, 1000.0), 90 * M);
    // The load falls: what broke at 1000 says nothing at 200.
    EXPECT_EQ(c.decide(7, ControlSample{1, 200}).to_bits, 100 * M);
    EXPECT_FALSE(c.decide(8, ControlSample{1, 200}).changed());
    // Back to 1000: straight to the 90 that held there, not 100 * decrease.
    auto d = c.decide(9, ControlSample{12, 1000});
    EXPECT_EQ(d.to_bits, 90 * M);
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_FALSE(c.decide(10, ControlSample{1, 1000}).changed());
    // And down again: straight to the 100 that held at 200.
    EXPECT_EQ(c.decide(11, ControlSample{1, 200}).to_bits, 100 * M);
    // A load between: 100 broke at 1000, so at 900 too (not clearly lower);
    // 90 held at 1000, so at 900 too. The last decision returned to 100,
    // which held at 200: no probe, a resting ceil: its cut (the whole
    // decrease here) no lower than the 90 that held, and it rests there.
    EXPECT_EQ(c.decide(12, ControlSample{12, 900}).to_bits, 90 * M);
    EXPECT_FALSE(c.decide(13, ControlSample{1, 900}).changed());
}

TEST(CeilController, ARisesFirstDecisionProbesNothingAndRemembersNothing) {
    CeilController c(limits());
    EXPECT_FALSE(c.decide(1, ControlSample{1, 200}).changed());  // 100 held at 200
    EXPECT_EQ(c.decide(2, ControlSample{12, 1000}).to_bits, 50 * M);
    EXPECT_EQ(c.decide(3, ControlSample{1, 1000}).to_bits, 60 * M);  // 50 held at 1000
    EXPECT_EQ(c.decide(4, ControlSample{1, 1000}).to_bits, 70 * M);  // 60 too
    // Down to 600, where 70 holds and probes 80: 100 broke at 1000, and
    // 600 is clearly under it.
    EXPECT_EQ(c.decide(5, ControlSample{1, 600}).to_bits, 80 * M);
    EXPECT_EQ(*c.held_ceil(5, 600.0), 70 * M);
    // The load read rose to 1000: the decision's ranges may hold 600 and
    // the load now, and the SLO met says little of 80 at 1000. No change,
    // and 80 is not remembered as held there.
    auto d = c.decide(6, ControlSample{1, 1000});
    EXPECT_FALSE(d.changed());
    EXPECT_EQ(*c.held_ceil(6, 1000.0), 60 * M);
    // The next one, at the same load, judges it and goes on: 80 held, the
    // midpoint to 100 is 90.
    EXPECT_EQ(c.decide(7, ControlSample{1, 1000}).to_bits, 90 * M);
    EXPECT_EQ(*c.held_ceil(7, 1000.0), 80 * M);
    // A rise right after a break: the break's cut is what it judges (at the
    // load it read, at most the load now), and the search goes on.
    EXPECT_EQ(c.decide(8, ControlSample{12, 1000}).to_bits, 70 * M);  // a probe from 80: 80 - (90 - 80)
    d = c.decide(9, ControlSample{1, 1500});
    EXPECT_EQ(d.cause, ControlCause::Headroom);
    EXPECT_EQ(*c.held_ceil(9, 1500.0), 70 * M);
}

TEST(CeilController, AProbeFromALoadThatFellIsNoProbeWhereItHeld) {
    CeilController c(limits());
    EXPECT_FALSE(c.decide(1, ControlSample{1, 200}).changed());       // 100 held at 200
    EXPECT_EQ(c.decide(2, ControlSample{12, 1500}).to_bits, 50 * M);  // and broke at 1500
    EXPECT_EQ(c.decide(3, ControlSample{1, 1500}).to_bits, 60 * M);   // 50 held there
    // The fall's first decision read 1000 (1500 and 200 in its ranges):
    // nothing broke at 1000, 60 holds and goes up a step, a probe there.
    EXPECT_EQ(c.decide(4, ControlSample{1, 1000}).to_bits, 70 * M);
    // At 200 it breaks. 100 held at 200, so 70 was no probe here: a resting
    // ceil's cut, no lower than the 60 that held (at 1000), not the
    // probe's drain to 60 - (70 - 60).
    auto d = c.decide(5, ControlSample{12, 200});
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(d.to_bits, 60 * M);
}

TEST(CeilController, ALoadWellAboveWhereTheCeilHeldGoesToTheCeilThatHeldHigherUp) {
    CeilController c(limits());
    EXPECT_FALSE(c.decide(1, ControlSample{1, 200}).changed());       // 100 held at 200
    EXPECT_EQ(c.decide(2, ControlSample{12, 1000}).to_bits, 50 * M);  // and broke at 1000
    for (int64_t t = 3; t <= 7; ++t) c.decide(t, ControlSample{1, 1000});
    EXPECT_EQ(*c.held_ceil(7, 1000.0), 90 * M);  // 90 held at 1000
    EXPECT_EQ(c.decide(8, ControlSample{1, 200}).to_bits, 100 * M);
    // A load within the margin over the one 100 held at: the SLO decides.
    EXPECT_FALSE(c.decide(9, ControlSample{1, 230}).changed());
    // Well above it (460 > 230 * 1.2), under the 1000 where 100 broke and 90
    // held: the knee is somewhere between, so 90 before a bad row says where.
    auto d = c.decide(10, ControlSample{1, 460});
    EXPECT_EQ(d.cause, ControlCause::LoadRose);
    EXPECT_STREQ(control_cause_name(d.cause), "load_rose");
    EXPECT_EQ(d.to_bits, 90 * M);
    // 100 counts as broken at 460 now: no probe back (the gap is min_gap),
    // and none at the loads above it.
    EXPECT_EQ(*c.broken_ceil(11, 460.0), 100 * M);
    EXPECT_FALSE(c.decide(11, ControlSample{1, 460}).changed());
    EXPECT_FALSE(c.decide(12, ControlSample{1, 720}).changed());
    EXPECT_FALSE(c.decide(13, ControlSample{1, 1000}).changed());
    // The load falls to where 100 held: straight back.
    EXPECT_EQ(c.decide(14, ControlSample{1, 200}).to_bits, 100 * M);
}

TEST(CeilController, NoGuessRightAfterABreak) {
    auto l = limits();
    l.full_decrease_at = 4;  // a break just over the SLO cuts by a tenth of decrease
    CeilController c(l);
    EXPECT_FALSE(c.decide(1, ControlSample{1, 200}).changed());       // 100 held at 200
    EXPECT_EQ(c.decide(2, ControlSample{50, 1000}).to_bits, 50 * M);  // and broke at 1000
    for (int64_t t = 3; t <= 6; ++t) c.decide(t, ControlSample{1, 1000});
    EXPECT_EQ(c.ceil_bits(), 90 * M);
    EXPECT_EQ(c.decide(7, ControlSample{50, 1000}).to_bits, 70 * M);  // 90 broke there too: 80 - (90 - 80)
    EXPECT_EQ(c.decide(8, ControlSample{1, 1000}).to_bits, 80 * M);   // 80 held at 1000
    EXPECT_EQ(c.decide(9, ControlSample{1, 200}).to_bits, 100 * M);
    // Just over the SLO at 200: a tenth of the cut, 95.
    EXPECT_EQ(c.decide(10, ControlSample{10.5, 200}).to_bits, 95 * M);
    // 460 is well above the 200 where 100 held, 90 broke at 1000 and 80
    // held there: a guess (80) but for the break just before. Its cut is
    // what this decision judges: 95 held at 460, within min_gap of the 100
    // that broke.
    auto d = c.decide(11, ControlSample{1, 460});
    EXPECT_NE(d.cause, ControlCause::LoadRose);
    EXPECT_FALSE(d.changed());
    EXPECT_EQ(*c.held_ceil(11, 460.0), 95 * M);
}

TEST(CeilController, ALoadRiseWithNothingBrokenHigherUpIsNoGuess) {
    CeilController c(limits());
    EXPECT_FALSE(c.decide(1, ControlSample{1, 200}).changed());
    // Nothing broke anywhere: a higher load keeps the ceil until the SLO says.
    EXPECT_FALSE(c.decide(2, ControlSample{1, 1000}).changed());
    EXPECT_FALSE(c.decide(3, ControlSample{1, 1000}).changed());
    EXPECT_EQ(c.decide(4, ControlSample{12, 1500}).cause, ControlCause::OverSlo);
    // 50 held at 1500 (60 not yet), 100 broke there and held at 1000. A rise
    // to 1300 with the SLO broken is a break, cut as any other (no lower
    // than the 50 that held higher up), not a guess.
    EXPECT_EQ(c.decide(5, ControlSample{1, 1500}).to_bits, 60 * M);
    EXPECT_EQ(c.decide(6, ControlSample{1, 1000}).to_bits, 100 * M);
    auto d = c.decide(7, ControlSample{12, 1300});
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(d.to_bits, 50 * M);
}

TEST(CeilController, ABreakWhereTheCeilHeldCountsForTheBackoffOnly) {
    CeilController c(limits());
    EXPECT_FALSE(c.decide(1, ControlSample{1, 200}).changed());  // 100 holds at 200 req/s
    // One noisy value at the same load: cut, remembered for 4 ticks only.
    EXPECT_EQ(c.decide(2, ControlSample{12, 200}).to_bits, 50 * M);
    EXPECT_EQ(*c.broken_ceil(2, 200.0), 100 * M);
    EXPECT_EQ(c.decide(3, ControlSample{1, 200}).to_bits, 60 * M);
    EXPECT_EQ(c.decide(4, ControlSample{1, 200}).to_bits, 70 * M);
    EXPECT_EQ(c.decide(5, ControlSample{1, 200}).to_bits, 80 * M);
    // Tick 6 = the break + the back-off: 100, which held here, counts again.
    EXPECT_FALSE(c.broken_ceil(6, 200.0));
    EXPECT_EQ(c.decide(6, ControlSample{1, 200}).to_bits, 100 * M);
    // A ceil never seen to hold at a load: remembered while the load stays,
    // up to the longest back-off (64 x 4 ticks).
    EXPECT_EQ(c.decide(7, ControlSample{12, 1000}).to_bits, 50 * M);
    EXPECT_EQ(*c.broken_ceil(7 + 255, 1000.0), 100 * M);
    EXPECT_FALSE(c.broken_ceil(7 + 256, 1000.0));
}

TEST(CeilController, ACeilThatHeldAndBreaksTwiceIsForgotten) {
    CeilController c(limits());
    EXPECT_FALSE(c.decide(1, ControlSample{1, 200}).changed());      // 100 holds at 200 req/s
    EXPECT_EQ(c.decide(2, ControlSample{12, 200}).to_bits, 50 * M);  // and breaks: noise? the back-off
    EXPECT_EQ(c.decide(3, ControlSample{1, 200}).to_bits, 60 * M);
    EXPECT_EQ(c.decide(4, ControlSample{1, 200}).to_bits, 70 * M);
    EXPECT_EQ(c.decide(5, ControlSample{1, 200}).to_bits, 80 * M);
    EXPECT_EQ(c.decide(6, ControlSample{1, 200}).to_bits, 100 * M);  // the back-off is over: it held here
    // It breaks again: the plant changed. What held at 100 is forgotten; the
    // search goes on below (the return to 100 was no probe: down to the 80
    // that held, then the midpoint above it).
    EXPECT_EQ(c.decide(7, ControlSample{12, 200}).to_bits, 80 * M);
    EXPECT_EQ(c.decide(8, ControlSample{1, 200}).to_bits, 90 * M);
    // 100 - 90 <= min_gap: it rests, with no probe at each back-off, until the
    // break is older than the longest back-off (64 x 4 ticks).
    for (int64_t t = 9; t < 7 + 256; ++t) EXPECT_FALSE(c.decide(t, ControlSample{1, 200}).changed()) << t;
    EXPECT_EQ(c.decide(7 + 256, ControlSample{1, 200}).to_bits, 100 * M);
}

TEST(CeilController, ABreakAtAnotherLoadDoesNotMakeNoiseASecondBreak) {
    CeilController c(limits());
    EXPECT_FALSE(c.decide(1, ControlSample{1, 200}).changed());       // 100 holds at 200 req/s
    EXPECT_EQ(c.decide(2, ControlSample{12, 1000}).to_bits, 50 * M);  // and breaks at 1000
    for (int64_t t = 3; t <= 6; ++t) c.decide(t, ControlSample{1, 1000});
    EXPECT_EQ(c.ceil_bits(), 90 * M);
    EXPECT_EQ(c.decide(7, ControlSample{1, 200}).to_bits, 100 * M);  // back at 200, where it held
    // One noisy value there: the first break of 100 at this load, for the
    // back-off only (doubled: 100 broke last, at 1000); 100 held here. The
    // return was no probe: down to the 90 that held (at 1000), not below it.
    EXPECT_EQ(c.decide(8, ControlSample{12, 200}).to_bits, 90 * M);
    for (int64_t t = 9; t < 16; ++t) EXPECT_FALSE(c.decide(t, ControlSample{1, 200}).changed()) << t;
    EXPECT_EQ(c.decide(16, ControlSample{1, 200}).to_bits, 100 * M);
}

TEST(CeilController, ABreakAtALowLoadStillBoundsEveryHigherLoad) {
    CeilController c(limits());
    EXPECT_FALSE(c.decide(1, ControlSample{1, 200}).changed());      // 100 holds at 200 req/s
    EXPECT_EQ(c.decide(2, ControlSample{12, 200}).to_bits, 50 * M);  // and breaks there: the back-off
    EXPECT_EQ(c.decide(3, ControlSample{1, 200}).to_bits, 60 * M);
    EXPECT_EQ(c.decide(4, ControlSample{1, 200}).to_bits, 70 * M);
    EXPECT_EQ(c.decide(5, ControlSample{1, 200}).to_bits, 80 * M);
    // The back-off is over and the load steps up: at 1000 req/s 100 never
    // held, and it broke at a lower load: the midpoint (once a decision
    // has seen 1000 only), then rest.
    EXPECT_EQ(*c.broken_ceil(6, 1000.0), 100 * M);
    EXPECT_FALSE(c.decide(6, ControlSample{1, 1000}).changed());
    EXPECT_EQ(c.decide(7, ControlSample{1, 1000}).to_bits, 90 * M);
    EXPECT_FALSE(c.decide(8, ControlSample{1, 1000}).changed());  // 100 - 90 <= min_gap
    // Back at 200, where 100 held: it counts again.
    EXPECT_FALSE(c.broken_ceil(9, 200.0));
    EXPECT_EQ(c.decide(9, ControlSample{1, 200}).to_bits, 100 * M);
}

TEST(CeilController, BreaksInARowCountForTheBackoffOnly) {
    // A stall of the host: p99 over the SLO at every ceil down to the floor.
    CeilController c(limits());
    EXPECT_EQ(c.decide(1, ControlSample{12, 200}).to_bits, 50 * M);  // the first break: remembered
    EXPECT_EQ(c.decide(2, ControlSample{12, 200}).to_bits, 25 * M);  // then the back-off only
    EXPECT_EQ(c.decide(3, ControlSample{12, 200}).to_bits, 12'500'000u);
    EXPECT_EQ(c.decide(4, ControlSample{12, 200}).to_bits, 10 * M);
    // The floor holds; the break of 12.5 bounds it until its back-off ends
    // (tick 8), then the search goes on below the first break.
    for (int64_t t = 5; t < 8; ++t) EXPECT_FALSE(c.decide(t, ControlSample{1, 200}).changed()) << t;
    EXPECT_EQ(c.decide(8, ControlSample{1, 200}).to_bits, 20 * M);
    EXPECT_EQ(c.decide(9, ControlSample{1, 200}).to_bits, 30 * M);
    EXPECT_EQ(*c.broken_ceil(100, 200.0), 100 * M);  // the first break lasts while the load stays
}

TEST(CeilController, AResolutionFinerThanTheStepBisects) {
    auto l = limits();
    l.step_bits = 50 * M;
    l.min_gap_bits = 5 * M;
    // The plant breaks above 80.
    auto plant = [](uint64_t ceil) { return ceil > 80 * M ? 14.0 : 3.0; };
    CeilController c(l);
    std::vector<uint64_t> ceils;
    for (int64_t t = 1; t <= 16; ++t) {
        c.decide(t, v(plant(c.ceil_bits())));
        ceils.push_back(c.ceil_bits() / M);
    }
    // 100 broke: 50; the midpoint 75 holds; 87.5 breaks: drain at 62.5, then
    // the midpoint above 75; 81.25 breaks: drain at 68.75; 78.125 holds; the
    // gap to 81.25 is under 5: it rests there. The back-off (4 ticks, no load
    // signal) ends at tick 10: 81.25 is tried again (no higher), breaks, and
    // the back-off doubles (a repeat within min_gap): 78.125 until tick 19.
    EXPECT_EQ(ceils, (std::vector<uint64_t>{50, 75, 87, 62, 81, 68, 78, 78, 78, 81, 75, 78, 78, 78, 78, 78}));
    EXPECT_EQ(c.backoff_ticks(), 8);
}

TEST(CeilController, SteadyLoadSettlesWithBoundedChanges) {
    // A plant: the SLO signal is over the SLO when the ceil is above 62 Mbit/s,
    // in the dead band between 45 and 62, with margin below.
    auto plant = [](uint64_t ceil) { return ceil > 62 * M ? 14.0 : ceil > 45 * M ? 9.0 : 3.0; };
    CeilController c(limits());
    int changes_late = 0;
    for (int64_t t = 1; t <= 400; ++t) {
        auto d = c.decide(t, v(plant(c.ceil_bits())));
        if (t > 40 && d.changed()) ++changes_late;
        EXPECT_GE(c.ceil_bits(), 10 * M);
        EXPECT_LE(c.ceil_bits(), 100 * M);
    }
    // 100 -> 50 (dead band: rests there).
    EXPECT_EQ(c.ceil_bits(), 50 * M);
    EXPECT_EQ(changes_late, 0);
}

TEST(CeilController, SteadyLoadWithoutDeadBandProbesEverMoreRarely) {
    // No dead band in the plant: the safe ceils all have margin, the unsafe
    // ones break the SLO. The controller probes the broken ceil with a
    // doubling back-off: few changes in a long steady run.
    auto plant = [](uint64_t ceil) { return ceil > 62 * M ? 14.0 : 3.0; };
    CeilController c(limits());
    int changes = 0, breaks = 0;
    for (int64_t t = 1; t <= 1000; ++t) {
        auto d = c.decide(t, v(plant(c.ceil_bits())));
        if (d.changed()) ++changes;
        if (d.cause == ControlCause::OverSlo) ++breaks;
    }
    // Back-offs of 4, 8, ..., 256 ticks: about ten probes in 1000 ticks, three
    // changes each (the probe, the step back below the ceil that held, and
    // the climb back to it), after the first cut.
    EXPECT_LE(breaks, 11);
    EXPECT_LE(changes, 3 * breaks + 6);
    EXPECT_LE(c.ceil_bits(), 100 * M);
    EXPECT_GE(c.ceil_bits(), 30 * M);
}

TEST(CeilController, NodesWithTheSameSamplesAgree) {
    // Two agents, one started 7 ticks later (at the class's ceil), fed the
    // same cluster-wide samples: equal after the first decrease that both see
    // reaches the floor or the ceil, and from then on.
    std::vector<double> samples;
    for (int i = 0; i < 60; ++i) samples.push_back(i % 20 < 8 ? 14.0 : 2.0);
    CeilController a(limits()), b(limits());
    for (int64_t t = 0; t < 60; ++t) {
        a.decide(t, v(samples[t]));
        if (t >= 7) b.decide(t, v(samples[t]));
    }
    EXPECT_EQ(a.ceil_bits(), b.ceil_bits());
}

TEST(CeilController, ResolveAgainstTheLink) {
    CeilControlConfig cfg;
    cfg.floor = Rate{0, 10};
    cfg.increase = Rate{5'000'000, 0};
    cfg.decrease = 0.7;
    cfg.slo = 0.01;
    cfg.dwell = std::chrono::seconds{10};
    cfg.backoff = std::chrono::seconds{35};
    auto l = resolve_control(cfg, Rate{0, 100}, 1'000'000'000);
    EXPECT_EQ(l.floor_bits, 100 * M);
    EXPECT_EQ(l.ceil_bits, 1000 * M);
    EXPECT_EQ(l.step_bits, 5 * M);
    EXPECT_EQ(l.min_gap_bits, 5 * M);  // unset: the increase
    EXPECT_EQ(l.backoff_ticks, 4);     // 35 s in 10 s ticks, rounded up
    cfg.min_gap = Rate{0, 2.5};
    EXPECT_EQ(resolve_control(cfg, Rate{0, 100}, 1'000'000'000).min_gap_bits, 25 * M);
    cfg.backoff = std::chrono::seconds{0};
    EXPECT_EQ(resolve_control(cfg, Rate{0, 100}, 1'000'000'000).backoff_ticks, 4);
    // A floor above the class's ceil on a slow link: the ceil.
    EXPECT_EQ(resolve_control(cfg, Rate{50 * M, 0}, 1'000'000'000).floor_bits, 50 * M);
}

TEST(CeilController, TicksAreWallClockMultiplesOfTheDwell) {
    EXPECT_EQ(next_tick(100.0, 10), 11);
    EXPECT_EQ(next_tick(109.999, 10), 11);
    EXPECT_EQ(next_tick(110.0, 10), 12);
    EXPECT_EQ(next_tick(5.0, 0), 6);  // a dwell of 0 is taken as 1 s
}

// The decision of a tick uses the values Prometheus gives for the signals'
// last instants before it, the same on every node: it waits for them, and no
// longer than their fetch can take.
TEST(CeilController, ADecisionWaitsForTheValuesOfItsInstant) {
    using std::chrono::milliseconds;
    using std::chrono::seconds;
    const SignalClock::time_point at{seconds{700}};  // tick 100 of a 7 s dwell
    DecisionSignal p99{milliseconds{1000}, milliseconds{2000}, std::nullopt};
    EXPECT_FALSE(decision_wait(100, 7, {p99}, at - milliseconds{1}).ready);  // not due
    p99.last_instant = at - seconds{1};                                      // the instant before
    auto w = decision_wait(100, 7, {p99}, at + milliseconds{300});
    EXPECT_FALSE(w.ready);
    EXPECT_EQ(w.deadline, at + milliseconds{500 + 2000});         // the longest delay, then the timeout
    EXPECT_TRUE(decision_wait(100, 7, {p99}, w.deadline).ready);  // no longer: with what there is
    p99.last_instant = at;
    EXPECT_TRUE(decision_wait(100, 7, {p99}, at + milliseconds{300}).ready);
    // A load signal every 15 s: its instant is the multiple of 15 s before
    // the tick (690 s), and both must be in.
    DecisionSignal load{seconds{15}, milliseconds{2000}, SignalClock::time_point{seconds{675}}};
    w = decision_wait(100, 7, {p99, load}, at + milliseconds{300});
    EXPECT_FALSE(w.ready);
    EXPECT_EQ(w.deadline, at + milliseconds{2500});  // the later of 690 + 2 + 2 and 700 + 0.5 + 2
    load.last_instant = SignalClock::time_point{seconds{690}};
    EXPECT_TRUE(decision_wait(100, 7, {p99, load}, at + milliseconds{300}).ready);
    // No signals: due at the tick.
    EXPECT_TRUE(decision_wait(100, 7, {}, at).ready);
}

}  // namespace
}  // namespace lanes::agent

namespace lanes::agent {
namespace {

TEST(CeilController, PlanClampsToTheJobsOwnCeilAndRate) {
    Config cfg;
    ClassConfig t;
    t.name = "training";
    t.rate = Rate{100 * M, 0};
    t.ceil = Rate{0, 100};
    t.control = CeilControlConfig{};
    cfg.classes["training"] = t;
    ClassConfig i;
    i.name = "inference";
    cfg.classes["inference"] = i;
    JobState a;
    a.job_id = 7;
    a.class_name = "training";
    a.devices = {JobDevice{"veth0", 100 * M, 1000 * M}};
    JobState capped = a;
    capped.job_id = 8;
    capped.devices = {JobDevice{"veth0", 100 * M, 300 * M}};  // --lanes-cap
    JobState other = a;
    other.job_id = 9;
    other.class_name = "inference";
    // No decision yet: the job's own ceil, nothing to change.
    EXPECT_TRUE(ceil_changes(plan_controlled_targets(cfg, {a, capped, other}, {})).empty());
    auto targets = plan_controlled_targets(cfg, {a, capped, other}, {{{"training", "veth0"}, 400 * M}});
    ASSERT_EQ(targets.size(), 2u);  // not the inference job
    EXPECT_EQ(targets[0].ceil_bits, 400 * M);
    EXPECT_EQ(targets[1].ceil_bits, 300 * M);  // never above its own cap
    auto changes = ceil_changes(targets);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].job_id, 7u);
    targets = plan_controlled_targets(cfg, {a}, {{{"training", "veth0"}, 20 * M}});
    EXPECT_EQ(targets[0].ceil_bits, 100 * M);  // never below its rate
    // Another NIC's decision does not apply here.
    EXPECT_TRUE(ceil_changes(plan_controlled_targets(cfg, {a}, {{{"training", "eth1"}, 20 * M}})).empty());
}

ControlSample with_congestion(double value, std::optional<double> congestion,
                              std::optional<double> load = std::nullopt) {
    ControlSample s{value, load};
    s.congestion = congestion;
    return s;
}

// limits() with a congestion signal bounded at 2.
ControlLimits queue_bounded() {
    auto l = limits();
    l.congestion_above = 2;
    return l;
}

TEST(CeilController, ABreakWithoutCongestionHoldsTheCeil) {
    CeilController c(queue_bounded());
    auto d = c.decide(1, with_congestion(12, 0.5));
    EXPECT_FALSE(d.changed());
    EXPECT_EQ(d.cause, ControlCause::Uncongested);
    EXPECT_STREQ(control_cause_name(d.cause), "uncongested");
    EXPECT_FALSE(c.broken_ceil(1, std::nullopt)) << "a break that was not the network's taught nothing";
    d = c.decide(2, with_congestion(12, 2));  // at the bound: still not congested
    EXPECT_EQ(d.cause, ControlCause::Uncongested);
    d = c.decide(3, with_congestion(12, 2.5));
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(d.to_bits, 50 * M);
}

TEST(CeilController, AnUnknownCongestionCountsAsCongested) {
    CeilController c(queue_bounded());
    auto d = c.decide(1, with_congestion(12, std::nullopt));
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(d.to_bits, 50 * M);
}

TEST(CeilController, WithoutACongestionBoundTheCongestionValueIsIgnored) {
    CeilController c(limits());
    auto d = c.decide(1, with_congestion(12, 0));
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(d.to_bits, 50 * M);
}

TEST(CeilController, AProbeHeldThroughAStallIsJudgedAsAProbe) {
    CeilController c(queue_bounded());
    EXPECT_EQ(c.decide(1, ControlSample{}).to_bits, 50 * M);
    EXPECT_EQ(c.decide(2, with_congestion(1, 0)).to_bits, 60 * M);  // 50 held: a probe of 60
    EXPECT_EQ(c.decide(3, with_congestion(12, 0)).cause, ControlCause::Uncongested);
    // The probe broke, with a queue: as far below 50 as it went above.
    auto d = c.decide(4, with_congestion(12, 5));
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(d.to_bits, 40 * M);
}

TEST(CeilController, NoMarginInTheNetworkStepsDownByTheMargin) {
    CeilController c(queue_bounded());
    // The SLO met without margin (9 > 8), the queue over the bound, at a
    // ceil that never held.
    auto d = c.decide(1, with_congestion(9, 5, 1000));
    EXPECT_EQ(d.cause, ControlCause::Congested);
    EXPECT_STREQ(control_cause_name(d.cause), "congested");
    EXPECT_EQ(d.to_bits, 80 * M);
    EXPECT_EQ(c.broken_ceil(1, 1000), 100 * M) << "the strained ceil bounds the search";
    EXPECT_FALSE(c.held_ceil(1, 1000)) << "never remembered as held";
    // Headroom at 80: the strain said where the knee is (the SLO met at
    // 100, the network full), so the search is over: no midpoint toward 100.
    d = c.decide(2, with_congestion(1, 0, 1000));
    EXPECT_FALSE(d.changed());
    EXPECT_EQ(c.held_ceil(2, 1000), 80 * M);
    // A strain at a ceil that held here: no change, but it no longer counts
    // as held; headroom in between makes it held again.
    d = c.decide(3, with_congestion(9, 5, 1000));
    EXPECT_FALSE(d.changed());
    EXPECT_EQ(d.cause, ControlCause::None);
    EXPECT_FALSE(c.held_ceil(3, 1000));
    EXPECT_FALSE(c.decide(4, with_congestion(1, 0, 1000)).changed());
    EXPECT_EQ(c.held_ceil(4, 1000), 80 * M);
    EXPECT_FALSE(c.decide(5, with_congestion(9, 5, 1000)).changed());
    // A second strain in a row steps down, and it rests there.
    d = c.decide(6, with_congestion(9, 5, 1000));
    EXPECT_EQ(d.cause, ControlCause::Congested);
    EXPECT_EQ(d.to_bits, 64 * M);
    EXPECT_FALSE(c.decide(7, with_congestion(1, 0, 1000)).changed());
}

TEST(CeilController, AStrainIsTheRestingPointAtItsLoad) {
    // The benchmark's fall (docs/signals.md): the class's ceil strained at
    // the low load, the high load's search rested lower, and the load fell
    // back. The search used to go from what held at the high load to the
    // midpoint under the strained ceil (62 -> 78 of 94 Mbit/s, 88 % of the
    // best fixed ceil in the phase); the strain says the knee is at it, so
    // the ceil goes straight to where that strain stepped down to.
    CeilController c(queue_bounded());
    EXPECT_EQ(c.decide(1, with_congestion(9, 5, 200)).to_bits, 80 * M);  // strained at 200
    // The load rises: 80 breaks by far, cut to 40, which holds.
    EXPECT_EQ(c.decide(2, with_congestion(40, 20, 1500)).to_bits, 40 * M);
    EXPECT_EQ(c.decide(3, with_congestion(1, 0, 1500)).to_bits, 50 * M);  // a probe
    EXPECT_EQ(c.decide(4, with_congestion(1, 0, 1500)).to_bits, 60 * M);  // the midpoint toward 80
    // The strain at 200 bounds the search at 1500 as a break does, but says
    // nothing of where the knee is there: the midpoints go on under it, and
    // the search rests at what held.
    EXPECT_EQ(c.decide(5, with_congestion(1, 0, 1500)).to_bits, 70 * M);
    auto d = c.decide(6, with_congestion(1, 0, 1500));
    EXPECT_FALSE(d.changed()) << "no strained rest at a load the strain was not seen at";
    EXPECT_EQ(c.broken_ceil(6, 1500), 80 * M);
    // Back at 200: straight to the strain's rest, one change, no midpoint.
    d = c.decide(8, with_congestion(1, 0, 200));
    EXPECT_EQ(d.cause, ControlCause::Headroom);
    EXPECT_EQ(d.to_bits, 80 * M);
    EXPECT_FALSE(c.decide(9, with_congestion(1, 0, 200)).changed());
    // That rest is no probe: it met the SLO at this load under the strain.
    // A break there takes a resting ceil's cut (a tenth of the whole just
    // over the SLO), not a failed probe's (as far under 70 as it went over).
    d = c.decide(10, with_congestion(11, 5, 200));
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(d.to_bits, 70 * M);
}

// queue_bounded() with the strain by count: 2 of the last 4 decisions, a
// step of 0.9.
ControlLimits counted_strain(int count = 2, int window = 4) {
    auto l = queue_bounded();
    l.strain_count = count;
    l.strain_window = window;
    l.strain_decrease = 0.9;
    return l;
}

TEST(CeilController, AQueueInTwoOfFourDecisionsStrainsTheClassCeilThatHeld) {
    CeilController c(counted_strain());
    // p99 with its margin throughout: the band rule never strains.
    EXPECT_FALSE(c.decide(1, with_congestion(1, 0, 200)).changed());
    EXPECT_EQ(c.held_ceil(1, 200), 100 * M);
    EXPECT_FALSE(c.decide(2, with_congestion(1, 5, 200)).changed());  // 1 of 2
    EXPECT_FALSE(c.decide(3, with_congestion(1, 0, 200)).changed());  // 1 of 3
    auto d = c.decide(4, with_congestion(1, 5, 200));                 // 2 of 4
    EXPECT_EQ(d.cause, ControlCause::Congested);
    EXPECT_EQ(d.to_bits, 90 * M);
    EXPECT_EQ(d.queued, 2);
    EXPECT_EQ(d.of, 4);
    EXPECT_EQ(c.broken_ceil(4, 200), 100 * M) << "the class's ceil no longer counts as held: it bounds the search";
    EXPECT_EQ(c.broken_ceil(4, 1500), 100 * M) << "and at every higher load";
    // 90 holds: it rests there (100 - 90 is within min_gap), for as long as
    // the load stays, without a probe of 100.
    for (int64_t t = 5; t < 40; ++t) EXPECT_FALSE(c.decide(t, with_congestion(1, 0, 200)).changed()) << t;
    EXPECT_EQ(c.ceil_bits(), 90 * M);
}

TEST(CeilController, OneQueuedDecisionInTheWindowIsNoStrain) {
    // A queue at every fourth decision: one in any window of 4 ...
    CeilController c(counted_strain(2, 4));
    for (int64_t t = 1; t < 60; ++t)
        EXPECT_FALSE(c.decide(t, with_congestion(1, t % 4 == 1 ? 5 : 0, 200)).changed()) << t;
    // ... but two in a window of 5.
    CeilController wider(counted_strain(2, 5));
    for (int64_t t = 1; t < 5; ++t)
        EXPECT_FALSE(wider.decide(t, with_congestion(1, t % 4 == 1 ? 5 : 0, 200)).changed());
    EXPECT_EQ(wider.decide(5, with_congestion(1, 5, 200)).cause, ControlCause::Congested);
    // Without strain_count, any number of queues with margin is headroom.
    CeilController off(queue_bounded());
    for (int64_t t = 1; t < 20; ++t) EXPECT_FALSE(off.decide(t, with_congestion(1, 5, 200)).changed());
}

TEST(CeilController, TheCountStartsAgainAtEveryNewCeil) {
    CeilController c(counted_strain(2, 4));
    c.decide(1, with_congestion(1, 5, 200));
    c.decide(2, with_congestion(1, 5, 200));
    ASSERT_EQ(c.ceil_bits(), 90 * M);
    // The queues at 100 say nothing of 90: one queue at 90 is 1 of 1.
    EXPECT_FALSE(c.decide(3, with_congestion(1, 5, 200)).changed());
    EXPECT_EQ(c.held_ceil(3, 200), 90 * M);
    // A second one at 90: 2 of 2. What held at 90 goes, and it steps down
    // (never below a lower ceil that held: none here).
    auto d = c.decide(4, with_congestion(1, 5, 200));
    EXPECT_EQ(d.cause, ControlCause::Congested);
    EXPECT_EQ(d.to_bits, 81 * M);
    EXPECT_FALSE(c.held_ceil(4, 200));
    // Nor is a decision over the SLO counted: a break cuts and starts again.
    CeilController b(counted_strain(2, 4));
    b.decide(1, with_congestion(1, 5, 200));
    EXPECT_EQ(b.decide(2, with_congestion(12, 5, 200)).cause, ControlCause::OverSlo);
    EXPECT_NE(b.decide(3, with_congestion(1, 5, 200)).cause, ControlCause::Congested) << "right after a break";
}

TEST(CeilController, TheCountStartsAgainAtANewLoad) {
    CeilController c(counted_strain(2, 4));
    // One queued decision at 1500 req/s, then the load falls to 200: the
    // first decision there reads the high load's queue (its range spans the
    // step). 1 of 1 at this load, no strain; the SLO's margin: headroom.
    EXPECT_FALSE(c.decide(1, with_congestion(1, 5, 1500)).changed());
    EXPECT_FALSE(c.decide(2, with_congestion(1, 0, 1500)).changed());
    EXPECT_NE(c.decide(3, with_congestion(1, 5, 200)).cause, ControlCause::Congested);
    EXPECT_EQ(c.ceil_bits(), 100 * M);
    // A second queue at 200: 2 of 2 at this load.
    EXPECT_EQ(c.decide(4, with_congestion(1, 5, 200)).cause, ControlCause::Congested);
    // A load within the margin is the same load: the count goes on.
    CeilController d(counted_strain(2, 4));
    EXPECT_FALSE(d.decide(1, with_congestion(1, 5, 1500)).changed());
    EXPECT_EQ(d.decide(2, with_congestion(1, 5, 1300)).cause, ControlCause::Congested);
}

TEST(CeilController, NoStrainRightAfterABreak) {
    CeilController c(queue_bounded());
    EXPECT_EQ(c.decide(1, with_congestion(12, 5, 1000)).to_bits, 50 * M);
    // The queue the break's ceil filled may still be draining.
    auto d = c.decide(2, with_congestion(9, 5, 1000));
    EXPECT_FALSE(d.changed());
    EXPECT_FALSE(c.held_ceil(2, 1000));
    d = c.decide(3, with_congestion(9, 5, 1000));
    EXPECT_EQ(d.cause, ControlCause::Congested);
    EXPECT_EQ(d.to_bits, 40 * M);
    // Never below the floor.
    for (int64_t t = 4; t < 20; ++t) c.decide(t, with_congestion(9, 5, 1000));
    EXPECT_EQ(c.ceil_bits(), 10 * M);
}

TEST(CeilController, ABreakWithAQueueRightAfterAStallIsRememberedWhole) {
    CeilController c(queue_bounded());
    // A stall: held, the ceil unchanged and no queue to drain.
    EXPECT_EQ(c.decide(1, with_congestion(30, 0, 1000)).cause, ControlCause::Uncongested);
    // The same ceil breaks with a queue: the network's, at this load.
    auto d = c.decide(2, with_congestion(12, 5, 1000));
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(d.to_bits, 50 * M);
    // Long after its back-off (4 ticks) the break still bounds the search at
    // this load: 100 is not tried again (taken for a break right after a
    // break, it was, 4 ticks on).
    for (int64_t t = 3; t < 40; ++t) EXPECT_LT(c.decide(t, with_congestion(1, 0, 1000)).to_bits, 100 * M) << t;
    EXPECT_EQ(c.broken_ceil(40, 1000), 100 * M);
    EXPECT_EQ(c.ceil_bits(), 90 * M);
}

TEST(CeilController, AQueueWhileTheSloHasItsMarginIsNoStrain) {
    CeilController c(queue_bounded());
    EXPECT_EQ(c.decide(1, with_congestion(12, 5, 1000)).to_bits, 50 * M);
    EXPECT_FALSE(c.decide(2, with_congestion(9, 0, 1000)).changed());  // the hold band
    // p99 with its margin: the queue was one inference did not feel.
    auto d = c.decide(3, with_congestion(1, 9, 1000));
    EXPECT_EQ(d.cause, ControlCause::Headroom);
    EXPECT_EQ(d.to_bits, 60 * M);
    EXPECT_EQ(c.held_ceil(3, 1000), 50 * M);
    // At the class's ceil too: no step down.
    CeilController top(queue_bounded());
    for (int64_t t = 1; t < 10; ++t) EXPECT_FALSE(top.decide(t, with_congestion(7.9, 5, 1000)).changed()) << t;
    EXPECT_EQ(top.held_ceil(9, 1000), 100 * M);
}

TEST(CeilController, NoStrainWithoutAKnownQueueOrABound) {
    CeilController c(queue_bounded());
    EXPECT_EQ(c.decide(1, v(12)).to_bits, 50 * M);
    EXPECT_EQ(c.decide(2, v(1)).to_bits, 60 * M);
    // An unknown queue: the SLO signal alone decides (headroom).
    auto d = c.decide(3, with_congestion(1, std::nullopt, 1000));
    EXPECT_EQ(d.cause, ControlCause::Headroom);
    EXPECT_EQ(d.to_bits, 70 * M);
    // No bound: the queue is not read.
    CeilController plain(limits());
    EXPECT_EQ(plain.decide(1, v(12)).to_bits, 50 * M);
    EXPECT_EQ(plain.decide(2, with_congestion(1, 5, 1000)).to_bits, 60 * M);
}

// limits() with rest_below 0.1 and a step of 40.
ControlLimits resting_below() {
    auto l = limits();
    l.step_bits = 40 * M;
    l.rest_below = 0.1;
    return l;
}
ControlSample at(double value, double load) { return ControlSample{value, load}; }

TEST(CeilController, RestsAMarginUnderTheClassCeilWhereNothingBroke) {
    // The benchmark's low load (docs/signals.md): the class's ceil holds
    // with margin in most decisions and misses a row now and then; it is
    // no resting point with rest_below.
    CeilController c(resting_below());
    auto d = c.decide(1, at(1, 200));
    EXPECT_EQ(d.cause, ControlCause::RestBelow);
    EXPECT_STREQ(control_cause_name(d.cause), "rest_below");
    EXPECT_EQ(d.to_bits, 90 * M);
    EXPECT_EQ(d.rest_bound_bits, 100 * M);
    EXPECT_EQ(c.held_ceil(1, 200), 100 * M) << "what held is remembered as held";
    for (int64_t t = 2; t < 6; ++t) EXPECT_FALSE(c.decide(t, at(1, 200)).changed()) << t;
    // Off (0): the class's ceil rests.
    CeilController plain(limits());
    EXPECT_FALSE(plain.decide(1, at(1, 200)).changed());
    // Close to the SLO (no headroom) or the first decision of a rise: the
    // same cap, with its own cause.
    CeilController hold(resting_below());
    d = hold.decide(1, at(9, 200));
    EXPECT_EQ(d.cause, ControlCause::RestBelow);
    EXPECT_EQ(d.to_bits, 90 * M);
}

TEST(CeilController, RestsAMarginUnderTheLowestCeilThatBrokeAtItsLoad) {
    CeilController c(resting_below());
    EXPECT_EQ(c.decide(1, at(1, 200)).to_bits, 90 * M);
    // The load rises and 90 breaks by far: the whole cut.
    auto d = c.decide(2, at(40, 1500));
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(d.to_bits, 45 * M);
    // The midpoints toward 90, but never over 90 * 0.9 = 81.
    EXPECT_EQ(c.decide(3, at(1, 1500)).to_bits, 67'500'000u);
    EXPECT_EQ(c.decide(4, at(1, 1500)).to_bits, 78'750'000u);
    d = c.decide(5, at(1, 1500));
    EXPECT_EQ(d.cause, ControlCause::Headroom);
    EXPECT_EQ(d.to_bits, 81 * M) << "the midpoint 84.375 is within rest_below of the break";
    EXPECT_FALSE(c.decide(6, at(1, 1500)).changed());
    // Back at the low load: the class's ceil bounds it again, not the break
    // at 1500.
    d = c.decide(7, at(1, 200));
    EXPECT_EQ(d.cause, ControlCause::Headroom);
    EXPECT_EQ(d.to_bits, 90 * M);
    // A break there just over the SLO cuts at least to rest_below under it.
    d = c.decide(8, at(10.5, 200));
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(d.to_bits, 81 * M);
}

TEST(CeilController, ARestBelowTheFloorIsTheFloor) {
    auto l = resting_below();
    l.rest_below = 0.95;
    CeilController c(l);
    EXPECT_EQ(c.decide(1, at(1, 200)).to_bits, 10 * M);
    EXPECT_FALSE(c.decide(2, at(1, 200)).changed());
}

// resting_below() with a queue: congestion_above 2, quiet_below 0.5, and
// the bench's min_gap (a quarter of the ceil).
ControlLimits quiet_limits() {
    auto l = resting_below();
    l.min_gap_bits = 24 * M;
    l.congestion_above = 2;
    l.quiet_below = 0.5;
    return l;
}
ControlSample queued(double value, double load, double queue) { return ControlSample{value, load, queue}; }

TEST(CeilController, AQuietQueueRaisesPastWhereTheSearchStopped) {
    // The bench's day with the knee high (docs/signals.md): the class's
    // ceil safe at the low load, the search resting at the midpoint at the
    // high one, a sixth under the knee.
    CeilController c(quiet_limits());
    auto d = c.decide(1, queued(1, 200, 0.1));
    EXPECT_EQ(d.cause, ControlCause::RestBelow);
    EXPECT_EQ(d.to_bits, 90 * M);
    EXPECT_FALSE(c.decide(2, queued(1, 200, 0.1)).changed()) << "one quiet decision at this ceil";
    EXPECT_FALSE(c.decide(3, queued(1, 200, 0.1)).changed()) << "two";
    d = c.decide(4, queued(1, 200, 0.1));
    EXPECT_EQ(d.cause, ControlCause::Quiet);
    EXPECT_STREQ(control_cause_name(d.cause), "quiet");
    EXPECT_EQ(d.to_bits, 95 * M) << "half the gap to the class's ceil, rest_below / 2 under it";
    EXPECT_EQ(d.rest_bound_bits, 100 * M);
    for (int64_t t = 5; t <= 7; ++t)
        EXPECT_FALSE(c.decide(t, queued(1, 200, 0.1)).changed()) << "at rest_below / 2 under the bound";
    EXPECT_FALSE(c.decide(8, queued(1, 200, 1.5)).changed()) << "a queue under congestion_above: it stays";
    // The load rises: 95 breaks by far, the whole cut, then the midpoint.
    EXPECT_EQ(c.decide(9, queued(40, 1500, 16)).to_bits, 47'500'000u);
    EXPECT_EQ(c.decide(10, queued(1, 1500, 0.1)).to_bits, 71'250'000u);
    // The gap to 95 (23.75) is under min_gap: the search stopped. A queue
    // that is not quiet starts the count again; three quiet decisions in a
    // row go on, by half of rest_below times the bound (4.75), under half
    // the gap (11.875).
    EXPECT_FALSE(c.decide(11, queued(1, 1500, 0.1)).changed());
    EXPECT_FALSE(c.decide(12, queued(1, 1500, 0.1)).changed());
    EXPECT_FALSE(c.decide(13, queued(1, 1500, 0.8)).changed());
    EXPECT_FALSE(c.decide(14, queued(1, 1500, 0.1)).changed());
    EXPECT_FALSE(c.decide(15, queued(1, 1500, 0.1)).changed());
    d = c.decide(16, queued(1, 1500, 0.1));
    EXPECT_EQ(d.cause, ControlCause::Quiet);
    EXPECT_EQ(d.to_bits, 76 * M);
    EXPECT_EQ(d.rest_bound_bits, 95 * M);
    EXPECT_FALSE(c.decide(17, queued(1, 1500, 1.2)).changed());
    // One quiet raise per bound at a load: it rests there.
    for (int64_t t = 18; t <= 23; ++t) EXPECT_FALSE(c.decide(t, queued(1, 1500, 0.1)).changed()) << t;
    // The load falls: straight back to the ceil the quiet raise reached
    // there, above rest_below under the class's ceil (90).
    d = c.decide(24, queued(1, 200, 0.1));
    EXPECT_EQ(d.cause, ControlCause::Headroom);
    EXPECT_EQ(d.to_bits, 95 * M);
    // Without quiet_below the same samples rest at rest_below under the
    // bounds: 90 at the low load, the midpoint 67.5 under 90 at the high one.
    auto l = quiet_limits();
    l.quiet_below.reset();
    CeilController plain(l);
    for (int64_t t = 1; t <= 8; ++t) plain.decide(t, queued(1, 200, 0.1));
    EXPECT_EQ(plain.ceil_bits(), 90 * M);
    plain.decide(9, queued(40, 1500, 16));
    for (int64_t t = 10; t <= 17; ++t) plain.decide(t, queued(1, 1500, 0.1));
    EXPECT_EQ(plain.ceil_bits(), 67'500'000u);
}

// Three quiet decisions at the ceil it is at: the controller's next quiet raise.
void quiet_run(CeilController& c, int64_t& t, double load) {
    for (int i = 0; i < 3; ++i) c.decide(++t, queued(1, load, 0.1));
}

TEST(CeilController, AQuietRaiseThatBreaksIsAFailedProbe) {
    CeilController c(quiet_limits());
    int64_t t = 0;
    c.decide(++t, queued(1, 200, 0.1));
    quiet_run(c, t, 200);
    ASSERT_EQ(c.ceil_bits(), 95 * M);
    c.decide(++t, queued(40, 1500, 16));
    c.decide(++t, queued(1, 1500, 0.1));
    ASSERT_EQ(c.ceil_bits(), 71'250'000u);
    quiet_run(c, t, 1500);
    ASSERT_EQ(c.ceil_bits(), 76 * M);
    // It breaks: as far under the ceil that held (71.25) as it went above.
    auto d = c.decide(++t, queued(25, 1500, 9));
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(d.to_bits, 66'500'000u);
    EXPECT_EQ(c.broken_ceil(t, 1500), 76 * M);
    // Back up, no higher than rest_below under the new bound (68.4, not
    // the 71.25 that held: no quiet raise reached it).
    d = c.decide(++t, queued(1, 1500, 0.1));
    EXPECT_EQ(d.cause, ControlCause::Headroom);
    EXPECT_EQ(d.to_bits, 68'400'000u);
    // A new bound: a quiet queue under it may raise once more, never
    // within rest_below / 2 of it (72.2).
    for (int i = 0; i < 2; ++i) EXPECT_FALSE(c.decide(++t, queued(1, 1500, 0.1)).changed());
    d = c.decide(++t, queued(1, 1500, 0.1));
    EXPECT_EQ(d.cause, ControlCause::Quiet);
    EXPECT_EQ(d.to_bits, 72'200'000u);
}

TEST(CeilController, AQuietQueueCountsOnlyWithTheSloMetAtOneLoad) {
    CeilController c(quiet_limits());
    c.decide(1, queued(1, 200, 0.1));
    ASSERT_EQ(c.ceil_bits(), 90 * M);
    // Unknown queue, then two quiet ones: not three in a row.
    EXPECT_FALSE(c.decide(2, at(1, 200)).changed());
    EXPECT_FALSE(c.decide(3, queued(1, 200, 0.1)).changed());
    EXPECT_FALSE(c.decide(4, queued(1, 200, 0.1)).changed());
    // The SLO held without margin: the run starts again.
    EXPECT_FALSE(c.decide(5, queued(9, 200, 0.1)).changed());
    EXPECT_FALSE(c.decide(6, queued(1, 200, 0.1)).changed());
    EXPECT_FALSE(c.decide(7, queued(1, 200, 0.1)).changed());
    // The load moved by more than margin (down: no rise's first): again.
    EXPECT_FALSE(c.decide(8, queued(1, 150, 0.1)).changed());
    EXPECT_FALSE(c.decide(9, queued(1, 150, 0.1)).changed());
    EXPECT_EQ(c.decide(10, queued(1, 150, 0.1)).to_bits, 95 * M);
}

TEST(CeilController, NoQuietRaiseWhileTheLoadRamps) {
    // A rise from a load of 0 since the ceil was set (the first load of the
    // day): three quiet decisions raise it.
    CeilController once(quiet_limits());
    EXPECT_EQ(once.decide(1, queued(1, 0, 0.1)).to_bits, 90 * M);
    // (The first decision at 200 is a rise's first: no quiet decision.)
    for (int64_t k = 2; k <= 4; ++k) EXPECT_FALSE(once.decide(k, queued(1, 200, 0.1)).changed()) << k;
    EXPECT_EQ(once.decide(5, queued(1, 200, 0.1)).cause, ControlCause::Quiet) << "three in a row after the rise from 0";
    // A fall since the ceil was set (a decision that read both loads of a
    // step down, say): no rise.
    CeilController fell(quiet_limits());
    EXPECT_EQ(fell.decide(1, queued(1, 300, 0.1)).to_bits, 90 * M);
    for (int64_t k = 2; k <= 3; ++k) EXPECT_FALSE(fell.decide(k, queued(1, 200, 0.1)).changed()) << k;
    EXPECT_EQ(fell.decide(4, queued(1, 200, 0.1)).cause, ControlCause::Quiet) << "three in a row after a fall";
    // The bench's ramp: steps of 25 s, three or four decisions each. The
    // load rose since the ceil was set (200 -> 460 -> 720): no raise in a
    // step's four decisions; a raise there would be undone at the next step
    // (load_rose, or the rest cap at the higher load).
    CeilController c(quiet_limits());
    int64_t t = 0;
    EXPECT_EQ(c.decide(++t, queued(1, 200, 0.1)).to_bits, 90 * M);
    for (double load : {460.0, 720.0}) {
        for (int i = 0; i < 4; ++i) {
            auto d = c.decide(++t, queued(1, load, 0.1));
            EXPECT_FALSE(d.changed()) << "decision " << i << " at " << load << ": " << control_cause_name(d.cause);
        }
    }
    // The load stays: after 2 * 3 decisions at it, the raise.
    EXPECT_FALSE(c.decide(++t, queued(1, 720, 0.1)).changed());
    auto d = c.decide(++t, queued(1, 720, 0.1));
    EXPECT_EQ(d.cause, ControlCause::Quiet);
    EXPECT_EQ(d.to_bits, 95 * M);
    // A load within kLoadNoise (5 %) of the first of the run is the same
    // load: six such decisions are a steady load.
    CeilController noisy(quiet_limits());
    t = 0;
    noisy.decide(++t, queued(1, 200, 0.1));
    noisy.decide(++t, queued(1, 460, 0.1));
    for (double load : {700.0, 720.0, 730.0, 710.0, 690.0})
        EXPECT_FALSE(noisy.decide(++t, queued(1, load, 0.1)).changed()) << load;
    EXPECT_EQ(noisy.decide(++t, queued(1, 700, 0.1)).cause, ControlCause::Quiet);
}

TEST(CeilController, BackAtALoadAQuietRaiseIsMadeAgainAtOnce) {
    // The bench's low phase: the raise comes at its last decision and the
    // load rises before a decision judges it at 200.
    CeilController c(quiet_limits());
    int64_t t = 0;
    EXPECT_EQ(c.decide(++t, queued(1, 0, 0.1)).to_bits, 90 * M);
    EXPECT_FALSE(c.decide(++t, queued(1, 200, 0.1)).changed()) << "a rise's first decision";
    quiet_run(c, t, 200);
    ASSERT_EQ(c.ceil_bits(), 95 * M);
    // 95 breaks at 1500, never seen to hold: a failed probe's cut (nothing
    // held there), then the midpoint, where the search stops.
    EXPECT_EQ(c.decide(++t, queued(40, 1500, 16)).to_bits, 47'500'000u);
    EXPECT_EQ(c.decide(++t, queued(1, 1500, 0.1)).to_bits, 71'250'000u);
    EXPECT_FALSE(c.decide(++t, queued(1, 1500, 1)).changed());
    // Back at 200: the search lands on 90 (held there, the rest cap under
    // the class's ceil), and the raise from 90 at this load is made again
    // in the same decision: the break at 1500 says nothing of 200.
    auto d = c.decide(++t, queued(1, 200, 1));
    EXPECT_EQ(d.cause, ControlCause::Quiet);
    EXPECT_EQ(d.to_bits, 95 * M);
    EXPECT_EQ(d.rest_bound_bits, 100 * M);
    EXPECT_TRUE(d.quiet_again);
    // It breaks there: a failed probe (from 90), and the raise is forgotten.
    d = c.decide(++t, queued(25, 200, 9));
    EXPECT_EQ(d.cause, ControlCause::OverSlo);
    EXPECT_EQ(d.to_bits, 85 * M);
    d = c.decide(++t, queued(1, 200, 1));
    EXPECT_EQ(d.to_bits, 85'500'000u) << "rest_below under the break at 95, no return to it";
    // The queue over congestion_above: no return.
    CeilController q(quiet_limits());
    t = 0;
    q.decide(++t, queued(1, 0, 0.1));
    q.decide(++t, queued(1, 200, 0.1));
    quiet_run(q, t, 200);
    q.decide(++t, queued(40, 1500, 16));
    q.decide(++t, queued(1, 1500, 0.1));
    EXPECT_EQ(q.decide(++t, queued(1, 200, 3)).to_bits, 90 * M);
}

TEST(CeilController, ACeilSetAtThisLoadIsNoRiseFromALowerOne) {
    // The bench's start: the class's ceil holds at the load of 0 (nothing
    // offered yet), 90 breaks at 1500, and the search rests at 67.5 there.
    CeilController c(quiet_limits());
    int64_t t = 0;
    EXPECT_EQ(c.decide(++t, queued(1, 0, 0.1)).to_bits, 90 * M);
    EXPECT_EQ(c.decide(++t, queued(40, 1500, 16)).to_bits, 45 * M);
    EXPECT_EQ(c.decide(++t, queued(1, 1500, 0.1)).to_bits, 67'500'000u);
    EXPECT_FALSE(c.decide(++t, queued(1, 1500, 1)).changed()) << "67.5 holds at 1500";
    // At 200: up to the rest cap, then a quiet raise, both at this load.
    EXPECT_EQ(c.decide(++t, queued(1, 200, 0.1)).to_bits, 90 * M);
    quiet_run(c, t, 200);
    ASSERT_EQ(c.ceil_bits(), 95 * M);
    // 95 held at the load of 0 (the class's ceil did), and 90 broke at 1500:
    // no load_rose at the load the raise was made at; the SLO signal judges.
    for (int i = 0; i < 3; ++i) {
        auto d = c.decide(++t, queued(1, 200, 0.1));
        EXPECT_FALSE(d.changed()) << i << ": " << control_cause_name(d.cause);
    }
    EXPECT_EQ(c.held_ceil(t, 200), 95 * M);
    // A rise from there is one: 95 held at 200, 90 broke at 1500, and 67.5
    // held there.
    auto d = c.decide(++t, queued(1, 460, 0.1));
    EXPECT_EQ(d.cause, ControlCause::LoadRose);
    EXPECT_EQ(d.to_bits, 67'500'000u);
}

}  // namespace
}  // namespace lanes::agent
