// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl command line: accepted forms, refused forms (and that the message names
// the option), config path resolution, --at/--from time parsing.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lanesctl/args.hpp"
#include "lanesctl/time_spec.hpp"
#include "tests/unit/test_util.hpp"

namespace {

using lanes::test::utc;
using lanes::test::zone;

using lanes::ctl::Command;
using lanes::ctl::Options;
using lanes::ctl::parse_args;

Options ok(const std::vector<std::string>& args) {
    auto parsed = parse_args(args);
    EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error().message);
    return parsed ? *parsed : Options{};
}

std::string error_of(const std::vector<std::string>& args) {
    auto parsed = parse_args(args);
    EXPECT_FALSE(parsed) << "accepted";
    return parsed ? std::string() : parsed.error().message;
}

TEST(LanesctlArgs, Rate) {
    auto r = ok({"rate", "200Mbit", "40%"});
    EXPECT_EQ(r.command, Command::Rate);
    EXPECT_EQ(r.rates, (std::vector<std::string>{"200Mbit", "40%"}));
    EXPECT_EQ(error_of({"rate"}), "'rate' needs a RATE");
    EXPECT_EQ(error_of({"--json", "rate", "1Gbit"}), "option '--json' is not valid for 'rate'");
}

TEST(LanesctlArgs, Subcommands) {
    EXPECT_EQ(ok({"check"}).command, Command::Check);
    EXPECT_EQ(ok({"windows"}).command, Command::Windows);
    EXPECT_EQ(ok({"status"}).command, Command::Status);
    EXPECT_EQ(ok({"gc"}).command, Command::Gc);
    EXPECT_EQ(ok({"reapply"}).command, Command::Reapply);
    auto r = ok({"reapply", "--node", "n1", "--dry-run"});
    EXPECT_EQ(r.command, Command::Reapply);
    EXPECT_TRUE(r.dry_run);
    EXPECT_EQ(r.node, "n1");
    EXPECT_FALSE(lanes::ctl::parse_args({"reapply", "--all"}));
    EXPECT_FALSE(lanes::ctl::parse_args({"reapply", "extra"}));
    // reconcile: the timer's name for it (NodeShaper::converge).
    auto rc = ok({"reconcile", "--node", "n1", "--dry-run"});
    EXPECT_EQ(rc.command, Command::Reapply);
    EXPECT_TRUE(rc.dry_run);
    EXPECT_EQ(ok({"help", "reconcile"}).command, Command::Reapply);
    auto o = ok({"policy", "test", "a.json", "b.json"});
    EXPECT_EQ(o.command, Command::PolicyTest);
    EXPECT_EQ(o.job_files, (std::vector<std::string>{"a.json", "b.json"}));
}

TEST(LanesctlArgs, GlobalOptionsBeforeAndAfterSubcommand) {
    auto a = ok({"--config", "/x/lanes.toml", "--json", "check"});
    EXPECT_EQ(a.config, "/x/lanes.toml");
    EXPECT_TRUE(a.json);
    auto b = ok({"check", "--config=/y.toml", "--json"});
    EXPECT_EQ(b.config, "/y.toml");
    EXPECT_TRUE(b.json);  // --node is global too (lanesctl(8)), used by status and gc.
    EXPECT_EQ(ok({"--node", "n7", "status"}).node, "n7");
    EXPECT_EQ(ok({"--node=n8", "gc", "--dry-run"}).node, "n8");
    EXPECT_EQ(ok({"check", "--node", "n9"}).node, "n9");  // check --node: the node's setup
}

