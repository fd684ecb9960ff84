// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [classes.NAME.control]: what the ceil controller reads, and the
// settings `lanesctl check` refuses because the loop could not converge.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/lanes_toml.hpp"
#include "tests/unit/test_util.hpp"

namespace {

using lanes::test::with;

using namespace std::chrono;

const char* kControlled = R"(default_class = "training"
[signals.p99]
url = "http://127.0.0.1:9090"
query = 'histogram_quantile(0.99, sum(rate(lanes_probe_latency_seconds_bucket[30s])) by (le))'
interval = "5s"
[signals.load]
url = "http://127.0.0.1:9090"
query = 'sum(rate(requests_total[1m]))'
interval = "15s"
[classes.training]
rate = "100Mbit"
ceil = "1Gbit"
[classes.training.control]
signal = "p99"
slo = 0.01
margin = 0.25
floor = "200Mbit"
decrease = 0.6
increase = "50Mbit"
dwell = "40s"
backoff = "5min"
load_signal = "load"
min_gap = "25Mbit"
)";

// A text lanes.toml refuses, and a part of the message it must give.
struct Refused {
    std::string text, expect;
};
void expect_refused(const std::vector<Refused>& cases) {
    for (const auto& c : cases) {
        auto r = lanes::parse_config(c.text, "lanes.toml");
        ASSERT_FALSE(r) << c.expect;
        EXPECT_NE(r.error().message.find(c.expect), std::string::npos)
            << "expected: " << c.expect << "\ngot: " << r.error().message;
    }
}

