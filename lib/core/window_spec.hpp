// SPDX-License-Identifier: GPL-2.0-or-later
// [windows.NAME] tables that follow the clock, as written: days, times of day,
// dated exceptions and the name of a time zone. Every program reads lanes.toml,
// so this syntax lives here; the time zones and the occurrences live in
// lib/ctld (windows.hpp), which only the controller side links.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace lanes {

// An instant in UTC, to the second (jobs, windows and routing all use it).
using SysSeconds = std::chrono::sys_seconds;

// A dated exception: the window does not apply (or, if `add`, does apply all day)
// from first to last day inclusive, in the window's time zone.
struct DateRange {
    std::chrono::year_month_day first;
    std::chrono::year_month_day last;
    bool add = false;
};

// One well-formed [windows.NAME] table that follows the clock; its time zone
// is a name not yet looked up.
struct WindowSpec {
    std::string name;
    std::string timezone;           // IANA name ("Europe/Berlin", "UTC")
    std::array<bool, 7> days{};     // [0]=Sunday ... [6]=Saturday, the start day
    std::chrono::minutes start{0};  // local time of day
    std::chrono::minutes end{0};    // end <= start: crosses midnight
    std::vector<DateRange> exceptions;
};

// Where a value sits in lanes.toml, for the checks lib/ctld makes later.
struct SourceSpot {
    int line = 0;
    int column = 0;
    std::string key;  // "windows.peak.timezone"
};

// What the controller side checks once it has the time zones: every
// `timezone` string (in the order of the file, broken windows included) and
// every class's avoid_windows.
struct WindowSpecs {
    std::map<std::string, WindowSpec> clock;  // the well-formed ones, by name
    struct ZoneUse {
        std::string zone;
        SourceSpot spot;
    };
    std::vector<ZoneUse> zones;
    std::map<std::string, SourceSpot> avoid_windows;  // by class name
};

// Parsing helpers shared by lanes.toml and lanesctl.
// Days: "mon".."sun" or full names ("monday"), ranges "mon-fri" / "mon..fri"
// (may wrap: "fri-mon"), "weekdays", "weekends", "daily" / "all"; case-insensitive.
Result<std::array<bool, 7>> parse_days(const std::vector<std::string>& items);
// "08:00", "8:30", "23:59"; "24:00" only when allow_24 (an end of day).
Result<std::chrono::minutes> parse_time_of_day(std::string_view text, bool allow_24 = false);
// "2026-12-25" or an inclusive range "2026-12-24..2026-12-26".
Result<DateRange> parse_date_range(std::string_view text);
// Inverse helpers for messages and lanesctl: "mon,tue,fri", "08:00", "2026-12-24".
std::string format_days(const std::array<bool, 7>& days);
std::string format_time_of_day(std::chrono::minutes m);
std::string format_date(std::chrono::year_month_day d);

}  // namespace lanes
