// SPDX-License-Identifier: GPL-2.0-or-later
// Weekly time windows in an IANA time zone. Everything is computed from the
// local calendar: an occurrence is "day D, start to end, local time" turned
// into UTC instants by the zone, so DST is handled by TimeZone::to_instant and
// never by adding hours to UTC.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "ctld/windows.hpp"

namespace lanes {
namespace {

using std::chrono::days;
using std::chrono::local_days;
using std::chrono::local_seconds;
using std::chrono::minutes;

// An occurrence that starts on a day ends at the latest two local days later
// (end <= start ends the next day); limits for merging.
constexpr int kExtendLimitDays = 400;

SysSeconds instant(const Window& w, local_seconds local) {
    if (!w.zone) return SysSeconds{local.time_since_epoch()};
    return w.zone->to_instant(local);
}

local_days local_day_of(const Window& w, SysSeconds t) {
    local_seconds l = w.zone ? w.zone->to_local(t) : local_seconds{t.time_since_epoch()};
    return std::chrono::floor<days>(l);
}

bool covered(const std::vector<DateRange>& ranges, bool add, std::chrono::year_month_day d) {
    for (const auto& r : ranges)
        if (r.add == add && r.first <= d && d <= r.last) return true;
    return false;
}

// Occurrences whose local start day is `d` (at most two: the weekly one and an
// added all-day one), sorted and merged.
std::vector<Interval> day_occurrences(const Window& w, local_days d) {
    std::vector<Interval> out;
    const std::chrono::year_month_day ymd{d};
    const unsigned wd = std::chrono::weekday{d}.c_encoding();
    if (w.days[wd] && !covered(w.exceptions, false, ymd)) {
        const local_days end_day = w.end <= w.start ? d + days{1} : d;
        Interval iv{instant(w, d + w.start), instant(w, end_day + w.end)};
        if (iv.begin < iv.end) out.push_back(iv);
    }
    if (covered(w.exceptions, true, ymd)) {
        Interval iv{instant(w, d), instant(w, d + days{1})};
        if (iv.begin < iv.end) {
            if (!out.empty() && iv.begin <= out.front().end && out.front().begin <= iv.end) {
                out.front().begin = std::min(out.front().begin, iv.begin);
                out.front().end = std::max(out.front().end, iv.end);
            } else {
                out.push_back(iv);
                std::sort(out.begin(), out.end(),
                          [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
            }
        }
    }
    return out;
}

// The merged occurrence containing `at`, if any.
std::optional<Interval> current_of(const Window& w, SysSeconds at) {
    const local_days d0 = local_day_of(w, at);
    std::optional<Interval> found;
    local_days found_day{};
    for (local_days d = d0 - days{2}; d <= d0 && !found; d += days{1}) {
        for (const auto& occ : day_occurrences(w, d)) {
            if (occ.begin <= at && at < occ.end) {
                found = occ;
                found_day = d;
                break;
            }
        }
    }
    if (!found) return std::nullopt;
    // Earlier occurrences that touch it (e.g. consecutive all-day windows).
    for (local_days d = found_day - days{1}; d >= found_day - days{kExtendLimitDays}; d -= days{1}) {
        if (instant(w, d + days{2}) < found->begin) break;  // nothing starting on d or before reaches it
        for (const auto& occ : day_occurrences(w, d))
            if (occ.end >= found->begin && occ.begin < found->begin) found->begin = occ.begin;
    }
    for (local_days d = found_day + days{1}; d <= found_day + days{kExtendLimitDays}; d += days{1}) {
        if (instant(w, d) > found->end) break;  // nothing starting on d or later reaches it
        for (const auto& occ : day_occurrences(w, d))
            if (occ.begin <= found->end && occ.end > found->end) found->end = occ.end;
    }
    return found;
}

std::optional<SysSeconds> next_start_of(const Window& w, SysSeconds at, days horizon) {
    const local_days d0 = local_day_of(w, at);
    std::optional<Interval> run;
    for (local_days d = d0 - days{2}; d <= d0 + horizon; d += days{1}) {
        for (const auto& occ : day_occurrences(w, d)) {
            if (run && occ.begin <= run->end) {
                run->end = std::max(run->end, occ.end);
                continue;
            }
            if (occ.begin > at) return occ.begin;
            run = occ;
        }
    }
    return std::nullopt;
}

}  // namespace

const Window* WindowSet::find(const std::string& name) const {
    auto it = windows_.find(name);
    return it == windows_.end() ? nullptr : &it->second;
}

bool WindowSet::in_window(const std::string& name, SysSeconds at) const { return current(name, at).has_value(); }

std::optional<Interval> WindowSet::current(const std::string& name, SysSeconds at) const {
    const Window* w = find(name);
    if (!w) return std::nullopt;
    return current_of(*w, at);
}

std::optional<SysSeconds> WindowSet::next_start(const std::string& name, SysSeconds at,
                                                std::chrono::days horizon) const {
    const Window* w = find(name);
    if (!w) return std::nullopt;
    return next_start_of(*w, at, horizon);
}

std::optional<SysSeconds> WindowSet::next_end(const std::string& name, SysSeconds at, std::chrono::days horizon) const {
    const Window* w = find(name);
    if (!w) return std::nullopt;
    if (auto cur = current_of(*w, at)) return cur->end;
    auto start = next_start_of(*w, at, horizon);
    if (!start) return std::nullopt;
    auto occ = current_of(*w, *start);
    if (!occ) return std::nullopt;
    return occ->end;
}

std::vector<Interval> WindowSet::occurrences(const std::string& name, SysSeconds from, SysSeconds to) const {
    std::vector<Interval> out;
    const Window* w = find(name);
    if (!w || from >= to) return out;
    SysSeconds t = from;
    if (auto cur = current_of(*w, from)) {
        out.push_back(*cur);
        t = cur->end;
    }
    while (t < to) {
        const auto span = std::chrono::ceil<days>(to - t) + days{2};
        auto start = next_start_of(*w, t, span);
        if (!start || *start >= to) break;
        auto occ = current_of(*w, *start);
        if (!occ) break;  // cannot happen: a start is inside its occurrence
        out.push_back(*occ);
        t = occ->end;
    }
    return out;
}

}  // namespace lanes
