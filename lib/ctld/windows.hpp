// SPDX-License-Identifier: GPL-2.0-or-later
// Named weekly time windows ("peak", "offpeak") in an IANA time zone, DST-correct,
// with dated exceptions. Pure functions of (window definitions, instant).
// Controller side only (slurmctld, lanesctl, the policy worker): srun and
// slurmstepd never compute windows.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/window_spec.hpp"

namespace lanes {

// A time zone loaded from a TZif file (/usr/share/zoneinfo/NAME). Thread-safe,
// immutable after load; no use of TZ/localtime_r.
class TimeZone {
public:
    static Result<std::shared_ptr<const TimeZone>> load(const std::string& name,
                                                        const std::string& zoneinfo_dir = "/usr/share/zoneinfo");
    const std::string& name() const { return name_; }
    // UTC offset in seconds at an instant.
    int32_t offset_at(SysSeconds instant) const;
    // Abbreviation (CET, CEST) at an instant.
    std::string abbreviation_at(SysSeconds instant) const;
    // Local wall-clock time (as seconds since the epoch of local time) -> instant.
    // Gap (spring forward): the instant after the gap; fold (fall back): the earlier one.
    SysSeconds to_instant(std::chrono::local_seconds local) const;
    std::chrono::local_seconds to_local(SysSeconds instant) const;

    struct Transition {
        int64_t at;      // UTC seconds
        int32_t offset;  // offset after the transition
        std::string abbrev;
    };
    TimeZone(std::string name, std::vector<Transition> transitions, Transition initial, std::string posix_rule_tail);

private:
    std::string name_;
    std::vector<Transition> transitions_;  // sorted by at
    Transition initial_;
    // POSIX TZ string from the TZif footer, for instants past the last transition.
    struct PosixRule;
    std::shared_ptr<const PosixRule> rule_;
    const Transition& lookup(int64_t at, Transition& scratch) const;
};

struct Window {
    std::string name;
    std::shared_ptr<const TimeZone> zone;
    std::array<bool, 7> days{};     // [0]=Sunday ... [6]=Saturday, the start day
    std::chrono::minutes start{0};  // local time of day
    std::chrono::minutes end{0};    // end <= start: crosses midnight
    std::vector<DateRange> exceptions;
};

// An interval [begin, end) in UTC.
struct Interval {
    SysSeconds begin;
    SysSeconds end;
    bool operator==(const Interval&) const = default;
};

// Semantics (see lanes.toml(5)): a window occurs on each of its `days` (the local
// start day) from `start` to `end` local time; end <= start ends the next day,
// and end == start lasts 24 hours. Local times are converted with
// TimeZone::to_instant, so a start inside a spring-forward gap begins when the
// gap ends, and a time in a fall-back fold means its first occurrence. An
// exception (add == false) removes the occurrence that starts on its dates; an
// added date (add == true) makes the window occur from 00:00 to 24:00 local on
// it, in addition to any regular occurrence. Occurrences that touch or overlap
// are one occurrence. A null zone means UTC. Unknown window names never match.
class WindowSet {
public:
    void add(Window window) { windows_[window.name] = std::move(window); }
    const Window* find(const std::string& name) const;
    const std::map<std::string, Window>& all() const { return windows_; }

    bool in_window(const std::string& name, SysSeconds at) const;
    // The occurrence of the window containing `at`, if any.
    std::optional<Interval> current(const std::string& name, SysSeconds at) const;
    // Start of the next occurrence strictly after `at` (searches `horizon` ahead).
    std::optional<SysSeconds> next_start(const std::string& name, SysSeconds at,
                                         std::chrono::days horizon = std::chrono::days{400}) const;
    // End of the current occurrence if inside, else of the next one.
    std::optional<SysSeconds> next_end(const std::string& name, SysSeconds at,
                                       std::chrono::days horizon = std::chrono::days{400}) const;
    // All occurrences overlapping [from, to), merged per window, in time order.
    std::vector<Interval> occurrences(const std::string& name, SysSeconds from, SysSeconds to) const;

private:
    std::map<std::string, Window> windows_;
};

}  // namespace lanes
