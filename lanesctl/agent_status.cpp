// SPDX-License-Identifier: GPL-2.0-or-later
// See agent_status.hpp.
#include "lanesctl/agent_status.hpp"

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace lanes::ctl {

namespace {

std::string utc(double t) {
    std::time_t s = static_cast<std::time_t>(t);
    std::tm tm{};
    gmtime_r(&s, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace

std::optional<AgentStatus> parse_agent_status(std::string_view text) {
    AgentStatus s;
    bool have_pid = false;
    while (!text.empty()) {
        auto nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        auto eq = line.find('=');
        if (eq == std::string_view::npos) continue;
        const std::string key(line.substr(0, eq));
        const std::string value(line.substr(eq + 1));
        const char* v = value.c_str();
        if (key == "pid") {
            s.pid = std::strtol(v, nullptr, 10);
            have_pid = s.pid > 0;
        } else if (key == "last_converge") s.last_converge = std::strtod(v, nullptr);
        else if (key == "last_converge_seconds") s.last_converge_seconds = std::strtod(v, nullptr);
        else if (key == "last_success") s.last_success = std::strtod(v, nullptr);
        else if (key == "converges") s.converges = std::strtoull(v, nullptr, 10);
        else if (key == "repairs") s.repairs = std::strtoull(v, nullptr, 10);
        else if (key == "errors") s.errors = std::strtoull(v, nullptr, 10);
        else if (key == "jobs") s.jobs = std::strtoull(v, nullptr, 10);
        else if (key == "jobs_tightened") s.jobs_tightened = std::strtoull(v, nullptr, 10);
        else if (key == "last_repair") s.last_repair = value;
    }
    if (!have_pid) return std::nullopt;
    return s;
}

std::string format_agent_status(const AgentStatus& s, double now) {
    std::string out = "agent: pid " + std::to_string(s.pid) + (s.running ? " running" : " not running");
    if (s.last_converge > 0) {
        char took[32];
        std::snprintf(took, sizeof took, "%.1f ms", s.last_converge_seconds * 1000);
        out += "; last converge " + utc(s.last_converge) + " (" +
               std::to_string(static_cast<long long>(now > s.last_converge ? now - s.last_converge : 0)) + " s ago, " +
               took + (s.last_success < s.last_converge ? ", FAILED" : "") + ")";
    }
    out += "; " + std::to_string(s.converges) + " converges, " + std::to_string(s.repairs) + " repairs, " +
           std::to_string(s.errors) + " errors since it started";
    if (s.jobs_tightened) out += "; " + std::to_string(s.jobs_tightened) + " job class(es) at a busy ceil";
    out += "\n";
    if (!s.last_repair.empty()) {
        auto sp = s.last_repair.find(' ');
        double at = std::strtod(s.last_repair.c_str(), nullptr);
        out += "agent: last repair " + (at > 0 ? utc(at) + ": " : std::string()) +
               (sp == std::string::npos ? s.last_repair : s.last_repair.substr(sp + 1)) + "\n";
    }
    return out;
}

json::Value agent_status_json(const AgentStatus& s) {
    return json::Object{{"pid", static_cast<int64_t>(s.pid)},
                        {"running", s.running},
                        {"last_converge", s.last_converge},
                        {"last_converge_seconds", s.last_converge_seconds},
                        {"last_success", s.last_success},
                        {"converges", static_cast<int64_t>(s.converges)},
                        {"repairs", static_cast<int64_t>(s.repairs)},
                        {"errors", static_cast<int64_t>(s.errors)},
                        {"jobs_tightened", static_cast<int64_t>(s.jobs_tightened)},
                        {"last_repair", s.last_repair.empty() ? json::Value() : json::Value(s.last_repair)}};
}

}  // namespace lanes::ctl
