// SPDX-License-Identifier: GPL-2.0-or-later
// TimeZone: TZif parsing, footer rules, gaps and folds.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "ctld/windows.hpp"
#include "tests/unit/test_util.hpp"
#include "tests/unit/time_text.hpp"

namespace {

using lanes::test::utc;
using lanes::test::zone;

using namespace std::chrono;
using lanes::SysSeconds;
using lanes::TimeZone;
using lanes::test::show;

local_seconds loc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
    return local_seconds{local_days{year{y} / month{mo} / day{d}}} + hours{h} + minutes{mi} + seconds{s};
}

struct OffsetCase {
    const char* zone;
    SysSeconds at;
    int32_t offset;
    const char* abbrev;
};

TEST(TimeZone, OffsetsAroundTransitions) {
    const std::vector<OffsetCase> cases = {
        // Europe/Berlin 2025: CEST from 2025-03-30 01:00 UTC to 2025-10-26 01:00 UTC.
        {"Europe/Berlin", utc(2025, 1, 15, 12), 3600, "CET"},
        {"Europe/Berlin", utc(2025, 3, 30, 0, 59, 59), 3600, "CET"},
        {"Europe/Berlin", utc(2025, 3, 30, 1), 7200, "CEST"},
        {"Europe/Berlin", utc(2025, 7, 1), 7200, "CEST"},
        {"Europe/Berlin", utc(2025, 10, 26, 0, 59, 59), 7200, "CEST"},
        {"Europe/Berlin", utc(2025, 10, 26, 1), 3600, "CET"},
        // Past the last transition in the file (2037): the footer rule.
        {"Europe/Berlin", utc(2040, 3, 25, 0, 59, 59), 3600, "CET"},
        {"Europe/Berlin", utc(2040, 3, 25, 1), 7200, "CEST"},
        {"Europe/Berlin", utc(2040, 10, 28, 0, 59, 59), 7200, "CEST"},
        {"Europe/Berlin", utc(2040, 10, 28, 1), 3600, "CET"},
        {"Europe/Berlin", utc(2100, 7, 1), 7200, "CEST"},
        {"Europe/Berlin", utc(2100, 12, 31, 23), 3600, "CET"},
        // America/New_York: EDT from the second Sunday of March 07:00 UTC.
        {"America/New_York", utc(2025, 3, 9, 6, 59, 59), -18000, "EST"},
        {"America/New_York", utc(2025, 3, 9, 7), -14400, "EDT"},
        {"America/New_York", utc(2025, 11, 2, 5, 59, 59), -14400, "EDT"},
        {"America/New_York", utc(2025, 11, 2, 6), -18000, "EST"},
        {"America/New_York", utc(2040, 3, 11, 7), -14400, "EDT"},
        {"America/New_York", utc(2040, 11, 4, 6), -18000, "EST"},
        {"America/New_York", utc(1960, 7, 1), -14400, "EDT"},  // before 1970: negative times
        // Lord Howe Island: half-hour DST, southern hemisphere.
        {"Australia/Lord_Howe", utc(2025, 1, 15), 39600, "+11"},
        {"Australia/Lord_Howe", utc(2025, 4, 5, 14, 59, 59), 39600, "+11"},
        {"Australia/Lord_Howe", utc(2025, 4, 5, 15), 37800, "+1030"},
        {"Australia/Lord_Howe", utc(2025, 10, 4, 15, 29, 59), 37800, "+1030"},
        {"Australia/Lord_Howe", utc(2025, 10, 4, 15, 30), 39600, "+11"},
        {"Australia/Lord_Howe", utc(2040, 3, 31, 15), 37800, "+1030"},
        {"Australia/Lord_Howe", utc(2040, 10, 6, 15, 30), 39600, "+11"},
        {"Australia/Lord_Howe", utc(2040, 12, 31), 39600, "+11"},
        {"UTC", utc(2025, 7, 1), 0, "UTC"},
        {"Etc/UTC", utc(2040, 7, 1), 0, "UTC"},
        {"Asia/Kolkata", utc(2040, 7, 1), 19800, "IST"},
    };
    for (const auto& c : cases) {
        auto z = zone(c.zone);
        ASSERT_TRUE(z);
        EXPECT_EQ(z->offset_at(c.at), c.offset) << c.zone << " at " << show(c.at);
        EXPECT_EQ(z->abbreviation_at(c.at), c.abbrev) << c.zone << " at " << show(c.at);
        EXPECT_EQ(z->name(), c.zone);
    }
}

