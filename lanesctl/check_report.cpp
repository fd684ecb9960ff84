// SPDX-License-Identifier: GPL-2.0-or-later
#include "lanesctl/check_report.hpp"
#include "ctld/windows.hpp"
#include "ctld/windows_config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>

namespace lanes::ctl {

namespace {

// Digits at `pos` up to the next ':'; returns the position after that ':' or npos.
size_t number_then_colon(const std::string& s, size_t pos, int& value) {
    size_t end = pos;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    if (end == pos || end >= s.size() || s[end] != ':' || end - pos > 9) return std::string::npos;
    std::from_chars(s.data() + pos, s.data() + end, value);
    return end + 1;
}

Diagnostic parse_one(const std::string& text) {
    Diagnostic d;
    d.text = text;
    d.message = text;
    // The first ':' followed by digits and ':' ends the file name.
    for (size_t colon = text.find(':'); colon != std::string::npos; colon = text.find(':', colon + 1)) {
        int line = 0, column = 0;
        size_t after_line = number_then_colon(text, colon + 1, line);
        if (after_line == std::string::npos) continue;
        size_t after_col = number_then_colon(text, after_line, column);
        size_t rest = after_col == std::string::npos ? after_line : after_col;
        d.file = text.substr(0, colon);
        d.line = line;
        d.column = after_col == std::string::npos ? 0 : column;
        while (rest < text.size() && text[rest] == ' ') ++rest;
        d.message = text.substr(rest);
        break;
    }
    return d;
}

}  // namespace

std::vector<Diagnostic> diagnostics_of(const Error& error) {
    if (error.diagnostics.empty()) return parse_diagnostics(error.message);
    std::vector<Diagnostic> out;
    for (const auto& d : error.diagnostics)
        out.push_back(Diagnostic{d.file, d.line, d.column, d.key, d.message, d.text()});
    return out;
}

std::vector<Diagnostic> parse_diagnostics(const std::string& error_message) {
    std::vector<Diagnostic> out;
    size_t start = 0;
    while (start <= error_message.size()) {
        size_t nl = error_message.find('\n', start);
        std::string line = error_message.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        if (!line.empty()) out.push_back(parse_one(line));
        if (nl == std::string::npos) break;
        start = nl + 1;
    }
    return out;
}

void summarize(const Config& config, CheckReport& report) {
    report.policy = config.policy.script;
    report.default_class = config.default_class;
    report.classes.clear();
    for (const auto& [name, cls] : config.classes) report.classes.push_back(name);
    report.windows.clear();
    for (const auto& [name, w] : windows_of(config).all()) report.windows.push_back(name);
    report.rules = config.rules.size();
    report.paths.clear();
    for (const auto& [name, c] : config.classes) {
        if (!c.path) continue;
        const ClassPath& p = *c.path;
        std::string line = "class " + name + ": ";
        if (p.table) line += "route_table " + std::to_string(*p.table);
        else if (!p.table_name.empty()) line += "route_table " + p.table_name;
        else if (!p.device.empty()) {
            line += (p.vlan ? "vlan " + p.link() : "egress_device " + p.device) + ": its subnets";
            for (size_t i = 0; i < p.egress_prefixes.size(); ++i)
                line += (i ? ", " : " and egress_prefixes ") + p.egress_prefixes[i];
            const auto has = [&p](const char* cidr) {
                return std::find(p.egress_prefixes.begin(), p.egress_prefixes.end(), cidr) != p.egress_prefixes.end();
            };
            line += has("0.0.0.0/0") && has("::/0") ? "; every destination (slurmctld included) takes the path"
                                                    : "; other destinations by the main table";
        } else continue;  // only RDMA/NCCL overrides
        report.paths.push_back(std::move(line));
    }
    report.signal_windows.clear();
    for (const auto& [name, w] : config.signal_windows) {
        CheckReport::SignalWindow sw;
        sw.name = name;
        sw.signal = w.signal;
        sw.when_unknown = std::string(unknown_signal_action_name(w.when_unknown));
        sw.is_default = !w.when_unknown_set;
        if (auto it = config.signals.find(w.signal); it != config.signals.end()) sw.fallback = it->second.fallback;
        report.signal_windows.push_back(std::move(sw));
    }
}

std::string describe_when_unknown(const CheckReport::SignalWindow& w) {
    std::string out = "window " + w.name + " follows signal " + w.signal + "; while " + w.signal +
                      " is unknown (API down, stale, or a garbage answer): ";
    if (w.fallback) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.6g", *w.fallback);
        return out + "its fallback " + buf + " is used instead (when_unknown = " + w.when_unknown + " not needed)";
    }
    out += w.when_unknown;
    if (w.when_unknown == "hold") out += " (keeps its state)";
    if (w.is_default) out += " (the default: protects inference)";
    else out += " (when_unknown = \"" + w.when_unknown + "\")";
    return out;
}

