// SPDX-License-Identifier: GPL-2.0-or-later
// See agent_metrics.hpp.
#include "agent/agent_metrics.hpp"

#include "core/text.hpp"

#include <cstdio>

namespace lanes::agent {

namespace {

std::string number(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6f", v);
    return buf;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
}

std::string label(const char* key, std::string_view value) {
    return std::string(key) + "=\"" + escape_label_value(value) + "\"";
}

}  // namespace

// One escaper per sink (core/text.hpp): \\, \" and \n, and valid UTF-8.
std::string escape_label_value(std::string_view value) { return prometheus_label_value(value); }

std::string metrics_text(const AgentCounters& c, const SignalSnapshot* snapshot) {
    std::string out;
    header(out, "lanes_agent_repairs_total", "counter",
           "Kernel objects lanes-agent put back to the jobs' desired state, by object and cause.");
    for (const auto& [key, n] : c.repairs)
        out += "lanes_agent_repairs_total{" + label("object", key.first) + "," + label("cause", key.second) + "} " +
               std::to_string(n) + "\n";
    header(out, "lanes_agent_converges_total", "counter",
           "Converge runs (kernel compared with the desired state), by what started them.");
    for (const auto& [trigger, n] : c.converges)
        out += "lanes_agent_converges_total{" + label("trigger", trigger) + "} " + std::to_string(n) + "\n";
    header(out, "lanes_agent_events_total", "counter",
           "Netlink notifications about managed NICs and the lanes nft table, by kind.");
    for (const auto& [kind, n] : c.events)
        out += "lanes_agent_events_total{" + label("kind", kind) + "} " + std::to_string(n) + "\n";
    header(out, "lanes_agent_errors_total", "counter", "Failures of lanes-agent, by what failed.");
    for (const auto& [what, n] : c.errors)
        out += "lanes_agent_errors_total{" + label("what", what) + "} " + std::to_string(n) + "\n";
    header(out, "lanes_agent_shifts_total", "counter", "Ceil changes of running jobs made by lanes-agent.");
    for (const auto& [key, n] : c.shifts)
        out += "lanes_agent_shifts_total{" + label("class", key.first) + "," + label("to", key.second) + "} " +
               std::to_string(n) + "\n";
    header(out, "lanes_agent_ceil_changes_total", "counter",
           "Changes of the ceil set by a class's controller ([classes.NAME.control]), by class and cause.");
    for (const auto& [key, n] : c.ceil_changes)
        out += "lanes_agent_ceil_changes_total{" + label("class", key.first) + "," + label("cause", key.second) + "} " +
               std::to_string(n) + "\n";
    header(out, "lanes_agent_ceil_holds_total", "counter",
           "Decisions of a class's controller that held its ceil although the SLO broke, by class and cause "
           "(\"uncongested\": the congestion signal said the network did not queue).");
    for (const auto& [key, n] : c.ceil_holds)
        out += "lanes_agent_ceil_holds_total{" + label("class", key.first) + "," + label("cause", key.second) + "} " +
               std::to_string(n) + "\n";
    header(out, "lanes_agent_ceil_decisions_total", "counter",
           "Decision instants of a class's controller (one per dwell), whether the ceil changed or not.");
    for (const auto& [cls, n] : c.ceil_decisions)
        out += "lanes_agent_ceil_decisions_total{" + label("class", cls) + "} " + std::to_string(n) + "\n";
    header(out, "lanes_agent_ceil_bytes_per_second", "gauge",
           "The ceil a class's controller holds the class's running jobs to, by class and NIC.");
    for (const auto& [key, bits] : c.ceil_bits)
        out += "lanes_agent_ceil_bytes_per_second{" + label("class", key.first) + "," + label("device", key.second) +
               (c.host.empty() ? "" : "," + label("host", c.host)) + "} " +
               (bits % 8 ? number(static_cast<double>(bits) / 8) : std::to_string(bits / 8)) + "\n";
    header(out, "lanes_agent_last_converge_timestamp_seconds", "gauge",
           "Unix time at the end of the last converge run.");
    out += "lanes_agent_last_converge_timestamp_seconds " + number(c.last_converge_unix) + "\n";
    header(out, "lanes_agent_last_success_timestamp_seconds", "gauge",
           "Unix time at the end of the last converge run that ended without error.");
    out += "lanes_agent_last_success_timestamp_seconds " + number(c.last_success_unix) + "\n";
    header(out, "lanes_agent_last_converge_duration_seconds", "gauge", "How long the last converge run took.");
    out += "lanes_agent_last_converge_duration_seconds " + number(c.last_converge_seconds) + "\n";
    header(out, "lanes_agent_jobs", "gauge", "Jobs with a desired state on this node at the last converge.");
    out += "lanes_agent_jobs " + std::to_string(c.jobs) + "\n";
    header(out, "lanes_agent_jobs_tightened", "gauge", "Job classes held at their busy ceil now.");
    out += "lanes_agent_jobs_tightened " + std::to_string(c.jobs_tightened) + "\n";
    if (snapshot) {
        header(out, "lanes_agent_window_busy", "gauge", "1 while the signal window holds (busy), else 0.");
        for (const auto& [name, w] : snapshot->windows)
            out += "lanes_agent_window_busy{" + label("window", name) + "} " + (w.busy ? "1" : "0") + "\n";
        header(out, "lanes_agent_signal_value", "gauge", "The last usable value of the signal.");
        for (const auto& [name, s] : snapshot->signals)
            if (s.value.value)
                out += "lanes_agent_signal_value{" + label("signal", name) + "} " +
                       format_signal_value(*s.value.value) + "\n";
        header(out, "lanes_agent_signal_fresh", "gauge", "1 when the signal's value is fresh, else 0.");
        for (const auto& [name, s] : snapshot->signals)
            out += "lanes_agent_signal_fresh{" + label("signal", name) + "} " + (s.value.fresh ? "1" : "0") + "\n";
    }
    return out;
}

std::string status_text(const AgentCounters& c, long pid, const std::string& last_repair) {
    uint64_t repairs = 0;
    for (const auto& [key, n] : c.repairs) repairs += n;
    uint64_t converges = 0;
    for (const auto& [key, n] : c.converges) converges += n;
    uint64_t errors = 0;
    for (const auto& [key, n] : c.errors) errors += n;
    std::string out;
    out += "pid=" + std::to_string(pid) + "\n";
    out += "last_converge=" + number(c.last_converge_unix) + "\n";
    out += "last_converge_seconds=" + number(c.last_converge_seconds) + "\n";
    out += "last_success=" + number(c.last_success_unix) + "\n";
    out += "converges=" + std::to_string(converges) + "\n";
    out += "repairs=" + std::to_string(repairs) + "\n";
    out += "errors=" + std::to_string(errors) + "\n";
    out += "jobs=" + std::to_string(c.jobs) + "\n";
    out += "jobs_tightened=" + std::to_string(c.jobs_tightened) + "\n";
    std::string one_line;
    for (char ch : last_repair) one_line += ch == '\n' ? ' ' : ch;
    out += "last_repair=" + one_line + "\n";
    return out;
}

}  // namespace lanes::agent