TEST(LanesctlArgs, SubcommandOptions) {
    auto w = ok({"windows", "--from", "2026-03-27 00:00 UTC", "--days", "7", "--window", "peak", "--window", "night"});
    EXPECT_EQ(w.from, "2026-03-27 00:00 UTC");
    EXPECT_EQ(w.days, 7);
    EXPECT_EQ(w.window_names, (std::vector<std::string>{"peak", "night"}));
    EXPECT_FALSE(w.reservations);

    auto r = ok({"windows", "--reservations", "inf[1-4]", "--reservation-accounts", "serving"});
    EXPECT_TRUE(r.reservations);
    EXPECT_EQ(r.reservation_nodes, "inf[1-4]");
    EXPECT_EQ(r.reservation_accounts, "serving");
    auto r2 = ok({"windows", "--reservations", "--reservation-users=alice,bob"});
    EXPECT_TRUE(r2.reservations);
    EXPECT_EQ(r2.reservation_nodes, "");
    EXPECT_EQ(r2.reservation_users, "alice,bob");
    EXPECT_EQ(ok({"windows", "--reservations=n[1-2]", "--reservation-users", "x"}).reservation_nodes, "n[1-2]");
    EXPECT_FALSE(r2.apply);
    EXPECT_TRUE(ok({"windows", "--reservations", "--reservation-users", "x", "--apply"}).apply);

    auto p = ok({"policy", "test", "--job", "17", "--job=18", "--at", "2026-12-01 09:00", "--admin"});
    EXPECT_EQ(p.job_ids, (std::vector<uint32_t>{17, 18}));
    EXPECT_EQ(p.at, "2026-12-01 09:00");
    EXPECT_TRUE(p.as_admin);
    EXPECT_EQ(ok({"policy", "test", "--fixtures", "dir"}).fixtures_dir, "dir");

    auto s = ok({"status", "--node", "n1", "--prometheus", "/var/lib/x.prom"});
    EXPECT_EQ(s.node, "n1");
    EXPECT_EQ(s.prometheus_file, "/var/lib/x.prom");
    auto g = ok({"gc", "--dry-run", "--all"});
    EXPECT_TRUE(g.dry_run);
    EXPECT_TRUE(g.all);
    // After "--" a word starting with '-' is a file.
    EXPECT_EQ(ok({"policy", "test", "--", "-odd.json"}).job_files, (std::vector<std::string>{"-odd.json"}));
}

TEST(LanesctlArgs, TablesForScripts) {
    auto s = ok({"status", "--noheader", "--parsable"});
    EXPECT_TRUE(s.noheader);
    EXPECT_TRUE(s.parsable);
    auto w = ok({"windows", "--parsable"});
    EXPECT_TRUE(w.parsable);
    EXPECT_FALSE(w.noheader);
    EXPECT_FALSE(ok({"status"}).parsable);
}

TEST(LanesctlArgs, HelpAndVersion) {
    EXPECT_TRUE(ok({"--help"}).help);
    EXPECT_TRUE(ok({"-h"}).help);
    EXPECT_TRUE(ok({"--version"}).version);
    auto h = ok({"windows", "--help"});
    EXPECT_TRUE(h.help);
    EXPECT_EQ(h.command, Command::Windows);
    auto h2 = ok({"help", "policy", "test"});
    EXPECT_TRUE(h2.help);
    EXPECT_EQ(h2.command, Command::PolicyTest);
    // Help needs no mode options.
    EXPECT_TRUE(ok({"policy", "test", "--help"}).help);
    for (auto c : {Command::None, Command::Check, Command::PolicyTest, Command::Windows, Command::Status, Command::Gc,
                   Command::Reapply})
        EXPECT_NE(lanes::ctl::usage_text(c).find("usage: lanesctl"), std::string::npos);
}

