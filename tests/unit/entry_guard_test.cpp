// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "core/entry_guard.hpp"

TEST(EntryGuard, PassesTheBodysResultThrough) {
    std::string reported;
    EXPECT_EQ(lanes::guard_entry(
                  -1, [&](const char* w) { reported = w; }, [] { return 7; }),
              7);
    EXPECT_TRUE(reported.empty());
}

TEST(EntryGuard, ExceptionsBecomeTheErrorCodeAndAreReported) {
    std::string reported;
    auto report = [&](const char* w) { reported = w; };
    EXPECT_EQ(lanes::guard_entry(-1, report, []() -> int { throw std::runtime_error("boom"); }), -1);
    EXPECT_EQ(reported, "boom");
    EXPECT_EQ(lanes::guard_entry(42, report, []() -> int { throw 3; }), 42);
    EXPECT_EQ(reported, "unknown error");
}
