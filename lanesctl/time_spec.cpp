// SPDX-License-Identifier: GPL-2.0-or-later
#include "lanesctl/time_spec.hpp"

#include <cctype>
#include <charconv>
#include <cstdio>

namespace lanes::ctl {

namespace {

using namespace std::chrono;

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// Exactly `width` digits at the front of `s`, consumed.
bool take_digits(std::string_view& s, size_t width, int& out) {
    if (s.size() < width) return false;
    for (size_t i = 0; i < width; ++i)
        if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    std::from_chars(s.data(), s.data() + width, out);
    s.remove_prefix(width);
    return true;
}

bool take_char(std::string_view& s, char c) {
    if (s.empty() || s.front() != c) return false;
    s.remove_prefix(1);
    return true;
}

// "+01:00", "-0500", "+01", "Z", "UTC": offset in seconds.
bool parse_offset(std::string_view s, int& seconds) {
    if (s == "Z" || s == "UTC" || s == "z") {
        seconds = 0;
        return true;
    }
    if (s.empty() || (s[0] != '+' && s[0] != '-')) return false;
    int sign = s[0] == '-' ? -1 : 1;
    s.remove_prefix(1);
    int h = 0, m = 0;
    if (!take_digits(s, 2, h)) return false;
    if (!s.empty()) {
        take_char(s, ':');
        if (!take_digits(s, 2, m) || !s.empty()) return false;
    }
    if (h > 23 || m > 59) return false;
    seconds = sign * (h * 3600 + m * 60);
    return true;
}

const char* const kWeekdays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};

struct Civil {
    year_month_day date;
    int64_t seconds_of_day = 0;
    local_seconds local{};
};

Civil civil(SysSeconds at, const TimeZone* zone) {
    local_seconds local = zone ? zone->to_local(at) : local_seconds{at.time_since_epoch()};
    auto day = floor<days>(local);
    return Civil{year_month_day{local_days{day}}, (local - day).count(), local};
}

std::string date_text(const year_month_day& d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", static_cast<int>(d.year()), static_cast<unsigned>(d.month()),
                  static_cast<unsigned>(d.day()));
    return buf;
}

}  // namespace

Result<SysSeconds> parse_time_spec(std::string_view text, const TimeZone* local_zone, SysSeconds now,
                                   const ZoneLoader& load_zone) {
    std::string_view s = trim(text);
    const std::string shown(text);
    auto bad = [&](const std::string& why) {
        return fail("'" + shown + "' is not a time: " + why +
                    " (use \"2026-12-01 09:00\", \"2026-12-01T09:00+01:00\", \"2026-12-01 09:00 Europe/Berlin\", "
                    "\"@EPOCH\" or \"now\")");
    };
    if (s == "now") return now;
    if (!s.empty() && s.front() == '@') {
        int64_t epoch = 0;
        auto digits = s.substr(1);
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), epoch);
        if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
            return bad("'@' must be followed by seconds since the epoch");
        return SysSeconds{seconds{epoch}};
    }
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
    if (!take_digits(s, 4, y) || !take_char(s, '-') || !take_digits(s, 2, mo) || !take_char(s, '-') ||
        !take_digits(s, 2, d))
        return bad("expected a date YYYY-MM-DD");
    year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)}, day{static_cast<unsigned>(d)}};
    if (!ymd.ok()) return bad("no such date");
    if (!s.empty() && (s.front() == 'T' || s.front() == ' ')) {
        std::string_view rest = trim(s.substr(1));
        if (!rest.empty() && std::isdigit(static_cast<unsigned char>(rest.front()))) {
            s = rest;
            if (!take_digits(s, 2, h) || !take_char(s, ':') || !take_digits(s, 2, mi))
                return bad("expected a time of day HH:MM");
            if (take_char(s, ':') && !take_digits(s, 2, sec)) return bad("expected seconds after HH:MM:");
            if (h > 23 || mi > 59 || sec > 59) return bad("no such time of day");
        }
    }
    local_seconds local = local_days{ymd} + hours{h} + minutes{mi} + seconds{sec};
    std::string_view zone_text = trim(s);
    if (zone_text.empty()) {
        if (!local_zone) return SysSeconds{local.time_since_epoch()};
        return local_zone->to_instant(local);
    }
    int offset = 0;
    if (parse_offset(zone_text, offset)) return SysSeconds{local.time_since_epoch()} - seconds{offset};
    if (zone_text.front() == '+' || zone_text.front() == '-')
        return bad("bad UTC offset '" + std::string(zone_text) + "'");
    if (!load_zone) return bad("time zones are not available here");
    auto zone = load_zone(std::string(zone_text));
    if (!zone) return bad(zone.error().message);
    return (*zone)->to_instant(local);
}

std::string format_iso(SysSeconds at, const TimeZone* zone) {
    Civil c = civil(at, zone);
    char buf[64];
    int64_t sod = c.seconds_of_day;
    std::snprintf(buf, sizeof buf, "%sT%02d:%02d:%02d", date_text(c.date).c_str(), static_cast<int>(sod / 3600),
                  static_cast<int>(sod / 60 % 60), static_cast<int>(sod % 60));
    std::string out = buf;
    int offset = zone ? zone->offset_at(at) : 0;
    if (!zone) return out + "Z";
    char sign = offset < 0 ? '-' : '+';
    int abs = offset < 0 ? -offset : offset;
    std::snprintf(buf, sizeof buf, "%c%02d:%02d", sign, abs / 3600, abs / 60 % 60);
    return out + buf;
}

std::string format_local(SysSeconds at, const TimeZone* zone) {
    Civil c = civil(at, zone);
    int64_t sod = c.seconds_of_day;
    char buf[64];
    if (sod % 60 != 0) {
        std::snprintf(buf, sizeof buf, "%s %02d:%02d:%02d", date_text(c.date).c_str(), static_cast<int>(sod / 3600),
                      static_cast<int>(sod / 60 % 60), static_cast<int>(sod % 60));
    } else {
        std::snprintf(buf, sizeof buf, "%s %02d:%02d", date_text(c.date).c_str(), static_cast<int>(sod / 3600),
                      static_cast<int>(sod / 60 % 60));
    }
    return std::string(buf) + " " + (zone ? zone->abbreviation_at(at) : std::string("UTC"));
}

std::string format_local_with_day(SysSeconds at, const TimeZone* zone) {
    Civil c = civil(at, zone);
    weekday wd{local_days{c.date}};
    return std::string(kWeekdays[wd.c_encoding()]) + " " + format_local(at, zone);
}

std::string format_duration_minutes(int64_t minutes) {
    if (minutes < 0) return "-" + format_duration_minutes(-minutes);
    int64_t d = minutes / 1440, h = minutes / 60 % 24, m = minutes % 60;
    std::string out;
    if (d) out += std::to_string(d) + "d";
    if (h || (d && m)) out += std::to_string(h) + "h";
    if (m || out.empty()) out += std::to_string(m) + "m";
    return out;
}

}  // namespace lanes::ctl