// Every refusal names what is wrong.
TEST(LanesctlArgs, UsageErrorsNameTheOption) {
    struct Case {
        std::vector<std::string> args;
        std::string expect;
    };
    const std::vector<Case> cases = {
        {{}, "no subcommand"},
        {{"frobnicate"}, "unknown subcommand 'frobnicate'"},
        {{"policy"}, "'policy test'"},
        {{"policy", "run"}, "unknown subcommand 'policy run'"},
        {{"windows", "--frm", "x"}, "unknown option '--frm' for 'windows'"},
        {{"check", "--days", "3"}, "option '--days' is not valid for 'check'"},
        {{"--days", "3", "windows"}, "option '--days' is not valid before the subcommand"},
        {{"--node", "n1", "windows"}, "option '--node' is not valid for 'windows'"},
        {{"windows", "--days", "0"}, "--days: '0' is not a number of days"},
        {{"windows", "--days", "x"}, "--days: 'x'"},
        {{"windows", "--days"}, "option '--days' needs a value"},
        {{"check", "--json=yes"}, "option '--json' takes no value"},
        {{"check", "--config", "a", "--config", "b"}, "option '--config' given twice"},
        {{"check", "extra"}, "unexpected argument 'extra' for 'check'"},
        {{"check", "-x"}, "unknown option '-x'"},
        {{"policy", "test"}, "needs JOB.json files, --job ID or --fixtures DIR"},
        {{"policy", "test", "a.json", "--job", "3"}, "not several"},
        {{"policy", "test", "--job", "abc"}, "--job: 'abc' is not a job id"},
        {{"policy", "test", "--job", "0"}, "--job: '0'"},
        {{"policy", "test", "--fixtures", "d", "--at", "now"}, "'--at' is not valid with '--fixtures'"},
        {{"windows", "--reservations", "n1"}, "'--reservations' needs '--reservation-accounts' or"},
        {{"windows", "--reservation-users", "u"}, "need '--reservations'"},
        {{"windows", "--apply"}, "option '--apply' needs '--reservations'"},
        {{"windows", "--reservations", "--reservation-users", "u", "--apply", "--json"},
         "'--json' is not valid with '--apply'"},
        {{"check", "--apply"}, "option '--apply' is not valid for 'check'"},
        {{"status", "--dry-run"}, "option '--dry-run' is not valid for 'status'"},
        {{"gc", "--prometheus", "f"}, "option '--prometheus' is not valid for 'gc'"},
        {{"check", "--config="}, "--config: the value is empty"},
        {{"status", "--parsable", "--json"}, "option '--parsable' is not valid with '--json'"},
        {{"status", "--noheader", "--json"}, "option '--noheader' is not valid with '--json'"},
        {{"gc", "--parsable"}, "option '--parsable' is not valid for 'gc'"},
        {{"windows", "--noheader"}, "option '--noheader' needs '--parsable' for 'windows'"},
        {{"windows", "--parsable", "--reservations", "--reservation-users", "u"},
         "option '--parsable' is not valid with '--reservations'"},
    };
    for (const auto& c : cases) {
        std::string message = error_of(c.args);
        EXPECT_NE(message.find(c.expect), std::string::npos)
            << "args[0]=" << (c.args.empty() ? "" : c.args[0]) << " got: " << message;
    }
}

TEST(LanesctlArgs, ConfigPathOrder) {
    std::map<std::string, std::string> env;
    auto getenv = [&env](const char* name) -> std::optional<std::string> {
        auto it = env.find(name);
        if (it == env.end()) return std::nullopt;
        return it->second;
    };
    Options o;
    EXPECT_EQ(lanes::ctl::resolve_config_path(o, getenv, "/etc/slurm/lanes.toml"), "/etc/slurm/lanes.toml");
    env["SLURM_CONF"] = "/opt/slurm/etc/slurm.conf";
    EXPECT_EQ(lanes::ctl::resolve_config_path(o, getenv, "/etc/slurm/lanes.toml"), "/opt/slurm/etc/lanes.toml");
    env["LANES_CONFIG"] = "/srv/lanes.toml";
    EXPECT_EQ(lanes::ctl::resolve_config_path(o, getenv, "/etc/slurm/lanes.toml"), "/srv/lanes.toml");
    o.config = "/cli.toml";
    EXPECT_EQ(lanes::ctl::resolve_config_path(o, getenv, "/etc/slurm/lanes.toml"), "/cli.toml");
}

// ---- time specs ------------------------------------------------------------------

using namespace std::chrono;
using lanes::SysSeconds;

lanes::ctl::ZoneLoader loader() {
    return [](const std::string& name) { return lanes::TimeZone::load(name); };
}

