// SPDX-License-Identifier: GPL-2.0-or-later
// Signals: the Prometheus answer parser, freshness and fallbacks, the
// hysteresis of signal windows, [signals.NAME] validation, and the monitor with
// a scripted fetcher.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/lanes_toml.hpp"
#include "ctld/windows_config.hpp"
#include "signals/curl_fetcher.hpp"
#include "signals/signal_monitor.hpp"
#include "signals/signals.hpp"
#include "tests/unit/test_util.hpp"

namespace {

using lanes::test::with;

using namespace std::chrono;
using lanes::FetchResult;
using lanes::parse_prometheus_answer;
using lanes::SignalClock;

const std::string kVector1 =
    R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"probe"},"value":[1700000000.5,"0.31"]}]}})";

struct AnswerCase {
    const char* name;
    long status;
    std::string body;
    bool ok;
    double value;
    const char* error_contains;
};

TEST(PrometheusAnswer, Table) {
    const std::vector<AnswerCase> cases = {
        {"vector", 200, kVector1, true, 0.31, ""},
        {"scalar", 200, R"({"status":"success","data":{"resultType":"scalar","result":[1700000000,"42"]}})", true, 42,
         ""},
        {"negative", 200, R"({"status":"success","data":{"resultType":"scalar","result":[1,"-1.5e3"]}})", true, -1500,
         ""},
        {"nan scalar", 200, R"({"status":"success","data":{"resultType":"scalar","result":[1,"NaN"]}})", false, 0,
         "NaN"},
        {"nan vector", 200,
         R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"NaN"]}]}})", false, 0,
         "NaN"},
        {"inf", 200, R"({"status":"success","data":{"resultType":"scalar","result":[1,"+Inf"]}})", false, 0, "+Inf"},
        {"empty", 200, R"({"status":"success","data":{"resultType":"vector","result":[]}})", false, 0, "empty vector"},
        {"several", 200,
         R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"a"},"value":[1,"1"]},{"metric":{"__name__":"up","job":"b"},"value":[1,"0"]}]}})",
         false, 0, "2 series (up{job=\"a\"}, up{job=\"b\"})"},
        {"error", 400, R"({"status":"error","errorType":"bad_data","error":"parse error at char 5"})", false, 0,
         "Prometheus error (HTTP 400): bad_data: parse error at char 5"},
        {"http 503 html", 503, "<html>down</html>", false, 0, "HTTP 503"},
        {"http 500 success", 500, kVector1, false, 0, "HTTP 500"},
        {"not json", 200, "hello", false, 0, "not a Prometheus API answer"},
        {"no status", 200, R"({"data":{}})", false, 0, "no \"status\""},
        {"matrix", 200, R"({"status":"success","data":{"resultType":"matrix","result":[]}})", false, 0, "matrix"},
        {"bad value", 200, R"({"status":"success","data":{"resultType":"scalar","result":[1,"abc"]}})", false, 0,
         "malformed sample value"},
        {"value not string", 200, R"({"status":"success","data":{"resultType":"scalar","result":[1,2]}})", false, 0,
         "malformed scalar"},
    };
    for (const auto& c : cases) {
        auto r = parse_prometheus_answer(c.status, c.body);
        EXPECT_EQ(bool(r), c.ok) << c.name;
        if (c.ok && r) {
            EXPECT_DOUBLE_EQ(*r, c.value) << c.name;
        }
        if (!c.ok && !r) {
            EXPECT_NE(r.error().message.find(c.error_contains), std::string::npos)
                << c.name << ": " << r.error().message;
        }
    }
}

TEST(PrometheusAnswer, TransportErrorWins) {
    FetchResult f;
    f.transport_error = "no answer within the timeout of 500 ms";
    auto r = lanes::interpret_fetch(f);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, f.transport_error);
}

lanes::SignalConfig signal_config() {
    lanes::SignalConfig s;
    s.name = "p99";
    s.url = "http://127.0.0.1:1";
    s.query = "q";
    s.interval = seconds{5};
    s.stale_after = seconds{20};
    return s;
}

