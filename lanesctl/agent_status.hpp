// SPDX-License-Identifier: GPL-2.0-or-later
// What lanes-agent last did on this node, as `lanesctl status` shows it: the
// agent keeps <state_dir>/agent/status (key=value lines, agent/agent_metrics.hpp)
// up to date after every converge. Pure: the caller reads the file and says
// whether the pid is alive.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lanesctl/json.hpp"

namespace lanes::ctl {

struct AgentStatus {
    long pid = 0;
    bool running = false;              // filled in by the caller (kill(pid, 0))
    double last_converge = 0;          // Unix time
    double last_converge_seconds = 0;  // its duration
    double last_success = 0;
    uint64_t converges = 0, repairs = 0, errors = 0, jobs = 0, jobs_tightened = 0;
    std::string last_repair;  // "<unix time> <log line>" or ""
};

// nullopt when the text has no pid (not an agent_status file).
std::optional<AgentStatus> parse_agent_status(std::string_view text);
// "agent: pid 812 running; last converge 2026-12-01T15:40:02Z (0.4 ms), 3 repairs,
//  0 errors since start; last repair: ..." (one or two lines). `now` is Unix time.
std::string format_agent_status(const AgentStatus& status, double now);
json::Value agent_status_json(const AgentStatus& status);

}  // namespace lanes::ctl
