// SPDX-License-Identifier: GPL-2.0-or-later
// What both plugins' extern "C" glue shares: Slurm's exported log functions, the
// log sink lib/ writes through, and the guard every Slurm callback runs in.
// Include after <slurm/slurm.h> (inside extern "C").
#pragma once

#include <string>

#include "core/entry_guard.hpp"
#include "core/log.hpp"
#include "core/text.hpp"

extern "C" {
// Exported by slurmctld, slurmd and slurmstepd (plain info()/error() are not).
void slurm_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void slurm_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void slurm_debug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
}

namespace lanes::glue {

// lib/ never writes the "lanes: " prefix (core/log.hpp): this sink adds it.
// Lines that still carry one (lib/node, until it follows the convention) keep
// exactly one. A message of several lines (a reload with several config errors) is logged
// line by line, so that every line gets Slurm's timestamp and the prefix, and
// each line is escaped for the log (core/text.hpp log_line): whatever a value
// in it came from (a policy, a user, a Prometheus server, the kernel), no
// control character, escape sequence or invalid UTF-8 reaches the file raw.
inline void log_sink(LogLevel level, const std::string& message) {
    size_t start = 0;
    do {
        size_t end = message.find('\n', start);
        if (end == std::string::npos) end = message.size();
        std::string line = log_line(std::string_view(message).substr(start, end - start));
        start = end + 1;
        const char* prefix = line.rfind("lanes: ", 0) == 0 ? "" : "lanes: ";
        switch (level) {
            case LogLevel::Error: slurm_error("%s%s", prefix, line.c_str()); break;
            case LogLevel::Info: slurm_info("%s%s", prefix, line.c_str()); break;
            case LogLevel::Debug: slurm_debug("%s%s", prefix, line.c_str()); break;
        }
    } while (start < message.size());
}

// Runs body(); an exception is logged as "lanes: WHERE: what" and Slurm gets `on_error`.
template <typename Body>
int guarded(const char* where, int on_error, Body&& body) noexcept {
    return guard_entry(
        on_error, [where](const char* what) { slurm_error("lanes: %s: %s", where, what); }, body);
}

}  // namespace lanes::glue
