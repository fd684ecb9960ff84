// SPDX-License-Identifier: GPL-2.0-or-later
// Times on lanesctl's command line (--at, --from) and in its output. Pure: the
// caller hands in the machine's zone and a zone loader.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "ctld/windows.hpp"

namespace lanes::ctl {

using ZoneLoader = std::function<Result<std::shared_ptr<const TimeZone>>(const std::string& name)>;

// Accepted (documented in lanesctl(8), TIME):
//   now
//   @1796112000                          seconds since the epoch (UTC)
//   2026-12-01                           00:00 local
//   2026-12-01 09:00[:SS]                local: `local_zone` (the machine's zone)
//   2026-12-01T09:00[:SS]                the same
//   ... Z | UTC | +01:00 | -0500         explicit offset (a space before UTC is optional)
//   2026-12-01 09:00 Europe/Berlin       wall clock in that IANA zone (DST-correct)
// A local time in a DST gap means the instant after the gap; in a fold, the first.
// `local_zone` null means UTC.
Result<SysSeconds> parse_time_spec(std::string_view text, const TimeZone* local_zone, SysSeconds now,
                                   const ZoneLoader& load_zone);

// "2026-12-01T09:00:00+01:00" (RFC 3339) in `zone` (null: UTC, "Z").
std::string format_iso(SysSeconds at, const TimeZone* zone);
// "2026-12-01 09:00 CET" in `zone` (null: UTC); seconds shown only when not zero.
std::string format_local(SysSeconds at, const TimeZone* zone);
// "Tue 2026-12-01 09:00 CET".
std::string format_local_with_day(SysSeconds at, const TimeZone* zone);
// 750 -> "12h30m", 1440 -> "24h", 45 -> "45m", 2900 -> "2d0h20m"... see the test.
std::string format_duration_minutes(int64_t minutes);

}  // namespace lanes::ctl
