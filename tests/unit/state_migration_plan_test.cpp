// SPDX-License-Identifier: GPL-2.0-or-later
// The pure planner of a job whose state is in another state dir (node.state_dir
// changed between its prolog and its epilog).
#include <gtest/gtest.h>

#include "node/state_migration_plan.hpp"
#include "tests/unit/job_states.hpp"

namespace lanes {
namespace {

TEST(StateMigrationPlan, TeardownFromTheOtherDir) {
    struct Case {
        const char* name;
        uint16_t root_major;  // recorded (0: a state written before it was kept)
        bool owned;
        uint32_t want_classid;
        bool want_rmdir;
    };
    const std::vector<Case> cases = {
        {"its own root, its own dir", 0x1b00, true, tc_handle(0x1b00, 7), true},
        {"no root recorded: the configured one", 0, true, tc_handle(0x1a4e, 7), true},
        {"Slurm's dir stays", 0x1a4e, false, tc_handle(0x1a4e, 7), false},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        JobState st = test::job_state(7, c.root_major, 7, {"eth0"});
        st.cgroup = "/sys/fs/cgroup/lanes/job_7";
        st.cgroup_owned = c.owned;
        st.cgroup_id = 55;
        auto got = plan_migrated_teardown(7, "/run/lanes/old", st, 0x1a4e);
        EXPECT_EQ(got.dir, "/run/lanes/old");
        EXPECT_EQ(got.state, st);
        EXPECT_EQ(got.failed, "JobId=7: remove: ");
        EXPECT_EQ(got.done, "JobId=7: shaping removed (state was in /run/lanes/old, the state_dir at its prolog)");
        bool nft = false, cls = false, rmdir = false;
        for (const auto& op : got.removal.operations) {
            if (const auto* n = std::get_if<NftRemoveJob>(&op)) nft = n->cgroup_id == 55;
            if (const auto* d = std::get_if<DeleteClass>(&op))
                cls = d->classid == c.want_classid && d->device == "eth0";
            if (std::holds_alternative<RemoveCgroup>(op)) rmdir = true;
        }
        EXPECT_TRUE(nft);
        EXPECT_TRUE(cls);
        EXPECT_EQ(rmdir, c.want_rmdir);
    }
}

}  // namespace
}  // namespace lanes
