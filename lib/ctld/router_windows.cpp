// SPDX-License-Identifier: GPL-2.0-or-later
// WindowOracle over lanes.toml's WindowSet (kept apart from router.cpp so the
// router's table-driven tests do not need time zone data).
#include <cstdio>

#include "ctld/router.hpp"

namespace lanes {

bool WindowSetOracle::known(const std::string& name) const { return set_.find(name) != nullptr; }

bool WindowSetOracle::in_window(const std::string& name, SysSeconds at) const { return set_.in_window(name, at); }

std::optional<SysSeconds> WindowSetOracle::next_start(const std::string& name, SysSeconds at) const {
    return set_.next_start(name, at);
}

std::optional<SysSeconds> WindowSetOracle::next_end(const std::string& name, SysSeconds at) const {
    return set_.next_end(name, at);
}

std::string WindowSetOracle::describe(const std::string& name, SysSeconds at) const {
    static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    const Window* w = set_.find(name);
    std::chrono::local_seconds local{at.time_since_epoch()};
    std::string abbrev = "UTC";
    if (w && w->zone) {
        local = w->zone->to_local(at);
        abbrev = w->zone->abbreviation_at(at);
    }
    auto day = std::chrono::floor<std::chrono::days>(local);
    std::chrono::weekday wd{std::chrono::local_days{day}};
    auto tod = std::chrono::duration_cast<std::chrono::minutes>(local - day).count();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s %02d:%02d ", kDays[wd.c_encoding()], static_cast<int>(tod / 60),
                  static_cast<int>(tod % 60));
    return buf + abbrev;
}

}  // namespace lanes
