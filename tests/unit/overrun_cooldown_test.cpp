// SPDX-License-Identifier: GPL-2.0-or-later
#include "ctld/overrun_cooldown.hpp"

#include <gtest/gtest.h>

namespace lanes {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
const OverrunCooldown::Clock::time_point t0{seconds(1000)};

TEST(OverrunCooldown, AnOwnerCoolsDownForTheLengthAfterAnOverrun) {
    OverrunCooldown c(seconds(60));
    EXPECT_FALSE(c.until(1001, t0));
    c.overran(1001, t0);
    ASSERT_TRUE(c.until(1001, t0 + seconds(59)));
    EXPECT_EQ(*c.until(1001, t0 + seconds(59)), t0 + seconds(60));
    EXPECT_FALSE(c.until(1001, t0 + seconds(60)));
    EXPECT_FALSE(c.until(1002, t0 + seconds(1))) << "another owner is not cooling down";
}

TEST(OverrunCooldown, AnotherOverrunRestartsIt) {
    OverrunCooldown c(seconds(60));
    c.overran(1001, t0);
    c.overran(1001, t0 + seconds(50));
    EXPECT_EQ(*c.until(1001, t0 + seconds(70)), t0 + seconds(110));
}

TEST(OverrunCooldown, EndedCooldownsAreForgotten) {
    OverrunCooldown c(seconds(60));
    for (uint32_t uid = 0; uid < 100; ++uid) c.overran(uid, t0);
    EXPECT_EQ(c.cooling(), 100u);
    c.overran(5000, t0 + seconds(61));
    EXPECT_EQ(c.cooling(), 1u);
}

TEST(OverrunCooldown, ZeroLengthIsOff) {
    OverrunCooldown c(milliseconds(0));
    c.overran(1001, t0);
    EXPECT_FALSE(c.until(1001, t0));
    EXPECT_EQ(c.cooling(), 0u);
}

}  // namespace
}  // namespace lanes
