// SPDX-License-Identifier: GPL-2.0-or-later
#include "ctld/controller_metrics.hpp"

#include "core/text.hpp"

namespace lanes {

void ControllerCounters::record(const Decision& decision) {
    std::lock_guard lock(mutex_);
    ClassCounts& counts = classes_[decision.class_name];
    if (decision.policy_failed) ++policy_errors_;
    if (decision.verdict == Decision::Verdict::Reject) {
        ++counts.rejected;
        return;
    }
    ++counts.classified;
    if (decision.begin_time) ++counts.deferred;
    if (decision.defaulted) ++counts.defaulted;
}

std::map<std::string, ClassCounts> ControllerCounters::classes() const {
    std::lock_guard lock(mutex_);
    return classes_;
}

uint64_t ControllerCounters::policy_errors() const {
    std::lock_guard lock(mutex_);
    return policy_errors_;
}

namespace {

void header(std::string& out, const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

std::string label(const char* key, const std::string& value) {
    return std::string(key) + "=\"" + prometheus_label_value(value) + "\"";
}

}  // namespace

std::string controller_metrics_text(const ControllerSnapshot& s) {
    std::string out;
    struct PerClass {
        const char* name;
        const char* help;
        uint64_t ClassCounts::*field;
    };
    const PerClass per_class[] = {
        {"lanes_controller_jobs_classified_total", "Jobs accepted into a class by job_submit/lanes.",
         &ClassCounts::classified},
        {"lanes_controller_jobs_deferred_total", "Accepted jobs whose begin time Lanes set (deferred to a window).",
         &ClassCounts::deferred},
        {"lanes_controller_jobs_rejected_total",
         "Jobs refused by job_submit/lanes (class=\"\": refused before a class was chosen).", &ClassCounts::rejected},
        {"lanes_controller_jobs_defaulted_total",
         "Jobs placed in default_class because nothing chose a class (fall-through or policy error).",
         &ClassCounts::defaulted},
    };
    for (const auto& metric : per_class) {
        header(out, metric.name, "counter", metric.help);
        for (const auto& [name, counts] : s.classes)
            out += std::string(metric.name) + "{" + label("class", name) + "} " + std::to_string(counts.*metric.field) +
                   "\n";
    }
    header(out, "lanes_controller_policy_errors_total", "counter",
           "Jobs whose policy run failed (error, budget, refusal); policy.on_error applied.");
    out += "lanes_controller_policy_errors_total " + std::to_string(s.policy_errors) + "\n";
    header(out, "lanes_controller_last_reload_timestamp_seconds", "gauge",
           "When lanes.toml/the policy last changed and was reloaded or refused (0: not since start).");
    out += "lanes_controller_last_reload_timestamp_seconds " + std::to_string(s.last_reload_unix) + "\n";
    header(out, "lanes_controller_last_reload_success_timestamp_seconds", "gauge",
           "When a changed lanes.toml/policy was last reloaded successfully (0: not since start).");
    out +=
        "lanes_controller_last_reload_success_timestamp_seconds " + std::to_string(s.last_reload_success_unix) + "\n";
    header(out, "lanes_controller_signal_fresh", "gauge",
           "1 when the signal's last value is fresh (younger than stale_after).");
    for (const auto& sig : s.signals)
        out += "lanes_controller_signal_fresh{" + label("signal", sig.name) + "} " + (sig.fresh ? "1" : "0") + "\n";
    header(out, "lanes_controller_signal_age_seconds", "gauge",
           "Age of the signal's last good value (absent: never fetched successfully).");
    for (const auto& sig : s.signals)
        if (sig.age_seconds)
            out += "lanes_controller_signal_age_seconds{" + label("signal", sig.name) + "} " +
                   std::to_string(*sig.age_seconds) + "\n";
    header(out, "lanes_controller_signal_error", "gauge", "1 with the last error of a signal whose last fetch failed.");
    for (const auto& sig : s.signals)
        if (!sig.last_error.empty())
            out += "lanes_controller_signal_error{" + label("signal", sig.name) + "," +
                   label("error", sig.last_error.substr(0, 512)) + "} 1\n";
    out += stats_prometheus(s.classifier);
    return out;
}

}  // namespace lanes
