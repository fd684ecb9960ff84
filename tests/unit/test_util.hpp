// SPDX-License-Identifier: GPL-2.0-or-later
// Helpers several unit test files use. The unit tests build as one
// translation unit (Makefile.am's unity build), so a helper two files need
// lives here once, not in each file's anonymous namespace.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "ctld/windows.hpp"

namespace lanes::test {

constexpr uint64_t kGbit = 1'000'000'000ull;

// An instant given in UTC.
inline SysSeconds utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
    using namespace std::chrono;
    return SysSeconds{sys_days{year{y} / month{mo} / day{d}}} + hours{h} + minutes{mi} + seconds{s};
}

// A time zone from the system's tz database (a failed expectation if absent).
inline std::shared_ptr<const TimeZone> zone(const std::string& name) {
    auto z = TimeZone::load(name);
    EXPECT_TRUE(z) << name << ": " << (z ? "" : z.error().message);
    return z ? *z : nullptr;
}

// Whether `text` holds `part`.
inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// `text` with the first `from` replaced by `to` (a failed expectation if absent).
inline std::string with(std::string text, const std::string& from, const std::string& to) {
    auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
}

// tests/golden in the source tree ($LANES_SRCDIR, else the configured one).
inline std::filesystem::path golden_dir() {
    const char* env = std::getenv("LANES_SRCDIR");
    return std::filesystem::path(env && *env ? env : LANES_TEST_SRCDIR) / "tests" / "golden";
}

}  // namespace lanes::test
