// SPDX-License-Identifier: GPL-2.0-or-later
// The pure job teardown planner: the shaped jobs left, park or delete, the
// drain, the idle roots of an older root_handle, and its lines.
#include <gtest/gtest.h>

#include "node/job_teardown_plan.hpp"
#include "tests/unit/job_states.hpp"

namespace lanes {
namespace {

JobState job(uint32_t id, uint16_t major, const std::vector<std::string>& devices) {
    return test::job_state(id, major, static_cast<uint16_t>(id), devices);
}

TEST(JobTeardownPlan, CountParkDrain) {
    struct Case {
        const char* name;
        JobState state;
        uint32_t shaped_jobs;
        bool shaped;
        uint32_t left;
        bool may_park, drain;
    };
    const std::vector<Case> cases = {
        {"the last shaped job", job(7, 0x1a4e, {"eth0"}), 1, true, 0, false, true},
        {"others run on", job(7, 0x1a4e, {"eth0"}), 3, true, 2, true, false},
        {"a count a crash left at 0", job(7, 0x1a4e, {"eth0"}), 0, true, 0, false, true},
        {"an unshaped record, others run", job(7, 0x1a4e, {}), 2, false, 2, true, false},
        {"an unshaped record, none run", job(7, 0x1a4e, {}), 0, false, 0, false, true},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        auto got = plan_teardown(c.state, c.shaped_jobs, 0x1a4e);
        EXPECT_EQ(got.shaped, c.shaped);
        EXPECT_EQ(got.shaped_left, c.left);
        EXPECT_EQ(got.may_park, c.may_park);
        EXPECT_EQ(got.drain_pool, c.drain);
        EXPECT_EQ(got.removal.operations.size(), plan_remove(c.state, 0x1a4e).operations.size());
    }
}

TEST(JobTeardownPlan, RemovalUsesTheJobsOwnRoot) {
    auto got = plan_teardown(job(7, 0x1b00, {"eth0"}), 1, 0x1a4e);
    bool deleted = false;
    for (const auto& op : got.removal.operations)
        if (const auto* del = std::get_if<DeleteClass>(&op)) {
            EXPECT_EQ(del->classid, tc_handle(0x1b00, 7));
            deleted = true;
        }
    EXPECT_TRUE(deleted);
}

TEST(JobTeardownPlan, IdleOldRoots) {
    const uint16_t now = 0x1a4e, old = 0x1b00;
    struct Case {
        const char* name;
        JobState state;
        std::vector<JobState> rest;
        bool old_root;
        std::vector<std::string> want;  // devices whose old root goes
    };
    const std::vector<Case> cases = {
        {"the configured root", job(7, now, {"eth0"}), {}, false, {}},
        {"a state without root_major", job(7, 0, {"eth0"}), {}, false, {}},
        {"an old root, nobody left", job(7, old, {"eth0", "eth1"}), {job(8, now, {"eth0"})}, true, {"eth0", "eth1"}},
        {"an old root, still used on one NIC", job(7, old, {"eth0", "eth1"}), {job(8, old, {"eth1"})}, true, {"eth0"}},
        {"an old root, still used on both", job(7, old, {"eth0", "eth1"}), {job(8, old, {"eth0", "eth1"})}, true, {}},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        EXPECT_EQ(hangs_from_old_root(c.state, now), c.old_root);
        std::vector<std::string> got;
        for (const auto& del : idle_old_roots(c.state, now, c.rest)) {
            EXPECT_EQ(del.major, c.state.root_major);
            EXPECT_EQ(del.ifindex, 0);
            got.push_back(del.device);
        }
        EXPECT_EQ(got, c.want);
    }
}

TEST(JobTeardownPlan, Lines) {
    EXPECT_EQ(old_root_removed_line(DeleteRoot{"eth0", 0, 0x1b00}),
              "NIC eth0: removed the old root htb 1b00:0 (node.root_handle changed)");
    EXPECT_EQ(teardown_done_line(job(7, 0x1a4e, {"eth0"}), false), "JobId=7: shaping removed");
    EXPECT_EQ(teardown_done_line(job(7, 0x1a4e, {"eth0"}), true),
              "JobId=7: shaping removed (class 1a4e:7 parked for the next job)");
}

}  // namespace
}  // namespace lanes
