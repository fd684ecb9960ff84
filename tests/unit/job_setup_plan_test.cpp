// SPDX-License-Identifier: GPL-2.0-or-later
// The pure job setup planner: the root a job hangs from after a root_handle
// change, a cgroup the caller names, what the state file records, when the
// prolog runs the full converge, and its lines.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "node/job_setup_plan.hpp"

namespace lanes {
namespace {

NicFacts nic(const std::string& dev, const std::string& kind, uint32_t handle, uint16_t ours) {
    NicFacts n;
    n.device = dev;
    n.ifindex = 3;
    n.link_speed_bits = 10'000'000'000ull;
    n.root_kind = kind;
    n.root_handle = handle;
    n.has_our_root = kind == "htb" && handle == tc_handle(ours, 0);
    n.has_foreign_root_qdisc = !n.has_our_root && handle != 0;
    return n;
}

TEST(JobSetupPlan, Root) {
    NodeConfig config;  // root_handle_major 0x1a4e, foreign_qdisc refuse
    const uint16_t now = config.root_handle_major, old = 0x1b00;
    struct Case {
        const char* name;
        uint16_t previous_major;
        std::vector<NicFacts> nics;
        std::set<uint16_t> in_use;                          // majors of recorded jobs
        std::set<std::pair<std::string, uint16_t>> listed;  // .lanes-roots
        uint16_t want_major;
        bool want_adopt;
        bool want_replaced;
        std::vector<bool> want_ours;  // per NIC, has_our_root afterwards
        std::vector<std::string> want_notes;
    };
    const std::vector<Case> cases = {
        {"our root", 0, {nic("eth0", "htb", tc_handle(now, 0), now)}, {}, {}, now, false, false, {true}, {}},
        {"no root yet", 0, {nic("eth0", "mq", 0, now)}, {}, {}, now, false, false, {false}, {}},
        {"a re-apply keeps its own root",
         old,
         {nic("eth0", "htb", tc_handle(now, 0), now)},
         {},
         {},
         old,
         false,
         false,
         {true},
         {}},
        {"an old root in use is joined",
         0,
         {nic("eth0", "htb", tc_handle(old, 0), now)},
         {old},
         {{"eth0", old}},
         old,
         false,
         false,
         {true},
         {"JobId=7: NIC eth0 keeps the root htb 1b00:0 of running jobs (node.root_handle changed; the new one "
          "applies once they are gone)"}},
        {"an idle old root of ours is replaced",
         0,
         {nic("eth0", "htb", tc_handle(old, 0), now)},
         {now},
         {{"eth0", old}},
         now,
         true,
         true,
         {false},
         {"JobId=7: NIC eth0: replacing Lanes' idle root htb 1b00:0 (node.root_handle changed)"}},
        {"a joined root keeps the other NIC's idle root",
         0,
         {nic("eth0", "htb", tc_handle(old, 0), now), nic("eth1", "htb", tc_handle(0x1c00, 0), now)},
         {old},
         {{"eth1", 0x1c00}},
         old,
         false,
         false,
         {true, false},
         {"JobId=7: NIC eth0 keeps the root htb 1b00:0 of running jobs (node.root_handle changed; the new one "
          "applies once they are gone)"}},
        {"a foreign htb stays foreign",
         0,
         {nic("eth0", "htb", tc_handle(0x0005, 0), now)},
         {},
         {},
         now,
         false,
         false,
         {false},
         {}},
        {"a foreign non-htb root is not looked at",
         0,
         {nic("eth0", "fq", tc_handle(old, 0), now)},
         {old},
         {{"eth0", old}},
         now,
         false,
         false,
         {false},
         {}},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        auto got = plan_job_root(
            config, "JobId=7", c.previous_major, c.nics, [&](uint16_t m) { return c.in_use.count(m) > 0; },
            [&](const std::string& dev, uint16_t m) {
                return c.listed.count({dev, m}) > 0;
            });
        EXPECT_EQ(got.effective.root_handle_major, c.want_major);
        EXPECT_EQ(got.effective.foreign_qdisc == ForeignQdiscAction::Adopt, c.want_adopt);
        EXPECT_EQ(got.replaced_idle_root, c.want_replaced);
        ASSERT_EQ(got.nics.size(), c.want_ours.size());
        for (std::size_t i = 0; i < got.nics.size(); ++i) {
            EXPECT_EQ(got.nics[i].has_our_root, c.want_ours[i]) << got.nics[i].device;
            if (c.want_ours[i]) {
                EXPECT_FALSE(got.nics[i].has_foreign_root_qdisc) << got.nics[i].device;
            }
        }
        EXPECT_EQ(got.notes, c.want_notes);
    }
}

TEST(JobSetupPlan, NamedCgroup) {
    struct Case {
        const char* name;
        Cgroup2Mount mount;
        std::string cgroup;
        std::string want_dir, want_parent, want_error;
        int want_level;
    };
    const std::vector<Case> cases = {
        {"Slurm's job dir",
         {"/sys/fs/cgroup", "/"},
         "system.slice/n1_slurmstepd.scope/job_7",
         "/sys/fs/cgroup/system.slice/n1_slurmstepd.scope/job_7",
         "/sys/fs/cgroup/system.slice/n1_slurmstepd.scope",
         "",
         3},
        {"a mount point with a slash",
         {"/sys/fs/cgroup/", "/"},
         "a/job_7",
         "/sys/fs/cgroup/a/job_7",
         "/sys/fs/cgroup/a",
         "",
         2},
        {"absolute",
         {"/sys/fs/cgroup", "/"},
         "/etc",
         "",
         "",
         "JobId=7: cgroup \"/etc\" must be relative to the cgroup2 mount /sys/fs/cgroup",
         0},
        {"dot dot",
         {"/sys/fs/cgroup", "/"},
         "a/../../etc",
         "",
         "",
         "JobId=7: cgroup \"a/../../etc\" must be relative to the cgroup2 mount /sys/fs/cgroup",
         0},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        auto got = place_named_cgroup(c.mount, c.cgroup, "JobId=7");
        if (!c.want_error.empty()) {
            ASSERT_FALSE(got);
            EXPECT_EQ(got.error().message, c.want_error);
            continue;
        }
        ASSERT_TRUE(got) << got.error().message;
        EXPECT_EQ(got->dir, c.want_dir);
        EXPECT_EQ(got->parent, c.want_parent);
        EXPECT_EQ(got->key, c.cgroup);
        EXPECT_EQ(got->level, c.want_level);
        EXPECT_FALSE(got->owned);
    }
}

TEST(JobSetupPlan, RootLost) {
    const NicFacts ours = nic("eth0", "htb", tc_handle(0x1a4e, 0), 0x1a4e), none = nic("eth1", "", 0, 0x1a4e);
    struct Case {
        const char* name;
        uint32_t shaped;
        bool reapplied;
        std::vector<NicFacts> nics;
        bool want;
    };
    const std::vector<Case> cases = {
        {"the first job", 0, false, {none}, false},
        {"other jobs, a root gone", 1, false, {ours, none}, true},
        {"other jobs, every root there", 3, false, {ours}, false},
        {"only this job, re-applied", 1, true, {none}, false},
        {"this job and another, re-applied", 2, true, {none}, true},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        EXPECT_EQ(prolog_finds_root_lost(c.shaped, c.reapplied, c.nics), c.want);
    }
}

TEST(JobSetupPlan, NicsChangedUnderSetup) {
    const NicFacts ours = nic("eth0", "htb", tc_handle(0x1a4e, 0), 0x1a4e);
    const NicFacts none = nic("eth0", "", 0, 0x1a4e);
    const NicFacts prio = nic("eth0", "prio", tc_handle(0x8001, 0), 0x1a4e);
    NicFacts recreated = ours;
    recreated.ifindex = 9;
    NicFacts joined = nic("eth1", "htb", tc_handle(0x1a4f, 0), 0x1a4e);
    joined.has_our_root = true;  // plan_job_root() joined an older root of ours
    joined.has_foreign_root_qdisc = false;
    const NicFacts joined_now = nic("eth1", "htb", tc_handle(0x1a4f, 0), 0x1a4e);
    struct Case {
        const char* name;
        std::vector<NicFacts> planned, now;
        std::string want;
    };
    const std::vector<Case> cases = {
        {"nothing changed", {ours}, {ours}, ""},
        {"only what plan_job_root() derived", {joined}, {joined_now}, ""},
        {"the root deleted", {ours}, {none}, "NIC eth0: root htb 1a4e:0 is now none"},
        {"a foreign root put in", {ours}, {prio}, "NIC eth0: root htb 1a4e:0 is now prio 8001:0"},
        {"a foreign root where none was", {none}, {prio}, "NIC eth0: root none is now prio 8001:0"},
        {"the failed attempt's own new root", {none}, {ours}, ""},
        {"the NIC recreated", {ours}, {recreated}, "NIC eth0 was recreated (ifindex 3 is now 9)"},
        {"two NICs", {ours, joined}, {none}, "NIC eth0: root htb 1a4e:0 is now none; NIC eth1 is gone"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        EXPECT_EQ(nics_changed_under_setup(c.planned, c.now), c.want);
    }
}

TEST(JobSetupPlan, RecordedState) {
    JobState planned;
    planned.job_id = 7;
    planned.cgroup_id = 11;
    planned.cgroup_level = 2;
    CgroupPlacement own{"/sys/fs/cgroup/lanes/job_7", "/sys/fs/cgroup/lanes", "lanes/job_7", 2, true};
    CgroupPlacement slurm{"/sys/fs/cgroup/s/job_7", "/sys/fs/cgroup/s", "s/job_7", 2, false};
    slurm.level = 5;
    struct Case {
        const char* name;
        CgroupPlacement place;
        std::optional<uint64_t> dir_id;
        uint64_t want_id;
        int want_level;
    };
    const std::vector<Case> cases = {
        {"our own dir: the plan's", own, 99, 11, 2},
        {"Slurm's dir, there", slurm, 99, 99, 5},
        {"Slurm's dir, not yet", slurm, std::nullopt, 11, 5},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        auto got = recorded_setup_state(planned, "boot-1", {"eth9"}, c.place, c.dir_id);
        EXPECT_EQ(got.boot_id, "boot-1");
        EXPECT_EQ(got.pending_devices, std::vector<std::string>{"eth9"});
        EXPECT_EQ(got.cgroup_id, c.want_id);
        EXPECT_EQ(got.cgroup_level, c.want_level);
    }
}

TEST(JobSetupPlan, Warnings) {
    Plan plan;
    plan.warnings = {"NIC eth0: replacing foreign root qdisc htb 1b00:0 with Lanes' htb 1a4e:0",
                     "NIC eth0: oversubscribed"};
    JobRoot replaced, kept;
    replaced.replaced_idle_root = true;
    EXPECT_EQ(setup_warnings(plan, replaced), std::vector<std::string>{"NIC eth0: oversubscribed"});
    EXPECT_EQ(setup_warnings(plan, kept), plan.warnings);
}

TEST(JobSetupPlan, GsoCountsNewAndChangedJobs) {
    JobState a;
    a.job_id = 7;
    JobState b = a;
    b.minor = 9;
    EXPECT_TRUE(setup_changes_gso(std::nullopt, a));
    EXPECT_FALSE(setup_changes_gso(a, a));
    EXPECT_TRUE(setup_changes_gso(a, b));
}

TEST(JobSetupPlan, DoneLine) {
    JobState st;
    st.job_id = 7;
    st.class_name = "training";
    st.root_major = 0x1a4e;
    st.minor = 7;
    st.devices.resize(2);
    st.cgroup = "/sys/fs/cgroup/lanes/job_7";
    struct Case {
        bool parked, pending;
        std::string want;
    };
    const std::vector<Case> cases = {
        {false, false, "JobId=7: class training shaped as 1a4e:7 on 2 NIC(s), cgroup /sys/fs/cgroup/lanes/job_7"},
        {true, false,
         "JobId=7: class training shaped as 1a4e:7 (a parked class) on 2 NIC(s), cgroup /sys/fs/cgroup/lanes/job_7"},
        {false, true,
         "JobId=7: class training shaped as 1a4e:7 on 2 NIC(s), cgroup /sys/fs/cgroup/lanes/job_7 (Slurm's; keyed "
         "by the job's first step)"},
    };
    for (const auto& c : cases) EXPECT_EQ(setup_done_line(st, "JobId=7", c.parked, c.pending), c.want);
}

}  // namespace
}  // namespace lanes
