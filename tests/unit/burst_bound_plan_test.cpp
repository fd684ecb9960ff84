// SPDX-License-Identifier: GPL-2.0-or-later
// The pure GSO/TSO burst bound planner (node.gso_burst): the gso_<dev> file,
// the size for the lowest capped ceil, and one NIC counted in or out.
#include <gtest/gtest.h>

#include "node/burst_bound_plan.hpp"

namespace lanes {
namespace {

constexpr uint64_t kMbit = 1'000'000ull;

TEST(BurstBoundPlan, FileRoundTrips) {
    GsoFile f{GsoSize{65536, 65536}, 12500, {{100 * kMbit, 2}, {1000 * kMbit, 1}}};
    const std::string text = format_gso_file(f);
    EXPECT_EQ(text, "orig 65536 65536\nset 12500\nceil 100000000 2\nceil 1000000000 1\n");
    auto back = parse_gso_file(text);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, f);
}

TEST(BurstBoundPlan, ParseRejectsAndSkips) {
    struct Case {
        const char* name;
        std::string text;
        bool usable;
        std::size_t ceils;
    };
    const std::vector<Case> cases = {
        {"empty", "", false, 0},
        {"no orig", "set 100\nceil 8000000 1\n", false, 0},
        {"orig zero", "orig 0 0\nset 0\n", false, 0},
        {"zero count skipped", "orig 65536 0\nset 3028\nceil 8000000 0\nceil 9000000 1\n", true, 1},
        {"stops at an unknown key", "orig 65536 0\nset 3028\nbogus 1\nceil 8000000 1\n", true, 0},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        auto f = parse_gso_file(c.text);
        ASSERT_EQ(f.has_value(), c.usable);
        if (f) {
            EXPECT_EQ(f->ceils.size(), c.ceils);
        }
    }
}

TEST(BurstBoundPlan, TargetIsTheBurstClamped) {
    struct Case {
        uint64_t ceil_bits;
        uint32_t orig_max;
        uint64_t burst_us;
        uint32_t want;
    };
    const std::vector<Case> cases = {
        {100 * kMbit, 65536, 1000, 12500},     // 100 Mbit/s for 1 ms
        {1 * kMbit, 65536, 1000, 3028},        // below two frames: two frames
        {10'000 * kMbit, 65536, 1000, 65536},  // above the NIC's own: its own
        {1 * kMbit, 2000, 1000, 2000},         // a NIC whose own is below two frames
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.ceil_bits);
        EXPECT_EQ(gso_target(c.ceil_bits, GsoSize{c.orig_max, 0}, c.burst_us), c.want);
    }
}

TEST(BurstBoundPlan, SizeForFollowsIpv4MaxOnlyWhenTheNicHasOne) {
    EXPECT_EQ(gso_size_for(12500, GsoSize{65536, 65536}), (GsoSize{12500, 12500}));
    EXPECT_EQ(gso_size_for(12500, GsoSize{65536, 0}), (GsoSize{12500, 0}));
    EXPECT_EQ(gso_size_for(65536, GsoSize{65536, 32768}), (GsoSize{65536, 32768}));
}

TEST(BurstBoundPlan, AccountSteps) {
    using A = GsoStep::Action;
    const GsoSize orig{65536, 65536};
    const GsoFile fresh{orig, 65536, {}};
    const GsoFile one100{orig, 12500, {{100 * kMbit, 1}}};
    const GsoFile two{orig, 12500, {{100 * kMbit, 1}, {200 * kMbit, 1}}};
    struct Case {
        const char* name;
        GsoFile file;
        uint64_t ceil;
        int delta;
        A action;
        GsoSize size;
        std::map<uint64_t, uint32_t> ceils_after;
        uint32_t set_after;
    };
    const std::vector<Case> cases = {
        {"first capped job sets the size", fresh, 100 * kMbit, +1, A::Set, {12500, 12500}, {{100 * kMbit, 1}}, 12500},
        {"a higher ceil keeps the size",
         one100,
         200 * kMbit,
         +1,
         A::Save,
         {},
         {{100 * kMbit, 1}, {200 * kMbit, 1}},
         12500},
        {"a lower ceil lowers it",
         one100,
         50 * kMbit,
         +1,
         A::Set,
         {6250, 6250},
         {{50 * kMbit, 1}, {100 * kMbit, 1}},
         6250},
        {"the same ceil counts twice", one100, 100 * kMbit, +1, A::Save, {}, {{100 * kMbit, 2}}, 12500},
        {"the lowest leaving raises it", two, 100 * kMbit, -1, A::Set, {25000, 25000}, {{200 * kMbit, 1}}, 25000},
        {"the last leaving restores", one100, 100 * kMbit, -1, A::Restore, orig, {}, 12500},
        {"an uncounted ceil changes nothing", one100, 300 * kMbit, -1, A::Nothing, {}, {}, 0},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        const GsoStep step = plan_gso_account(c.file, c.ceil, c.delta, 1000);
        EXPECT_EQ(step.action, c.action);
        if (c.action == A::Nothing) continue;
        if (c.action != A::Save) {
            EXPECT_EQ(step.size, c.size);
        }
        EXPECT_EQ(step.file.ceils, c.ceils_after);
        EXPECT_EQ(step.file.set, c.set_after);
        EXPECT_EQ(step.file.orig, orig);
    }
}

// A signal's busy shift moves the job's count to the ceil in force: the bound
// shrinks with the busy ceil and grows back when the window ends.
TEST(BurstBoundPlan, ShiftFollowsTheCeilInForce) {
    using A = GsoStep::Action;
    const GsoSize orig{65536, 65536};
    const uint64_t link = 10'000 * kMbit;
    const GsoFile one1g{orig, 65536, {{1000 * kMbit, 1}}};  // 1 Gbit sends 125000 B in 1 ms: clamped
    const GsoFile shifted{orig, 25000, {{200 * kMbit, 1}}};
    const GsoFile two{orig, 12500, {{100 * kMbit, 1}, {1000 * kMbit, 1}}};
    struct Case {
        const char* name;
        GsoFile file;
        uint64_t from, to;
        A action;
        GsoSize size;
        std::map<uint64_t, uint32_t> ceils_after;
    };
    const std::vector<Case> cases = {
        {"busy: down to the busy ceil", one1g, 1000 * kMbit, 200 * kMbit, A::Set, {25000, 25000}, {{200 * kMbit, 1}}},
        {"idle again: back up", shifted, 200 * kMbit, 1000 * kMbit, A::Set, {65536, 65536}, {{1000 * kMbit, 1}}},
        {"uncapped normally, capped when busy",
         GsoFile{orig, 65536, {}},
         link,
         200 * kMbit,
         A::Set,
         {25000, 25000},
         {{200 * kMbit, 1}}},
        {"capped when busy only: the shift ends", shifted, 200 * kMbit, link, A::Restore, orig, {}},
        {"another job holds the lower bound",
         two,
         1000 * kMbit,
         200 * kMbit,
         A::Save,
         {},
         {{100 * kMbit, 1}, {200 * kMbit, 1}}},
        {"uncapped both ways", GsoFile{orig, 65536, {}}, link, link, A::Nothing, {}, {}},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        const GsoStep step = plan_gso_shift(c.file, c.from, c.to, link, 1000);
        EXPECT_EQ(step.action, c.action);
        if (c.action == A::Nothing) continue;
        if (c.action != A::Save) {
            EXPECT_EQ(step.size, c.size);
        }
        EXPECT_EQ(step.file.ceils, c.ceils_after);
    }
}

TEST(BurstBoundPlan, RecountFromTheDesiredState) {
    const GsoSize orig{65536, 65536};
    const GsoFile stale{orig, 65536, {{1000 * kMbit, 1}}};  // a shift's file write lost
    auto fixed = plan_gso_recount(stale, {{200 * kMbit, 1}}, 1000);
    ASSERT_TRUE(fixed);
    EXPECT_EQ(fixed->set, 25000u);
    EXPECT_EQ(fixed->ceils, (std::map<uint64_t, uint32_t>{{200 * kMbit, 1}}));
    EXPECT_EQ(fixed->orig, orig);
    EXPECT_FALSE(plan_gso_recount(stale, {{1000 * kMbit, 1}}, 1000));
    auto none = plan_gso_recount(stale, {}, 1000);
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->ceils.empty());
}

TEST(BurstBoundPlan, RepairOnlyWhenCappedAndChanged) {
    const GsoSize orig{65536, 65536};
    const GsoFile capped{orig, 12500, {{100 * kMbit, 1}}};
    const GsoFile idle{orig, 65536, {}};
    struct Case {
        const char* name;
        GsoFile file;
        GsoSize now;
        std::optional<GsoSize> want;
    };
    const std::vector<Case> cases = {
        {"a recreated NIC", capped, orig, GsoSize{12500, 12500}},
        {"in place", capped, {12500, 12500}, std::nullopt},
        {"no capped job", idle, {1000, 1000}, std::nullopt},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        EXPECT_EQ(plan_gso_repair(c.file, c.now), c.want);
    }
}

}  // namespace
}  // namespace lanes
