// SPDX-License-Identifier: GPL-2.0-or-later
// inference_probe's bookkeeping: schedule, percentiles, timeouts, summaries.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/latency_stats.hpp"

namespace {

using namespace std::chrono_literals;
using lanes::bench::Clock;
using lanes::bench::LatencyRecorder;
using lanes::bench::OpenLoopSchedule;
using lanes::bench::parse_host_port;
using lanes::bench::percentile_of_sorted;

TEST(ProbeSchedule, CountAndEvenSpacing) {
    const auto t0 = Clock::time_point{} + 1s;
    OpenLoopSchedule s(t0, 200, 10);
    EXPECT_EQ(s.count(), 2000u);
    EXPECT_EQ(s.at(0), t0);
    EXPECT_EQ(s.at(1) - s.at(0), 5ms);
    EXPECT_EQ(s.at(1999) - t0, 9995ms);
}

TEST(ProbeSchedule, NoDriftOverLongRuns) {
    // 3/s: the interval is not a whole number of nanoseconds; times come from
    // the start, so request 3n is exactly n seconds in.
    const auto t0 = Clock::time_point{};
    OpenLoopSchedule s(t0, 3, 3600);
    EXPECT_EQ(s.count(), 10800u);
    EXPECT_EQ(s.at(3 * 3599) - t0, 3599s);
    EXPECT_EQ(s.at(1) - t0, std::chrono::nanoseconds(333'333'333));
}

TEST(ProbeSchedule, FractionalCountsRoundUp) {
    const auto t0 = Clock::time_point{};
    EXPECT_EQ(OpenLoopSchedule(t0, 0.5, 3).count(), 2u);    // at 0 s and 2 s
    EXPECT_EQ(OpenLoopSchedule(t0, 10, 0.25).count(), 3u);  // 0, 0.1, 0.2 s
    EXPECT_EQ(OpenLoopSchedule(t0, 0, 10).count(), 0u);
    EXPECT_EQ(OpenLoopSchedule(t0, 100, 0).count(), 0u);
}

TEST(ProbePercentile, NearestRank) {
    struct Case {
        std::vector<int64_t> sorted;
        double p;
        int64_t want;
    };
    std::vector<int64_t> hundred;
    for (int i = 1; i <= 100; ++i) hundred.push_back(i);
    std::vector<int64_t> thousand;
    for (int i = 1; i <= 1000; ++i) thousand.push_back(i);
    const std::vector<Case> cases = {
        {{}, 99, 0},           {{7}, 50, 7},        {{7}, 99.9, 7},        {{1, 2}, 50, 1},      {{1, 2}, 51, 2},
        {{1, 2, 3, 4}, 50, 2}, {hundred, 50, 50},   {hundred, 99, 99},     {hundred, 99.9, 100}, {hundred, 100, 100},
        {hundred, 0.001, 1},   {thousand, 99, 990}, {thousand, 99.9, 999},
    };
    for (const auto& c : cases)
        EXPECT_EQ(percentile_of_sorted(c.sorted, c.p), c.want) << "n=" << c.sorted.size() << " p=" << c.p;
}

TEST(ProbeRecorder, SummaryOfKnownSamples) {
    LatencyRecorder r;
    r.set_scheduled(1000);
    // Out of order on purpose: the summary must sort.
    for (int i = 1000; i >= 1; --i) r.record_ok(std::chrono::microseconds(i));
    auto s = r.summarize();
    EXPECT_EQ(s.scheduled, 1000u);
    EXPECT_EQ(s.ok, 1000u);
    EXPECT_EQ(s.errors, 0u);
    EXPECT_EQ(s.timeouts, 0u);
    EXPECT_EQ(s.p50_ns, 500'000);
    EXPECT_EQ(s.p90_ns, 900'000);
    EXPECT_EQ(s.p99_ns, 990'000);
    EXPECT_EQ(s.p999_ns, 999'000);
    EXPECT_EQ(s.max_ns, 1'000'000);
    EXPECT_EQ(s.min_ns, 1'000);
    EXPECT_DOUBLE_EQ(s.mean_ns, 500'500.0);
}

TEST(ProbeRecorder, TimeoutsCountInPercentilesAtTheirGiveUpTime) {
    // 97 fast replies and 3 timeouts: the tail must show the timeouts, not hide them.
    LatencyRecorder r;
    for (int i = 0; i < 97; ++i) r.record_ok(100us);
    for (int i = 0; i < 3; ++i) r.record_timeout(1s);
    r.record_error();
    auto s = r.summarize();
    EXPECT_EQ(s.ok, 97u);
    EXPECT_EQ(s.timeouts, 3u);
    EXPECT_EQ(s.errors, 1u);
    EXPECT_EQ(s.p50_ns, 100'000);
    EXPECT_EQ(s.p90_ns, 100'000);
    EXPECT_EQ(s.p99_ns, 1'000'000'000);
    EXPECT_EQ(s.max_ns, 1'000'000'000);
}

TEST(ProbeRecorder, ErrorsAreNotLatencies) {
    LatencyRecorder r;
    r.record_ok(2ms);
    for (int i = 0; i < 50; ++i) r.record_error();
    auto s = r.summarize();
    EXPECT_EQ(s.p99_ns, 2'000'000);
    EXPECT_EQ(s.errors, 50u);
}

TEST(ProbeRecorder, EmptyAndNegative) {
    LatencyRecorder empty;
    auto s = empty.summarize();
    EXPECT_EQ(s.ok, 0u);
    EXPECT_EQ(s.p99_ns, 0);
    EXPECT_EQ(s.mean_ns, 0);
    // A reply before its due time cannot happen, but clocks are clocks: clamp to 0.
    LatencyRecorder r;
    r.record_ok(-5us);
    EXPECT_EQ(r.summarize().max_ns, 0);
}

TEST(ProbeSummary, TextAndJson) {
    LatencyRecorder r;
    r.set_scheduled(4);
    r.record_ok(200us);
    r.record_ok(600us);
    r.record_ok(1200us);
    r.record_timeout(1s);
    auto s = r.summarize();
    EXPECT_EQ(lanes::bench::summary_text(s),
              "scheduled 4 ok 3 errors 0 timeouts 1\n"
              "latency ms: p50 0.600 p90 1000.000 p99 1000.000 p99.9 1000.000 max 1000.000 mean 250.500\n");
    EXPECT_EQ(lanes::bench::summary_json(s, "\"rate\":200,"),
              "{\"rate\":200,\"scheduled\":4,\"ok\":3,\"errors\":0,\"timeouts\":1,\"p50_ms\":0.600,"
              "\"p90_ms\":1000.000,\"p99_ms\":1000.000,\"p999_ms\":1000.000,\"max_ms\":1000.000,"
              "\"min_ms\":0.200,\"mean_ms\":250.500}");
}

TEST(ProbeHostPort, Accepts) {
    struct Case {
        const char* text;
        const char* host;
        uint16_t port;
    };
    const std::vector<Case> cases = {
        {"127.0.0.1:7000", "127.0.0.1", 7000},
        {"[::1]:7000", "::1", 7000},
        {"[fd00:78:1::13]:65535", "fd00:78:1::13", 65535},
        {"0.0.0.0:0", "0.0.0.0", 0},
        {"infer1:80", "infer1", 80},
    };
    for (const auto& c : cases) {
        auto r = parse_host_port(c.text);
        ASSERT_TRUE(r) << c.text << ": " << r.error().message;
        EXPECT_EQ(r->host, c.host) << c.text;
        EXPECT_EQ(r->port, c.port) << c.text;
    }
}

TEST(ProbeHostPort, Rejects) {
    const std::vector<std::pair<const char*, const char*>> cases = {
        {"127.0.0.1", "want ADDR:PORT"},
        {"::1:80", "write an IPv6 address as [ADDR]:PORT"},
        {"[::1]80", "want [IPV6]:PORT"},
        {"[::1]", "want [IPV6]:PORT"},
        {":80", "the address is empty"},
        {"h:65536", "the port must be a number 0..65535"},
        {"h:", "the port must be a number 0..65535"},
        {"h:8x", "the port must be a number 0..65535"},
        {"h:-1", "the port must be a number 0..65535"},
    };
    for (const auto& [text, why] : cases) {
        auto r = parse_host_port(text);
        ASSERT_FALSE(r) << text;
        EXPECT_NE(r.error().message.find(why), std::string::npos) << text << ": " << r.error().message;
    }
}

TEST(ProbeHistogram, PrometheusTextIsCumulative) {
    lanes::bench::LatencyHistogram h;
    LatencyRecorder rec;
    rec.attach(&h);
    rec.record_ok(std::chrono::microseconds(800));  // <= 0.001
    rec.record_ok(std::chrono::milliseconds(30));   // <= 0.05
    rec.record_timeout(std::chrono::seconds(20));   // only +Inf
    rec.record_error();
    const std::string t = h.prometheus_text();
    EXPECT_NE(t.find("# TYPE lanes_probe_latency_seconds histogram\n"), std::string::npos);
    EXPECT_NE(t.find("lanes_probe_latency_seconds_bucket{le=\"0.0005\"} 0\n"), std::string::npos);
    EXPECT_NE(t.find("lanes_probe_latency_seconds_bucket{le=\"0.001\"} 1\n"), std::string::npos);
    EXPECT_NE(t.find("lanes_probe_latency_seconds_bucket{le=\"0.05\"} 2\n"), std::string::npos);
    EXPECT_NE(t.find("lanes_probe_latency_seconds_bucket{le=\"10\"} 2\n"), std::string::npos);
    EXPECT_NE(t.find("lanes_probe_latency_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos);
    EXPECT_NE(t.find("lanes_probe_latency_seconds_count 3\n"), std::string::npos);
    EXPECT_NE(t.find("lanes_probe_requests_total{outcome=\"timeout\"} 1\n"), std::string::npos);
    EXPECT_NE(t.find("lanes_probe_requests_total{outcome=\"error\"} 1\n"), std::string::npos);
    EXPECT_EQ(rec.summarize().ok, 2u);
    EXPECT_NE(
        t.find("# TYPE lanes_probe_offered_requests_per_second gauge\nlanes_probe_offered_requests_per_second 0\n"),
        std::string::npos);
    h.set_offered_rate(1500);
    EXPECT_NE(h.prometheus_text().find("lanes_probe_offered_requests_per_second 1500\n"), std::string::npos);
}

}  // namespace
