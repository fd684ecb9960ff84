// SPDX-License-Identifier: GPL-2.0-or-later
#include "lanesctl/policy_report.hpp"

#include <cstdio>

#include "core/lanes_toml.hpp"
#include "core/text.hpp"
#include "ctld/router.hpp"              // format_minutes
#include "lanesctl/policy_fixture.hpp"  // decision_to_json
#include "lanesctl/time_spec.hpp"

namespace lanes::ctl {

namespace {

std::string reject_kind_name(Decision::RejectKind kind) {
    switch (kind) {
        case Decision::RejectKind::Policy: return "policy";
        case Decision::RejectKind::ClassNotAllowed: return "class_not_allowed";
        case Decision::RejectKind::InvalidOption: return "invalid_option";
        case Decision::RejectKind::TimeWindow: return "time_window";
    }
    return "policy";
}

}  // namespace

// Every value a user or a policy chose is escaped for the terminal (core/text.hpp).
std::string job_summary(const JobView& job) {
    std::string out = "job '" + terminal_text(job.name, 256) + "'";
    if (!job.user.empty()) out += " of " + terminal_text(job.user, 256);
    std::string details;
    auto add = [&details](const std::string& label, const std::string& value) {
        if (value.empty()) return;
        details += (details.empty() ? "" : ", ") + label + " " + terminal_text(value, 256);
    };
    add("account", job.account);
    add("partition", job.partition);
    if (job.gpus) add("gpus", std::to_string(job.gpus));
    if (!details.empty()) out += " (" + details + ")";
    return out;
}

namespace {

void line(std::string& out, const char* label, const std::string& value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "  %-12s ", label);
    out += buf + terminal_text(value) + "\n";
}

std::string or_unchanged(const std::optional<std::string>& v) { return v ? *v : "(unchanged)"; }

void decision_block(std::string& out, const Decision& d, const TimeZone* zone) {
    const bool reject = d.verdict == Decision::Verdict::Reject;
    line(out, "verdict:", reject ? "REJECT (" + reject_kind_name(d.reject_kind) + ")" : "accept");
    line(out, "class:", d.class_name.empty() ? "-" : d.class_name);
    if (!reject) {
        line(out, "partition:", or_unchanged(d.partition));
        line(out, "qos:", or_unchanged(d.qos));
        line(out, "features:", or_unchanged(d.features));
        line(out, "nice:", d.nice ? std::to_string(*d.nice) : "(unchanged)");
        line(out, "begin time:", d.begin_time ? format_local_with_day(*d.begin_time, zone) : "(unchanged)");
        line(out, "time limit:",
             d.time_limit_minutes
                 ? format_minutes(*d.time_limit_minutes) + " (" + std::to_string(*d.time_limit_minutes) + " min)"
                 : "(unchanged)");
        const auto& n = d.network;
        std::string caps = "-";
        if (n.rate || n.ceil)
            caps = (n.rate ? format_rate(*n.rate) : std::string("-")) + " / " +
                   (n.ceil   ? format_rate(*n.ceil)
                    : n.rate ? format_rate(*n.rate)
                             : std::string("-"));
        line(out, "rate/ceil:", caps);
        line(out, "dscp:", n.dscp ? dscp_name(*n.dscp) + " (" + std::to_string(*n.dscp) + ")" : "-");
        std::string rdma = "-";
        if (n.rdma_traffic_class || n.rdma_service_level)
            rdma = "tc " + (n.rdma_traffic_class ? std::to_string(*n.rdma_traffic_class) : std::string("-")) + ", sl " +
                   (n.rdma_service_level ? std::to_string(*n.rdma_service_level) : std::string("-"));
        line(out, "rdma:", rdma);
    }
    if (d.user_messages.empty()) line(out, "messages:", "-");
    for (size_t i = 0; i < d.user_messages.size(); ++i) line(out, i ? "" : "messages:", d.user_messages[i]);
    line(out, "why:", d.reason.empty() ? "-" : d.reason);
}

}  // namespace

std::string format_policy_human(const std::vector<PolicyTestResult>& results, const TimeZone* zone, bool fixture_mode) {
    std::string out;
    size_t passed = 0, failed = 0;
    for (const auto& r : results) {
        if (fixture_mode) {
            if (r.ok()) {
                ++passed;
                out += "PASS " + terminal_text(r.source) +
                       (r.description.empty() ? "" : " (" + terminal_text(r.description) + ")") + "\n";
                continue;
            }
            ++failed;
            out += "FAIL " + terminal_text(r.source) +
                   (r.description.empty() ? "" : " (" + terminal_text(r.description) + ")") + "\n";
            if (!r.error.empty()) out += "  error: " + terminal_text(r.error) + "\n";
            for (const auto& d : r.diffs) out += "  " + terminal_text(d) + "\n";
            if (r.decision && !r.diffs.empty())
                out += "  why: " + (r.decision->reason.empty() ? "-" : terminal_text(r.decision->reason)) + "\n";
            continue;
        }
        if (!out.empty()) out += "\n";
        out += terminal_text(r.source) + ": ";
        if (!r.error.empty()) {
            ++failed;
            out += "error: " + terminal_text(r.error) + "\n";
            continue;
        }
        out += r.job_summary + "\n";
        line(out, "at:", format_local_with_day(r.at, zone));
        if (r.decision) decision_block(out, *r.decision, zone);
        if (r.checked) {
            if (r.diffs.empty()) {
                ++passed;
                out += "  expect:      PASS\n";
            } else {
                ++failed;
                out += "  expect:      FAIL\n";
                for (const auto& d : r.diffs) out += "    " + terminal_text(d) + "\n";
            }
        }
    }
    if (fixture_mode) out += std::to_string(passed) + " passed, " + std::to_string(failed) + " failed\n";
    return out;
}

json::Value policy_json(const std::vector<PolicyTestResult>& results, const TimeZone* zone) {
    json::Array items;
    int64_t passed = 0, failed = 0;
    for (const auto& r : results) {
        json::Array diffs;
        for (const auto& d : r.diffs) diffs.push_back(d);
        if (r.ok()) ++passed;
        else ++failed;
        items.push_back(json::Object{
            {"source", r.source},
            {"description", r.description.empty() ? json::Value() : json::Value(r.description)},
            {"job", r.job_summary.empty() ? json::Value() : json::Value(r.job_summary)},
            {"at", r.error.empty() ? json::Value(format_iso(r.at, zone)) : json::Value()},
            {"decision", r.decision ? decision_to_json(*r.decision) : json::Value()},
            {"checked", r.checked},
            {"ok", r.ok()},
            {"diffs", std::move(diffs)},
            {"error", r.error.empty() ? json::Value() : json::Value(r.error)},
        });
    }
    return json::Object{{"passed", passed}, {"failed", failed}, {"results", std::move(items)}};
}

}  // namespace lanes::ctl
