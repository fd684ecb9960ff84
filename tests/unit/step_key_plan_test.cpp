// SPDX-License-Identifier: GPL-2.0-or-later
// The pure planner of classify_step(): whether a step keys anything, where
// Slurm's job dir is, whether it is keyed already, and what keys it.
#include <gtest/gtest.h>

#include <set>

#include "node/step_key_plan.hpp"
#include "tests/unit/job_states.hpp"

namespace lanes {
namespace {

TEST(StepKeyPlan, NeedsKey) {
    struct Case {
        const char* name;
        std::string unshaped;
        bool slurm;
        bool want;
    };
    const std::vector<Case> cases = {
        {"shaped on Slurm's dir", "", true, true},
        {"shaped on our own dir", "", false, false},
        {"unshaped", "no class", true, false},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        JobState st;
        st.unshaped = c.unshaped;
        st.cgroup_slurm = c.slurm;
        EXPECT_EQ(step_needs_key(st), c.want);
    }
}

TEST(StepKeyPlan, SlurmJobDir) {
    const std::string a = "/sys/fs/cgroup/system.slice/slurmstepd.scope",
                      b = "/sys/fs/cgroup/system.slice/n2_slurmstepd.scope";
    struct Case {
        const char* name;
        std::vector<std::string> scopes;
        std::set<std::string> existing;
        std::optional<std::string> want;
    };
    const std::vector<Case> cases = {
        {"no scope: Slurm's cgroup/v2 plugin is not here", {}, {}, std::nullopt},
        {"where it is", {a, b}, {b + "/job_7"}, b + "/job_7"},
        {"the first that has it", {a, b}, {a + "/job_7", b + "/job_7"}, a + "/job_7"},
        {"not yet: the node's own scope", {a, b}, {}, b + "/job_7"},
        {"not yet: the first scope", {a}, {}, a + "/job_7"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        auto got = slurm_job_dir_of(
            c.scopes, [&](const std::string& d) { return c.existing.count(d) > 0; }, "n2", 7);
        EXPECT_EQ(got, c.want);
    }
}

TEST(StepKeyPlan, Keyed) {
    JobState st;
    st.cgroup = "/sys/fs/cgroup/s/job_7";
    st.cgroup_id = 42;
    EXPECT_TRUE(step_keyed(st, "/sys/fs/cgroup/s/job_7", 42));
    EXPECT_FALSE(step_keyed(st, "/sys/fs/cgroup/s/job_7", 43));  // made anew
    EXPECT_FALSE(step_keyed(st, "/sys/fs/cgroup/t/job_7", 42));
}

TEST(StepKeyPlan, Key) {
    const Cgroup2Mount mount{"/sys/fs/cgroup", "/"};
    const std::string dir = "/sys/fs/cgroup/system.slice/n2_slurmstepd.scope/job_7";
    struct Case {
        const char* name;
        uint16_t root_major;
        uint64_t old_id;
        uint16_t want_major;
        bool want_old_key;
    };
    const std::vector<Case> cases = {
        {"first step", 0x1a4e, 0, 0x1a4e, false},
        {"a state without root_major", 0, 0, 0x1a4e, false},
        {"the dir made anew", 0x1b00, 41, 0x1b00, true},
        {"the same inode", 0x1a4e, 42, 0x1a4e, false},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        JobState st = test::job_state(7, c.root_major, 7, {});
        st.cgroup_slurm = true;
        st.cgroup_id = c.old_id;
        st.dscp_marked = 34;
        st.cgroup = dir;
        auto got = plan_step_key(st, dir, 42, mount, 0x1a4e);
        EXPECT_EQ(got.state.root_major, c.want_major);
        EXPECT_EQ(got.state.cgroup, dir);
        EXPECT_EQ(got.state.cgroup_key, "system.slice/n2_slurmstepd.scope/job_7");
        EXPECT_EQ(got.state.cgroup_level, 3);
        EXPECT_EQ(got.state.cgroup_id, 42u);
        EXPECT_EQ(got.marks, nft_job_of(got.state));
        EXPECT_EQ(got.marks.priority, tc_handle(c.want_major, 7));
        ASSERT_EQ(got.old_key.has_value(), c.want_old_key);
        if (got.old_key) {
            EXPECT_EQ(got.old_key->job_id, 7u);
            EXPECT_EQ(got.old_key->cgroup_id, c.old_id);
            EXPECT_EQ(got.old_key->dscp, std::optional<uint8_t>(34));
        }
    }
}

TEST(StepKeyPlan, Messages) {
    EXPECT_EQ(step_no_record_error(7),
              "JobId=7: no Lanes record on this node (the prolog did not run, or its record was removed)");
    EXPECT_EQ(step_no_slurm_dir_error(7, std::nullopt),
              "JobId=7: Slurm's job cgroup job_7 not found under any slurmstepd scope");
    EXPECT_EQ(step_no_slurm_dir_error(7, std::string("/sys/fs/cgroup/s/job_7")),
              "JobId=7: Slurm's job cgroup job_7 not found under any slurmstepd scope (looked for "
              "/sys/fs/cgroup/s/job_7)");
    JobState st;
    st.job_id = 7;
    st.cgroup_key = "s/job_7";
    st.cgroup_id = 42;
    st.cgroup_level = 2;
    EXPECT_EQ(step_keyed_line(st), "JobId=7: traffic keyed on Slurm's cgroup s/job_7 (cgroup id 42, level 2)");
}

}  // namespace
}  // namespace lanes