struct LocalCase {
    const char* zone;
    local_seconds local;
    SysSeconds expected;
    const char* why;
};

TEST(TimeZone, ToInstantGapsAndFolds) {
    const std::vector<LocalCase> cases = {
        {"Europe/Berlin", loc(2025, 1, 15, 8), utc(2025, 1, 15, 7), "winter"},
        {"Europe/Berlin", loc(2025, 7, 15, 8), utc(2025, 7, 15, 6), "summer"},
        {"Europe/Berlin", loc(2025, 3, 30, 1, 59, 59), utc(2025, 3, 30, 0, 59, 59), "just before the gap"},
        {"Europe/Berlin", loc(2025, 3, 30, 2), utc(2025, 3, 30, 1), "gap start -> 03:00 CEST"},
        {"Europe/Berlin", loc(2025, 3, 30, 2, 30), utc(2025, 3, 30, 1), "gap -> 03:00 CEST"},
        {"Europe/Berlin", loc(2025, 3, 30, 3), utc(2025, 3, 30, 1), "gap end"},
        {"Europe/Berlin", loc(2025, 10, 26, 2, 30), utc(2025, 10, 26, 0, 30), "fold -> earlier (CEST)"},
        {"Europe/Berlin", loc(2025, 10, 26, 3), utc(2025, 10, 26, 2), "after the fold"},
        {"Europe/Berlin", loc(2040, 3, 25, 2, 30), utc(2040, 3, 25, 1), "footer rule gap"},
        {"Europe/Berlin", loc(2040, 10, 28, 2, 30), utc(2040, 10, 28, 0, 30), "footer rule fold"},
        {"America/New_York", loc(2025, 3, 9, 2, 30), utc(2025, 3, 9, 7), "gap"},
        {"America/New_York", loc(2025, 11, 2, 1, 30), utc(2025, 11, 2, 5, 30), "fold -> EDT"},
        {"America/New_York", loc(2025, 11, 2, 2, 30), utc(2025, 11, 2, 7, 30), "after the fold"},
        {"Australia/Lord_Howe", loc(2025, 10, 5, 2, 15), utc(2025, 10, 4, 15, 30), "half-hour gap"},
        {"Australia/Lord_Howe", loc(2025, 4, 6, 1, 45), utc(2025, 4, 5, 14, 45), "half-hour fold -> earlier"},
        {"Australia/Lord_Howe", loc(2025, 4, 6, 2, 0), utc(2025, 4, 5, 15, 30), "after the fold"},
        {"UTC", loc(2025, 3, 30, 2, 30), utc(2025, 3, 30, 2, 30), "no DST"},
    };
    for (const auto& c : cases) {
        auto z = zone(c.zone);
        ASSERT_TRUE(z);
        EXPECT_EQ(show(z->to_instant(c.local)), show(c.expected)) << c.zone << ": " << c.why;
    }
}

TEST(TimeZone, LocalRoundTripEveryQuarterHour) {
    for (const char* name : {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}) {
        auto z = zone(name);
        ASSERT_TRUE(z);
        for (int y : {2025, 2040}) {
            int mismatches = 0;
            for (SysSeconds t = utc(y, 1, 1); t < utc(y + 1, 1, 1); t += minutes{15}) {
                const local_seconds l = z->to_local(t);
                const SysSeconds back = z->to_instant(l);
                // In a fold the earlier instant comes back; otherwise exactly t.
                if (back != t && !(back < t && z->to_local(back) == l)) ++mismatches;
            }
            EXPECT_EQ(mismatches, 0) << name << " " << y;
        }
    }
}

