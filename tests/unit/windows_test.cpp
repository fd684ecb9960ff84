// SPDX-License-Identifier: GPL-2.0-or-later
// WindowSet: weekly windows in a time zone, DST, midnight crossing, exceptions.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "ctld/windows.hpp"
#include "tests/unit/test_util.hpp"
#include "tests/unit/time_text.hpp"

namespace {

using lanes::test::utc;

using namespace std::chrono;
using lanes::DateRange;
using lanes::Interval;
using lanes::SysSeconds;
using lanes::Window;
using lanes::WindowSet;
using lanes::test::show;

year_month_day ymd(int y, unsigned m, unsigned d) { return year{y} / month{m} / day{d}; }

std::array<bool, 7> days_of(const std::vector<std::string>& spec) {
    auto d = lanes::parse_days(spec);
    EXPECT_TRUE(d) << (d ? "" : d.error().message);
    return d ? *d : std::array<bool, 7>{};
}

Window make(const std::string& name, const std::string& zone, const std::vector<std::string>& days, int sh, int sm,
            int eh, int em, std::vector<DateRange> exceptions = {}) {
    Window w;
    w.name = name;
    if (!zone.empty()) {
        auto z = lanes::TimeZone::load(zone);
        EXPECT_TRUE(z) << zone;
        if (z) w.zone = *z;
    }
    w.days = days_of(days);
    w.start = hours{sh} + minutes{sm};
    w.end = hours{eh} + minutes{em};
    w.exceptions = std::move(exceptions);
    return w;
}

DateRange except(year_month_day a, year_month_day b) { return DateRange{a, b, false}; }
DateRange add(year_month_day a) { return DateRange{a, a, true}; }

WindowSet standard_set() {
    WindowSet set;
    // Business hours in Berlin: 07:00-19:00 UTC in winter, 06:00-18:00 UTC in summer.
    set.add(make("peak", "Europe/Berlin", {"mon-fri"}, 8, 0, 20, 0,
                 {except(ymd(2025, 12, 24), ymd(2025, 12, 26)), except(ymd(2025, 12, 31), ymd(2025, 12, 31)),
                  add(ymd(2025, 12, 27))}));
    // Friday night, crossing midnight (belongs to Friday).
    set.add(make("fri-night", "Europe/Berlin", {"fri"}, 22, 0, 6, 0));
    // Every night, crossing midnight, with Christmas Eve off.
    set.add(make("nightly", "Europe/Berlin", {"daily"}, 22, 0, 6, 0, {except(ymd(2025, 12, 24), ymd(2025, 12, 24))}));
    // Around the DST switches.
    set.add(make("early", "Europe/Berlin", {"daily"}, 1, 0, 4, 0));
    set.add(make("in-gap", "Europe/Berlin", {"sun"}, 2, 30, 5, 0));
    set.add(make("ny", "America/New_York", {"weekdays"}, 9, 0, 17, 0));
    set.add(make("lhi", "Australia/Lord_Howe", {"daily"}, 2, 0, 3, 0));
    set.add(make("utc", "", {"sat", "sun"}, 0, 0, 24, 0));
    set.add(make("day-long", "Europe/Berlin", {"mon"}, 8, 0, 8, 0));
    // All day, every day, except two dates: one long merged occurrence.
    set.add(make("always", "Europe/Berlin", {"daily"}, 0, 0, 24, 0,
                 {except(ymd(2025, 6, 1), ymd(2025, 6, 1)), except(ymd(2025, 6, 10), ymd(2025, 6, 10))}));
    // Friday night plus an added all-day Saturday: one occurrence Fri 22:00 - Sun 00:00.
    set.add(make("weekend-extra", "Europe/Berlin", {"fri"}, 22, 0, 6, 0, {add(ymd(2025, 1, 18))}));
    return set;
}

struct InCase {
    const char* window;
    SysSeconds at;
    bool inside;
    const char* why;
};

TEST(Windows, InWindow) {
    const WindowSet set = standard_set();
    const std::vector<InCase> cases = {
        {"peak", utc(2025, 1, 15, 6, 59, 59), false, "winter Wed 07:59:59 CET"},
        {"peak", utc(2025, 1, 15, 7), true, "winter Wed 08:00 CET"},
        {"peak", utc(2025, 1, 15, 18, 59, 59), true, "winter Wed 19:59:59 CET"},
        {"peak", utc(2025, 1, 15, 19), false, "end is exclusive"},
        {"peak", utc(2025, 7, 15, 5, 59, 59), false, "summer Tue 07:59:59 CEST"},
        {"peak", utc(2025, 7, 15, 6), true, "summer Tue 08:00 CEST"},
        {"peak", utc(2025, 7, 15, 17, 59, 59), true, "summer 19:59:59 CEST"},
        {"peak", utc(2025, 7, 15, 18), false, "summer 20:00 CEST"},
        {"peak", utc(2025, 3, 31, 6), true, "Monday after spring forward: 08:00 CEST"},
        {"peak", utc(2025, 3, 28, 6, 30), false, "Friday before: 07:30 CET"},
        {"peak", utc(2025, 1, 18, 12), false, "Saturday"},
        {"peak", utc(2025, 12, 24, 10), false, "exception range, first day"},
        {"peak", utc(2025, 12, 26, 10), false, "exception range, last day"},
        {"peak", utc(2025, 12, 31, 10), false, "single-date exception"},
        {"peak", utc(2025, 12, 29, 10), true, "Monday between exceptions"},
        {"peak", utc(2025, 12, 26, 23, 0), true, "added Saturday 00:00 CET"},
        {"peak", utc(2025, 12, 27, 22, 59, 59), true, "added Saturday 23:59:59 CET"},
        {"peak", utc(2025, 12, 27, 23), false, "Sunday after the added day"},
        {"fri-night", utc(2025, 1, 17, 20, 59, 59), false, "Fri 21:59:59 CET"},
        {"fri-night", utc(2025, 1, 17, 21), true, "Fri 22:00 CET"},
        {"fri-night", utc(2025, 1, 18, 2), true, "Sat 03:00 belongs to Friday"},
        {"fri-night", utc(2025, 1, 18, 5), false, "Sat 06:00 CET: ended"},
        {"fri-night", utc(2025, 1, 18, 22), false, "Sat 23:00: Saturday is not a start day"},
        {"fri-night", utc(2025, 1, 19, 2), false, "Sun 03:00"},
        {"fri-night", utc(2025, 3, 29, 4, 59, 59), true, "Sat 05:59:59 CET"},
        {"nightly", utc(2025, 12, 24, 2), true, "Dec 24 03:00 belongs to Dec 23"},
        {"nightly", utc(2025, 12, 24, 22), false, "Dec 24 23:00: the excepted start day"},
        {"nightly", utc(2025, 12, 25, 2), false, "Dec 25 03:00 belongs to Dec 24"},
        {"nightly", utc(2025, 12, 25, 21), true, "Dec 25 22:00"},
        {"ny", utc(2025, 3, 7, 14), true, "Fri 09:00 EST"},
        {"ny", utc(2025, 3, 10, 13), true, "Mon 09:00 EDT"},
        {"ny", utc(2025, 3, 10, 12, 59), false, "Mon 08:59 EDT"},
        {"utc", utc(2025, 1, 18, 0), true, "Sat 00:00 UTC"},
        {"utc", utc(2025, 1, 19, 23, 59, 59), true, "Sun 23:59:59 UTC"},
        {"utc", utc(2025, 1, 20, 0), false, "Mon 00:00 UTC"},
        {"day-long", utc(2025, 1, 21, 6, 59, 59), true, "Tue 07:59:59: still Monday's"},
        {"day-long", utc(2025, 1, 21, 7), false, "Tue 08:00"},
        {"no-such-window", utc(2025, 1, 15, 12), false, "unknown names never match"},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(set.in_window(c.window, c.at), c.inside) << c.window << ": " << c.why;
    }
}

struct CurrentCase {
    const char* window;
    SysSeconds at;
    std::optional<Interval> expected;
    const char* why;
};

TEST(Windows, CurrentOccurrence) {
    const WindowSet set = standard_set();
    const std::vector<CurrentCase> cases = {
        {"peak", utc(2025, 1, 15, 12), Interval{utc(2025, 1, 15, 7), utc(2025, 1, 15, 19)}, "winter"},
        {"peak", utc(2025, 7, 15, 12), Interval{utc(2025, 7, 15, 6), utc(2025, 7, 15, 18)}, "summer"},
        {"peak", utc(2025, 7, 15, 19), std::nullopt, "outside"},
        // Spring forward on Sunday 2025-03-30 (02:00 CET -> 03:00 CEST).
        {"early", utc(2025, 3, 30, 1), Interval{utc(2025, 3, 30, 0), utc(2025, 3, 30, 2)},
         "01:00 CET to 04:00 CEST is two hours"},
        {"in-gap", utc(2025, 3, 30, 2), Interval{utc(2025, 3, 30, 1), utc(2025, 3, 30, 3)},
         "02:30 does not exist: starts at 03:00 CEST"},
        {"in-gap", utc(2025, 3, 23, 2), Interval{utc(2025, 3, 23, 1, 30), utc(2025, 3, 23, 4)},
         "a week before: 02:30 CET"},
        // Fall back on Sunday 2025-10-26 (03:00 CEST -> 02:00 CET).
        {"early", utc(2025, 10, 26, 0), Interval{utc(2025, 10, 25, 23), utc(2025, 10, 26, 3)},
         "01:00 CEST to 04:00 CET is four hours"},
        {"in-gap", utc(2025, 10, 26, 1), Interval{utc(2025, 10, 26, 0, 30), utc(2025, 10, 26, 4)},
         "02:30 is ambiguous: the earlier one (CEST)"},
        // Midnight crossing over the switches.
        {"nightly", utc(2025, 3, 30, 2), Interval{utc(2025, 3, 29, 21), utc(2025, 3, 30, 4)},
         "22:00 CET to 06:00 CEST is seven hours"},
        {"nightly", utc(2025, 10, 26, 2), Interval{utc(2025, 10, 25, 20), utc(2025, 10, 26, 5)},
         "22:00 CEST to 06:00 CET is nine hours"},
        // Lord Howe: the gap is 02:00-02:30 on 2025-10-05.
        {"lhi", utc(2025, 10, 4, 15, 45), Interval{utc(2025, 10, 4, 15, 30), utc(2025, 10, 4, 16)},
         "02:00 does not exist: starts 02:30 +11"},
        {"lhi", utc(2025, 10, 3, 15, 45), Interval{utc(2025, 10, 3, 15, 30), utc(2025, 10, 3, 16, 30)},
         "the day before, +1030"},
        {"day-long", utc(2025, 1, 20, 12), Interval{utc(2025, 1, 20, 7), utc(2025, 1, 21, 7)}, "end == start: 24h"},
        {"always", utc(2025, 6, 5, 12), Interval{utc(2025, 6, 1, 22), utc(2025, 6, 9, 22)},
         "consecutive days merge into one occurrence"},
        {"always", utc(2025, 6, 1, 12), std::nullopt, "excepted day"},
        {"weekend-extra", utc(2025, 1, 18, 12), Interval{utc(2025, 1, 17, 21), utc(2025, 1, 18, 23)},
         "Friday night and the added Saturday merge"},
        {"weekend-extra", utc(2025, 1, 25, 3), Interval{utc(2025, 1, 24, 21), utc(2025, 1, 25, 5)},
         "a normal Friday night"},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(show(set.current(c.window, c.at)), show(c.expected)) << c.window << ": " << c.why;
    }
}

struct NextCase {
    const char* window;
    SysSeconds at;
    std::optional<SysSeconds> start;
    std::optional<SysSeconds> end;
    const char* why;
};

TEST(Windows, NextStartAndEnd) {
    const WindowSet set = standard_set();
    const std::vector<NextCase> cases = {
        {"peak", utc(2025, 1, 17, 19), utc(2025, 1, 20, 7), utc(2025, 1, 20, 19), "Friday evening -> Monday"},
        {"peak", utc(2025, 1, 17, 12), utc(2025, 1, 20, 7), utc(2025, 1, 17, 19), "inside on Friday"},
        {"peak", utc(2025, 1, 18, 12), utc(2025, 1, 20, 7), utc(2025, 1, 20, 19), "Saturday"},
        {"peak", utc(2025, 1, 20, 7), utc(2025, 1, 21, 7), utc(2025, 1, 20, 19), "exactly at a start: strictly after"},
        {"peak", utc(2025, 1, 20, 6, 59, 59), utc(2025, 1, 20, 7), utc(2025, 1, 20, 19), "one second before"},
        {"peak", utc(2025, 3, 28, 19), utc(2025, 3, 31, 6), utc(2025, 3, 31, 18), "weekend with spring forward"},
        {"peak", utc(2025, 10, 24, 19), utc(2025, 10, 27, 7), utc(2025, 10, 27, 19), "weekend with fall back"},
        {"peak", utc(2025, 12, 23, 19), utc(2025, 12, 26, 23), utc(2025, 12, 27, 23),
         "Christmas off, then the added Saturday"},
        {"peak", utc(2025, 12, 27, 23), utc(2025, 12, 29, 7), utc(2025, 12, 29, 19), "after the added day"},
        {"fri-night", utc(2025, 1, 18, 2), utc(2025, 1, 24, 21), utc(2025, 1, 18, 5), "inside, belongs to Friday"},
        {"ny", utc(2025, 3, 7, 22), utc(2025, 3, 10, 13), utc(2025, 3, 10, 21), "NY weekend with spring forward"},
        {"always", utc(2025, 6, 1, 12), utc(2025, 6, 1, 22), utc(2025, 6, 9, 22), "merged run"},
        {"always", utc(2025, 6, 5, 12), utc(2025, 6, 10, 22), utc(2025, 6, 9, 22),
         "inside a long merged occurrence: the next start is after it"},
        {"no-such-window", utc(2025, 1, 1), std::nullopt, std::nullopt, "unknown"},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(show(set.next_start(c.window, c.at)), show(c.start)) << c.window << ": " << c.why;
        EXPECT_EQ(show(set.next_end(c.window, c.at)), show(c.end)) << c.window << ": " << c.why;
    }
}

TEST(Windows, NextStartRespectsHorizon) {
    WindowSet set;
    set.add(make("rare", "Europe/Berlin", {"mon"}, 8, 0, 9, 0, {except(ymd(2025, 1, 1), ymd(2025, 3, 31))}));
    EXPECT_EQ(show(set.next_start("rare", utc(2025, 1, 1), days{30})), "none");
    EXPECT_EQ(show(set.next_end("rare", utc(2025, 1, 1), days{30})), "none");
    EXPECT_EQ(show(set.next_start("rare", utc(2025, 1, 1))), show(utc(2025, 4, 7, 6)));  // first Monday in April, CEST
}

TEST(Windows, Occurrences) {
    const WindowSet set = standard_set();
    // Two working weeks around the spring switch: 07-19 UTC, then 06-18 UTC.
    std::vector<Interval> expected;
    for (unsigned d : {24u, 25u, 26u, 27u, 28u}) expected.push_back({utc(2025, 3, d, 7), utc(2025, 3, d, 19)});
    expected.push_back({utc(2025, 3, 31, 6), utc(2025, 3, 31, 18)});
    for (unsigned d : {1u, 2u, 3u, 4u}) expected.push_back({utc(2025, 4, d, 6), utc(2025, 4, d, 18)});
    EXPECT_EQ(show(set.occurrences("peak", utc(2025, 3, 23), utc(2025, 4, 5))), show(expected));

    // Occurrences overlapping the edges come back whole.
    std::vector<Interval> edges = {{utc(2025, 1, 15, 7), utc(2025, 1, 15, 19)},
                                   {utc(2025, 1, 16, 7), utc(2025, 1, 16, 19)}};
    EXPECT_EQ(show(set.occurrences("peak", utc(2025, 1, 15, 12), utc(2025, 1, 16, 8))), show(edges));
    // An occurrence that starts exactly at `to` is not included; one that ends exactly at `from` neither.
    EXPECT_EQ(set.occurrences("peak", utc(2025, 1, 15, 19), utc(2025, 1, 16, 7)), std::vector<Interval>{});
    EXPECT_EQ(set.occurrences("peak", utc(2025, 1, 16), utc(2025, 1, 15)), std::vector<Interval>{});
    EXPECT_EQ(set.occurrences("nope", utc(2025, 1, 1), utc(2025, 2, 1)), std::vector<Interval>{});

    // Merged: the "always" window between its two excepted days is one occurrence.
    auto got = set.occurrences("always", utc(2025, 5, 30), utc(2025, 6, 8));
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(show(got[0].end), show(utc(2025, 5, 31, 22)));
    EXPECT_LT(got[0].begin, utc(2025, 5, 1));  // extends far back (bounded search)
    EXPECT_EQ(show(got[1]), show(Interval{utc(2025, 6, 1, 22), utc(2025, 6, 9, 22)}));
}

TEST(Windows, ParseDays) {
    struct Case {
        std::vector<std::string> spec;
        const char* expected;  // format_days, Monday first
    };
    const std::vector<Case> cases = {
        {{"mon-fri"}, "mon,tue,wed,thu,fri"},
        {{"mon..fri"}, "mon,tue,wed,thu,fri"},
        {{"weekdays"}, "mon,tue,wed,thu,fri"},
        {{"weekends"}, "sat,sun"},
        {{"daily"}, "mon,tue,wed,thu,fri,sat,sun"},
        {{"all"}, "mon,tue,wed,thu,fri,sat,sun"},
        {{"fri-mon"}, "mon,fri,sat,sun"},
        {{"Mon", "WED", "friday"}, "mon,wed,fri"},
        {{"sun"}, "sun"},
        {{"mon", "mon-tue"}, "mon,tue"},
        {{"tue-tue"}, "tue"},
    };
    for (const auto& c : cases) {
        auto d = lanes::parse_days(c.spec);
        ASSERT_TRUE(d) << c.spec[0] << ": " << d.error().message;
        EXPECT_EQ(lanes::format_days(*d), c.expected) << c.spec[0];
    }
    for (const std::vector<std::string>& bad :
         std::vector<std::vector<std::string>>{{}, {"mo"}, {"funday"}, {"mon-"}, {"mon-xyz"}, {""}, {"weekday"}}) {
        EXPECT_FALSE(lanes::parse_days(bad)) << (bad.empty() ? "(empty)" : bad[0]);
    }
}

TEST(Windows, ParseTimeOfDay) {
    struct Case {
        const char* text;
        bool allow_24;
        int minutes;            // -1: error
        const char* formatted;  // format_time_of_day of the result
    };
    const std::vector<Case> cases = {
        {"08:00", false, 480, "08:00"},  {"8:00", false, 480, "08:00"},
        {"23:59", false, 1439, "23:59"}, {"00:00", false, 0, "00:00"},
        {"24:00", true, 1440, "24:00"},  {"08:00:00", false, 480, "08:00"},
        {"24:00", false, -1, ""},        {"24:01", true, -1, ""},
        {"08:00:30", false, -1, ""},     {"8", false, -1, ""},
        {"08:0", false, -1, ""},         {"08:60", false, -1, ""},
        {"25:00", true, -1, ""},         {"", false, -1, ""},
        {"ab:cd", false, -1, ""},        {"-1:00", false, -1, ""},
        {"123:00", false, -1, ""},
    };
    for (const auto& c : cases) {
        auto t = lanes::parse_time_of_day(c.text, c.allow_24);
        if (c.minutes < 0) {
            EXPECT_FALSE(t) << c.text;
        } else {
            ASSERT_TRUE(t) << c.text << ": " << t.error().message;
            EXPECT_EQ(t->count(), c.minutes) << c.text;
            EXPECT_EQ(lanes::format_time_of_day(*t), c.formatted) << c.text;
        }
    }
}

TEST(Windows, ParseDateRange) {
    struct Case {
        const char* text;
        bool ok;
        const char* first;
        const char* last;
    };
    const std::vector<Case> cases = {
        {"2026-12-25", true, "2026-12-25", "2026-12-25"},
        {"2026-12-24..2026-12-26", true, "2026-12-24", "2026-12-26"},
        {"2028-02-29", true, "2028-02-29", "2028-02-29"},
        {"2026-12-31..2027-01-02", true, "2026-12-31", "2027-01-02"},
        {"2027-02-29", false, "", ""},
        {"2026-13-01", false, "", ""},
        {"2026-12-26..2026-12-24", false, "", ""},
        {"2026-12-24..", false, "", ""},
        {"26-12-24", false, "", ""},
        {"2026/12/24", false, "", ""},
        {"christmas", false, "", ""},
        {"", false, "", ""},
    };
    for (const auto& c : cases) {
        auto r = lanes::parse_date_range(c.text);
        ASSERT_EQ(r.has_value(), c.ok) << c.text;
        if (!r) continue;
        EXPECT_EQ(lanes::format_date(r->first), c.first);
        EXPECT_EQ(lanes::format_date(r->last), c.last);
        EXPECT_FALSE(r->add);
    }
}

}  // namespace
