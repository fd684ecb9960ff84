// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include "ctld/controller_metrics.hpp"

namespace lanes {
namespace {

bool has_line(const std::string& text, const std::string& line) {
    return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

Decision accepted(const std::string& cls) {
    Decision d;
    d.class_name = cls;
    return d;
}

TEST(ControllerMetrics, CountersPerClass) {
    ControllerCounters counters;
    counters.record(accepted("training"));
    Decision deferred = accepted("training");
    deferred.begin_time = SysSeconds(std::chrono::seconds(1796000000));
    counters.record(deferred);
    Decision rejected = accepted("inference");
    rejected.verdict = Decision::Verdict::Reject;
    counters.record(rejected);
    Decision defaulted = accepted("batch");
    defaulted.defaulted = true;
    defaulted.policy_failed = true;
    counters.record(defaulted);
    Decision refused_early;  // no class chosen
    refused_early.verdict = Decision::Verdict::Reject;
    counters.record(refused_early);

    ControllerSnapshot s;
    s.classes = counters.classes();
    s.policy_errors = counters.policy_errors();
    std::string text = controller_metrics_text(s);
    EXPECT_TRUE(has_line(text, "lanes_controller_jobs_classified_total{class=\"training\"} 2")) << text;
    EXPECT_TRUE(has_line(text, "lanes_controller_jobs_deferred_total{class=\"training\"} 1")) << text;
    EXPECT_TRUE(has_line(text, "lanes_controller_jobs_rejected_total{class=\"inference\"} 1")) << text;
    EXPECT_TRUE(has_line(text, "lanes_controller_jobs_classified_total{class=\"inference\"} 0")) << text;
    EXPECT_TRUE(has_line(text, "lanes_controller_jobs_rejected_total{class=\"\"} 1")) << text;
    EXPECT_TRUE(has_line(text, "lanes_controller_jobs_defaulted_total{class=\"batch\"} 1")) << text;
    EXPECT_TRUE(has_line(text, "lanes_controller_policy_errors_total 1")) << text;
    // The policy workers' counters are in the same file.
    EXPECT_TRUE(has_line(text, "lanes_reloads_total{outcome=\"refused\"} 0")) << text;
}

TEST(ControllerMetrics, ReloadsAndSignals) {
    ControllerSnapshot s;
    s.classifier.reloads = 3;
    s.classifier.reload_failures = 1;
    s.classifier.policy.overruns = 2;
    s.last_reload_unix = 1796000100;
    s.last_reload_success_unix = 1796000000;
    SignalHealth ok;
    ok.name = "grid";
    ok.age_seconds = 12;
    ok.fresh = true;
    SignalHealth broken;
    broken.name = "pue";
    broken.last_error = "http://x/: \"503\"\nretry";
    s.signals = {ok, broken};
    std::string text = controller_metrics_text(s);
    EXPECT_TRUE(has_line(text, "lanes_reloads_total{outcome=\"done\"} 3")) << text;
    EXPECT_TRUE(has_line(text, "lanes_reloads_total{outcome=\"refused\"} 1")) << text;
    EXPECT_TRUE(has_line(text, "lanes_policy_overruns_total 2")) << text;
    EXPECT_TRUE(has_line(text, "lanes_controller_last_reload_timestamp_seconds 1796000100")) << text;
    EXPECT_TRUE(has_line(text, "lanes_controller_last_reload_success_timestamp_seconds 1796000000")) << text;
    EXPECT_TRUE(has_line(text, "lanes_controller_signal_fresh{signal=\"grid\"} 1")) << text;
    EXPECT_TRUE(has_line(text, "lanes_controller_signal_fresh{signal=\"pue\"} 0")) << text;
    EXPECT_TRUE(has_line(text, "lanes_controller_signal_age_seconds{signal=\"grid\"} 12")) << text;
    EXPECT_EQ(text.find("lanes_controller_signal_age_seconds{signal=\"pue\"}"), std::string::npos) << text;
    // Escaped: quote, newline.
    EXPECT_TRUE(
        has_line(text, "lanes_controller_signal_error{signal=\"pue\",error=\"http://x/: \\\"503\\\"\\nretry\"} 1"))
        << text;
}

TEST(ControllerMetrics, EveryMetricHasHelpAndType) {
    ControllerSnapshot s;
    s.classes["training"] = {};
    SignalHealth sig;
    sig.name = "grid";
    sig.age_seconds = 1;
    sig.last_error = "e";
    s.signals = {sig};
    std::string text = controller_metrics_text(s);
    size_t pos = 0;
    std::string typed;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        ASSERT_NE(end, std::string::npos) << "text ends without a newline";
        std::string line = text.substr(pos, end - pos);
        pos = end + 1;
        if (line.rfind("# HELP ", 0) == 0) continue;
        if (line.rfind("# TYPE ", 0) == 0) {
            typed = line.substr(7, line.find(' ', 7) - 7);
            continue;
        }
        std::string name = line.substr(0, line.find_first_of("{ "));
        EXPECT_EQ(name, typed) << "sample without its own # TYPE: " << line;
        EXPECT_TRUE(name.rfind("lanes_", 0) == 0) << line;
        bool counter = text.find("# TYPE " + name + " counter") != std::string::npos;
        EXPECT_EQ(counter, name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0) << line;
    }
}

}  // namespace
}  // namespace lanes
