// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/hostlist.hpp"

#include <gtest/gtest.h>

namespace lanes {
namespace {

using Names = std::vector<std::string>;

struct ExpandCase {
    const char* expression;
    Names names;
};

TEST(Hostlist, ExpandsRangesListsPaddingAndProducts) {
    const ExpandCase cases[] = {
        {"node1", {"node1"}},
        {"train[1-4,7]", {"train1", "train2", "train3", "train4", "train7"}},
        {"gpu[01-03]-ib", {"gpu01-ib", "gpu02-ib", "gpu03-ib"}},
        {"gpu[098-101]", {"gpu098", "gpu099", "gpu100", "gpu101"}},
        {"rack[1-2]n[1-2]", {"rack1n1", "rack1n2", "rack2n1", "rack2n2"}},
        {"a1,b[2-3],gpu*", {"a1", "b2", "b3", "gpu*"}},
        {" a , b ", {"a", "b"}},
        {"x[5]", {"x5"}},
    };
    for (const auto& c : cases) {
        auto r = expand_hostlist(c.expression);
        ASSERT_TRUE(r) << c.expression << ": " << r.error().message;
        EXPECT_EQ(*r, c.names) << c.expression;
    }
}

TEST(Hostlist, RejectsBrokenExpressionsWithTheExpressionInTheMessage) {
    for (const char* bad : {"a[1-", "a]", "a[3-1]", "a[x]", "a[1-2", "a[[1]]", "a,,b", "a[]", "a[1,]"}) {
        auto r = expand_hostlist(bad);
        ASSERT_FALSE(r) << bad;
        EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
    }
}

TEST(Hostlist, CapsTheNumberOfNames) {
    EXPECT_FALSE(expand_hostlist("n[1-100000]", 1000));
    EXPECT_FALSE(expand_hostlist("a[1-100]b[1-100]", 1000));
    EXPECT_TRUE(expand_hostlist("a[1-10]b[1-100]", 1000));
}

// The fuzzer's find: the largest uint64_t as a bound used to loop forever
// (the counter wrapped around) until memory ran out.
TEST(Hostlist, ExpandsTheLargestNumberOnce) {
    auto one = expand_hostlist("n[0000018446744073709551615]");
    ASSERT_TRUE(one) << one.error().message;
    EXPECT_EQ(*one, (Names{"n0000018446744073709551615"}));
    auto two = expand_hostlist("n[18446744073709551614-18446744073709551615]");
    ASSERT_TRUE(two) << two.error().message;
    EXPECT_EQ(*two, (Names{"n18446744073709551614", "n18446744073709551615"}));
    EXPECT_FALSE(expand_hostlist("n[18446744073709551616]"));  // past uint64_t: a bad number
}

TEST(Hostlist, MatchesHostnames) {
    struct Case {
        const char* expression;
        const char* host;
        bool match;
    } cases[] = {
        {"*", "anything", true},
        {"", "anything", true},
        {"train[1-2]", "train1", true},
        {"train[1-2]", "train3", false},
        {"train[1-2]", "train10", false},
        {"gpu*", "gpu17", true},
        {"gpu*", "cpu1", false},
        {"a1,b[2-3]", "b3", true},
        {"gpu[01-02]", "gpu1", false},
        {"gpu[01-02]", "gpu02", true},
        {"rack[1-2]-gpu*", "rack2-gpu9", true},
        {"rack[1-2]-gpu*", "rack3-gpu9", false},
    };
    for (const auto& c : cases) {
        auto r = hostlist_matches(c.expression, c.host);
        ASSERT_TRUE(r) << c.expression;
        EXPECT_EQ(*r, c.match) << c.expression << " vs " << c.host;
    }
    EXPECT_FALSE(hostlist_matches("a[", "a"));
}

}  // namespace
}  // namespace lanes

// Found by tests/fuzz/hostlist_fuzz: an item with a byte no host name has (here a
// trailing '\\', which fnmatch treats as an escape) was accepted and then matched
// nothing, not even itself, so a [[nodes.nic]] entry silently selected no node.
TEST(Hostlist, RefusesCharactersNoHostNameHas) {
    struct Case {
        std::string expression;
        const char* shown;
    } cases[] = {
        {"\x88N\xa4"
         "cccccccccc8#1\\",
         "\\x88"},
        {"gpu1\\", "'\\'"},
        {"gpu 1", "\\x20"},
        {"gpu[1-2]#a", "'#'"},
        {std::string("gpu\x01", 4), "\\x01"},
    };
    for (const auto& c : cases) {
        auto names = lanes::expand_hostlist(c.expression);
        ASSERT_FALSE(names) << c.expression;
        EXPECT_NE(names.error().message.find(std::string("character ") + c.shown + " is not allowed"),
                  std::string::npos)
            << names.error().message;
        EXPECT_FALSE(lanes::hostlist_matches(c.expression, "gpu1"));
    }
    for (const char* ok : {"gpu*", "n-1.ib_x?", "rack[1-2]n[01-02].cluster"}) {
        auto names = lanes::expand_hostlist(ok);
        ASSERT_TRUE(names) << names.error().message;
        for (const auto& n : *names) EXPECT_TRUE(*lanes::hostlist_matches(ok, n)) << ok << " " << n;
    }
}
