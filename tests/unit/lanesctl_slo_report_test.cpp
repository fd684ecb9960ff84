// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl report: rows cut at window boundaries and steps, the PromQL of a
// counter's delta, Prometheus answers, histogram arithmetic (as PromQL's
// histogram_quantile), the tables and the plot script.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/lanes_toml.hpp"
#include "ctld/windows_config.hpp"
#include "lanesctl/args.hpp"
#include "lanesctl/slo_report.hpp"
#include "tests/unit/test_util.hpp"

namespace {

using lanes::test::contains;
using lanes::test::utc;

using namespace std::chrono;
using lanes::SysSeconds;
using namespace lanes::ctl;

lanes::Config config_with_peak() {
    auto c = lanes::parse_controller_config(R"(
default_class = "batch"
[windows.peak]
timezone = "UTC"
days = ["daily"]
start = "08:00"
end = "20:00"
[classes.batch]
rank = 3
[classes.training]
rank = 1
avoid_windows = ["peak"]
)",
                                            "lanes.toml");
    EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message);
    return *c;
}

TEST(LanesctlSloReport, RowsCutAtWindowBoundaries) {
    auto config = config_with_peak();
    auto rows = report_rows(config, utc(2026, 12, 1, 6), utc(2026, 12, 1, 22), {}, seconds{0});
    ASSERT_TRUE(rows.has_value()) << rows.error().message;
    ASSERT_EQ(rows->size(), 3u);
    EXPECT_EQ((*rows)[0].span, (lanes::Interval{utc(2026, 12, 1, 6), utc(2026, 12, 1, 8)}));
    EXPECT_TRUE((*rows)[0].windows.empty());
    EXPECT_EQ((*rows)[1].span, (lanes::Interval{utc(2026, 12, 1, 8), utc(2026, 12, 1, 20)}));
    EXPECT_EQ((*rows)[1].windows, std::vector<std::string>{"peak"});
    EXPECT_TRUE((*rows)[2].windows.empty());
}

TEST(LanesctlSloReport, RowsCutEveryStepToo) {
    auto config = config_with_peak();
    auto rows = report_rows(config, utc(2026, 12, 1, 7), utc(2026, 12, 1, 9, 30), {}, hours{1});
    ASSERT_TRUE(rows.has_value());
    ASSERT_EQ(rows->size(), 3u);  // 7-8, 8-9, 9-9:30
    EXPECT_EQ((*rows)[2].span.begin, utc(2026, 12, 1, 9));
    EXPECT_EQ((*rows)[2].span.end, utc(2026, 12, 1, 9, 30));
    EXPECT_EQ((*rows)[2].windows, std::vector<std::string>{"peak"});
}

TEST(LanesctlSloReport, RowsRefuseBadRanges) {
    auto config = config_with_peak();
    auto backwards = report_rows(config, utc(2026, 12, 2), utc(2026, 12, 1), {}, seconds{0});
    ASSERT_FALSE(backwards.has_value());
    EXPECT_TRUE(contains(backwards.error().message, "is not after its begin"));
    auto unknown = report_rows(config, utc(2026, 12, 1), utc(2026, 12, 2), {"nightly"}, seconds{0});
    ASSERT_FALSE(unknown.has_value());
    EXPECT_EQ(unknown.error().message, "--window nightly: no scheduled [windows.nightly] in lanes.toml");
    auto many = report_rows(config, utc(2026, 1, 1), utc(2026, 12, 1), {}, seconds{1});
    ASSERT_FALSE(many.has_value());
    EXPECT_TRUE(contains(many.error().message, "more than 10000 rows"));
}

