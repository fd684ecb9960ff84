// SPDX-License-Identifier: GPL-2.0-or-later
// The pure parked-pool planner: whether a class is parked, which parked classes
// a new job may take over, and what a drain deletes.
#include <gtest/gtest.h>

#include "node/pool_plan.hpp"
#include "tests/unit/job_states.hpp"

namespace lanes {
namespace {

JobState job_on(const std::vector<std::string>& devices, uint16_t major, uint16_t minor) {
    return test::job_state(42, major, minor, devices);
}

TEST(PoolPlan, Parkable) {
    NodeConfig config;
    const uint16_t major = config.root_handle_major;
    struct Case {
        const char* name;
        uint32_t pool;
        JobState job;
        bool want;
    };
    const std::vector<Case> cases = {
        {"pool on, node's root", 16, job_on({"eth0"}, major, 5), true},
        {"pool off", 0, job_on({"eth0"}, major, 5), false},
        {"no classes", 16, job_on({}, major, 5), false},
        {"an older root", 16, job_on({"eth0"}, static_cast<uint16_t>(major + 1), 5), false},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        config.parked_classes = c.pool;
        EXPECT_EQ(parkable(config, c.job), c.want);
    }
}

TEST(PoolPlan, RoomIsBelowTheBound) {
    NodeConfig config;
    config.parked_classes = 2;
    EXPECT_TRUE(pool_has_room(config, 0));
    EXPECT_TRUE(pool_has_room(config, 1));
    EXPECT_FALSE(pool_has_room(config, 2));
    EXPECT_FALSE(pool_has_room(config, 3));
}

TEST(PoolPlan, RecordHasSortedDevices) {
    auto rec = parked_record_of(job_on({"eth1", "eth0"}, 0x1a4e, 7));
    EXPECT_EQ(rec, (ParkedClass{7, 0x1a4e, {"eth0", "eth1"}}));
}

TEST(PoolPlan, TakeoverCandidates) {
    const std::vector<ParkedClass> pool = {
        {3, 0x1a4e, {"eth0", "eth1"}},       // fits
        {4, 0x1a4e, {"eth0"}},               // other NICs
        {5, 0x1b00, {"eth0", "eth1"}},       // other root
        {0x1a4e, 0x1a4e, {"eth0", "eth1"}},  // the root's own minor: never
        {6, 0x1a4e, {"eth0", "eth1"}},       // fits, tried second
    };
    auto got = takeover_candidates(pool, 0x1a4e, {"eth1", "eth0"});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].minor, 3);
    EXPECT_EQ(got[1].minor, 6);
    EXPECT_TRUE(takeover_candidates(pool, 0x1a4e, {"eth2"}).empty());
    EXPECT_TRUE(takeover_candidates({}, 0x1a4e, {"eth0"}).empty());
}

TEST(PoolPlan, DrainDeletesEveryClassOnEachNic) {
    auto ops = plan_drain({{3, 0x1a4e, {"eth0", "eth1"}}, {9, 0x1a4e, {"eth0"}}});
    ASSERT_EQ(ops.size(), 3u);
    EXPECT_EQ(ops[0].device, "eth0");
    EXPECT_EQ(ops[0].classid, tc_handle(0x1a4e, 3));
    EXPECT_EQ(ops[1].device, "eth1");
    EXPECT_EQ(ops[1].classid, tc_handle(0x1a4e, 3));
    EXPECT_EQ(ops[2].device, "eth0");
    EXPECT_EQ(ops[2].classid, tc_handle(0x1a4e, 9));
    EXPECT_EQ(ops[0].ifindex, 0);
    EXPECT_TRUE(plan_drain({}).empty());
}

}  // namespace
}  // namespace lanes
