// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include "ctld/router.hpp"
#include "tests/unit/fixed_windows.hpp"

namespace lanes {
namespace {

using test::mon;
using test::utc;
using namespace std::chrono_literals;

// "peak": every day 08:00-20:00 UTC from Monday 2026-11-30.
test::FixedWindows peak_windows() {
    test::FixedWindows w;
    w.daily("peak", utc(2026, 11, 30), 8, 20);
    return w;
}

ClassConfig training(OverrunAction overrun) {
    ClassConfig c;
    c.name = "training";
    c.partitions = {"gpu"};
    c.avoid_windows = {"peak"};
    c.window_overrun = overrun;
    c.borrow_partitions = {"spare"};
    c.exempt_users = {"oncall"};
    return c;
}

struct RouteCase {
    const char* name;
    OverrunAction overrun;
    SysSeconds now;
    std::optional<uint32_t> time_limit;
    std::optional<SysSeconds> user_begin;
    const char* user;
    // Expected.
    bool reject;
    std::optional<SysSeconds> begin;
    std::optional<uint32_t> limit;
    std::optional<std::string> partition;
    const char* message_contains;  // in some user message (or the reject message); "" = no messages
};

// gtest prints parameters; without this it dumps the struct's bytes (padding included).
void PrintTo(const RouteCase& c, std::ostream* os) { *os << c.name; }

class RouterTable : public ::testing::TestWithParam<RouteCase> {};

TEST_P(RouterTable, Routes) {
    const RouteCase& c = GetParam();
    auto windows = peak_windows();
    JobView job;
    job.user = c.user;
    job.account = "ml";
    job.partition = "gpu";
    job.time_limit_minutes = c.time_limit;
    job.begin_time = c.user_begin;
    Route r = route_job(training(c.overrun), job, c.now, windows);
    std::string all;
    for (const auto& m : r.user_messages) all += m + "\n";
    all += r.reject_message;
    SCOPED_TRACE(all);
    EXPECT_EQ(r.reject, c.reject);
    if (c.reject) return;
    EXPECT_EQ(r.begin_time, c.begin);
    EXPECT_EQ(r.time_limit_minutes, c.limit);
    EXPECT_EQ(r.partition, c.partition);
    if (std::string(c.message_contains).empty()) {
        EXPECT_TRUE(r.user_messages.empty());
    } else {
        EXPECT_NE(all.find(c.message_contains), std::string::npos);
    }
}

constexpr auto D = OverrunAction::Defer;
constexpr auto S = OverrunAction::Shorten;
constexpr auto W = OverrunAction::Warn;
constexpr auto R = OverrunAction::Reject;
const auto tue = [](int h, int m = 0) { return utc(2026, 12, 1, h, m); };

INSTANTIATE_TEST_SUITE_P(
    Router, RouterTable,
    ::testing::Values(
        RouteCase{"peak_defers_to_window_end",
                  D,
                  mon(9),
                  120,
                  {},
                  "alice",
                  false,
                  mon(20),
                  {},
                  "gpu",
                  "lanes: training job deferred to Mon 20:00 UTC (peak window)"},
        RouteCase{"offpeak_fits_and_borrows", D, mon(21), 120, {}, "alice", false, {}, {}, "gpu,spare", ""},
        RouteCase{"overrun_defer_to_after_next_window",
                  D,
                  mon(21),
                  720,
                  {},
                  "alice",
                  false,
                  tue(20),
                  {},
                  "gpu",
                  "deferred to Tue 20:00 UTC (peak window)"},
        RouteCase{"overrun_shorten",
                  S,
                  mon(21),
                  720,
                  {},
                  "alice",
                  false,
                  {},
                  660,
                  "gpu,spare",
                  "shortened from 12h to 11h so it ends before the peak window (Tue 08:00 UTC)"},
        RouteCase{"shorten_too_little_room_defers",
                  S,
                  mon(7, 55),
                  120,
                  {},
                  "alice",
                  false,
                  mon(20),
                  {},
                  "gpu",
                  "deferred to Mon 20:00 UTC"},
        RouteCase{"overrun_warn",
                  W,
                  mon(21),
                  720,
                  {},
                  "alice",
                  false,
                  {},
                  {},
                  "gpu",
                  "may run into the peak window starting Tue 08:00 UTC"},
        RouteCase{"overrun_reject", R, mon(21), 720, {}, "alice", true, {}, {}, {}, ""},
        RouteCase{"no_limit_defer_warns", D, mon(21), {}, {}, "alice", false, {}, {}, "gpu", "has no time limit"},
        RouteCase{"no_limit_shorten_sets_limit",
                  S,
                  mon(21),
                  {},
                  {},
                  "alice",
                  false,
                  {},
                  660,
                  "gpu,spare",
                  "time limit set to 11h"},
        RouteCase{"no_limit_reject", R, mon(21), {}, {}, "alice", true, {}, {}, {}, ""},
        RouteCase{"exempt_user_not_deferred", D, mon(9), 120, {}, "oncall", false, {}, {}, "gpu", ""},
        RouteCase{"user_begin_inside_window",
                  D,
                  mon(21),
                  60,
                  tue(10),
                  "alice",
                  false,
                  tue(20),
                  {},
                  "gpu",
                  "deferred to Tue 20:00 UTC"},
        RouteCase{"user_begin_outside_window_kept", D, mon(9), 60, tue(21), "alice", false, {}, {}, "gpu,spare", ""},
        RouteCase{"longer_than_any_gap",
                  D,
                  mon(9),
                  1000,
                  {},
                  "alice",
                  false,
                  mon(20),
                  {},
                  "gpu",
                  "longer than any gap between avoided windows"},
        RouteCase{"ends_exactly_at_window_start", D, mon(18) + 2h, 720, {}, "alice", false, {}, {}, "gpu,spare", ""}),
    [](const ::testing::TestParamInfo<RouteCase>& info) { return std::string(info.param.name); });

TEST(Router, RejectMessageNamesRuleAndRoom) {
    auto windows = peak_windows();
    JobView job;
    job.user = "alice";
    job.time_limit_minutes = 720;
    Route r = route_job(training(R), job, mon(21), windows);
    ASSERT_TRUE(r.reject);
    EXPECT_NE(r.reject_message.find("window_overrun = reject"), std::string::npos) << r.reject_message;
    EXPECT_NE(r.reject_message.find("--time=660"), std::string::npos) << r.reject_message;
    EXPECT_EQ(r.reject_message.rfind("lanes: ", 0), 0u);
}

TEST(Router, StaticRoutingFromClass) {
    test::FixedWindows none;
    ClassConfig c;
    c.name = "inference";
    c.partitions = {"infer", "gpu"};
    c.qos = "high";
    c.features = {"nvlink", "ib"};
    c.nice = -10;
    JobView job;
    Route r = route_job(c, job, mon(9), none);
    EXPECT_FALSE(r.reject);
    EXPECT_EQ(r.partition, "infer,gpu");
    EXPECT_EQ(r.qos, "high");
    EXPECT_EQ(r.features, "nvlink&ib");
    EXPECT_EQ(r.nice, -10);
    EXPECT_FALSE(r.begin_time);
    EXPECT_FALSE(r.time_limit_minutes);
    EXPECT_TRUE(r.user_messages.empty());
}

TEST(Router, EmptyClassLeavesJobAlone) {
    test::FixedWindows none;
    ClassConfig c;
    c.name = "plain";
    JobView job;
    job.partition = "mine";
    Route r = route_job(c, job, mon(9), none);
    EXPECT_FALSE(r.partition);
    EXPECT_FALSE(r.qos);
    EXPECT_FALSE(r.features);
    EXPECT_FALSE(r.nice);
}

TEST(Router, BorrowingWithoutClassPartitionsExtendsJobPartition) {
    test::FixedWindows none;
    ClassConfig c;
    c.name = "batch";
    c.borrow_partitions = {"spare", "mine"};
    JobView job;
    job.partition = "mine";
    job.time_limit_minutes = 30;
    Route r = route_job(c, job, mon(9), none);
    EXPECT_EQ(r.partition, "mine,spare");
}

TEST(Router, NoBorrowingInsideWindowForExemptUsers) {
    auto windows = peak_windows();
    JobView job;
    job.user = "oncall";
    job.time_limit_minutes = 30;
    Route r = route_job(training(D), job, mon(9), windows);
    EXPECT_EQ(r.partition, "gpu");
    EXPECT_FALSE(r.begin_time);
}

TEST(Router, ExemptAccountWildcard) {
    auto windows = peak_windows();
    ClassConfig c = training(D);
    c.exempt_accounts = {"*"};
    JobView job;
    job.user = "alice";
    job.account = "anything";
    job.time_limit_minutes = 30;
    EXPECT_FALSE(route_job(c, job, mon(9), windows).begin_time);
}

TEST(Router, PolicyOverridesFeedTheWindowChecks) {
    auto windows = peak_windows();
    JobView job;
    job.user = "alice";
    job.time_limit_minutes = 60;
    RouteOptions o;
    o.time_limit_minutes = 720;  // from the policy: now it would overrun
    Route r = route_job(training(S), job, mon(21), windows, o);
    EXPECT_EQ(r.time_limit_minutes, 660u);
    RouteOptions b;
    b.begin_time = tue(9);  // inside peak: deferred to its end
    Route r2 = route_job(training(D), job, mon(21), windows, b);
    EXPECT_EQ(r2.begin_time, tue(20));
    RouteOptions k;
    k.begin_time = tue(21);  // outside: kept as the policy asked
    Route r3 = route_job(training(D), job, mon(21), windows, k);
    EXPECT_EQ(r3.begin_time, tue(21));
}

TEST(Router, UnknownWindowIsIgnoredWithReason) {
    test::FixedWindows none;
    ClassConfig c = training(D);
    c.avoid_windows = {"nosuch"};
    JobView job;
    job.time_limit_minutes = 60;
    Route r = route_job(c, job, mon(9), none);
    EXPECT_FALSE(r.begin_time);
    ASSERT_FALSE(r.reasons.empty());
    EXPECT_NE(r.reasons.front().find("nosuch"), std::string::npos);
}

TEST(Router, AdjacentWindowsAreBothSkipped) {
    test::FixedWindows w;
    w.add("a", mon(8), mon(12));
    w.add("b", mon(12), mon(14));
    ClassConfig c;
    c.name = "training";
    c.avoid_windows = {"a", "b"};
    JobView job;
    job.time_limit_minutes = 60;
    Route r = route_job(c, job, mon(9), w);
    EXPECT_EQ(r.begin_time, mon(14));
    ASSERT_FALSE(r.user_messages.empty());
    EXPECT_NE(r.user_messages.front().find("(b window)"), std::string::npos) << r.user_messages.front();
}

TEST(Router, DeterministicGivenNow) {
    auto windows = peak_windows();
    JobView job;
    job.user = "alice";
    job.time_limit_minutes = 720;
    Route a = route_job(training(D), job, mon(21), windows);
    Route b = route_job(training(D), job, mon(21), windows);
    EXPECT_EQ(a.begin_time, b.begin_time);
    EXPECT_EQ(a.user_messages, b.user_messages);
    EXPECT_EQ(a.reasons, b.reasons);
}

struct DurationCase {
    const char* text;
    bool ok;
    std::optional<uint32_t> minutes;
};

TEST(Router, ParseSlurmDuration) {
    const DurationCase cases[] = {
        {"90", true, 90u},
        {"1:30", true, 2u},
        {"0:30", true, 1u},
        {"1:00:00", true, 60u},
        {"1-0", true, 1440u},
        {"1-00:00:00", true, 1440u},
        {"2-12:30", true, 3630u},
        {"0-0:0:1", true, 1u},
        {"UNLIMITED", true, std::nullopt},
        {"", false, std::nullopt},
        {"a", false, std::nullopt},
        {"1:2:3:4", false, std::nullopt},
        {"-5", false, std::nullopt},
        {"1-", false, std::nullopt},
        {"1:", false, std::nullopt},
        {"1.5", false, std::nullopt},
    };
    for (const auto& c : cases) {
        auto r = parse_slurm_duration(c.text);
        EXPECT_EQ(r.has_value(), c.ok) << c.text;
        if (r && c.ok) {
            EXPECT_EQ(*r, c.minutes) << c.text;
        }
        if (!r) {
            EXPECT_NE(r.error().message.find("invalid time limit"), std::string::npos);
        }
    }
}

// #11.9: a user's new time limit for a pending job, against its class's windows.
struct LimitChangeCase {
    const char* name;
    OverrunAction overrun;
    SysSeconds now;
    std::optional<uint32_t> old_limit;
    std::optional<uint32_t> new_limit;
    const char* partition;            // the job's partitions as they are now
    std::optional<SysSeconds> begin;  // its begin time now
    const char* user;
    const char* refused_contains;  // "" = accepted
};
void PrintTo(const LimitChangeCase& c, std::ostream* os) { *os << c.name; }
class TimeLimitChange : public ::testing::TestWithParam<LimitChangeCase> {};

TEST_P(TimeLimitChange, Checks) {
    const auto& c = GetParam();
    auto windows = peak_windows();
    JobView job;
    job.user = c.user;
    job.account = "ml";
    job.partition = c.partition;
    job.time_limit_minutes = c.old_limit;
    job.begin_time = c.begin;
    auto refused = check_time_limit_change(training(c.overrun), job, c.new_limit, c.now, windows);
    if (std::string(c.refused_contains).empty()) {
        EXPECT_FALSE(refused) << *refused;
    } else {
        ASSERT_TRUE(refused);
        EXPECT_NE(refused->find(c.refused_contains), std::string::npos) << *refused;
        EXPECT_EQ(refused->rfind("lanes: ", 0), 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Router, TimeLimitChange,
    ::testing::Values(
        // Monday 21:00, next peak Tuesday 08:00 (11h of room).
        LimitChangeCase{"borrowing_job_raised_into_peak",
                        W,
                        mon(21),
                        60,
                        720,
                        "gpu,spare",
                        {},
                        "alice",
                        "may use partition spare only because it ends before the next avoided window; at most 11h"},
        LimitChangeCase{"borrowing_job_raised_within_room", W, mon(21), 60, 600, "gpu,spare", {}, "alice", ""},
        LimitChangeCase{"borrowing_job_to_unlimited",
                        W,
                        mon(21),
                        60,
                        {},
                        "gpu,spare",
                        {},
                        "alice",
                        "cannot be raised to UNLIMITED"},
        LimitChangeCase{"shortening_always_fine", D, mon(21), 720, 60, "gpu,spare", {}, "alice", ""},
        LimitChangeCase{"from_unlimited_to_finite_is_shorter", D, mon(21), {}, 60, "gpu", {}, "alice", ""},
        LimitChangeCase{"defer_class_raised_into_peak",
                        D,
                        mon(21),
                        60,
                        720,
                        "gpu",
                        {},
                        "alice",
                        "would have to be deferred to Tue 20:00 UTC"},
        LimitChangeCase{
            "shorten_class_raised_into_peak", S, mon(21), 60, 720, "gpu", {}, "alice", "shortens such jobs"},
        LimitChangeCase{"reject_class_raised_into_peak", R, mon(21), 60, 720, "gpu", {}, "alice", "rejects such jobs"},
        LimitChangeCase{"warn_class_own_partition_may_overrun", W, mon(21), 60, 720, "gpu", {}, "alice", ""},
        // Deferred by Lanes to Monday 20:00 while it was peak; checked from its begin time.
        LimitChangeCase{"deferred_job_raised_within_gap", D, mon(9), 60, 600, "gpu", mon(20), "alice", ""},
        LimitChangeCase{"begin_later_raised_past_next_peak", D, mon(9), 60, 660, "gpu", mon(22), "alice",
                        "at most 10h ends before the peak window"},
        // Longer than every gap: Lanes accepts such a job at submit (warning), so here too.
        LimitChangeCase{"longer_than_any_gap_as_at_submit", D, mon(9), 60, 900, "gpu", mon(20), "alice", ""},
        LimitChangeCase{"exempt_user", D, mon(21), 60, 720, "gpu,spare", {}, "oncall", ""}),
    [](const ::testing::TestParamInfo<LimitChangeCase>& info) { return std::string(info.param.name); });

TEST(Router, FormatMinutes) {
    EXPECT_EQ(format_minutes(0), "0m");
    EXPECT_EQ(format_minutes(45), "45m");
    EXPECT_EQ(format_minutes(192), "3h12m");
    EXPECT_EQ(format_minutes(660), "11h");
    EXPECT_EQ(format_minutes(2880), "2d");
    EXPECT_EQ(format_minutes(1501), "1d1h1m");
}

}  // namespace
}  // namespace lanes