TEST(LanesctlSloReport, CounterDeltaQuery) {
    SysSeconds b{seconds{1000}}, e{seconds{1060}};
    EXPECT_EQ(counter_delta_query("m{class=\"training\"}", b, e),
              "sum((clamp_min(max_over_time(m{class=\"training\"}[60s] @ 1060) - "
              "last_over_time(m{class=\"training\"}[5m] @ 1000), 0) or max_over_time(m{class=\"training\"}[60s] @ "
              "1060))) or vector(0)");
    EXPECT_TRUE(counter_delta_query("h_bucket", b, e, "le").starts_with("sum by (le) ("));
}

TEST(LanesctlSloReport, ParsesVectorsScalarsAndErrors) {
    auto v = parse_prometheus_vector(200, R"({"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"le":"0.01"},"value":[1,"7"]},{"metric":{"le":"+Inf"},"value":[1,"10"]}]}})");
    ASSERT_TRUE(v.has_value()) << v.error().message;
    ASSERT_EQ(v->size(), 2u);
    EXPECT_EQ((*v)[0].labels.at("le"), "0.01");
    EXPECT_EQ((*v)[1].value, 10);
    auto s = parse_prometheus_vector(200, R"({"status":"success","data":{"resultType":"scalar","result":[1,"NaN"]}})");
    ASSERT_TRUE(s.has_value());
    EXPECT_TRUE(std::isnan((*s)[0].value));
    auto err = parse_prometheus_vector(400, R"({"status":"error","errorType":"bad_data","error":"parse error"})");
    ASSERT_FALSE(err.has_value());
    EXPECT_EQ(err.error().message, "Prometheus: bad_data: parse error");
    auto html = parse_prometheus_vector(502, "<html>bad gateway</html>");
    ASSERT_FALSE(html.has_value());
    EXPECT_EQ(html.error().message, "HTTP 502");
    auto matrix = parse_prometheus_vector(200, R"({"status":"success","data":{"resultType":"matrix","result":[]}})");
    ASSERT_FALSE(matrix.has_value());
    EXPECT_TRUE(contains(matrix.error().message, "matrix"));
}

TEST(LanesctlSloReport, HistogramQuantileAndAttainment) {
    std::vector<Sample> samples = {
        {{{"le", "+Inf"}}, 100}, {{{"le", "0.01"}}, 50}, {{{"le", "0.05"}}, 90}, {{{"le", "0.1"}}, 98}};
    auto buckets = buckets_from_samples(samples);
    ASSERT_TRUE(buckets.has_value());
    EXPECT_EQ(buckets->front().first, 0.01);
    // 50th of 100 is the top of the first bucket; 70th halfway through (0.01, 0.05].
    EXPECT_DOUBLE_EQ(*bucket_quantile(0.5, *buckets), 0.01);
    EXPECT_DOUBLE_EQ(*bucket_quantile(0.7, *buckets), 0.03);
    // 99th is in +Inf: the highest finite bound, as histogram_quantile says.
    EXPECT_DOUBLE_EQ(*bucket_quantile(0.99, *buckets), 0.1);
    EXPECT_DOUBLE_EQ(*bucket_fraction_within(0.05, *buckets), 0.90);
    EXPECT_DOUBLE_EQ(*bucket_fraction_within(0.03, *buckets), 0.70);
    EXPECT_DOUBLE_EQ(*bucket_fraction_within(0.005, *buckets), 0.25);
    EXPECT_DOUBLE_EQ(*bucket_fraction_within(5.0, *buckets), 0.98);
    Buckets empty = {{0.01, 0}, {INFINITY, 0}};
    EXPECT_FALSE(bucket_quantile(0.99, empty).has_value());
    EXPECT_FALSE(bucket_fraction_within(0.01, empty).has_value());
    std::vector<Sample> bad = {{{{"le", "fast"}}, 1}};
    EXPECT_FALSE(buckets_from_samples(bad).has_value());
}

