// SPDX-License-Identifier: GPL-2.0-or-later
// `lanesctl check`: the outcome of loading lanes.toml + policy as the plugins do,
// and its printing (pure).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/lanes_toml.hpp"
#include "lanesctl/json.hpp"

namespace lanes::ctl {

// One error as lanesctl shows it.
struct Diagnostic {
    std::string file;
    int line = 0;         // 0: unknown
    int column = 0;       // 0: unknown
    std::string key;      // "classes.training.rate"; empty: none
    std::string message;  // what is wrong (after the key)
    std::string text;     // the whole line ("file:line:col: key: message")
};

// The diagnostics of a library error: its structured ones when it has them (all
// lanes.toml errors), else its text split by parse_diagnostics (the policy's Lua
// errors, whose position Lua only reports inside the message).
std::vector<Diagnostic> diagnostics_of(const Error& error);

// Split an error text (possibly several lines) into diagnostics: a line starting
// "file:line:col: " or "file:line: " gets those fields, the rest is the message.
std::vector<Diagnostic> parse_diagnostics(const std::string& error_message);

struct CheckReport {
    std::string config_path;
    bool ok = false;
    std::vector<Diagnostic> errors;
    std::vector<std::string> log_errors;  // error-level log lines while loading (ok may still be true)
    // When ok:
    std::string policy;  // script path, empty: built-in rules
    std::string default_class;
    std::vector<std::string> classes;
    std::vector<std::string> windows;
    size_t rules = 0;
    // Windows that follow a signal, and what each does while its signal is unknown.
    struct SignalWindow {
        std::string name;
        std::string signal;
        std::string when_unknown;        // "busy", "idle", "hold"
        bool is_default = true;          // not written in lanes.toml
        std::optional<double> fallback;  // the signal's: used instead while unknown
    };
    std::vector<SignalWindow> signal_windows;
    // Each class with a path: "class training: egress_device bulk0: its subnets
    // and egress_prefixes 10.20.0.0/16; other destinations by the main table".
    std::vector<std::string> paths;
};

// "window busy follows signal demand; while demand is unknown (...): busy (the
// default: protects inference)" or "...: its fallback 7 is used instead".
std::string describe_when_unknown(const CheckReport::SignalWindow& window);

// Fill the summary fields from a loaded config.
void summarize(const Config& config, CheckReport& report);

// ok: one line for stdout ("lanes.toml: OK: ..."); not ok: the diagnostics, one per
// line, for stderr ("lanes.toml:12:3: classes.training.rate: ...").
std::string format_check_human(const CheckReport& report);
json::Value check_json(const CheckReport& report);

}  // namespace lanes::ctl