std::string format_check_human(const CheckReport& report) {
    std::string out;
    if (!report.ok) {
        for (const auto& d : report.errors) out += d.text + "\n";
        if (report.errors.empty()) out += report.config_path + ": invalid\n";
        return out;
    }
    out += report.config_path + ": OK: " + std::to_string(report.classes.size()) + " classes (";
    for (size_t i = 0; i < report.classes.size(); ++i) out += (i ? ", " : "") + report.classes[i];
    out += "), default " + (report.default_class.empty() ? std::string("none") : report.default_class);
    out += ", " + std::to_string(report.windows.size()) + " windows, ";
    out += report.policy.empty() ? std::to_string(report.rules) + " built-in rules" : "policy " + report.policy;
    out += "\n";
    for (const auto& w : report.signal_windows) out += describe_when_unknown(w) + "\n";
    for (const auto& p : report.paths) out += "path: " + p + "\n";
    for (const auto& line : report.log_errors) out += "warning: " + line + "\n";
    return out;
}

json::Value check_json(const CheckReport& report) {
    json::Array errors;
    for (const auto& d : report.errors)
        errors.push_back(json::Object{
            {"file", d.file.empty() ? json::Value() : json::Value(d.file)},
            {"line", d.line ? json::Value(d.line) : json::Value()},
            {"column", d.column ? json::Value(d.column) : json::Value()},
            {"key", d.key.empty() ? json::Value() : json::Value(d.key)},
            {"message", d.message},
            {"text", d.text},
        });
    json::Array warnings;
    for (const auto& w : report.log_errors) warnings.push_back(w);
    json::Object out{
        {"config", report.config_path},
        {"ok", report.ok},
        {"errors", std::move(errors)},
        {"warnings", std::move(warnings)},
    };
    if (report.ok) {
        json::Array classes, windows;
        for (const auto& c : report.classes) classes.push_back(c);
        for (const auto& w : report.windows) windows.push_back(w);
        out.emplace_back("policy", report.policy.empty() ? json::Value() : json::Value(report.policy));
        out.emplace_back("default_class",
                         report.default_class.empty() ? json::Value() : json::Value(report.default_class));
        out.emplace_back("classes", std::move(classes));
        out.emplace_back("windows", std::move(windows));
        out.emplace_back("rules", static_cast<int64_t>(report.rules));
        json::Array signal_windows;
        for (const auto& w : report.signal_windows)
            signal_windows.push_back(json::Object{
                {"name", w.name},
                {"signal", w.signal},
                {"when_unknown", w.when_unknown},
                {"when_unknown_default", w.is_default},
                {"fallback", w.fallback ? json::Value(*w.fallback) : json::Value()},
                {"applies", describe_when_unknown(w)},
            });
        out.emplace_back("signal_windows", std::move(signal_windows));
        json::Array paths;
        for (const auto& p : report.paths) paths.push_back(p);
        out.emplace_back("paths", std::move(paths));
    }
    return out;
}

}  // namespace lanes::ctl
