// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include "spank/spank_args.hpp"

using namespace lanes;

TEST(SpankArgs, DefaultsAndKnownKeys) {
    auto a = parse_spank_args({}, "/etc/slurm/lanes.toml");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->config_path, "/etc/slurm/lanes.toml");
    EXPECT_TRUE(a->reconcile_on_start);
    EXPECT_EQ(a->last_good_config, "/run/lanes/last-good.toml");
    auto b = parse_spank_args({"config=/x/lanes.toml", "reconcile=no", "last_good_config=/r/l.toml"}, "/d");
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_EQ(b->config_path, "/x/lanes.toml");
    EXPECT_FALSE(b->reconcile_on_start);
    EXPECT_EQ(b->last_good_config, "/r/l.toml");
}

TEST(SpankArgs, BadArgumentsAreNamed) {
    struct Case {
        std::vector<std::string> args;
        const char* expect;
    } cases[] = {
        {{"confg=/x"}, "unknown plugstack argument 'confg'"},
        {{"config"}, "'config' is not key=value"},
        {{"config=relative.toml"}, "config=relative.toml: must be an absolute path"},
        {{"reconcile=maybe"}, "reconcile=maybe: expected yes or no"},
        {{"last_good_config=x.toml"}, "last_good_config=x.toml: must be an absolute path"},
    };
    for (const auto& c : cases) {
        auto r = parse_spank_args(c.args, "/d");
        ASSERT_FALSE(r) << c.expect;
        EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << r.error().message;
    }
}

TEST(SpankArgs, ClassOption) {
    EXPECT_TRUE(check_class_option("inference"));
    EXPECT_TRUE(check_class_option("batch-2_x"));
    EXPECT_FALSE(check_class_option(""));
    EXPECT_FALSE(check_class_option("a b"));
    EXPECT_FALSE(check_class_option("x;rm"));
    EXPECT_FALSE(check_class_option(std::string(65, 'a')));
}

TEST(SpankArgs, CapOptionTakesBothDirections) {
    auto both = check_cap_option("out=2Gbit,in=5Gbit");
    ASSERT_TRUE(both) << both.error().message;
    EXPECT_EQ(*both, "out=2Gbit,in=5Gbit");
    EXPECT_TRUE(check_cap_option("in=40%"));
    auto typo = check_cap_option("inn=5Gbit");
    ASSERT_FALSE(typo);
    EXPECT_NE(typo.error().message.find("--lanes-cap=inn=5Gbit: unknown direction 'inn'"), std::string::npos)
        << typo.error().message;
    auto bad = check_cap_option("out=2Gbit,in=fast");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("in=fast: "), std::string::npos) << bad.error().message;
    EXPECT_FALSE(check_cap_option("in=1Gbit,in=2Gbit"));
    EXPECT_FALSE(check_cap_option("out=1Gbit,"));
}

TEST(SpankArgs, CapOptionIsARateOrAPercentage) {
    auto ok = check_cap_option("800Mbit");
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_EQ(*ok, "800Mbit");
    // A class whose ceiling is a percentage can only be lowered by a percentage.
    auto pct = check_cap_option("50%");
    ASSERT_TRUE(pct) << pct.error().message;
    EXPECT_EQ(*pct, "50%");
    auto zero = check_cap_option("0");
    ASSERT_FALSE(zero);
    EXPECT_NE(zero.error().message.find("is zero"), std::string::npos) << zero.error().message;
    EXPECT_EQ(zero.error().message.find("0Mbit"), std::string::npos) << zero.error().message;
    EXPECT_FALSE(check_cap_option("fast"));
    EXPECT_FALSE(check_cap_option(""));
}
