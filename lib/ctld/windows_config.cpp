// SPDX-License-Identifier: GPL-2.0-or-later
// [windows] with its time zones: the part of lanes.toml's validation that
// only the controller side does (see windows_config.hpp).
#include "ctld/windows_config.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ctld/windows.hpp"

namespace lanes {
namespace {

constexpr const char* kZoneinfoDir = "/usr/share/zoneinfo";

Diagnostic at(const Config& config, const SourceSpot& spot, std::string message) {
    return Diagnostic{config.path, spot.line, spot.column, spot.key, std::move(message)};
}

// A class whose avoided windows together cover a whole week can never start.
void check_never_runs(const Config& config, const WindowSet& windows, std::vector<Diagnostic>& errors) {
    using namespace std::chrono;
    for (const auto& [name, c] : config.classes) {
        if (c.avoid_windows.empty()) continue;
        WindowSet weekly;  // the weekly pattern only: dated exceptions are rare days
        std::vector<Interval> all;
        const SysSeconds from = sys_days{year{2025} / January / 6};  // a Monday
        const SysSeconds to = from + days{21};
        for (const auto& wn : c.avoid_windows) {
            if (config.signal_windows.count(wn)) continue;  // follows a signal, not the clock
            const Window* w = windows.find(wn);
            if (!w) return;  // already reported
            Window copy = *w;
            copy.exceptions.clear();
            weekly.add(copy);
            auto occ = weekly.occurrences(wn, from, to);
            all.insert(all.end(), occ.begin(), occ.end());
        }
        std::sort(all.begin(), all.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
        std::vector<Interval> merged;
        for (const auto& iv : all) {
            if (!merged.empty() && iv.begin <= merged.back().end)
                merged.back().end = std::max(merged.back().end, iv.end);
            else merged.push_back(iv);
        }
        for (const auto& iv : merged) {
            if (iv.end - iv.begin >= days{7}) {
                auto spot = config.window_specs.avoid_windows.find(name);
                errors.push_back(at(
                    config,
                    spot != config.window_specs.avoid_windows.end()
                        ? spot->second
                        : SourceSpot{1, 1, "classes." + name + ".avoid_windows"},
                    "these windows together cover the whole week: jobs of class \"" + name + "\" could never start"));
                break;
            }
        }
    }
}

}  // namespace

void compile_windows(Config& config, std::vector<Diagnostic>& errors) {
    // Time zones loaded so far in this file, by name; a zone that does not
    // load is reported at each window that names it.
    std::map<std::string, std::shared_ptr<const TimeZone>> zones;
    for (const auto& use : config.window_specs.zones) {
        if (zones.count(use.zone)) continue;
        auto z = TimeZone::load(use.zone, kZoneinfoDir);
        if (!z) errors.push_back(at(config, use.spot, z.error().message));
        else zones[use.zone] = *z;
    }
    auto windows = std::make_shared<WindowSet>();
    for (const auto& [name, spec] : config.window_specs.clock) {
        auto zone = zones.find(spec.timezone);
        if (zone == zones.end()) continue;  // reported above
        windows->add(Window{spec.name, zone->second, spec.days, spec.start, spec.end, spec.exceptions});
    }
    check_never_runs(config, *windows, errors);
    config.windows = std::move(windows);
}

const WindowSet& windows_of(const Config& config) {
    static const WindowSet kNone;
    return config.windows ? *config.windows : kNone;
}

Result<Config> load_controller_config(const std::string& path) { return load_config(path, compile_windows); }

Result<Config> parse_controller_config(std::string_view text, const std::string& path) {
    return parse_config(text, path, compile_windows);
}

}  // namespace lanes
