// SPDX-License-Identifier: GPL-2.0-or-later
// Small text helpers shared across lib/ and lanesctl/, and one escaper per
// sink that text from outside the project can reach: an admin's policy, a
// user (job name, comment, account, SPANK option values, environment), a
// Prometheus server (labels, error text, HTTP bodies) or the kernel.
//
//   sink                                   helper
//   slurmctld.log / slurmd.log line        log_field() for one value, log_line() for the line
//   a user's terminal (err_msg, srun)      user_message()
//   lanesctl human tables and errors       terminal_text()
//   JSON                                   json_string()
//   Prometheus textfile label value        prometheus_label_value()
//
// The line sinks (log, user, terminal) share one escape: a C0 control, DEL and
// a C1 control (U+0080..U+009F, which some terminals obey) become "\xHH"; a byte
// that is not part of valid UTF-8 becomes "\xHH" too; Unicode's line separators
// and bidirectional controls (which reorder what a reader sees) become "\uHHHH";
// a tab becomes a space. Backslashes are kept, so escaping twice changes
// nothing. Output longer than the bound is cut between two characters (never
// inside a UTF-8 sequence or an escape) and marked " [cut]"; only about the
// bound is read, so a 1 MiB job name costs no more than a short one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace lanes {

// "a, b, c" from {"a", "b", "c"} and ", ".
inline std::string join(const std::vector<std::string>& items, std::string_view separator) {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty()) out += separator;
        out += item;
    }
    return out;
}

inline constexpr std::string_view kCutMarker = " [cut]";
inline constexpr size_t kLogFieldBytes = 1024;
inline constexpr size_t kLogLineBytes = 16384;
inline constexpr size_t kUserMessageBytes = 4096;
inline constexpr size_t kTerminalFieldBytes = 1024;

// The shared line escape (above). keep_newlines: '\n' stays a line break (a
// user message of several lines); otherwise it is "\x0A".
std::string escape_text(std::string_view text, size_t max_bytes, bool keep_newlines);

// One value (a job name, a class a policy returned, an HTTP body) inside a log line.
inline std::string log_field(std::string_view text, size_t max_bytes = kLogFieldBytes) {
    return escape_text(text, max_bytes, false);
}
// A whole log line, as the plugins' log sink writes it: what a field escape
// missed is escaped here; already escaped text passes unchanged.
inline std::string log_line(std::string_view text, size_t max_bytes = kLogLineBytes) {
    return escape_text(text, max_bytes, false);
}
// What a user sees at submit time (err_msg, slurm_spank_log, srun's stderr):
// several lines allowed, nothing else that moves the cursor.
inline std::string user_message(std::string_view text, size_t max_bytes = kUserMessageBytes) {
    return escape_text(text, max_bytes, true);
}
// One cell of a lanesctl table, or one line lanesctl prints.
inline std::string terminal_text(std::string_view text, size_t max_bytes = kTerminalFieldBytes) {
    return escape_text(text, max_bytes, false);
}
// The historical name of log_field(): text from a policy or a user made safe
// for one line of a terminal or a log.
inline std::string printable(std::string_view text, size_t max_bytes = kLogFieldBytes) {
    return escape_text(text, max_bytes, false);
}

// A JSON string literal, quotes included: '"', '\\' and every control (C0,
// DEL, C1) escaped (\n, \t, ... or \u00XX), line separators and bidirectional
// controls as \uXXXX, each byte of invalid UTF-8 replaced by U+FFFD. Not cut:
// JSON readers want the whole value.
std::string json_string(std::string_view text);

// JSON text from another serialiser (valid UTF-8, C0 controls already
// escaped, as nlohmann-json writes it) with the characters it leaves raw
// inside strings, and a terminal obeys, written as \uXXXX: DEL, C1 controls,
// line separators and bidirectional controls. Outside strings JSON has none.
std::string json_escape_raw_controls(std::string_view json_text);

// A label value of the Prometheus text exposition format (between the quotes):
// '\\' -> "\\\\", '"' -> "\\\"", newline -> "\\n" (the format's only escapes);
// every other control character and each byte of invalid UTF-8 becomes U+FFFD,
// so the file stays valid UTF-8 and prints harmlessly.
std::string prometheus_label_value(std::string_view text);

// strerror(err) as a string (for "PATH: No such file or directory").
std::string errno_text(int err);

// The last component of a path ("lanes.lua" of "/etc/slurm/lanes.lua").
inline std::string basename_of(const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Whether `list` holds `item`.
inline bool contains(const std::vector<std::string>& list, std::string_view item) {
    for (const auto& s : list)
        if (s == item) return true;
    return false;
}

}  // namespace lanes
