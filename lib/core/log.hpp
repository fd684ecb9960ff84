// SPDX-License-Identifier: GPL-2.0-or-later
// Where lib/ code sends its log lines: the glue maps them to slurm_info/slurm_error,
// lanesctl to stderr, tests to a vector. lib/ never writes the "lanes: " prefix:
// the sink adds it. A line names its object as Slurm does (JobId=N, or
// JobName=x UserId=u(uid) before slurmctld has given the job an id), the NIC,
// the key, then the cause.
#pragma once

#include <functional>
#include <string>

namespace lanes {

enum class LogLevel { Debug, Info, Error };
using LogSink = std::function<void(LogLevel, const std::string&)>;

}  // namespace lanes
