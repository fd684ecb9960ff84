// SPDX-License-Identifier: GPL-2.0-or-later
// Units: rates, DSCP, byte sizes, durations.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/job_env.hpp"
#include "core/lanes_toml.hpp"

namespace {

using lanes::parse_rate;
using lanes::Rate;

struct RateCase {
    const char* text;
    uint64_t bits;   // expected absolute rate, or 0
    double percent;  // expected percentage, or 0
};

TEST(Units, ParseRateAccepts) {
    const std::vector<RateCase> cases = {
        {"25Gbit", 25'000'000'000ULL, 0},
        {"800Mbit", 800'000'000ULL, 0},
        {"1.5Gbit", 1'500'000'000ULL, 0},
        {"100Kbit", 100'000ULL, 0},
        {"400Gbit", 400'000'000'000ULL, 0},
        {"800Gbit", 800'000'000'000ULL, 0},
        {"1.6Tbit", 1'600'000'000'000ULL, 0},
        {"1bit", 1ULL, 0},
        {"10gbit", 10'000'000'000ULL, 0},
        {"10GBIT", 10'000'000'000ULL, 0},
        {" 10Gbit ", 10'000'000'000ULL, 0},
        {"10 Gbit", 10'000'000'000ULL, 0},
        {"0.5Mbit", 500'000ULL, 0},
        {".5Mbit", 500'000ULL, 0},
        {"1Kibit", 1024ULL, 0},
        {"1Gibit", 1ULL << 30, 0},
        // 2^32 bytes/s = 34359738368 bit/s: needs 64-bit rates in tc too.
        {"34.359738368Gbit", 34'359'738'368ULL, 0},
        {"18000000Tbit", 18'000'000'000'000'000'000ULL, 0},
        {"40%", 0, 40},
        {"100%", 0, 100},
        {"12.5%", 0, 12.5},
        {"0.1%", 0, 0.1},
    };
    for (const auto& c : cases) {
        auto r = parse_rate(c.text);
        ASSERT_TRUE(r.has_value()) << c.text << ": " << r.error().message;
        EXPECT_EQ(r->bits_per_second, c.bits) << c.text;
        EXPECT_DOUBLE_EQ(r->percent, c.percent) << c.text;
        EXPECT_EQ(r->is_relative(), c.percent > 0) << c.text;
    }
}

struct BadCase {
    const char* text;
    const char* message_contains;
};

TEST(Units, ParseRateRejects) {
    const std::vector<BadCase> cases = {
        {"", "empty"},
        {"Gbit", "does not start with a number"},
        {"10", "no unit"},
        {"0", "is zero"},                  // not "0Mbit"
        {"10000000", "write \"10Mbit\""},  // not "10000000Mbit"
        {"25000000000", "write \"25Gbit\""},
        {"1500", "write \"1500bit\""},
        {"10Gbps", "write \"10Gbit\""},
        {"1.5Gbps", "write \"1.5Gbit\""},
        {"10GBps", "BYTES per second"},
        {"800mbps", "write \"800Mbit\""},
        {"100bps", "ambiguous"},
        {"10Gb", "unknown unit"},
        {"10G", "unknown unit"},
        {"10 furlongs", "unknown unit"},
        {"0Gbit", "zero"},
        {"0%", "out of range"},
        {"0.0%", "out of range"},
        {"100.5%", "out of range"},
        {"101%", "out of range"},
        {"-5Gbit", "does not start with a number"},
        {"0.5bit", "whole number"},
        {"19000000Tbit", "too large"},
        {"99999999999999999999999bit", "too large"},
        {"1.2.3Gbit", "unknown unit"},
    };
    for (const auto& c : cases) {
        auto r = parse_rate(c.text);
        ASSERT_FALSE(r.has_value()) << c.text;
        EXPECT_NE(r.error().message.find(c.message_contains), std::string::npos)
            << c.text << " -> " << r.error().message;
    }
}

TEST(Units, RateResolve) {
    struct Case {
        const char* rate;
        uint64_t link;
        uint64_t expected;
    };
    const std::vector<Case> cases = {
        {"40%", 10'000'000'000ULL, 4'000'000'000ULL},
        {"100%", 400'000'000'000ULL, 400'000'000'000ULL},
        {"12.5%", 400'000'000'000ULL, 50'000'000'000ULL},
        {"33%", 100, 33},
        {"0.1%", 100, 1},
        {"0.1%", 1, 1},                                    // never rounds a configured rate down to nothing
        {"40%", 0, 0},                                     // unknown link speed
        {"25Gbit", 10'000'000'000ULL, 25'000'000'000ULL},  // absolute ignores the link
        {"25Gbit", 0, 25'000'000'000ULL},
    };
    for (const auto& c : cases) {
        auto r = parse_rate(c.rate);
        ASSERT_TRUE(r) << c.rate;
        EXPECT_EQ(r->resolve(c.link), c.expected) << c.rate << " of " << c.link;
    }
}

TEST(Units, FormatRate) {
    struct Case {
        uint64_t bits;
        const char* text;
    };
    const std::vector<Case> cases = {
        {25'000'000'000ULL, "25Gbit"},
        {1'500'000'000ULL, "1.5Gbit"},
        {800'000'000ULL, "800Mbit"},
        {400'000'000'000ULL, "400Gbit"},
        {1'600'000'000'000ULL, "1.6Tbit"},
        {34'359'738'368ULL, "34.359738368Gbit"},
        {100'000ULL, "100Kbit"},
        {999ULL, "999bit"},
        {1ULL, "1bit"},
        {0ULL, "0bit"},
        {1'234'567ULL, "1.234567Mbit"},
    };
    for (const auto& c : cases) EXPECT_EQ(lanes::format_rate(c.bits), c.text) << c.bits;
}

TEST(Units, FormatRateRoundTrips) {
    const std::vector<uint64_t> values = {1,
                                          7,
                                          1000,
                                          1001,
                                          999'999,
                                          10'000'000'000ULL,
                                          34'359'738'368ULL,
                                          400'000'000'000ULL,
                                          18'446'744'073'709'551'615ULL};
    for (uint64_t v : values) {
        auto r = parse_rate(lanes::format_rate(v));
        ASSERT_TRUE(r) << v << " -> " << lanes::format_rate(v) << ": " << r.error().message;
        EXPECT_EQ(r->bits_per_second, v);
    }
}

// The one formatter's two styles, and both read back to the same Rate.
TEST(Units, FormatRateStyles) {
    Rate abs;
    abs.bits_per_second = 1'500'000'000ULL;
    Rate pct;
    pct.percent = 12.5;
    EXPECT_EQ(lanes::format_rate(abs), "1.5Gbit");
    EXPECT_EQ(lanes::format_rate(abs, lanes::RateStyle::Bits), "1500000000");
    EXPECT_EQ(lanes::format_rate(pct), "12.5%");
    EXPECT_EQ(lanes::format_rate(pct, lanes::RateStyle::Bits), "12.5%");
    EXPECT_EQ(lanes::encode_rate(abs), "1500000000");
    for (const Rate& r : {abs, pct}) {
        auto back = lanes::decode_rate(lanes::format_rate(r, lanes::RateStyle::Bits));
        ASSERT_TRUE(back) << back.error().message;
        EXPECT_EQ(*back, r);
        auto parsed = parse_rate(lanes::format_rate(r));
        ASSERT_TRUE(parsed) << parsed.error().message;
        EXPECT_EQ(*parsed, r);
    }
    // A percentage with more digits than people read (the fuzzer's
    // "5.888...8%") still reads back exactly from the machine form.
    Rate many;
    many.percent = 5.888888888888889;
    EXPECT_EQ(lanes::format_rate(many), "5.88889%");
    auto back = lanes::decode_rate(lanes::encode_rate(many));
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, many);
}

TEST(Units, ParseDscpAccepts) {
    struct Case {
        const char* text;
        uint8_t value;
    };
    const std::vector<Case> cases = {
        {"CS0", 0},   {"CS1", 8},   {"cs1", 8},   {"CS2", 16},  {"CS3", 24},  {"CS4", 32},  {"CS5", 40},  {"CS6", 48},
        {"CS7", 56},  {"AF11", 10}, {"AF12", 12}, {"AF13", 14}, {"AF21", 18}, {"AF22", 20}, {"AF23", 22}, {"AF31", 26},
        {"AF32", 28}, {"AF33", 30}, {"AF41", 34}, {"af42", 36}, {"AF43", 38}, {"EF", 46},   {"ef", 46},   {"VA", 44},
        {"LE", 1},    {"le", 1},    {"DF", 0},    {"0", 0},     {"46", 46},   {"63", 63},   {"013", 13},
    };
    for (const auto& c : cases) {
        auto r = lanes::parse_dscp(c.text);
        ASSERT_TRUE(r) << c.text << ": " << r.error().message;
        EXPECT_EQ(*r, c.value) << c.text;
    }
}

TEST(Units, ParseDscpRejects) {
    const std::vector<BadCase> cases = {
        {"", "empty"},          {"64", "out of range"}, {"255", "out of range"}, {"-1", "not a DSCP name"},
        {"CS8", "not a DSCP"},  {"AF14", "not a DSCP"}, {"AF51", "not a DSCP"},  {"AF01", "not a DSCP"},
        {"AF10", "not a DSCP"}, {"EFF", "not a DSCP"},  {"4x", "not a number"},  {"CS", "not a DSCP"},
    };
    for (const auto& c : cases) {
        auto r = lanes::parse_dscp(c.text);
        ASSERT_FALSE(r) << c.text;
        EXPECT_NE(r.error().message.find(c.message_contains), std::string::npos)
            << c.text << " -> " << r.error().message;
    }
}

TEST(Units, DscpNameIsTheInverse) {
    struct Case {
        uint8_t value;
        const char* name;
    };
    const std::vector<Case> cases = {{46, "EF"},  {44, "VA"},   {1, "LE"},    {0, "CS0"},  {8, "CS1"},
                                     {56, "CS7"}, {10, "AF11"}, {38, "AF43"}, {13, "13"},  {63, "63"},
                                     {40, "CS5"}, {42, "42"},   {2, "2"},     {200, "200"}};
    for (const auto& c : cases) EXPECT_EQ(lanes::dscp_name(c.value), c.name) << int(c.value);
    for (int v = 0; v < 64; ++v) {
        auto back = lanes::parse_dscp(lanes::dscp_name(static_cast<uint8_t>(v)));
        ASSERT_TRUE(back) << v;
        EXPECT_EQ(*back, v);
    }
}

TEST(Units, ParseBytes) {
    struct Case {
        const char* text;
        uint64_t bytes;
    };
    const std::vector<Case> cases = {
        {"16MiB", 16ULL << 20},
        {"512KiB", 512ULL << 10},
        {"1GiB", 1ULL << 30},
        {"2TiB", 2ULL << 40},
        {"1048576", 1048576},
        {"100B", 100},
        {"16mib", 16ULL << 20},
        {"1.5MiB", 1572864},
        {"16M", 16ULL << 20},
        {"4G", 4ULL << 30},
        {"0", 0},
    };
    for (const auto& c : cases) {
        auto r = lanes::parse_bytes(c.text);
        ASSERT_TRUE(r) << c.text << ": " << r.error().message;
        EXPECT_EQ(*r, c.bytes) << c.text;
    }
    const std::vector<BadCase> bad = {
        {"", "empty"},
        {"MiB", "does not start"},
        {"16MB", "write \"16MiB\""},
        {"1KB", "ambiguous"},
        {"16 parsecs", "unknown unit"},
        {"1.1B", "whole number"},
        {"99999999TiB", "too large"},
    };
    for (const auto& c : bad) {
        auto r = lanes::parse_bytes(c.text);
        ASSERT_FALSE(r) << c.text;
        EXPECT_NE(r.error().message.find(c.message_contains), std::string::npos)
            << c.text << " -> " << r.error().message;
    }
}

TEST(Units, ParseDuration) {
    using std::chrono::microseconds;
    struct Case {
        const char* text;
        microseconds us;
    };
    const std::vector<Case> cases = {
        {"20ms", microseconds{20000}},     {"500us", microseconds{500}},       {"1.5s", microseconds{1500000}},
        {"2min", microseconds{120000000}}, {"1h", microseconds{3600000000LL}}, {"0.5ms", microseconds{500}},
    };
    for (const auto& c : cases) {
        auto r = lanes::parse_duration(c.text);
        ASSERT_TRUE(r) << c.text << ": " << r.error().message;
        EXPECT_EQ(*r, c.us) << c.text;
    }
    const std::vector<BadCase> bad = {
        {"20", "no unit"},
        {"20 fortnights", "unknown unit"},
        {"0.5us", "whole number"},
        {"", "empty"},
    };
    for (const auto& c : bad) {
        auto r = lanes::parse_duration(c.text);
        ASSERT_FALSE(r) << c.text;
        EXPECT_NE(r.error().message.find(c.message_contains), std::string::npos)
            << c.text << " -> " << r.error().message;
    }
}

}  // namespace