TEST(LanesctlSloReport, Tables) {
    SloReport r;
    r.prometheus = "http://127.0.0.1:9090";
    r.training_class = "training";
    r.latency_metric = "lanes_probe_latency_seconds";
    r.slo_seconds = 0.05;
    ReportRow a;
    a.span = {utc(2026, 12, 1, 6), utc(2026, 12, 1, 8)};
    a.training_bytes = 123456789;
    a.requests = 1000;
    a.p99 = 0.0425;
    a.attainment = 0.995;
    ReportRow b;
    b.span = {utc(2026, 12, 1, 8), utc(2026, 12, 1, 20)};
    b.windows = {"peak"};
    r.rows = {a, b};
    EXPECT_EQ(format_slo_report_parsable(r, true),
              "BEGIN|END|WINDOWS|TRAINING_BYTES|TRAINING_DROPS|REQUESTS|P99_SECONDS|SLO_SECONDS|ATTAINMENT|SLO_MET\n"
              "2026-12-01T06:00:00Z|2026-12-01T08:00:00Z||123456789|0|1000|0.0425|0.05|0.995000|yes\n"
              "2026-12-01T08:00:00Z|2026-12-01T20:00:00Z|peak|0|0|0||0.05||-\n");
    std::string human = format_slo_report_human(r, false);
    EXPECT_FALSE(contains(human, "BEGIN"));
    EXPECT_TRUE(contains(human, "42.500ms"));
    EXPECT_TRUE(contains(human, "99.50%"));
    auto doc = slo_report_json(r);
    EXPECT_EQ(doc["rows"][0]["training_bytes"], 123456789u);
    EXPECT_EQ(doc["rows"][0]["slo_met"], true);
    EXPECT_TRUE(doc["rows"][1]["p99_seconds"].is_null());
    std::string plot = slo_report_gnuplot(r, "/tmp/a \"b\".png");
    EXPECT_TRUE(contains(plot, "set terminal pngcairo size 960,540"));
    EXPECT_TRUE(contains(plot, "set output \"/tmp/a \\\"b\\\".png\""));
}

TEST(LanesctlSloReport, CeilQueryPerHost) {
    SysSeconds b{seconds{1000}}, e{seconds{1060}};
    const std::string g = "lanes_agent_ceil_bytes_per_second{class=\"training\"}";
    EXPECT_EQ(ceil_range_query(g, b, e, true),
              "max by (host) (max_over_time(lanes_agent_ceil_bytes_per_second{class=\"training\"}[60s] @ 1060))");
    EXPECT_EQ(ceil_range_query(g, b, e, false),
              "min by (host) (min_over_time(lanes_agent_ceil_bytes_per_second{class=\"training\"}[60s] @ 1060))");
    std::vector<Sample> low = {{{{"host", "n1"}}, 50e6}, {{{"host", "n2"}}, 75e6}, {{}, 1}};
    std::vector<Sample> high = {{{{"host", "n1"}}, 75e6}, {{{"host", "n2"}}, 75e6}, {{{"instance", "x:9100"}}, 2}};
    auto ceils = ceils_from_samples(low, high);
    ASSERT_EQ(ceils.size(), 2u);  // series without a host label are not a node's
    EXPECT_EQ(ceils.at("n1").lowest, 50e6);
    EXPECT_EQ(ceils.at("n1").highest, 75e6);
    EXPECT_EQ(ceils.at("n2").lowest, 75e6);
    EXPECT_TRUE(ceils_from_samples({}, {}).empty());
}

