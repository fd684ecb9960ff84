// SPDX-License-Identifier: GPL-2.0-or-later
// Routing: class + job + time windows + now -> partition, QOS, features, nice,
// begin time and time limit. Pure and deterministic given `now`; the windows are
// reached through WindowOracle so tests can use fixed intervals.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"
#include "core/lanes_toml.hpp"
#include "core/result.hpp"
#include "ctld/windows.hpp"
#include "signals/signals.hpp"

namespace lanes {

// What the router (and the Lua helpers lanes.in_window/next_start/next_end) need
// to know about named windows.
class WindowOracle {
public:
    virtual ~WindowOracle() = default;
    virtual bool known(const std::string& name) const = 0;
    virtual bool in_window(const std::string& name, SysSeconds at) const = 0;
    // Start of the next occurrence strictly after `at`.
    virtual std::optional<SysSeconds> next_start(const std::string& name, SysSeconds at) const = 0;
    // End of the occurrence containing `at`, else of the next one.
    virtual std::optional<SysSeconds> next_end(const std::string& name, SysSeconds at) const = 0;
    // `at` as local time in the window's zone, for users: "Mon 20:00 CET".
    virtual std::string describe(const std::string& name, SysSeconds at) const = 0;
    // A [signals.NAME] value as of now (lanes.signal() in policies); nullopt for
    // an unknown signal. Oracles without signals know none.
    virtual std::optional<SignalValue> signal(const std::string& /*name*/) const { return std::nullopt; }
};

// The real one, over lanes.toml's [windows].
class WindowSetOracle final : public WindowOracle {
public:
    explicit WindowSetOracle(const WindowSet& set) : set_(set) {}
    bool known(const std::string& name) const override;
    bool in_window(const std::string& name, SysSeconds at) const override;
    std::optional<SysSeconds> next_start(const std::string& name, SysSeconds at) const override;
    std::optional<SysSeconds> next_end(const std::string& name, SysSeconds at) const override;
    std::string describe(const std::string& name, SysSeconds at) const override;

private:
    const WindowSet& set_;
};

struct RouteOptions {
    // Policy overrides of the job's own --begin / --time, applied before the
    // window checks (so windows are still honoured).
    std::optional<SysSeconds> begin_time;
    std::optional<uint32_t> time_limit_minutes;
    // window_overrun = "shorten" never shortens below this; it defers instead.
    uint32_t min_shorten_minutes = 10;
    // How many window occurrences Defer/Shorten look past before giving up.
    int max_window_steps = 32;
};

struct Route {
    bool reject = false;
    std::string reject_message;            // for the user, starts "lanes: "
    std::optional<std::string> partition;  // comma-joined (Slurm accepts "a,b")
    std::optional<std::string> qos;
    std::optional<std::string> features;  // '&'-joined (all required)
    std::optional<int32_t> nice;
    std::optional<SysSeconds> begin_time;
    std::optional<uint32_t> time_limit_minutes;
    std::vector<std::string> user_messages;
    std::vector<std::string> reasons;  // short, for Decision.reason and logs
};

Route route_job(const ClassConfig& cls, const JobView& job, SysSeconds now, const WindowOracle& windows,
                const RouteOptions& options = {});

// A user's change of a pending job's time limit (scontrol update TimeLimit=),
// checked against the window rules of the job's class. `job` is the job as it
// is now: its time limit, partition list (with any partition it borrows),
// begin time, user and account. `new_limit` nullopt means UNLIMITED.
// Shortening is always fine; a longer limit is refused (the text says why,
// for the user, starting "lanes: ") when Lanes would not have routed the job
// as it stands with it: it would run into an avoided window that its class
// defers, shortens or rejects for, or it borrows a partition that the class
// lends only to jobs ending before the next avoided window.
std::optional<std::string> check_time_limit_change(const ClassConfig& cls, const JobView& job,
                                                   std::optional<uint32_t> new_limit, SysSeconds now,
                                                   const WindowOracle& windows, const RouteOptions& options = {});

// Slurm time specifications -> minutes (seconds round up, as Slurm does):
// "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S"; "UNLIMITED"/"INFINITE" -> nullopt value.
Result<std::optional<uint32_t>> parse_slurm_duration(std::string_view text);

// 192 -> "3h12m", 45 -> "45m", 2880 -> "2d".
std::string format_minutes(uint64_t minutes);

}  // namespace lanes
