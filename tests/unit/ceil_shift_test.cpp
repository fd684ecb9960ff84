// SPDX-License-Identifier: GPL-2.0-or-later
// The node agent's plan: which ceil each running job of a class with
// busy_window/busy_ceil gets, and which netlink changes that needs.
#include <gtest/gtest.h>

#include "agent/ceil_shift.hpp"
#include "core/lanes_toml.hpp"

namespace lanes::agent {
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
    auto idle = plan_ceil_targets(cfg, jobs, nics, {{"busy", false}});
    ASSERT_EQ(idle.size(), 1u);  // inference has no busy_window
    EXPECT_EQ(idle[0].ceil_bits, 1'000'000'000u);
    EXPECT_EQ(idle[0].normal_ceil_bits, 1'000'000'000u);
    EXPECT_EQ(idle[0].device, "veth0");
    EXPECT_EQ(idle[0].job_id, 11u);
    auto busy = plan_ceil_targets(cfg, jobs, nics, {{"busy", true}});
    ASSERT_EQ(busy.size(), 1u);
    EXPECT_EQ(busy[0].ceil_bits, 200'000'000u);  // 20% of the link
    EXPECT_TRUE(busy[0].busy);
    // Never below the job's rate.
    auto low = plan_ceil_targets(config_with_busy(Rate{0, 1}), jobs, nics, {{"busy", true}});
    EXPECT_EQ(low[0].ceil_bits, 100'000'000u);
    // A NIC no longer selected: nothing to change there.
    EXPECT_TRUE(plan_ceil_targets(cfg, jobs, {}, {{"busy", true}}).empty());
}

TEST(CeilShift, ChangesAreWhatDiffersFromTheDesiredCeil) {
    const std::vector<NicFacts> nics = {NicFacts{"veth0", 7, 1'000'000'000}};
    auto j = job(11, "training", 0x11);
    auto cfg = config_with_busy(Rate{0, 20});
    // A new job at its own ceil while idle: nothing to change.
    EXPECT_TRUE(ceil_changes(plan_ceil_targets(cfg, {j}, nics, {{"busy", false}})).empty());
    auto busy = plan_ceil_targets(cfg, {j}, nics, {{"busy", true}});
    ASSERT_EQ(busy.size(), 1u);
    // What to ask NodeShaper::set_ceils(): only what differs from the ceil in
    // force in the job's desired state (not an agent's own cache).
    auto c = ceil_changes(busy);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].job_id, 11u);
    EXPECT_EQ(c[0].device, "veth0");
    EXPECT_EQ(c[0].ceil_bits, 200'000'000u);
    j.devices[0].ceil_now_bits = 200'000'000;  // set_ceils recorded it
    EXPECT_TRUE(ceil_changes(plan_ceil_targets(cfg, {j}, nics, {{"busy", true}})).empty());
    auto idle = ceil_changes(plan_ceil_targets(cfg, {j}, nics, {{"busy", false}}));
    ASSERT_EQ(idle.size(), 1u);
    EXPECT_EQ(idle[0].ceil_bits, 1'000'000'000u);
}

}  // namespace
}  // namespace lanes::agent
