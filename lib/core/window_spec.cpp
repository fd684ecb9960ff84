// SPDX-License-Identifier: GPL-2.0-or-later
// The syntax of [windows] values: days, times of day and dates, read and
// written back. No time zones here (lib/ctld/windows.cpp computes occurrences).
#include <cctype>
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "core/window_spec.hpp"

namespace lanes {
namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

constexpr std::string_view kShortDays[7] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
constexpr std::string_view kLongDays[7] = {"sunday",   "monday", "tuesday", "wednesday",
                                           "thursday", "friday", "saturday"};

int day_index(std::string_view name) {
    for (int i = 0; i < 7; ++i)
        if (name == kShortDays[i] || name == kLongDays[i]) return i;
    return -1;
}

bool parse_uint(std::string_view s, unsigned& out) {
    if (s.empty() || s.size() > 9) return false;
    unsigned v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    out = v;
    return true;
}

Result<std::chrono::year_month_day> parse_date(std::string_view text) {
    auto bad = [&] {
        return fail("date '" + std::string(text) + "' is not a valid date (write YYYY-MM-DD, e.g. \"2026-12-24\")");
    };
    if (text.size() != 10 || text[4] != '-' || text[7] != '-') return bad();
    unsigned y = 0, m = 0, d = 0;
    if (!parse_uint(text.substr(0, 4), y) || !parse_uint(text.substr(5, 2), m) || !parse_uint(text.substr(8, 2), d))
        return bad();
    std::chrono::year_month_day ymd{std::chrono::year{static_cast<int>(y)}, std::chrono::month{m}, std::chrono::day{d}};
    if (!ymd.ok()) return bad();
    return ymd;
}

}  // namespace

Result<std::array<bool, 7>> parse_days(const std::vector<std::string>& items) {
    std::array<bool, 7> days{};
    if (items.empty()) return fail("no days given (write e.g. [\"mon-fri\"], [\"weekdays\"] or [\"daily\"])");
    for (const auto& raw : items) {
        const std::string item = lower(raw);
        if (item == "daily" || item == "all" || item == "everyday") {
            days.fill(true);
            continue;
        }
        if (item == "weekdays") {
            for (int i = 1; i <= 5; ++i) days[i] = true;
            continue;
        }
        if (item == "weekends" || item == "weekend") {
            days[0] = days[6] = true;
            continue;
        }
        size_t sep = item.find("..");
        size_t sep_len = 2;
        if (sep == std::string::npos) {
            sep = item.find('-');
            sep_len = 1;
        }
        if (sep != std::string::npos) {
            const int a = day_index(item.substr(0, sep)), b = day_index(item.substr(sep + sep_len));
            if (a < 0 || b < 0)
                return fail("day range '" + raw + "' is not valid (write e.g. \"mon-fri\"; days are mon..sun)");
            for (int i = a;; i = (i + 1) % 7) {
                days[i] = true;
                if (i == b) break;
            }
            continue;
        }
        const int i = day_index(item);
        if (i < 0)
            return fail("'" + raw +
                        "' is not a day (use mon, tue, wed, thu, fri, sat, sun, a range like \"mon-fri\", "
                        "\"weekdays\", \"weekends\" or \"daily\")");
        days[i] = true;
    }
    return days;
}

Result<std::chrono::minutes> parse_time_of_day(std::string_view text, bool allow_24) {
    auto bad = [&] {
        return fail("time '" + std::string(text) + "' is not a time of day (write HH:MM, e.g. \"08:00\"" +
                    (allow_24 ? std::string(", or \"24:00\" for the end of the day)") : std::string(")")));
    };
    size_t colon = text.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon > 2) return bad();
    std::string_view hh = text.substr(0, colon), rest = text.substr(colon + 1);
    std::string_view mm = rest, ss;
    if (size_t c2 = rest.find(':'); c2 != std::string_view::npos) {
        mm = rest.substr(0, c2);
        ss = rest.substr(c2 + 1);
        if (ss.size() != 2) return bad();
    }
    unsigned h = 0, m = 0, s = 0;
    if (mm.size() != 2 || !parse_uint(hh, h) || !parse_uint(mm, m) || (!ss.empty() && !parse_uint(ss, s))) return bad();
    if (s != 0) return fail("time '" + std::string(text) + "': windows have minute resolution (seconds must be 00)");
    if (m > 59) return bad();
    if (h == 24 && m == 0 && allow_24) return std::chrono::minutes{24 * 60};
    if (h > 23) return bad();
    return std::chrono::minutes{h * 60 + m};
}

Result<DateRange> parse_date_range(std::string_view text) {
    DateRange r;
    size_t sep = text.find("..");
    auto first = parse_date(sep == std::string_view::npos ? text : text.substr(0, sep));
    if (!first) return std::unexpected(first.error());
    r.first = r.last = *first;
    if (sep != std::string_view::npos) {
        auto last = parse_date(text.substr(sep + 2));
        if (!last) return std::unexpected(last.error());
        r.last = *last;
        if (r.last < r.first)
            return fail("date range '" + std::string(text) + "' ends before it starts (write FIRST..LAST)");
    }
    return r;
}

std::string format_days(const std::array<bool, 7>& days) {
    std::string out;
    for (int k = 1; k <= 7; ++k) {  // Monday first, as people read a week
        const int i = k % 7;
        if (!days[i]) continue;
        if (!out.empty()) out += ",";
        out += kShortDays[i];
    }
    return out;
}

std::string format_time_of_day(std::chrono::minutes m) {
    char buf[48];
    const long v = static_cast<long>(m.count());
    std::snprintf(buf, sizeof buf, "%02ld:%02ld", v / 60, v % 60);
    return buf;
}

std::string format_date(std::chrono::year_month_day d) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", static_cast<int>(d.year()), static_cast<unsigned>(d.month()),
                  static_cast<unsigned>(d.day()));
    return buf;
}

}  // namespace lanes