TEST(LanesctlTimeSpec, Forms) {
    auto berlin = zone("Europe/Berlin");
    const SysSeconds now = utc(2026, 1, 1, 12);
    struct Case {
        std::string text;
        SysSeconds expect;
    };
    const std::vector<Case> cases = {
        {"now", now},
        {"@1796112000", SysSeconds{seconds{1796112000}}},
        {"2026-12-01", utc(2026, 11, 30, 23)},      // local midnight, CET
        {"2026-12-01 09:00", utc(2026, 12, 1, 8)},  // CET = UTC+1
        {"2026-07-01 09:00", utc(2026, 7, 1, 7)},   // CEST = UTC+2
        {"2026-12-01T09:00:30", utc(2026, 12, 1, 8, 0, 30)},
        {"2026-12-01 09:00 UTC", utc(2026, 12, 1, 9)},
        {"2026-12-01 09:00UTC", utc(2026, 12, 1, 9)},
        {"2026-12-01T09:00Z", utc(2026, 12, 1, 9)},
        {"2026-12-01T09:00+05:30", utc(2026, 12, 1, 3, 30)},
        {"2026-12-01 09:00 -0500", utc(2026, 12, 1, 14)},
        {"2026-12-01 09:00 America/New_York", utc(2026, 12, 1, 14)},
        {"2026-07-01 09:00 America/New_York", utc(2026, 7, 1, 13)},
        // Spring forward in Berlin 2026-03-29 02:00 -> 03:00: 02:30 is in the gap.
        {"2026-03-29 02:30", utc(2026, 3, 29, 1)},
        // Fall back 2026-10-25 03:00 -> 02:00: 02:30 happens twice, the first is meant.
        {"2026-10-25 02:30", utc(2026, 10, 25, 0, 30)},
    };
    for (const auto& c : cases) {
        auto got = lanes::ctl::parse_time_spec(c.text, berlin.get(), now, loader());
        ASSERT_TRUE(got) << c.text << ": " << got.error().message;
        EXPECT_EQ(got->time_since_epoch().count(), c.expect.time_since_epoch().count()) << c.text;
    }
    // Without a machine zone, local means UTC.
    auto plain = lanes::ctl::parse_time_spec("2026-12-01 09:00", nullptr, now, loader());
    ASSERT_TRUE(plain);
    EXPECT_EQ(*plain, utc(2026, 12, 1, 9));
}

TEST(LanesctlTimeSpec, Refusals) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "expected a date"},
        {"tomorrow", "expected a date"},
        {"2026-13-01", "no such date"},
        {"2026-02-30 10:00", "no such date"},
        {"2026-12-01 25:00", "no such time of day"},
        {"2026-12-01 9:00", "expected a time of day"},
        {"2026-12-01 09:00 +25:00", "bad UTC offset"},
        {"2026-12-01 09:00 Mars/Olympus", "unknown time zone 'Mars/Olympus'"},
        {"@12x", "seconds since the epoch"},
    };
    for (const auto& [text, expect] : cases) {
        auto got = lanes::ctl::parse_time_spec(text, nullptr, SysSeconds{}, loader());
        ASSERT_FALSE(got) << text;
        EXPECT_NE(got.error().message.find(expect), std::string::npos) << text << ": " << got.error().message;
        EXPECT_NE(got.error().message.find("'" + text + "' is not a time"), std::string::npos);
    }
}

TEST(LanesctlTimeSpec, Formatting) {
    auto berlin = zone("Europe/Berlin");
    EXPECT_EQ(lanes::ctl::format_iso(utc(2026, 12, 1, 8), berlin.get()), "2026-12-01T09:00:00+01:00");
    EXPECT_EQ(lanes::ctl::format_iso(utc(2026, 7, 1, 7), berlin.get()), "2026-07-01T09:00:00+02:00");
    EXPECT_EQ(lanes::ctl::format_iso(utc(2026, 7, 1, 7), nullptr), "2026-07-01T07:00:00Z");
    EXPECT_EQ(lanes::ctl::format_local(utc(2026, 12, 1, 8), berlin.get()), "2026-12-01 09:00 CET");
    EXPECT_EQ(lanes::ctl::format_local(utc(2026, 12, 1, 8, 0, 5), nullptr), "2026-12-01 08:00:05 UTC");
    EXPECT_EQ(lanes::ctl::format_local_with_day(utc(2026, 12, 1, 8), berlin.get()), "Tue 2026-12-01 09:00 CET");
    EXPECT_EQ(lanes::ctl::format_duration_minutes(45), "45m");
    EXPECT_EQ(lanes::ctl::format_duration_minutes(0), "0m");
    EXPECT_EQ(lanes::ctl::format_duration_minutes(720), "12h");
    EXPECT_EQ(lanes::ctl::format_duration_minutes(750), "12h30m");
    EXPECT_EQ(lanes::ctl::format_duration_minutes(1440), "1d");
    EXPECT_EQ(lanes::ctl::format_duration_minutes(1441), "1d0h1m");
}

}  // namespace