TEST(SignalValue, FreshStaleFallback) {
    auto cfg = signal_config();
    lanes::SignalState st;
    const SignalClock::time_point t0{seconds{1'700'000'000}};
    auto v = lanes::effective_value(cfg, st, t0);
    EXPECT_FALSE(v.value);
    EXPECT_EQ(v.why_unusable, "not fetched yet");

    lanes::record_attempt(st, 0.2, t0);
    v = lanes::effective_value(cfg, st, t0 + seconds{20});
    ASSERT_TRUE(v.value);
    EXPECT_TRUE(v.fresh);
    EXPECT_DOUBLE_EQ(*v.value, 0.2);
    EXPECT_EQ(v.age, seconds{20});

    lanes::record_attempt(st, lanes::fail("connection refused"), t0 + seconds{10});
    v = lanes::effective_value(cfg, st, t0 + seconds{21});
    EXPECT_FALSE(v.value);
    EXPECT_FALSE(v.fresh);
    EXPECT_EQ(v.why_unusable, "stale since 2023-11-14 22:13:20 UTC (21s old): connection refused");

    cfg.fallback = 7;
    v = lanes::effective_value(cfg, st, t0 + seconds{21});
    ASSERT_TRUE(v.value);
    EXPECT_TRUE(v.from_fallback);
    EXPECT_DOUBLE_EQ(*v.value, 7);
    EXPECT_EQ(st.successes, 1u);
    EXPECT_EQ(st.failures, 1u);
}

lanes::SignalWindowConfig window_config() {
    lanes::SignalWindowConfig w;
    w.name = "busy";
    w.signal = "p99";
    w.above = 0.25;
    w.until_below = 0.1;
    w.hold_for = seconds{120};
    w.release_after = seconds{60};
    return w;
}

TEST(SignalWindow, HysteresisNeedsTheWholeHoldTime) {
    lanes::SignalWindowTracker t(window_config());
    const SignalClock::time_point t0{seconds{1'700'000'000}};
    EXPECT_FALSE(t.update(0.3, t0));
    EXPECT_FALSE(t.update(0.3, t0 + seconds{119}));
    EXPECT_FALSE(t.busy());
    EXPECT_FALSE(t.update(0.2, t0 + seconds{121}));  // dipped: the clock restarts
    EXPECT_FALSE(t.update(0.3, t0 + seconds{130}));
    EXPECT_TRUE(t.update(0.3, t0 + seconds{250}));
    EXPECT_TRUE(t.busy());
    EXPECT_EQ(t.since(), t0 + seconds{250});
    EXPECT_NE(t.reason().find("above 0.25 for 120s"), std::string::npos) << t.reason();
    // Between until_below and above: stays busy.
    EXPECT_FALSE(t.update(0.2, t0 + seconds{400}));
    EXPECT_TRUE(t.busy());
    EXPECT_FALSE(t.update(0.05, t0 + seconds{410}));
    EXPECT_FALSE(t.update(0.15, t0 + seconds{440}));  // back in the band: restarts
    EXPECT_FALSE(t.update(0.05, t0 + seconds{450}));
    EXPECT_FALSE(t.update(0.05, t0 + seconds{509}));
    EXPECT_TRUE(t.update(0.05, t0 + seconds{510}));
    EXPECT_FALSE(t.busy());
}

TEST(SignalWindow, UnknownValueFollowsWhenUnknown) {
    const SignalClock::time_point t0{seconds{1'700'000'000}};
    auto cfg = window_config();
    cfg.hold_for = seconds{0};
    for (auto [action, expect_busy_after_idle, expect_busy_after_busy] :
         {std::tuple{lanes::UnknownSignalAction::Idle, false, false},
          std::tuple{lanes::UnknownSignalAction::Busy, true, true},
          std::tuple{lanes::UnknownSignalAction::Hold, false, true}}) {
        cfg.when_unknown = action;
        lanes::SignalWindowTracker idle(cfg), busy(cfg);
        busy.update(1.0, t0);
        ASSERT_TRUE(busy.busy());
        idle.update(std::nullopt, t0 + seconds{1});
        busy.update(std::nullopt, t0 + seconds{1});
        EXPECT_EQ(idle.busy(), expect_busy_after_idle) << static_cast<int>(action);
        EXPECT_EQ(busy.busy(), expect_busy_after_busy) << static_cast<int>(action);
        EXPECT_NE(busy.reason().find("no usable value of p99"), std::string::npos);
    }
}

// The state function while a signal is unknown: which when_unknown applies, and
// a reason that says why the value is unusable and whether that is the default.
TEST(SignalWindow, UnknownIsBusyByDefaultAndSaysWhy) {
    const SignalClock::time_point t0{seconds{1'700'000'000}};
    struct Case {
        const char* name;
        std::optional<lanes::UnknownSignalAction> set;  // nullopt: not in lanes.toml
        bool busy_before;
        const char* why;
        bool busy_after;
        const char* reason;
    };
    using A = lanes::UnknownSignalAction;
    const Case cases[] = {
        {"API down, default", std::nullopt, false, "never fetched successfully: Failed to connect to 127.0.0.1 port 9",
         true,
         "no usable value of p99 (never fetched successfully: Failed to connect to 127.0.0.1 port 9): busy "
         "(when_unknown = busy, the default)"},
        {"stale, default", std::nullopt, false, "stale since 2023-11-14 22:13:20 UTC (93s old): HTTP 503", true,
         "no usable value of p99 (stale since 2023-11-14 22:13:20 UTC (93s old): HTTP 503): busy (when_unknown = "
         "busy, the default)"},
        {"garbage, default, already busy", std::nullopt, true, "never fetched successfully: malformed JSON at byte 1",
         true, "busy (when_unknown = busy, the default)"},
        {"garbage, explicit idle", A::Idle, true, "never fetched successfully: malformed JSON", false,
         "idle (when_unknown = idle)"},
        {"down, explicit busy", A::Busy, false, "never fetched successfully: refused", true,
         "busy (when_unknown = busy)"},
        {"down, hold while idle", A::Hold, false, "stale", false, "holding idle (when_unknown = hold)"},
        {"down, hold while busy", A::Hold, true, "stale", true, "holding busy (when_unknown = hold)"},
    };
    for (const auto& c : cases) {
        auto cfg = window_config();
        cfg.hold_for = seconds{0};
        if (c.set) {
            cfg.when_unknown = *c.set;
            cfg.when_unknown_set = true;
        }
        lanes::SignalWindowTracker t(cfg);
        if (c.busy_before) t.update(1.0, t0);
        ASSERT_EQ(t.busy(), c.busy_before) << c.name;
        t.update(std::nullopt, t0 + seconds{1}, c.why);
        EXPECT_EQ(t.busy(), c.busy_after) << c.name;
        EXPECT_NE(t.reason().find(c.reason), std::string::npos) << c.name << ": " << t.reason();
        EXPECT_NE(t.reason().find(c.why), std::string::npos) << c.name << ": " << t.reason();
    }
}

TEST(SignalWindow, WhenUnknownDefaultsToBusyInLanesToml) {
    auto cfg = lanes::parse_controller_config(R"(
default_class = "training"
[signals.p99]
url = "http://127.0.0.1:9090/"
query = 'up'
[windows.peak]
signal = "p99"
above = 0.25
[windows.calm]
signal = "p99"
above = 0.25
when_unknown = "idle"
[classes.training]
)",
                                              "lanes.toml");
    ASSERT_TRUE(cfg) << cfg.error().message;
    EXPECT_EQ(cfg->signal_windows.at("peak").when_unknown, lanes::UnknownSignalAction::Busy);
    EXPECT_FALSE(cfg->signal_windows.at("peak").when_unknown_set);
    EXPECT_EQ(cfg->signal_windows.at("calm").when_unknown, lanes::UnknownSignalAction::Idle);
    EXPECT_TRUE(cfg->signal_windows.at("calm").when_unknown_set);
}

const char* kBase = R"(
default_class = "training"
[signals.p99]
url = "http://127.0.0.1:9090/"
query = 'histogram_quantile(0.99, sum(rate(lanes_probe_latency_seconds_bucket[30s])) by (le))'
interval = "5s"
timeout = "1s"
fallback = 0
[windows.busy]
signal = "p99"
above = 0.25
until_below = 0.1
for = "2min"
retry = "1min"
when_unknown = "busy"
[classes.training]
rate = "1Gbit"
ceil = "10Gbit"
avoid_windows = ["busy"]
busy_window = "busy"
busy_ceil = "2Gbit"
)";

TEST(SignalConfig, Parses) {
    auto c = lanes::parse_controller_config(kBase, "lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    ASSERT_EQ(c->signals.count("p99"), 1u);
    const auto& s = c->signals.at("p99");
    EXPECT_EQ(s.url, "http://127.0.0.1:9090");
    EXPECT_EQ(s.interval, seconds{5});
    EXPECT_EQ(s.timeout, seconds{1});
    EXPECT_EQ(s.stale_after, seconds{20});
    EXPECT_EQ(s.fallback, 0.0);
    const auto* w = c->find_signal_window("busy");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->hold_for, minutes{2});
    EXPECT_EQ(w->release_after, minutes{2});
    EXPECT_EQ(w->retry, minutes{1});
    EXPECT_EQ(w->when_unknown, lanes::UnknownSignalAction::Busy);
    const auto* t = c->find_class("training");
    EXPECT_EQ(t->busy_window, "busy");
    EXPECT_EQ(t->busy_ceil->bits_per_second, 2'000'000'000u);
    EXPECT_EQ(t->avoid_windows, std::vector<std::string>{"busy"});
}

// What the evaluator sleeps until: a fresh value going stale, a window's
// crossing completing; nothing while only a fetch can change anything.
TEST(SignalDeadline, StaleAtIsTheFirstStaleInstant) {
    lanes::SignalConfig c;
    c.stale_after = seconds{60};
    lanes::SignalState st;
    const SignalClock::time_point t0{seconds{1'700'000'000}};
    EXPECT_FALSE(lanes::stale_at(c, st, t0));  // no value: only a fetch changes it
    lanes::record_attempt(st, 0.3, t0);
    auto at = lanes::stale_at(c, st, t0 + seconds{10});
    ASSERT_TRUE(at);
    EXPECT_TRUE(lanes::effective_value(c, st, *at - SignalClock::duration(1)).fresh);
    EXPECT_FALSE(lanes::effective_value(c, st, *at).fresh);
    EXPECT_FALSE(lanes::stale_at(c, st, *at));  // stale already: nothing more by time
    // A failure keeps the value, and its deadline.
    lanes::record_attempt(st, lanes::fail("connection refused"), t0 + seconds{15});
    EXPECT_EQ(lanes::stale_at(c, st, t0 + seconds{20}), at);
}

TEST(SignalDeadline, CrossingDueIsWhenTheHoldRunsOut) {
    lanes::SignalWindowTracker t(window_config());  // for 120s, release_after 60s
    const SignalClock::time_point t0{seconds{1'700'000'000}};
    EXPECT_FALSE(t.crossing_due());
    t.update(0.3, t0);
    ASSERT_TRUE(t.crossing_due());
    EXPECT_EQ(*t.crossing_due(), t0 + seconds{120});
    EXPECT_FALSE(t.update(0.3, *t.crossing_due() - seconds{1}));
    EXPECT_TRUE(t.update(0.3, t0 + seconds{120}));  // due: the state changes then
    EXPECT_FALSE(t.crossing_due());
    t.update(0.05, t0 + seconds{200});
    EXPECT_EQ(t.crossing_due(), t0 + seconds{260});  // busy: release_after
    t.update(0.2, t0 + seconds{210});                // back in the band
    EXPECT_FALSE(t.crossing_due());
    t.update(std::nullopt, t0 + seconds{220}, "down");
    EXPECT_FALSE(t.crossing_due());
}

TEST(SignalDeadline, NextChangeIsTheEarliest) {
    const SignalClock::time_point t0{seconds{1'700'000'000}};
    lanes::SignalConfig fast, slow;
    fast.stale_after = seconds{30};
    slow.stale_after = seconds{300};
    lanes::SignalState fresh, never;
    lanes::record_attempt(fresh, 0.3, t0);
    lanes::record_attempt(never, lanes::fail("refused"), t0);
    lanes::SignalWindowTracker w(window_config());
    w.update(0.3, t0);  // due at t0 + 120s
    using V = std::vector<lanes::SignalTimers>;
    const std::vector<const lanes::SignalWindowTracker*> none, one{&w};
    EXPECT_FALSE(lanes::next_signal_change(V{{&fast, &never}}, none, t0));  // a signal down: fetches only
    EXPECT_EQ(lanes::next_signal_change(V{{&slow, &fresh}}, one, t0), t0 + seconds{120});
    EXPECT_EQ(lanes::next_signal_change(V{{&fast, &fresh}, {&slow, &never}}, one, t0),
              t0 + seconds{30} + SignalClock::duration(1));
}

TEST(SignalConfig, MistakesNameLineAndKey) {
    struct Case {
        std::string text;
        const char* expect;
    };
    const std::vector<Case> cases = {
        {with(kBase, "url = \"http://127.0.0.1:9090/\"", "url = \"ftp://x\""),
         "lanes.toml:4:7: signals.p99.url: not an http:// or https://"},
        {with(kBase, "interval = \"5s\"", "interval = \"5\""),
         "lanes.toml:6:12: signals.p99.interval: duration '5' has no unit"},
        {with(kBase, "timeout = \"1s\"", "timeout = \"10s\""), "signals.p99.timeout: longer than the interval"},
        {with(kBase, "fallback = 0", "fallback = \"low\""), "lanes.toml:8:12: signals.p99.fallback: expected a number"},
        {with(kBase, "fallback = 0", "fallbak = 0"),
         "lanes.toml:8:1: signals.p99.fallbak: unknown key (did you mean \"fallback\"?)"},
        {with(kBase, "fallback = 0", "ca_file = \"/etc/ca.pem\""),
         "signals.p99.ca_file: only used with an https:// url"},
        {with(kBase, "signal = \"p99\"", "signal = \"p95\""),
         "lanes.toml:10:10: windows.busy.signal: unknown signal \"p95\" (did you mean \"p99\"?)"},
        {with(kBase, "until_below = 0.1", "until_below = 0.5"),
         "windows.busy.until_below: must not be above \"above\""},
        {with(kBase, "when_unknown = \"busy\"", "when_unknown = \"bussy\""),
         "windows.busy.when_unknown: unknown value \"bussy\" (did you mean \"busy\"?)"},
        {with(kBase, "for = \"2min\"", "for = \"2min\"\ntimezone = \"UTC\""),
         "windows.busy.timezone: a window follows either a signal or the clock"},
        {with(kBase, "busy_ceil = \"2Gbit\"", "busy_ceil = \"20Gbit\""),
         "classes.training.busy_ceil: above the class's ceil"},
        {with(kBase, "busy_window = \"busy\"", "busy_window = \"bsy\""),
         "classes.training.busy_window: unknown signal window \"bsy\" (did you mean \"busy\"?)"},
        {with(kBase, "busy_window = \"busy\"\n", ""), "classes.training.busy_ceil: needs \"busy_window\""},
        {with(kBase, "query = '", "#query = '"), "signals.p99: missing key \"query\""},
    };
    for (const auto& c : cases) {
        auto r = lanes::parse_controller_config(c.text, "lanes.toml");
        ASSERT_FALSE(r) << c.expect;
        EXPECT_NE(r.error().message.find(c.expect), std::string::npos)
            << "expected: " << c.expect << "\ngot: " << r.error().message;
    }
}

// A fetcher that answers from a script shared by the test.
struct Script {
    std::mutex mutex;
    FetchResult next;
    int calls = 0;
    std::vector<std::optional<SignalClock::time_point>> instants;  // asked for, in order
};

class ScriptedFetcher final : public lanes::SignalFetcher {
public:
    explicit ScriptedFetcher(Script& s) : s_(s) {}
    FetchResult fetch(const lanes::SignalConfig&, std::optional<SignalClock::time_point> instant) noexcept override {
        std::lock_guard lock(s_.mutex);
        ++s_.calls;
        s_.instants.push_back(instant);
        return s_.next;
    }

private:
    Script& s_;
};

TEST(SignalMonitor, FallbackWindowsAndLogLinesOnce) {
    Script script;
    SignalClock::time_point now{seconds{1'700'000'000}};
    std::vector<std::string> lines;
    lanes::SignalMonitor monitor([&](lanes::LogLevel, const std::string& l) { lines.push_back(l); },
                                 [&](const std::atomic<bool>*) { return std::make_unique<ScriptedFetcher>(script); },
                                 [&] { return now; });
    auto cfg = lanes::parse_controller_config(kBase, "lanes.toml");
    ASSERT_TRUE(cfg) << cfg.error().message;
    monitor.configure(cfg->signals, cfg->signal_windows, /*start_threads=*/false);
    // No value yet: the window uses when_unknown = busy? No: the fallback (0) is a value.
    auto snap = monitor.snapshot();
    ASSERT_TRUE(snap);
    EXPECT_TRUE(snap->signals.at("p99").value.from_fallback);
    EXPECT_FALSE(snap->windows.at("busy").busy);

    script.next = FetchResult{"", 200, with(kVector1, "0.31", "0.5")};
    monitor.refresh_all_now();
    now += minutes{2};
    snap = monitor.refresh_all_now();
    EXPECT_TRUE(snap->windows.at("busy").busy);
    EXPECT_DOUBLE_EQ(*snap->signals.at("p99").value.value, 0.5);

    script.next = FetchResult{"connection refused", 0, ""};
    for (int i = 0; i < 3; ++i) monitor.refresh_all_now();
    snap = monitor.snapshot();
    EXPECT_EQ(snap->signals.at("p99").state.last_error, "connection refused");
    EXPECT_TRUE(snap->signals.at("p99").value.fresh);  // last value still young
    now += seconds{30};
    monitor.evaluate_now();
    snap = monitor.snapshot();
    EXPECT_TRUE(snap->signals.at("p99").value.from_fallback);
    int failed = 0, stale = 0, begins = 0;
    for (const auto& l : lines) {
        failed += l.find("signal p99: http://127.0.0.1:9090: query failed: connection refused") == 0;
        stale += l.find("signal p99: no usable value (stale since ") == 0 &&
                 l.find(" (30s old): connection refused); using fallback 0") != std::string::npos;
        begins += l.find("window busy begins: p99=0.5 above 0.25 for 120s") == 0;
    }
    EXPECT_EQ(failed, 1);
    EXPECT_EQ(stale, 1);
    EXPECT_EQ(begins, 1);
}

TEST(SignalMonitor, ThreadsRefreshAndStop) {
    Script script;
    script.next = FetchResult{"", 200, kVector1};
    lanes::SignalMonitor monitor({},
                                 [&](const std::atomic<bool>*) { return std::make_unique<ScriptedFetcher>(script); });
    auto cfg = lanes::parse_controller_config(kBase, "lanes.toml");
    ASSERT_TRUE(cfg);
    monitor.configure(cfg->signals, cfg->signal_windows);
    for (int i = 0; i < 500; ++i) {
        auto s = monitor.snapshot();
        if (s && s->signals.at("p99").value.fresh) break;
        std::this_thread::sleep_for(milliseconds(10));
    }
    auto s = monitor.snapshot();
    ASSERT_TRUE(s->signals.at("p99").value.fresh);
    EXPECT_DOUBLE_EQ(*s->signals.at("p99").value.value, 0.31);
    monitor.stop();
}

// Every node fetches at the same instants and asks for the value at them: the
// instants are the multiples of the interval since the epoch, none is asked for
// twice, and the delay after each stays inside its bounds.
TEST(SignalFetchInstants, MultiplesOfTheIntervalAndABoundedDelay) {
    using lanes::signal_fetch_delay;
    using lanes::signal_instant_at_or_before;
    const SignalClock::time_point t{milliseconds{1'700'000'012'345}};
    EXPECT_EQ(signal_instant_at_or_before(t, seconds{15}), SignalClock::time_point{seconds{1'700'000'010}});
    EXPECT_EQ(signal_instant_at_or_before(t, seconds{1}), SignalClock::time_point{seconds{1'700'000'012}});
    EXPECT_EQ(signal_instant_at_or_before(SignalClock::time_point{seconds{1'700'000'010}}, seconds{15}),
              SignalClock::time_point{seconds{1'700'000'010}});  // an instant is its own
    EXPECT_EQ(signal_instant_at_or_before(t, milliseconds{0}),
              SignalClock::time_point{milliseconds{1'700'000'012'345}});
    // A quarter of the interval, at most 1 s, plus a spread under as much again.
    EXPECT_EQ(signal_fetch_delay(seconds{1}, 0), milliseconds{250});
    EXPECT_EQ(signal_fetch_delay(seconds{1}, 249), milliseconds{499});
    EXPECT_EQ(signal_fetch_delay(seconds{1}, 250), milliseconds{250});
    EXPECT_EQ(signal_fetch_delay(seconds{15}, 0), milliseconds{1000});
    EXPECT_EQ(signal_fetch_delay(seconds{15}, 999), milliseconds{1999});
    EXPECT_EQ(signal_fetch_delay(milliseconds{3}, 7), milliseconds{0});
}

TEST(SignalFetchInstants, TheUrlNamesTheInstant) {
    lanes::SignalConfig sig;
    sig.url = "http://prom:9090";
    sig.query = "up";
    EXPECT_EQ(lanes::signal_query_url(sig), "http://prom:9090/api/v1/query?query=up");
    EXPECT_EQ(lanes::signal_query_url(sig, SignalClock::time_point{milliseconds{1'700'000'012'045}}),
              "http://prom:9090/api/v1/query?query=up&time=1700000012.045");
}

TEST(SignalMonitor, ThreadsAskForTheIntervalsInstants) {
    Script script;
    script.next = FetchResult{"", 200, kVector1};
    lanes::SignalMonitor monitor({},
                                 [&](const std::atomic<bool>*) { return std::make_unique<ScriptedFetcher>(script); });
    lanes::SignalConfig sig;
    sig.name = "p99";
    sig.url = "http://127.0.0.1:9";
    sig.query = "up";
    sig.interval = milliseconds{100};
    monitor.configure({{"p99", sig}}, {});
    for (int i = 0; i < 3000; ++i) {  // 30 s at most; four fetches take about 0.4 s
        {
            std::lock_guard lock(script.mutex);
            if (script.instants.size() >= 4) break;
        }
        std::this_thread::sleep_for(milliseconds(10));
    }
    monitor.stop();
    std::lock_guard lock(script.mutex);
    ASSERT_GE(script.instants.size(), 4u);
    for (size_t i = 0; i < script.instants.size(); ++i) {
        ASSERT_TRUE(script.instants[i]) << "fetch " << i << " asked for no instant";
        EXPECT_EQ(duration_cast<milliseconds>(script.instants[i]->time_since_epoch()).count() % 100, 0)
            << "fetch " << i << " asked for an instant that is not a multiple of the interval";
        if (i > 0) {
            EXPECT_GT(*script.instants[i], *script.instants[i - 1]) << "fetch " << i << " asked again";
        }
    }
    EXPECT_EQ(monitor.snapshot()->signals.at("p99").state.last_instant, script.instants.back());
}

// The monitor's own deadline follows its fetches: a value fetched at t is due to
// go stale at t + stale_after; a signal that never answered asks for no wake-up
// (the evaluator used to run every second regardless).
TEST(SignalMonitor, NextEvaluationFollowsTheFetches) {
    Script script;
    SignalClock::time_point now{seconds{1'700'000'000}};
    lanes::SignalMonitor monitor(
        {}, [&](const std::atomic<bool>*) { return std::make_unique<ScriptedFetcher>(script); }, [&] { return now; });
    auto cfg = lanes::parse_controller_config(kBase, "lanes.toml");
    ASSERT_TRUE(cfg);
    monitor.configure(cfg->signals, cfg->signal_windows, /*start_threads=*/false);
    script.next = FetchResult{"connection refused", 0, ""};
    monitor.refresh_all_now();
    // The fallback (0) is a value, below "above": no crossing, nothing to wait for.
    EXPECT_FALSE(monitor.next_evaluation_due());
    script.next = FetchResult{"", 200, kVector1};  // 0.31, above 0.25
    const auto fetched = now;
    monitor.refresh_all_now();
    const auto stale = fetched + cfg->signals.at("p99").stale_after + SignalClock::duration(1);
    const auto crossing = fetched + cfg->signal_windows.at("busy").hold_for;
    EXPECT_EQ(monitor.next_evaluation_due(), std::min(stale, crossing));
    now += seconds{5};
    monitor.evaluate_now();  // nothing changed: the same instant
    EXPECT_EQ(monitor.next_evaluation_due(), std::min(stale, crossing));
}

// Readers see the clock move between evaluations: taken and a value's age are
// brought up to date by snapshot() (a deferred job's start is taken + retry).
TEST(SignalMonitor, SnapshotTimesFollowTheClock) {
    Script script;
    script.next = FetchResult{"", 200, kVector1};
    SignalClock::time_point now{seconds{1'700'000'000}};
    lanes::SignalMonitor monitor(
        {}, [&](const std::atomic<bool>*) { return std::make_unique<ScriptedFetcher>(script); }, [&] { return now; });
    auto cfg = lanes::parse_controller_config(kBase, "lanes.toml");
    ASSERT_TRUE(cfg);
    monitor.configure(cfg->signals, cfg->signal_windows, /*start_threads=*/false);
    monitor.refresh_all_now();
    now += seconds{12};
    auto snap = monitor.snapshot();
    EXPECT_EQ(snap->taken, now);
    EXPECT_EQ(snap->signals.at("p99").value.age, seconds{12});
    EXPECT_TRUE(snap->signals.at("p99").value.fresh);
    EXPECT_EQ(monitor.snapshot(), snap);  // the same instant: the same snapshot
}

// The evaluator thread wakes at the deadline by itself: a value goes stale with
// no fetch after it (interval one hour), and change_fd() says a snapshot is out.
TEST(SignalMonitor, EvaluatorWakesAtTheStaleDeadline) {
    Script script;
    script.next = FetchResult{"", 200, kVector1};
    lanes::SignalMonitor monitor({},
                                 [&](const std::atomic<bool>*) { return std::make_unique<ScriptedFetcher>(script); });
    const int fd = monitor.change_fd();
    ASSERT_GE(fd, 0);
    lanes::SignalConfig sig;
    sig.name = "p99";
    sig.url = "http://127.0.0.1:9";
    sig.query = "up";
    sig.interval = hours{1};
    sig.stale_after = milliseconds{300};
    monitor.configure({{"p99", sig}}, {});
    bool was_fresh = false, went_stale = false;
    for (int i = 0; i < 3000 && !went_stale; ++i) {  // 30 s at most
        auto s = monitor.snapshot();
        const bool fresh = s && s->signals.at("p99").value.fresh;
        was_fresh = was_fresh || fresh;
        went_stale = was_fresh && !fresh;
        std::this_thread::sleep_for(milliseconds(10));
    }
    EXPECT_TRUE(went_stale);
    {
        std::lock_guard lock(script.mutex);
        EXPECT_EQ(script.calls, 1);  // by time alone, not by a fetch
    }
    uint64_t published = 0;
    EXPECT_EQ(::read(fd, &published, sizeof published), static_cast<ssize_t>(sizeof published));
    EXPECT_GE(published, 2u);  // the fetch's evaluation and the deadline's
    monitor.stop();
}

}  // namespace
