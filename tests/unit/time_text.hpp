// SPDX-License-Identifier: GPL-2.0-or-later
// Readable text for instants and intervals in test expectations (g++ 12's
// libstdc++ cannot stream chrono time points). Comparing these strings is the
// same as comparing the values, and a failure shows both in UTC.
#pragma once

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "ctld/windows.hpp"

namespace lanes::test {

inline std::string show(SysSeconds t) {
    using namespace std::chrono;
    const auto day = floor<days>(t);
    const year_month_day ymd{day};
    const hh_mm_ss<seconds> hms{t - day};
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02ld:%02ld:%02ld UTC", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<long>(hms.hours().count()), static_cast<long>(hms.minutes().count()),
                  static_cast<long>(hms.seconds().count()));
    return buf;
}

inline std::string show(std::chrono::local_seconds t) {
    return show(SysSeconds{t.time_since_epoch()}).replace(20, 3, "local");
}

inline std::string show(const std::optional<SysSeconds>& t) { return t ? show(*t) : std::string("none"); }

inline std::string show(const Interval& i) { return "[" + show(i.begin) + ", " + show(i.end) + ")"; }

inline std::string show(const std::optional<Interval>& i) { return i ? show(*i) : std::string("none"); }

inline std::string show(const std::vector<Interval>& v) {
    std::string out;
    for (const auto& i : v) out += show(i) + "\n";
    return out.empty() ? "(none)" : out;
}

}  // namespace lanes::test
