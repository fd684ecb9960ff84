// SPDX-License-Identifier: GPL-2.0-or-later
// The node agent's plan: which ceil each running job of a class with
// busy_window/busy_ceil gets, and which netlink changes that needs.
#include <gtest/gtest.h>

#include "core/lanes_toml.hpp"
#include "lanesctl/ceil_shift.hpp"

namespace lanes::ctl {
namespace {

Config config_with_busy(Rate busy_ceil) {
    Config c;
    ClassConfig t;
    t.name = "training";
    t.rank = 1;
    t.rate = Rate{100'000'000, 0};
    t.ceil = Rate{0, 100};
    t.busy_window = "busy";
    t.busy_ceil = busy_ceil;
    c.classes["training"] = t;
    ClassConfig i;
    i.name = "inference";
    c.classes["inference"] = i;
    return c;
}

JobState job(uint32_t id, const std::string& cls, uint16_t minor) {
    JobState s;
    s.job_id = id;
    s.class_name = cls;
    s.minor = minor;
    s.net.rank = 1;
    s.devices = {JobDevice{"veth0", 100'000'000, 1'000'000'000}};
    return s;
}

TEST(CeilShift, BusyCeilResolvedAndClamped) {
    const std::vector<NicFacts> nics = {NicFacts{"veth0", 7, 1'000'000'000}};
    const auto jobs = std::vector<JobState>{job(11, "training", 0x11), job(12, "inference", 0x12)};
    auto cfg = config_with_busy(Rate{0, 20});
    auto idle = plan_ceil_targets(cfg, jobs, nics, {{"busy", false}}, 0x1a4e);
    ASSERT_EQ(idle.size(), 1u);  // inference has no busy_window
    EXPECT_EQ(idle[0].change.htb.ceil_bits, 1'000'000'000u);
    EXPECT_EQ(idle[0].change.classid, 0x1a4e0011u);
    EXPECT_EQ(idle[0].change.parent, 0x1a4e0001u);
    EXPECT_EQ(idle[0].change.ifindex, 7);
    auto busy = plan_ceil_targets(cfg, jobs, nics, {{"busy", true}}, 0x1a4e);
    ASSERT_EQ(busy.size(), 1u);
    EXPECT_EQ(busy[0].change.htb.ceil_bits, 200'000'000u);  // 20% of the link
    EXPECT_EQ(busy[0].change.htb.rate_bits, 100'000'000u);
    EXPECT_EQ(busy[0].change.htb, htb_params(100'000'000, 200'000'000, htb_prio_for_rank(1)));
    // Never below the job's rate.
    auto low = plan_ceil_targets(config_with_busy(Rate{0, 1}), jobs, nics, {{"busy", true}}, 0x1a4e);
    EXPECT_EQ(low[0].change.htb.ceil_bits, 100'000'000u);
    // A NIC no longer selected: nothing to change there.
    EXPECT_TRUE(plan_ceil_targets(cfg, jobs, {}, {{"busy", true}}, 0x1a4e).empty());
}

TEST(CeilShift, OneChangePerShift) {
    const std::vector<NicFacts> nics = {NicFacts{"veth0", 7, 1'000'000'000}};
    const auto jobs = std::vector<JobState>{job(11, "training", 0x11)};
    auto cfg = config_with_busy(Rate{0, 20});
    AppliedCeils applied;
    auto idle = plan_ceil_targets(cfg, jobs, nics, {{"busy", false}}, 0x1a4e);
    EXPECT_EQ(changes_needed(idle, applied, false).size(), 0u);  // new job at its normal ceil: nothing
    EXPECT_EQ(changes_needed(idle, applied, true).size(), 1u);   // agent start: make sure
    auto busy = plan_ceil_targets(cfg, jobs, nics, {{"busy", true}}, 0x1a4e);
    auto c = changes_needed(busy, applied, false);
    ASSERT_EQ(c.size(), 1u);
    applied[{11, "veth0"}] = c[0].change.htb.ceil_bits;
    EXPECT_TRUE(changes_needed(busy, applied, false).empty());   // same state: no change
    EXPECT_EQ(changes_needed(idle, applied, false).size(), 1u);  // back to normal
}

TEST(CeilShift, TheJobsOwnRootMajorAndItsDesiredCeil) {
    // root_handle changed in lanes.toml while job 11 runs under the old root: its
    // class is 1a4e:11, not 1b00:11 (the agent used to shift the wrong class).
    const std::vector<NicFacts> nics = {NicFacts{"veth0", 7, 1'000'000'000}};
    auto j = job(11, "training", 0x11);
    j.root_major = 0x1a4e;
    auto cfg = config_with_busy(Rate{0, 20});
    auto busy = plan_ceil_targets(cfg, {j}, nics, {{"busy", true}}, 0x1b00);
    ASSERT_EQ(busy.size(), 1u);
    EXPECT_EQ(busy[0].change.classid, 0x1a4e0011u);
    EXPECT_EQ(busy[0].change.parent, 0x1a4e0001u);
    // What to ask NodeShaper::set_ceils(): only what differs from the ceil in
    // force in the job's desired state (not an agent's own cache).
    auto c = ceil_changes(busy);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].job_id, 11u);
    EXPECT_EQ(c[0].device, "veth0");
    EXPECT_EQ(c[0].ceil_bits, 200'000'000u);
    j.devices[0].ceil_now_bits = 200'000'000;  // set_ceils recorded it
    EXPECT_TRUE(ceil_changes(plan_ceil_targets(cfg, {j}, nics, {{"busy", true}}, 0x1b00)).empty());
    auto idle = ceil_changes(plan_ceil_targets(cfg, {j}, nics, {{"busy", false}}, 0x1b00));
    ASSERT_EQ(idle.size(), 1u);
    EXPECT_EQ(idle[0].ceil_bits, 1'000'000'000u);
}

}  // namespace
}  // namespace lanes::ctl
