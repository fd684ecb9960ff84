// SPDX-License-Identifier: GPL-2.0-or-later
// A WindowOracle over fixed UTC intervals, for policy/router/classifier tests that
// must not depend on time zone data.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "ctld/router.hpp"
#include "tests/unit/test_util.hpp"

namespace lanes::test {

// (utc(): test_util.hpp.) 2026-11-30 is a Monday: mon(9) is 09:00 UTC on it.
inline SysSeconds mon(int hour, int minute = 0) { return utc(2026, 11, 30, hour, minute); }

class FixedWindows final : public WindowOracle {
public:
    void add(const std::string& name, SysSeconds begin, SysSeconds end) { windows_[name].push_back({begin, end}); }
    // A daily window [start_hour, end_hour) UTC for `days` days from `first_day`.
    void daily(const std::string& name, SysSeconds first_day, int start_hour, int end_hour, int days = 60) {
        for (int i = 0; i < days; ++i) {
            SysSeconds d = first_day + std::chrono::days{i};
            add(name, d + std::chrono::hours{start_hour}, d + std::chrono::hours{end_hour});
        }
        windows_[name];
    }
    void declare(const std::string& name) { windows_[name]; }

    bool known(const std::string& name) const override { return windows_.count(name) != 0; }
    bool in_window(const std::string& name, SysSeconds at) const override {
        auto it = windows_.find(name);
        if (it == windows_.end()) return false;
        for (const auto& iv : it->second)
            if (iv.begin <= at && at < iv.end) return true;
        return false;
    }
    std::optional<SysSeconds> next_start(const std::string& name, SysSeconds at) const override {
        auto it = windows_.find(name);
        if (it == windows_.end()) return std::nullopt;
        std::optional<SysSeconds> best;
        for (const auto& iv : it->second)
            if (iv.begin > at && (!best || iv.begin < *best)) best = iv.begin;
        return best;
    }
    std::optional<SysSeconds> next_end(const std::string& name, SysSeconds at) const override {
        auto it = windows_.find(name);
        if (it == windows_.end()) return std::nullopt;
        std::optional<SysSeconds> best;
        for (const auto& iv : it->second) {
            if (iv.begin <= at && at < iv.end) return iv.end;
            if (iv.begin > at && (!best || iv.end < *best)) best = iv.end;
        }
        return best;
    }
    std::string describe(const std::string&, SysSeconds at) const override {
        static const char* const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
        auto day = std::chrono::floor<std::chrono::days>(at);
        std::chrono::weekday wd{day};
        auto minutes = std::chrono::duration_cast<std::chrono::minutes>(at - day).count();
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s %02d:%02d UTC", days[wd.c_encoding()], static_cast<int>(minutes / 60),
                      static_cast<int>(minutes % 60));
        return buf;
    }

private:
    std::map<std::string, std::vector<Interval>> windows_;
};

}  // namespace lanes::test
