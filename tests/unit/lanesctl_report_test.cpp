// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl check and windows: diagnostics splitting, calendar across a DST change,
// exceptions, reservation commands, human and JSON output.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "ctld/windows_config.hpp"
#include "lanesctl/check_report.hpp"
#include "lanesctl/json.hpp"
#include "lanesctl/windows_report.hpp"
#include "tests/unit/test_util.hpp"

namespace {

using lanes::test::contains;
using lanes::test::utc;

using namespace std::chrono;
using lanes::SysSeconds;

TEST(LanesctlCheck, ParsesDiagnostics) {
    auto ds = lanes::ctl::parse_diagnostics(
        "/etc/slurm/lanes.toml:12:3: classes.training.rate: '25Gbps' is ambiguous\n"
        "/etc/slurm/policy.lua:7: attempt to index a nil value\n"
        "something without a place");
    ASSERT_EQ(ds.size(), 3u);
    EXPECT_EQ(ds[0].file, "/etc/slurm/lanes.toml");
    EXPECT_EQ(ds[0].line, 12);
    EXPECT_EQ(ds[0].column, 3);
    EXPECT_EQ(ds[0].message, "classes.training.rate: '25Gbps' is ambiguous");
    EXPECT_EQ(ds[1].file, "/etc/slurm/policy.lua");
    EXPECT_EQ(ds[1].line, 7);
    EXPECT_EQ(ds[1].column, 0);
    EXPECT_EQ(ds[1].message, "attempt to index a nil value");
    EXPECT_EQ(ds[2].file, "");
    EXPECT_EQ(ds[2].line, 0);
    EXPECT_EQ(ds[2].message, "something without a place");
}

// lanes.toml errors arrive structured from the library: lanesctl uses the fields
// as they are instead of parsing "file:line:col:" back out of the text.
TEST(LanesctlCheck, ConfigErrorsAreStructured) {
    auto config = lanes::parse_controller_config("default_class = \"x\"\n[classes.x]\nrat = \"1Gbit\"\n",
                                                 "/etc/slurm/lanes.toml");
    ASSERT_FALSE(config);
    const auto& e = config.error();
    ASSERT_FALSE(e.diagnostics.empty()) << e.message;
    auto it = std::find_if(e.diagnostics.begin(), e.diagnostics.end(),
                           [](const lanes::Diagnostic& x) { return x.key == "classes.x.rat"; });
    ASSERT_NE(it, e.diagnostics.end()) << e.message;
    const auto& d = *it;
    EXPECT_EQ(d.file, "/etc/slurm/lanes.toml");
    EXPECT_EQ(d.line, 3);
    EXPECT_EQ(d.column, 1);
    EXPECT_EQ(d.key, "classes.x.rat");
    EXPECT_EQ(d.message.rfind("unknown key", 0), 0u) << d.message;
    EXPECT_NE(e.message.find(d.text()), std::string::npos);
    auto shown = lanes::ctl::diagnostics_of(e);
    ASSERT_EQ(shown.size(), e.diagnostics.size());
    const size_t i = static_cast<size_t>(it - e.diagnostics.begin());
    EXPECT_EQ(shown[i].key, "classes.x.rat");
    EXPECT_EQ(shown[i].message, d.message);
    EXPECT_EQ(shown[i].text, "/etc/slurm/lanes.toml:3:1: classes.x.rat: " + d.message);
    lanes::ctl::CheckReport report;
    report.config_path = "lanes.toml";
    report.errors = shown;
    auto json = lanes::json::write(lanes::ctl::check_json(report));
    EXPECT_NE(json.find(R"("line":3,"column":1,"key":"classes.x.rat","message":"unknown key)"), std::string::npos)
        << json;

    auto syntax = lanes::parse_controller_config("[classes\n", "l.toml");
    ASSERT_FALSE(syntax);
    ASSERT_EQ(syntax.error().diagnostics.size(), 1u);
    EXPECT_EQ(syntax.error().diagnostics[0].line, 1);
    EXPECT_EQ(syntax.error().diagnostics[0].message.rfind("syntax error: ", 0), 0u);
    // Errors without a place (the policy's Lua messages) are still split from text.
    auto lua = lanes::ctl::diagnostics_of(lanes::Error{"/etc/slurm/p.lua:7: attempt to index a nil value", {}});
    ASSERT_EQ(lua.size(), 1u);
    EXPECT_EQ(lua[0].line, 7);
    EXPECT_EQ(lua[0].key, "");
}

TEST(LanesctlCheck, HumanAndJson) {
    lanes::ctl::CheckReport bad;
    bad.config_path = "lanes.toml";
    bad.errors = lanes::ctl::parse_diagnostics("lanes.toml:4:1: classes.x: unknown key 'rat'");
    EXPECT_EQ(lanes::ctl::format_check_human(bad), "lanes.toml:4:1: classes.x: unknown key 'rat'\n");
    EXPECT_EQ(lanes::json::write(lanes::ctl::check_json(bad)),
              R"({"config":"lanes.toml","ok":false,"errors":[{"file":"lanes.toml","line":4,"column":1,"key":null,)"
              R"("message":"classes.x: unknown key 'rat'","text":"lanes.toml:4:1: classes.x: unknown key 'rat'"}],)"
              R"("warnings":[]})");

    lanes::ctl::CheckReport good;
    good.config_path = "lanes.toml";
    good.ok = true;
    good.classes = {"inference", "training"};
    good.default_class = "training";
    good.windows = {"peak"};
    good.policy = "/etc/slurm/lanes/policy.lua";
    EXPECT_EQ(lanes::ctl::format_check_human(good),
              "lanes.toml: OK: 2 classes (inference, training), default training, 1 windows, "
              "policy /etc/slurm/lanes/policy.lua\n");
    EXPECT_EQ(lanes::json::write(lanes::ctl::check_json(good)),
              R"({"config":"lanes.toml","ok":true,"errors":[],"warnings":[],)"
              R"("policy":"/etc/slurm/lanes/policy.lua","default_class":"training",)"
              R"("classes":["inference","training"],"windows":["peak"],"rules":0,"signal_windows":[],"paths":[]})");
}

TEST(LanesctlReport, CheckSaysWhatASignalWindowDoesWhileItsSignalIsUnknown) {
    auto cfg = lanes::parse_controller_config(R"(
default_class = "training"
[signals.p99]
url = "http://127.0.0.1:9090/"
query = 'up'
[signals.load]
url = "http://127.0.0.1:9090/"
query = 'up'
fallback = 7
[windows.peak]
signal = "p99"
above = 0.25
[windows.calm]
signal = "p99"
above = 0.25
when_unknown = "idle"
[windows.loaded]
signal = "load"
above = 10
[classes.training]
)",
                                              "lanes.toml");
    ASSERT_TRUE(cfg) << cfg.error().message;
    lanes::ctl::CheckReport report;
    report.config_path = "lanes.toml";
    report.ok = true;
    lanes::ctl::summarize(*cfg, report);
    std::string text = lanes::ctl::format_check_human(report);
    EXPECT_NE(text.find("window peak follows signal p99; while p99 is unknown (API down, stale, or a garbage "
                        "answer): busy (the default: protects inference)\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("window calm follows signal p99; while p99 is unknown (API down, stale, or a garbage "
                        "answer): idle (when_unknown = \"idle\")\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("window loaded follows signal load; while load is unknown (API down, stale, or a garbage "
                        "answer): its fallback 7 is used instead"),
              std::string::npos)
        << text;
    std::string json = lanes::json::write(lanes::ctl::check_json(report));
    EXPECT_NE(json.find(R"({"name":"peak","signal":"p99","when_unknown":"busy","when_unknown_default":true,)"
                        R"("fallback":null,)"),
              std::string::npos)
        << json;
}

// A config with a Berlin peak window (Mon-Fri 08:00-20:00), a night window crossing
// midnight, and the training class avoiding peak while borrowing "inference".
lanes::Config windows_config() {
    lanes::Config config;
    config.path = "lanes.toml";
    auto berlin = lanes::TimeZone::load("Europe/Berlin");
    EXPECT_TRUE(berlin);
    auto windows = std::make_shared<lanes::WindowSet>();
    lanes::Window peak;
    peak.name = "peak";
    peak.zone = *berlin;
    peak.days = *lanes::parse_days({"mon-fri"});
    peak.start = hours{8};
    peak.end = hours{20};
    peak.exceptions.push_back(*lanes::parse_date_range("2026-03-31"));
    windows->add(peak);
    lanes::Window night;
    night.name = "night";
    night.zone = *berlin;
    night.days = *lanes::parse_days({"sat"});
    night.start = hours{22};
    night.end = hours{6};
    windows->add(night);
    config.windows = windows;
    lanes::ClassConfig training;
    training.name = "training";
    training.avoid_windows = {"peak"};
    training.borrow_partitions = {"inference"};
    config.classes["training"] = training;
    lanes::ClassConfig inference;
    inference.name = "inference";
    config.classes["inference"] = inference;
    return config;
}

// 2026-03-29 (Sunday) 02:00 CET -> 03:00 CEST.
TEST(LanesctlWindows, CalendarAcrossDstChange) {
    auto config = windows_config();
    auto report = lanes::ctl::build_windows_report(config, utc(2026, 3, 27, 0), 5, {}, std::nullopt);
    ASSERT_TRUE(report) << report.error().message;
    ASSERT_EQ(report->windows.size(), 2u);
    const auto& night = report->windows[0];
    EXPECT_EQ(night.name, "night");
    // Sat 22:00 CET -> Sun 06:00 CEST: 7 hours, not 8.
    ASSERT_EQ(night.occurrences.size(), 1u);
    EXPECT_EQ(night.occurrences[0].begin, utc(2026, 3, 28, 21));
    EXPECT_EQ(night.occurrences[0].end, utc(2026, 3, 29, 4));
    const auto& peak = report->windows[1];
    EXPECT_EQ(peak.avoided_by, (std::vector<std::string>{"training"}));
    // Fri 27 (CET), Mon 30 (CEST); Tue 31 is an exception.
    ASSERT_EQ(peak.occurrences.size(), 2u);
    EXPECT_EQ(peak.occurrences[0].begin, utc(2026, 3, 27, 7));
    EXPECT_EQ(peak.occurrences[1].begin, utc(2026, 3, 30, 6));
    ASSERT_EQ(peak.exceptions.size(), 1u);

    const std::string text = lanes::ctl::format_windows_human(*report);
    EXPECT_TRUE(contains(text, "Windows from 2026-03-27 00:00 UTC to 2026-04-01 00:00 UTC\n")) << text;
    EXPECT_TRUE(contains(text, "night (Europe/Berlin): sat 22:00-06:00\n")) << text;
    EXPECT_TRUE(contains(text, "  Sat 2026-03-28 22:00 CET -> Sun 2026-03-29 06:00 CEST")) << text;
    EXPECT_TRUE(contains(text, "  7h  (DST change)\n")) << text;
    EXPECT_TRUE(contains(text, "peak (Europe/Berlin): mon,tue,wed,thu,fri 08:00-20:00; avoided by training\n")) << text;
    EXPECT_TRUE(contains(text, "  Fri 2026-03-27 08:00 CET -> Fri 2026-03-27 20:00 CET")) << text;
    EXPECT_TRUE(contains(text, "  Mon 2026-03-30 08:00 CEST -> Mon 2026-03-30 20:00 CEST")) << text;
    EXPECT_TRUE(contains(text, "  exception 2026-03-31 (no occurrence)\n")) << text;

    const std::string json = lanes::json::write(lanes::ctl::windows_json(*report));
    EXPECT_TRUE(contains(json, R"("from":"2026-03-27T00:00:00Z","to":"2026-04-01T00:00:00Z")")) << json;
    EXPECT_TRUE(contains(json, R"({"begin":"2026-03-28T22:00:00+01:00","end":"2026-03-29T06:00:00+02:00",)"
                               R"("begin_utc":"2026-03-28T21:00:00Z","end_utc":"2026-03-29T04:00:00Z",)"
                               R"("begin_abbrev":"CET","end_abbrev":"CEST","minutes":420})"))
        << json;
    EXPECT_TRUE(contains(json, R"("exceptions":[{"first":"2026-03-31","last":"2026-03-31","add":false}])")) << json;
    EXPECT_FALSE(contains(json, "reservations"));

    const std::string parsable = lanes::ctl::format_windows_parsable(*report, true);
    EXPECT_EQ(parsable,
              "WINDOW|ZONE|BEGIN|END|MINUTES|DST\n"
              "night|Europe/Berlin|2026-03-28T22:00:00+01:00|2026-03-29T06:00:00+02:00|420|yes\n"
              "peak|Europe/Berlin|2026-03-27T08:00:00+01:00|2026-03-27T20:00:00+01:00|720|no\n"
              "peak|Europe/Berlin|2026-03-30T08:00:00+02:00|2026-03-30T20:00:00+02:00|720|no\n");
    EXPECT_EQ(lanes::ctl::format_windows_parsable(*report, false).rfind("night|", 0), 0u);
}

TEST(LanesctlWindows, UnknownWindowName) {
    auto config = windows_config();
    auto report = lanes::ctl::build_windows_report(config, utc(2026, 3, 27), 5, {"offpeak"}, std::nullopt);
    ASSERT_FALSE(report);
    EXPECT_EQ(report.error().message, "window 'offpeak' is not defined in lanes.toml ([windows])");
}

TEST(LanesctlWindows, ReservationsOnBorrowedPartition) {
    auto config = windows_config();
    lanes::ctl::ReservationRequest request{"", "serving,ml", ""};
    // From the middle of Friday's occurrence: the first reservation starts at --from
    // and keeps the name of the occurrence (08:00), so a later run finds it.
    auto report = lanes::ctl::build_windows_report(config, utc(2026, 3, 27, 10), 4, {}, request);
    ASSERT_TRUE(report) << report.error().message;
    ASSERT_EQ(report->reservations.size(), 2u);
    EXPECT_EQ(report->reservations[0].command,
              "TZ=Europe/Berlin scontrol create reservation ReservationName=lanes_peak_20260327_0800 "
              "StartTime=2026-03-27T11:00:00 Duration=540 PartitionName=inference Nodes=ALL "
              "Flags=IGNORE_JOBS,MAGNETIC,PART_NODES Accounts=serving,ml");
    EXPECT_EQ(report->reservations[1].command,
              "TZ=Europe/Berlin scontrol create reservation ReservationName=lanes_peak_20260330_0800 "
              "StartTime=2026-03-30T08:00:00 Duration=720 PartitionName=inference Nodes=ALL "
              "Flags=IGNORE_JOBS,MAGNETIC,PART_NODES Accounts=serving,ml");
    const std::string text = lanes::ctl::format_windows_human(*report);
    // A shell script: every line is a comment or a command.
    size_t start = 0;
    while (start < text.size()) {
        size_t nl = text.find('\n', start);
        std::string line = text.substr(start, nl - start);
        EXPECT_TRUE(line.starts_with("#") || line.starts_with("TZ=")) << line;
        start = nl + 1;
    }
    EXPECT_TRUE(contains(text, "# peak: Mon 2026-03-30 08:00 CEST .. Mon 2026-03-30 20:00 CEST\n")) << text;
    const std::string json = lanes::json::write(lanes::ctl::windows_json(*report));
    EXPECT_TRUE(contains(json, R"("reservations":[{"window":"peak","name":"lanes_peak_20260327_0800",)"
                               R"("zone":"Europe/Berlin","start":"2026-03-27T10:00:00Z","end":"2026-03-27T19:00:00Z",)"
                               R"("minutes":540,"nodes":null,"partition":"inference","command":"TZ=)"))
        << json;
}

TEST(LanesctlWindows, ReservationsOnGivenNodesAreShellQuoted) {
    auto config = windows_config();
    lanes::ctl::ReservationRequest request{"inf[1-4]", "", "alice"};
    auto report = lanes::ctl::build_windows_report(config, utc(2026, 3, 30), 1, {"night"}, request);
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_TRUE(report->reservations.empty());  // no Saturday in range
    report = lanes::ctl::build_windows_report(config, utc(2026, 3, 30), 1, {"peak"}, request);
    ASSERT_TRUE(report);
    ASSERT_EQ(report->reservations.size(), 1u);
    EXPECT_EQ(report->reservations[0].command,
              "TZ=Europe/Berlin scontrol create reservation ReservationName=lanes_peak_20260330_0800 "
              "StartTime=2026-03-30T08:00:00 Duration=720 Nodes='inf[1-4]' Flags=IGNORE_JOBS,MAGNETIC Users=alice");
}

TEST(LanesctlWindows, ReservationsNeedNodes) {
    auto config = windows_config();
    config.classes["training"].borrow_partitions.clear();
    auto report =
        lanes::ctl::build_windows_report(config, utc(2026, 3, 30), 1, {}, lanes::ctl::ReservationRequest{"", "a", ""});
    ASSERT_FALSE(report);
    EXPECT_TRUE(contains(report.error().message, "window 'peak': no class borrows a partition"))
        << report.error().message;
    config.classes["training"].avoid_windows.clear();
    report = lanes::ctl::build_windows_report(config, utc(2026, 3, 30), 1, {},
                                              lanes::ctl::ReservationRequest{"n1", "a", ""});
    ASSERT_FALSE(report);
    EXPECT_TRUE(contains(report.error().message, "no class avoids a window")) << report.error().message;
}

}  // namespace
