// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include "core/job_env.hpp"

using namespace lanes;

TEST(JobEnv, EntryNameDropsSpankPrefix) {
    EXPECT_EQ(env_entry_name("SPANK_LANES_CLASS=x"), "LANES_CLASS");
    EXPECT_EQ(env_entry_name("LANES_CLASS=x"), "LANES_CLASS");
    EXPECT_EQ(env_entry_name("PATH"), "PATH");
}

TEST(JobEnv, LanesEntriesAreRecognisedWhoeverWroteThem) {
    struct Case {
        const char* entry;
        bool lanes;
    } cases[] = {
        {"LANES_CLASS=inference", true},        {"SPANK_LANES_CLASS=inference", true}, {"SPANK_LANES_RATE=1", true},
        {"LANES_REQUEST_CLASS=training", true}, {"SPANK_PYXIS_IMAGE=x", false},        {"XLANES_CLASS=1", false},
        {"SPANK_SPANK_LANES=1", false},
    };
    for (const auto& c : cases) EXPECT_EQ(is_lanes_entry(c.entry), c.lanes) << c.entry;
}

TEST(JobEnv, ReadsUserRequestsWithOrWithoutPrefix) {
    auto r = read_user_requests({"FOO=1", "SPANK_LANES_REQUEST_CLASS=inference", "LANES_REQUEST_CAP=5Gbit"});
    ASSERT_TRUE(r.lanes_class);
    EXPECT_EQ(*r.lanes_class, "inference");
    ASSERT_TRUE(r.cap);
    EXPECT_EQ(*r.cap, "5Gbit");
    auto none = read_user_requests({"LANES_CLASS=training"});
    EXPECT_FALSE(none.lanes_class);
    EXPECT_FALSE(none.cap);
}

TEST(JobEnv, DecisionRoundTripsThroughTheEnvironment) {
    Decision d;
    d.class_name = "training";
    d.network.dscp = 8;
    d.network.rate = Rate{400'000'000'000ull, 0};
    d.network.ceil = Rate{0, 80};
    d.network.rdma_traffic_class = 32;
    d.network.rdma_service_level = 1;
    d.network.rank = 2;
    std::map<std::string, std::string> vars;
    for (const auto& e : encode_decision(d)) {
        auto eq = e.find('=');
        vars["SPANK_" + e.substr(0, eq)] = e.substr(eq + 1);
    }
    EXPECT_EQ(vars["SPANK_LANES_RATE"], "400000000000");
    EXPECT_EQ(vars["SPANK_LANES_CEIL"], "80%");
    auto back = decode_directive(vars);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->class_name, "training");
    EXPECT_EQ(back->network, d.network);
}

TEST(JobEnv, IngressCapsRoundTrip) {
    Decision d;
    d.class_name = "training";
    d.network.rate = Rate{1000, 0};
    d.network.ingress_rate = Rate{2'000'000'000ull, 0};
    d.network.ingress_ceil = Rate{0, 50};
    std::map<std::string, std::string> vars;
    for (const auto& e : encode_decision(d)) {
        auto eq = e.find('=');
        vars["SPANK_" + e.substr(0, eq)] = e.substr(eq + 1);
    }
    EXPECT_EQ(vars["SPANK_LANES_INGRESS_RATE"], "2000000000");
    EXPECT_EQ(vars["SPANK_LANES_INGRESS_CEIL"], "50%");
    auto back = decode_directive(vars);
    ASSERT_TRUE(back) << back.error().message;
    d.network.ceil = d.network.rate;  // the decoder's egress default
    EXPECT_EQ(back->network, d.network);
    // Ceil defaults to rate, and a bad value names the variable.
    auto only_rate = decode_directive({{"LANES_CLASS", "t"}, {"LANES_INGRESS_RATE", "1000"}});
    ASSERT_TRUE(only_rate);
    EXPECT_EQ(only_rate->network.ingress_ceil, (Rate{1000, 0}));
    auto bad = decode_directive({{"LANES_CLASS", "t"}, {"LANES_INGRESS_CEIL", "x"}});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("LANES_INGRESS_CEIL"), std::string::npos) << bad.error().message;
}

TEST(JobEnv, CeilDefaultsToRate) {
    auto back = decode_directive({{"LANES_CLASS", "t"}, {"LANES_RATE", "1000"}});
    ASSERT_TRUE(back);
    ASSERT_TRUE(back->network.ceil);
    EXPECT_EQ(back->network.ceil->bits_per_second, 1000u);
}

TEST(JobEnv, BadDirectivesNameTheVariable) {
    struct Case {
        std::map<std::string, std::string> vars;
        const char* expect;
    } cases[] = {
        {{}, "LANES_CLASS is not set"},
        {{{"LANES_CLASS", "a b"}}, "LANES_CLASS: invalid class name"},
        {{{"LANES_CLASS", "t"}, {"LANES_DSCP", "64"}}, "LANES_DSCP: '64' is not an integer from 0 to 63"},
        {{{"LANES_CLASS", "t"}, {"LANES_DSCP", "-1"}}, "LANES_DSCP"},
        {{{"LANES_CLASS", "t"}, {"LANES_RATE", "0"}}, "LANES_RATE: '0' is not a positive"},
        {{{"LANES_CLASS", "t"}, {"LANES_CEIL", "101%"}}, "LANES_CEIL: '101%' is not a percentage"},
        {{{"LANES_CLASS", "t"}, {"LANES_RDMA_SL", "16"}}, "LANES_RDMA_SL"},
    };
    for (const auto& c : cases) {
        auto r = decode_directive(c.vars);
        ASSERT_FALSE(r) << c.expect;
        EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << r.error().message;
    }
}