TEST(CeilControlConfig, Parses) {
    auto c = lanes::parse_config(kControlled, "lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    const auto* t = c->find_class("training");
    ASSERT_TRUE(t && t->control);
    const auto& k = *t->control;
    EXPECT_EQ(k.signal, "p99");
    EXPECT_EQ(k.slo, 0.01);
    EXPECT_EQ(k.margin, 0.25);
    EXPECT_EQ(k.floor.bits_per_second, 200'000'000u);
    EXPECT_EQ(k.decrease, 0.6);
    EXPECT_EQ(k.increase.bits_per_second, 50'000'000u);
    EXPECT_EQ(k.dwell, seconds{40});
    EXPECT_EQ(k.backoff, minutes{5});
    EXPECT_EQ(k.load_signal, "load");
    ASSERT_TRUE(k.min_gap);
    EXPECT_EQ(k.min_gap->bits_per_second, 25'000'000u);
    EXPECT_TRUE(t->busy_window.empty());
}

// kControlled with a congestion signal, a switch's queue ([signals.queue],
// congestion_above 2 ms), and `keys` after it in the control table.
std::string with_queue(const std::string& keys) {
    return with(with(kControlled, "[classes.training]\n",
                     "[signals.queue]\nurl = \"http://127.0.0.1:9090\"\n"
                     "query = 'max(max_over_time(switch_queue_seconds[20s]))'\ninterval = \"5s\"\n"
                     "[classes.training]\n"),
                "min_gap = \"25Mbit\"\n",
                "min_gap = \"25Mbit\"\ncongestion_signal = \"queue\"\ncongestion_above = 0.002\n" + keys);
}

TEST(CeilControlConfig, ACongestionSignal) {
    const std::string text = with_queue("");
    auto c = lanes::parse_config(text, "lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    const auto& k = *c->find_class("training")->control;
    EXPECT_EQ(k.congestion_signal, "queue");
    EXPECT_EQ(k.congestion_above, 0.002);
    EXPECT_TRUE(
        lanes::parse_config(kControlled, "lanes.toml")->find_class("training")->control->congestion_signal.empty());

    const std::vector<Refused> cases = {
        {with(text, "congestion_signal = \"queue\"\n", ""),
         "classes.training.control.congestion_above: needs \"congestion_signal\""},
        {with(text, "congestion_above = 0.002\n", ""), "classes.training.control: missing key \"congestion_above\""},
        {with(text, "congestion_above = 0.002", "congestion_above = -1"),
         "classes.training.control.congestion_above: must be 0 or above"},
        {with(text, "congestion_signal = \"queue\"", "congestion_signal = \"queu\""),
         "classes.training.control.congestion_signal: unknown signal \"queu\" (did you mean \"queue\"?)"},
        {with(text, "[20s]", "[60s]"),
         "classes.training.control.dwell: shorter than the delay of congestion_signal \"queue\" (65s)"},
    };
    expect_refused(cases);
}

TEST(CeilControlConfig, AStrainByCount) {
    const std::string text = with_queue("strain_count = 2\nstrain_window = 6\nstrain_decrease = 0.92\n");
    auto c = lanes::parse_config(text, "lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    const auto& k = *c->find_class("training")->control;
    EXPECT_EQ(k.strain_count, 2);
    EXPECT_EQ(k.strain_window, 6);
    EXPECT_EQ(k.strain_decrease, 0.92);
    // strain_window defaults to strain_count: that many in a row.
    auto in_a_row = lanes::parse_config(with(text, "strain_window = 6\n", ""), "lanes.toml");
    ASSERT_TRUE(in_a_row) << in_a_row.error().message;
    EXPECT_EQ(in_a_row->find_class("training")->control->strain_window, 2);
    auto plain = lanes::parse_config(kControlled, "lanes.toml");
    ASSERT_TRUE(plain) << plain.error().message;
    EXPECT_EQ(plain->find_class("training")->control->strain_count, 0);
    EXPECT_FALSE(plain->find_class("training")->control->strain_decrease);

    const std::vector<Refused> cases = {
        {with(text, "strain_window = 6", "strain_window = 1"),
         "classes.training.control.strain_window: smaller than strain_count (2)"},
        {with(text, "strain_count = 2\n", ""), "classes.training.control.strain_window: needs \"strain_count\""},
        {with(text, "strain_count = 2", "strain_count = 0"), "classes.training.control.strain_count: "},
        {with(text, "strain_window = 6", "strain_window = 65"), "classes.training.control.strain_window: "},
        {with(text, "strain_decrease = 0.92", "strain_decrease = 1"),
         "classes.training.control.strain_decrease: out of range (0 < strain_decrease < 1"},
        {with(with(text, "congestion_signal = \"queue\"\n", ""), "congestion_above = 0.002\n", ""),
         "classes.training.control.strain_count: needs \"congestion_signal\""},
    };
    expect_refused(cases);
}

TEST(CeilControlConfig, Defaults) {
    std::string text = with(kControlled, "margin = 0.25\n", "");
    text = with(text, "decrease = 0.6\n", "");
    text = with(text, "backoff = \"5min\"\n", "");
    text = with(text, "min_gap = \"25Mbit\"\n", "");
    auto c = lanes::parse_config(text, "lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    const auto& k = *c->find_class("training")->control;
    EXPECT_EQ(k.margin, 0.2);
    EXPECT_EQ(k.decrease, 0.5);
    EXPECT_EQ(k.full_decrease_at, 1);  // every break the whole decrease
    EXPECT_EQ(k.backoff, seconds{0});  // 4 dwells
    EXPECT_FALSE(k.min_gap);           // the increase
}

TEST(CeilControlConfig, FullDecreaseAtIsAMultipleOfTheSlo) {
    auto c =
        lanes::parse_config(with(kControlled, "decrease = 0.6", "decrease = 0.6\nfull_decrease_at = 3"), "lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->find_class("training")->control->full_decrease_at, 3);
}

TEST(CeilControlConfig, SignalDelayIsTheIntervalPlusTheQueryRange) {
    using lanes::promql_query_range;
    EXPECT_EQ(promql_query_range("up"), seconds{0});
    EXPECT_EQ(promql_query_range("rate(x[30s])"), seconds{30});
    EXPECT_EQ(promql_query_range("max_over_time(rate(x[1m])[1h30m:15s])"), seconds{5400});
    EXPECT_EQ(promql_query_range("rate(x[500ms])"), seconds{1});
    EXPECT_EQ(promql_query_range("x{a=\"[\"}"), seconds{0});
    lanes::SignalConfig s;
    s.interval = seconds{15};
    s.query = "histogram_quantile(0.99, rate(h_bucket[2m]))";
    EXPECT_EQ(lanes::signal_delay(s), seconds{135});
}

TEST(CeilControlConfig, SettingsThatCannotConvergeAreRefused) {
    const std::vector<Refused> cases = {
        {with(kControlled, "dwell = \"40s\"", "dwell = \"30s\""),
         "lanes.toml:20:9: classes.training.control.dwell: shorter than the delay of signal \"p99\" (35s: its "
         "interval 5s plus the query's range 30s)"},
        {with(kControlled, "floor = \"200Mbit\"", "floor = \"2Gbit\""),
         "lanes.toml:17:9: classes.training.control.floor: above the class's ceil"},
        {with(kControlled, "increase = \"50Mbit\"", "increase = \"0Mbit\""), "classes.training.control.increase: "},
        {with(kControlled, "min_gap = \"25Mbit\"", "min_gap = \"0Mbit\""),
         "lanes.toml:23:11: classes.training.control.min_gap: rate '0Mbit' is zero"},
        {with(kControlled, "decrease = 0.6", "decrease = 1"),
         "lanes.toml:18:12: classes.training.control.decrease: out of range (0 < decrease < 1"},
        {with(kControlled, "decrease = 0.6", "decrease = 0"), "classes.training.control.decrease: out of range"},
        {with(kControlled, "decrease = 0.6", "decrease = 0.6\nfull_decrease_at = 0.5"),
         "lanes.toml:19:20: classes.training.control.full_decrease_at: must be 1 or above"},
        {with(kControlled, "decrease = 0.6", "decrease = 0.6\nfull_decrease_at = inf"),
         "classes.training.control.full_decrease_at: must be a finite number"},
        {with(kControlled, "decrease = 0.6", "decrease = 0.6\nfull_decrease_at = \"3x\""),
         "classes.training.control.full_decrease_at: "},
        {with(kControlled, "margin = 0.25", "margin = 1.5"),
         "lanes.toml:16:10: classes.training.control.margin: out of range (0 <= margin < 1)"},
        {with(kControlled, "slo = 0.01", "slo = 0"), "lanes.toml:15:7: classes.training.control.slo: must be above 0"},
        {with(kControlled, "signal = \"p99\"", "signal = \"p95\""),
         "lanes.toml:14:10: classes.training.control.signal: unknown signal \"p95\" (did you mean \"p99\"?)"},
        {with(kControlled, "load_signal = \"load\"", "load_signal = \"lod\""),
         "classes.training.control.load_signal: unknown signal \"lod\" (did you mean \"load\"?)"},
        {with(kControlled, "slo = 0.01\n", ""), "lanes.toml:13:1: classes.training.control: missing key \"slo\""},
        {with(kControlled, "dwell = \"40s\"\n", ""), "classes.training.control: missing key \"dwell\""},
        {with(kControlled, "backoff = \"5min\"", "backoff = \"10s\""),
         "classes.training.control.backoff: shorter than the dwell"},
        {with(kControlled, "dwell = \"40s\"", "dwell = \"1500ms\""),
         "classes.training.control.dwell: must be a whole number of seconds"},
        {with(kControlled, "backoff = \"5min\"", "bakoff = \"5min\""),
         "classes.training.control.bakoff: unknown key (did you mean \"backoff\"?)"},
        {with(kControlled, "rate = \"100Mbit\"\nceil = \"1Gbit\"\n", ""),
         "classes.training.control: the class has no \"rate\"/\"ceil\""},
    };
    expect_refused(cases);
}

TEST(CeilControlConfig, NotWithBusyWindow) {
    const std::string text = with(kControlled, "[classes.training]\n",
                                  "[windows.busy]\nsignal = \"p99\"\nabove = 0.02\nfor = \"10s\"\n"
                                  "[classes.training]\nbusy_window = \"busy\"\nbusy_ceil = \"500Mbit\"\n");
    auto r = lanes::parse_config(text, "lanes.toml");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("classes.training.control: a class follows either busy_window/busy_ceil (two "
                                     "levels) or a controller, not both"),
              std::string::npos)
        << r.error().message;
}

TEST(CeilControlConfig, RestBelow) {
    const std::string text = with(kControlled, "min_gap = \"25Mbit\"\n", "min_gap = \"25Mbit\"\nrest_below = 0.1\n");
    auto c = lanes::parse_config(text, "lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->find_class("training")->control->rest_below, 0.1);
    auto plain = lanes::parse_config(kControlled, "lanes.toml");
    ASSERT_TRUE(plain) << plain.error().message;
    EXPECT_EQ(plain->find_class("training")->control->rest_below, 0);
    const std::vector<Refused> cases = {
        {with(text, "rest_below = 0.1", "rest_below = 1"),
         "classes.training.control.rest_below: out of range (0 <= rest_below < 1"},
        {with(text, "rest_below = 0.1", "rest_below = -0.1"), "classes.training.control.rest_below: out of range"},
        {with(text, "rest_below = 0.1", "rest_below = \"10%\""), "classes.training.control.rest_below: "},
        // 1Gbit * 0.8 = 800Mbit, the floor: every rest would be the floor.
        {with(text, "rest_below = 0.1", "rest_below = 0.8"),
         "classes.training.control.rest_below: puts the highest resting ceil"},
    };
    expect_refused(cases);
}

TEST(CeilControlConfig, QuietBelow) {
    const std::string text = with_queue("rest_below = 0.08\nquiet_below = 0.0005\n");
    auto c = lanes::parse_config(text, "lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->find_class("training")->control->quiet_below, 0.0005);
    EXPECT_FALSE(lanes::parse_config(kControlled, "lanes.toml")->find_class("training")->control->quiet_below);
    const std::vector<Refused> cases = {
        {with(text, "quiet_below = 0.0005", "quiet_below = -0.001"),
         "classes.training.control.quiet_below: must be 0 or above"},
        {with(text, "quiet_below = 0.0005", "quiet_below = 0.002"),
         "classes.training.control.quiet_below: must be under congestion_above (0.002)"},
        {with(text, "rest_below = 0.08\n", ""), "classes.training.control.quiet_below: needs \"rest_below\" above 0"},
        {with(with(text, "congestion_signal = \"queue\"\n", ""), "congestion_above = 0.002\n", ""),
         "classes.training.control.quiet_below: needs \"congestion_signal\""},
        {with(text, "quiet_below = 0.0005", "quiet_below = \"0.5ms\""), "classes.training.control.quiet_below: "},
    };
    expect_refused(cases);
}

}  // namespace
