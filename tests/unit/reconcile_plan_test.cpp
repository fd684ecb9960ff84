// SPDX-License-Identifier: GPL-2.0-or-later
// The pure planner of reconcile()'s bookkeeping: stale minor claims, the
// shaped-jobs count and the drain of the parked pool.
#include <gtest/gtest.h>

#include "node/reconcile_plan.hpp"

namespace lanes {
namespace {

TEST(ReconcilePlan, StaleClaims) {
    const std::vector<MinorClaim> claims = {
        {2, 7u, true},             // a recorded job's
        {3, 8u, false},            // its job's record is gone
        {4, std::nullopt, false},  // names no job
        {5, 9u, true},
    };
    EXPECT_EQ(stale_claims(claims), (std::vector<uint16_t>{3, 4}));
    EXPECT_TRUE(stale_claims({}).empty());
}

TEST(ReconcilePlan, RecountShaped) {
    JobState shaped, unshaped;
    shaped.devices.resize(1);
    unshaped.unshaped = "no class";
    struct Case {
        const char* name;
        std::vector<JobState> records;
        uint32_t kept;
        ShapedCount want;
    };
    const std::vector<Case> cases = {
        {"nothing left", {}, 0, {0, false, true}},
        {"nothing left, a count left on", {unshaped}, 2, {0, true, true}},
        {"in step", {shaped, unshaped, shaped}, 2, {2, false, false}},
        {"a crash left it off", {shaped}, 3, {1, true, false}},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        auto got = recount_shaped(c.records, c.kept);
        EXPECT_EQ(got.shaped, c.want.shaped);
        EXPECT_EQ(got.rewrite, c.want.rewrite);
        EXPECT_EQ(got.drain_pool, c.want.drain_pool);
    }
}

TEST(ReconcilePlan, JoinErrors) {
    EXPECT_EQ(join_errors({}), "");
    EXPECT_EQ(join_errors({"a"}), "a");
    EXPECT_EQ(join_errors({"a", "b"}), "a; b");
}

}  // namespace
}  // namespace lanes
