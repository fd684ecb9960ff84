// SPDX-License-Identifier: GPL-2.0-or-later
// Where lib/ code sends its log lines: the glue maps them to slurm_info/slurm_error,
// lanesctl to stderr, tests to a vector. Lines start "lanes: " and name the object.
#pragma once

#include <functional>
#include <string>

namespace lanes {

enum class LogLevel { Debug, Info, Error };
using LogSink = std::function<void(LogLevel, const std::string&)>;

}  // namespace lanes