TEST(LanesctlSloReport, CeilsInTablesJsonAndPlot) {
    SloReport r;
    r.training_class = "training";
    r.slo_seconds = 0.01;
    ReportRow a;
    a.span = {utc(2026, 12, 1, 6), utc(2026, 12, 1, 6, 1)};
    a.requests = 10;
    a.p99 = 0.02;
    a.attainment = 0.5;
    a.ceils = {{"n1", {50e6, 75e6}}, {"n2", {62.5e6, 62.5e6}}};
    ReportRow b;  // no controller sample in this row
    b.span = {utc(2026, 12, 1, 6, 1), utc(2026, 12, 1, 6, 2)};
    r.rows = {a, b};
    EXPECT_EQ(format_slo_report_parsable(r, true),
              "BEGIN|END|WINDOWS|TRAINING_BYTES|TRAINING_DROPS|REQUESTS|P99_SECONDS|SLO_SECONDS|ATTAINMENT|SLO_MET|"
              "CEIL_BYTES_PER_SECOND\n"
              "2026-12-01T06:00:00Z|2026-12-01T06:01:00Z||0|0|10|0.02|0.01|0.500000|no|n1:50000000:75000000,n2:"
              "62500000:62500000\n"
              "2026-12-01T06:01:00Z|2026-12-01T06:02:00Z||0|0|0||0.01||-|\n");
    std::string human = format_slo_report_human(r, true);
    EXPECT_TRUE(contains(human, " MET CEIL\n")) << human;
    EXPECT_TRUE(contains(human, " no n1=400Mbit..600Mbit,n2=500Mbit\n")) << human;
    EXPECT_TRUE(contains(human, "  - -\n")) << human;
    auto doc = slo_report_json(r);
    EXPECT_EQ(doc["rows"][0]["ceils"]["n1"]["lowest_bytes_per_second"], 50000000u);
    EXPECT_EQ(doc["rows"][0]["ceils"]["n1"]["highest_bytes_per_second"], 75000000u);
    EXPECT_FALSE(doc["rows"][1].contains("ceils"));
    std::string plot = slo_report_gnuplot(r, "a.png");
    EXPECT_TRUE(contains(plot,
                         "$ceils << EOD\n"
                         "1796104830 400.000000 600.000000 500.000000 500.000000\n"
                         "1796104890 - - - -\nEOD\nset multiplot layout 2,1\n"))
        << plot;
    EXPECT_TRUE(contains(plot, "plot $ceils using 1:3 with linespoints pt 7 title \"n1 ceil\""));
    EXPECT_TRUE(contains(plot, "$ceils using 1:5 with linespoints pt 7 title \"n2 ceil\""));
    EXPECT_TRUE(contains(plot, "unset multiplot\n"));
    // Without a controller: no column, no key, one panel (as before).
    for (auto& row : r.rows) row.ceils.clear();
    EXPECT_FALSE(contains(format_slo_report_parsable(r, true), "CEIL"));
    EXPECT_FALSE(contains(format_slo_report_human(r, true), "CEIL"));
    EXPECT_FALSE(slo_report_json(r)["rows"][0].contains("ceils"));
    EXPECT_FALSE(contains(slo_report_gnuplot(r, "a.png"), "multiplot"));
}

TEST(LanesctlSloReport, Arguments) {
    auto ok = parse_args({"report", "--prometheus", "http://p:9090", "--slo", "50ms", "--step", "30s", "--parsable"});
    ASSERT_TRUE(ok.has_value()) << ok.error().message;
    EXPECT_EQ(ok->command, Command::Report);
    EXPECT_DOUBLE_EQ(ok->slo_seconds, 0.05);
    EXPECT_EQ(ok->report_step, seconds{30});
    EXPECT_EQ(ok->report_class, "training");
    auto no_slo = parse_args({"report", "--prometheus", "http://p:9090"});
    ASSERT_FALSE(no_slo.has_value());
    EXPECT_TRUE(contains(no_slo.error().message, "needs --slo"));
    auto bad_step = parse_args({"report", "--prometheus", "x", "--slo", "50ms", "--step", "1.5s"});
    ASSERT_FALSE(bad_step.has_value());
    EXPECT_TRUE(contains(bad_step.error().message, "--step: '1.5s'"));
    auto bad_metric = parse_args({"report", "--prometheus", "x", "--slo", "50ms", "--latency-metric", "a{b}"});
    ASSERT_FALSE(bad_metric.has_value());
    EXPECT_FALSE(parse_args({"status", "--slo", "50ms"}).has_value());
}

}  // namespace