TEST(TimeZone, RejectsBadNames) {
    struct Case {
        std::string name;
        const char* message_contains;
    };
    const std::vector<Case> cases = {
        {"", "not a valid IANA zone name"},
        {"/etc/localtime", "not a valid IANA zone name"},
        {"../../etc/passwd", "not a valid IANA zone name"},
        {"Europe/../../../etc/passwd", "not a valid IANA zone name"},
        {"Europe//Berlin", "not a valid IANA zone name"},
        {"Europe/Berlin/", "not a valid IANA zone name"},
        {".hidden", "not a valid IANA zone name"},
        {"Europe/Berlin\n", "not a valid IANA zone name"},
        {"Europe/Berl in", "not a valid IANA zone name"},
        {"Mars/Olympus_Mons", "unknown time zone"},
        {"europe/berlin", "unknown time zone"},
        {"right/Europe/Berlin", "leap seconds"},
    };
    for (const auto& c : cases) {
        auto z = TimeZone::load(c.name);
        if (c.name == "right/Europe/Berlin" && !z && z.error().message.find("unknown time zone") != std::string::npos)
            continue;  // tzdata without right/ zones
        ASSERT_FALSE(z) << c.name;
        EXPECT_NE(z.error().message.find(c.message_contains), std::string::npos)
            << c.name << " -> " << z.error().message;
    }
}

