// SPDX-License-Identifier: GPL-2.0-or-later
// `lanesctl windows`: the calendar of window occurrences and the Slurm
// reservations that keep borrowed nodes free during the windows a class avoids.
// Computing (build_windows_report) and printing (format_*) are pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/lanes_toml.hpp"
#include "core/result.hpp"
#include "ctld/windows.hpp"
#include "lanesctl/json.hpp"

namespace lanes::ctl {

struct WindowCalendar {
    std::string name;
    const Window* window = nullptr;       // points into the Config
    std::vector<Interval> occurrences;    // overlapping [from, to), merged, in order
    std::vector<DateRange> exceptions;    // the window's exceptions touching the range
    std::vector<std::string> avoided_by;  // classes with this window in avoid_windows
};

// Who may use the reserved nodes and which nodes.
struct ReservationRequest {
    std::string nodes;     // Nodes=...; empty: every partition the avoiding classes borrow
    std::string accounts;  // Accounts=...
    std::string users;     // Users=...
};

struct Reservation {
    std::string window;
    std::string name;              // lanes_<window>_<YYYYMMDD>_<HHMM>[_<partition>] (window's local start)
    std::string zone;              // TZ= for scontrol: the window's zone
    const TimeZone* tz = nullptr;  // the same zone (null: UTC), owned by the Config
    SysSeconds start{};            // max(occurrence begin, from)
    SysSeconds end{};
    std::string nodes;      // "inf[1-4]" or empty with partition
    std::string partition;  // PartitionName= with Nodes=ALL and PART_NODES
    std::string command;    // the full shell line
};

struct WindowsReport {
    SysSeconds from{};
    SysSeconds to{};
    std::vector<WindowCalendar> windows;
    bool with_reservations = false;
    std::vector<Reservation> reservations;
};

// Reservation flags and why (lanesctl(8), RESERVATIONS):
//   IGNORE_JOBS  create the reservation even when jobs now run on the nodes (they keep
//                running; the scheduler just stops starting jobs that would overlap it)
//   MAGNETIC     jobs of the listed accounts/users run in it without --reservation, so
//                inference jobs need no change during the window
//   PART_NODES   (with PartitionName= Nodes=ALL) follows later changes to the partition
inline constexpr const char* kReservationFlags = "IGNORE_JOBS,MAGNETIC";

// `names` empty: every window in config; unknown names are errors. `reservations`:
// also compute one reservation per occurrence (and per partition) of the windows
// that a class avoids (or of `names` when given).
// --parsable: one occurrence a line, WINDOW|ZONE|BEGIN|END|MINUTES|DST (ISO 8601
// times with the window's UTC offset; DST "yes" when the offset changes inside).
std::string format_windows_parsable(const WindowsReport& report, bool header);

Result<WindowsReport> build_windows_report(const Config& config, SysSeconds from, int days,
                                           const std::vector<std::string>& names,
                                           const std::optional<ReservationRequest>& reservations);

// Human: the calendar; with reservations, a shell script of scontrol commands
// (comments start with '#', so `lanesctl windows --reservations ... | sh` works).
std::string format_windows_human(const WindowsReport& report);
json::Value windows_json(const WindowsReport& report);

}  // namespace lanes::ctl