// Hand-made TZif files: version 1 (no footer), footer-only, corrupt ones.
class TzifDir {
public:
    TzifDir() {
        std::string tmpl = testing::TempDir() + "lanes-tz-XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back('\0');
        const char* d = mkdtemp(buf.data());
        EXPECT_NE(d, nullptr);
        dir_ = d ? d : "/nonexistent";
    }
    ~TzifDir() {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    const std::string& dir() const { return dir_; }
    void write(const std::string& name, const std::string& bytes) {
        std::ofstream out(dir_ + "/" + name, std::ios::binary);
        out << bytes;
    }

private:
    std::string dir_;
};

struct TypeSpec {
    int32_t offset;
    const char* abbrev;
};

void put32(std::string& s, uint32_t v) {
    for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put64(std::string& s, uint64_t v) {
    for (int i = 7; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::string tzif(char version, const std::vector<int64_t>& times, const std::vector<uint8_t>& idx,
                 const std::vector<TypeSpec>& types, const std::string& footer, uint32_t leapcnt = 0) {
    std::string chars;
    std::vector<uint8_t> desig;
    for (const auto& t : types) {
        desig.push_back(static_cast<uint8_t>(chars.size()));
        chars += t.abbrev;
        chars.push_back('\0');
    }
    auto block = [&](std::string& s, bool wide) {
        s += "TZif";
        s.push_back(version);
        s.append(15, '\0');
        put32(s, 0);
        put32(s, 0);
        put32(s, leapcnt);
        put32(s, static_cast<uint32_t>(times.size()));
        put32(s, static_cast<uint32_t>(types.size()));
        put32(s, static_cast<uint32_t>(chars.size()));
        for (int64_t t : times) wide ? put64(s, static_cast<uint64_t>(t)) : put32(s, static_cast<uint32_t>(t));
        for (uint8_t i : idx) s.push_back(static_cast<char>(i));
        for (size_t i = 0; i < types.size(); ++i) {
            put32(s, static_cast<uint32_t>(types[i].offset));
            s.push_back(0);
            s.push_back(static_cast<char>(desig[i]));
        }
        s += chars;
        for (uint32_t i = 0; i < leapcnt; ++i) {
            wide ? put64(s, 78796800) : put32(s, 78796800);
            put32(s, 1);
        }
    };
    std::string s;
    block(s, false);
    if (version >= '2') {
        block(s, true);
        s += "\n" + footer + "\n";
    }
    return s;
}

TEST(TimeZone, ParsesHandMadeFiles) {
    TzifDir d;
    // Version 1: one transition from +01 to +02 at 2000-01-01 00:00 UTC, kept forever.
    const int64_t y2000 = utc(2000, 1, 1).time_since_epoch().count();
    d.write("V1", tzif('\0', {y2000}, {1}, {{3600, "AAA"}, {7200, "BBB"}}, ""));
    // Version 3, no transitions at all: everything from the footer (DST from the rule).
    d.write("FooterOnly", tzif('3', {}, {}, {{3600, "CET"}}, "CET-1CEST,M3.5.0,M10.5.0/3"));
    // Version 2 with a fixed footer.
    d.write("Fixed", tzif('2', {}, {}, {{19800, "IST"}}, "IST-5:30"));
    // Version 3 rule with a time beyond 24h (RFC 8536 extension) and Julian days.
    d.write("Julian", tzif('3', {}, {}, {{0, "AAA"}}, "AAA0BBB,J60/0,J300/25"));

    struct Case {
        const char* zone;
        SysSeconds at;
        int32_t offset;
        const char* abbrev;
    };
    const std::vector<Case> cases = {
        {"V1", utc(1999, 12, 31, 23, 59, 59), 3600, "AAA"},
        {"V1", utc(2000, 1, 1), 7200, "BBB"},
        {"V1", utc(2100, 1, 1), 7200, "BBB"},
        {"FooterOnly", utc(2031, 3, 30, 0, 59, 59), 3600, "CET"},
        {"FooterOnly", utc(2031, 3, 30, 1), 7200, "CEST"},
        {"FooterOnly", utc(2031, 10, 26, 1), 3600, "CET"},
        {"FooterOnly", utc(1950, 7, 1), 7200, "CEST"},
        {"Fixed", utc(2025, 7, 1), 19800, "IST"},
        // J60 is March 1 in every year (Feb 29 not counted); J300/25 is day 300 at 25:00.
        {"Julian", utc(2024, 2, 29, 23, 59, 59), 0, "AAA"},
        {"Julian", utc(2024, 3, 1), 3600, "BBB"},
        {"Julian", utc(2025, 3, 1), 3600, "BBB"},
        {"Julian", utc(2025, 10, 27, 23, 59, 59), 3600, "BBB"},  // day 300 = Oct 27, +25h local = Oct 28 01:00
        {"Julian", utc(2025, 10, 28, 0), 0, "AAA"},
    };
    for (const auto& c : cases) {
        auto z = TimeZone::load(c.zone, d.dir());
        ASSERT_TRUE(z) << c.zone << ": " << z.error().message;
        EXPECT_EQ((*z)->offset_at(c.at), c.offset) << c.zone << " at " << show(c.at);
        EXPECT_EQ((*z)->abbreviation_at(c.at), c.abbrev) << c.zone << " at " << show(c.at);
    }
}

TEST(TimeZone, RejectsCorruptFiles) {
    TzifDir d;
    const std::string good = tzif('2', {0}, {0}, {{3600, "AAA"}}, "AAA-1");
    d.write("NotTzif", "# tzdb zone table\nDE\t+5230+01322\tEurope/Berlin\n");
    d.write("Truncated", good.substr(0, good.size() - 20));
    d.write("Leap", tzif('2', {}, {}, {{0, "UTC"}}, "UTC0", 1));
    d.write("BadIndex", tzif('2', {0}, {3}, {{0, "UTC"}}, "UTC0"));
    d.write("BadFooter", tzif('2', {}, {}, {{0, "UTC"}}, "this is not a rule"));
    d.write("Unordered", tzif('2', {100, 50}, {0, 0}, {{0, "UTC"}}, "UTC0"));
    d.write("Empty", "");
    struct Case {
        const char* zone;
        const char* message_contains;
    };
    const std::vector<Case> cases = {
        {"NotTzif", "not a TZif file"},
        {"Truncated", "truncated"},
        {"Leap", "leap seconds"},
        {"BadIndex", "does not exist"},
        {"BadFooter", "cannot parse TZ string footer"},
        {"Unordered", "increasing order"},
        {"Empty", "not a TZif file"},
    };
    for (const auto& c : cases) {
        auto z = TimeZone::load(c.zone, d.dir());
        ASSERT_FALSE(z) << c.zone;
        EXPECT_NE(z.error().message.find(c.message_contains), std::string::npos)
            << c.zone << " -> " << z.error().message;
    }
}

TEST(TimeZone, UtcWorksWithoutTzdata) {
    auto z = TimeZone::load("UTC", "/nonexistent-zoneinfo");
    ASSERT_TRUE(z) << z.error().message;
    EXPECT_EQ((*z)->offset_at(utc(2025, 7, 1)), 0);
    EXPECT_EQ(show((*z)->to_instant(loc(2025, 7, 1, 12))), show(utc(2025, 7, 1, 12)));
}

}  // namespace
