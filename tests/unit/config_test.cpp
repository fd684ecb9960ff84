// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml: the shipped example parses; every kind of mistake is reported
// with file:line:col and the key.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "core/lanes_toml.hpp"
#include "ctld/windows.hpp"
#include "ctld/windows_config.hpp"
#include "tests/unit/test_util.hpp"
#include "tests/unit/time_text.hpp"

namespace {

using lanes::test::utc;

using namespace std::chrono;
using lanes::parse_controller_config;
using lanes::SysSeconds;

std::string srcdir() {
    if (const char* env = std::getenv("LANES_SRCDIR"); env && *env) return env;
#ifdef LANES_TEST_SRCDIR
    return LANES_TEST_SRCDIR;
#else
    return ".";
#endif
}

TEST(Config, ShippedExampleParses) {
    const std::string path = srcdir() + "/contrib/lanes.toml";
    auto c = lanes::load_controller_config(path);
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->path, path);
    EXPECT_EQ(c->default_class, "batch");
    ASSERT_EQ(c->classes.size(), 4u);

    const lanes::ClassConfig* training = c->find_class("training");
    ASSERT_NE(training, nullptr);
    EXPECT_EQ(training->name, "training");
    EXPECT_EQ(training->rank, 1);
    EXPECT_EQ(training->partitions, std::vector<std::string>{"train"});
    EXPECT_EQ(training->qos, "training");
    EXPECT_EQ(training->features, std::vector<std::string>{"ib"});
    EXPECT_EQ(training->nice, 100);
    EXPECT_EQ(training->avoid_windows, std::vector<std::string>{"peak"});
    EXPECT_EQ(training->window_overrun, lanes::OverrunAction::Shorten);
    EXPECT_EQ(training->borrow_partitions, std::vector<std::string>{"infer"});
    EXPECT_EQ(training->exempt_users, std::vector<std::string>{"alice"});
    EXPECT_EQ(training->exempt_accounts, std::vector<std::string>{"deadline-project"});
    EXPECT_EQ(training->allowed_accounts, (std::vector<std::string>{"ml-research", "ml-platform"}));
    EXPECT_TRUE(training->allowed_users.empty());
    EXPECT_EQ(training->policy_overrides, (std::vector<std::string>{"begin_time", "time_limit", "nice"}));
    EXPECT_EQ(training->dscp, 8);
    ASSERT_TRUE(training->rate && training->ceil);
    EXPECT_EQ(training->rate->bits_per_second, 10'000'000'000ULL);
    EXPECT_EQ(training->ceil->bits_per_second, 25'000'000'000ULL);
    EXPECT_TRUE(training->user_may_lower_cap);
    EXPECT_EQ(training->rdma_traffic_class, 32);
    EXPECT_EQ(training->rdma_service_level, 1);
    EXPECT_TRUE(training->has_network_settings());
    ASSERT_TRUE(training->control);
    EXPECT_EQ(training->control->signal, "inference_p99");
    EXPECT_EQ(training->control->dwell, std::chrono::seconds{90});

    const lanes::ClassConfig* inference = c->find_class("inference");
    ASSERT_NE(inference, nullptr);
    EXPECT_EQ(inference->rank, 7);
    EXPECT_EQ(inference->dscp, 34);  // AF41
    EXPECT_DOUBLE_EQ(inference->rate->percent, 40);
    EXPECT_DOUBLE_EQ(inference->ceil->percent, 100);
    EXPECT_EQ(inference->effective_rdma_traffic_class(), 34 << 2);
    EXPECT_EQ(inference->allowed_users, std::vector<std::string>{"*"});
    EXPECT_EQ(inference->window_overrun, lanes::OverrunAction::Defer);  // the default

    const lanes::ClassConfig* scavenger = c->find_class("scavenger");
    ASSERT_NE(scavenger, nullptr);
    EXPECT_EQ(scavenger->dscp, 1);  // LE
    EXPECT_EQ(scavenger->avoid_windows, (std::vector<std::string>{"peak", "maintenance"}));

    // The loader normalises the path (a VPATH srcdir may read "build/../..").
    EXPECT_EQ(c->policy.script, std::filesystem::path(srcdir() + "/contrib/lanes.lua").lexically_normal().string());
    EXPECT_EQ(c->policy.instruction_budget, 1000000u);
    EXPECT_EQ(c->policy.memory_limit_bytes, 16u << 20);
    EXPECT_EQ(c->policy.time_budget, microseconds{20000});
    EXPECT_EQ(c->policy.on_error, lanes::PolicyFailureMode::AcceptDefault);

    ASSERT_EQ(c->rules.size(), 4u);
    EXPECT_EQ(c->rules[0].class_name, "inference");
    EXPECT_EQ(c->rules[0].name_patterns, (std::vector<std::string>{"infer-*", "serve-*"}));
    EXPECT_EQ(c->rules[1].gres, "gpu");
    EXPECT_EQ(c->rules[1].min_gpus, 8u);
    EXPECT_EQ(c->rules[1].interactive, false);
    EXPECT_EQ(c->rules[2].accounts, std::vector<std::string>{"ml-research"});
    for (size_t i = 1; i < c->rules.size(); ++i) EXPECT_GT(c->rules[i].line, c->rules[i - 1].line);

    EXPECT_EQ(c->node.foreign_qdisc, lanes::ForeignQdiscAction::Refuse);
    EXPECT_EQ(c->node.root_handle_major, 0x1a4e);
    EXPECT_EQ(c->node.state_dir, "/run/lanes");
    EXPECT_EQ(c->node.cgroup_root, "auto");
    EXPECT_EQ(c->node.default_link_speed_bits, 25'000'000'000ULL);
    ASSERT_EQ(c->node.nics.size(), 3u);
    EXPECT_EQ(c->node.nics[0].nodes, "train[1-64]");
    EXPECT_EQ(c->node.nics[0].device, "ens1f*");
    EXPECT_EQ(c->node.nics[0].link_speed_bits, 100'000'000'000ULL);
    EXPECT_EQ(c->node.nics[1].route_to, "10.20.0.0/16");
    EXPECT_TRUE(c->node.nics[1].device.empty());
    EXPECT_EQ(c->node.nics[2].nodes, "*");

    // The windows work on real dates: peak is 08:00-20:00 Berlin on weekdays.
    const lanes::Window* peak = windows_of(*c).find("peak");
    ASSERT_NE(peak, nullptr);
    EXPECT_EQ(lanes::format_days(peak->days), "mon,tue,wed,thu,fri");
    EXPECT_EQ(peak->exceptions.size(), 4u);
    EXPECT_TRUE(windows_of(*c).in_window("peak", utc(2026, 1, 14, 7)));         // Wed 08:00 CET
    EXPECT_FALSE(windows_of(*c).in_window("peak", utc(2026, 7, 15, 18)));       // Wed 20:00 CEST
    EXPECT_FALSE(windows_of(*c).in_window("peak", utc(2026, 12, 24, 12)));      // holiday
    EXPECT_TRUE(windows_of(*c).in_window("peak", utc(2026, 6, 13, 12)));        // added Saturday
    EXPECT_TRUE(windows_of(*c).in_window("maintenance", utc(2026, 1, 12, 1)));  // Mon 02:00 CET, from Sunday
}

TEST(Config, MinimalAndDefaults) {
    auto c = parse_controller_config("[classes.only]\nrate = \"1Gbit\"\n", "/etc/slurm/lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->default_class, "only");  // the one class
    const auto* only = c->find_class("only");
    ASSERT_NE(only, nullptr);
    ASSERT_TRUE(only->ceil);
    EXPECT_EQ(only->ceil->bits_per_second, 1'000'000'000ULL);  // ceil defaults to rate
    EXPECT_EQ(only->window_overrun, lanes::OverrunAction::Defer);
    EXPECT_EQ(c->policy.script, "");
    EXPECT_EQ(c->policy.instruction_budget, 1000000u);
    EXPECT_EQ(c->policy.on_error, lanes::PolicyFailureMode::AcceptDefault);
    EXPECT_EQ(c->node.root_handle_major, 0x1a4e);
    EXPECT_EQ(c->node.state_dir, "/run/lanes");
    EXPECT_TRUE(c->rules.empty());
    EXPECT_TRUE(c->node.nics.empty());
    EXPECT_EQ(c->find_class("other"), nullptr);
}

TEST(Config, IngressCapsPerClass) {
    auto c = parse_controller_config(
        "default_class = \"t\"\n[classes.t]\nrate = \"1Gbit\"\ningress_rate = \"2Gbit\"\ningress_ceil = \"5Gbit\"\n"
        "[classes.i]\ningress_rate = \"20%\"\n[classes.b]\nrate = \"1Gbit\"\n",
        "/etc/slurm/lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    const auto* t = c->find_class("t");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->ingress_rate, (lanes::Rate{2'000'000'000ULL, 0}));
    EXPECT_EQ(t->ingress_ceil, (lanes::Rate{5'000'000'000ULL, 0}));
    const auto* i = c->find_class("i");
    ASSERT_NE(i, nullptr);
    EXPECT_EQ(i->ingress_ceil, (lanes::Rate{0, 20}));  // defaults to ingress_rate
    EXPECT_TRUE(i->has_network_settings());            // an ingress cap alone shapes
    const auto* b = c->find_class("b");
    ASSERT_NE(b, nullptr);
    EXPECT_FALSE(b->ingress_rate);
    EXPECT_FALSE(b->ingress_ceil);
}

TEST(Config, AlternativeSpellings) {
    struct Case {
        const char* text;
        const char* what;
    };
    const std::vector<Case> cases = {
        {"[classes.a]\ndscp = 46\n", "numeric dscp"},
        {"[classes.a]\ndscp = \"ef\"\n", "lower-case dscp name"},
        {"[classes.a]\npartitions = \"gpu\"\n", "a single string for a list"},
        {"[windows.w]\ntimezone = \"UTC\"\nstart = 08:00:00\nend = 17:30:00\n[classes.a]\n", "TOML local times"},
        {"[windows.w]\ntimezone = \"UTC\"\nstart = \"22:00\"\nend = \"24:00\"\nexcept = [2026-12-25]\n"
         "add = 2026-12-27\n[classes.a]\n",
         "TOML dates, 24:00"},
        {"[windows.w]\ntimezone = \"UTC\"\ndays = \"weekends\"\nstart = \"0:00\"\nend = \"6:00\"\n[classes.a]\n",
         "days as one string"},
        {"[nodes]\nroot_handle = 0x1a4e\n[classes.a]\n", "hex integer handle"},
        {"[nodes]\nroot_handle = \"10:\"\n[classes.a]\n", "handle with colon"},
        {"[policy]\nmemory_limit = 33554432\ntime_budget = \"1.5ms\"\n[classes.a]\n", "bytes as integer"},
        {"[[nodes.nic]]\nroute_to = \"fd00::/8\"\n[[nodes.nic]]\nroute_to = \"10.1.2.3\"\n[classes.a]\n",
         "IPv6 prefix, host address"},
        {"default_class = \"b\"\n[classes.a]\nrate = \"40%\"\nceil = \"10Gbit\"\n[classes.b]\n",
         "rate and ceil of different kinds are checked per node"},
    };
    for (const auto& c : cases) {
        auto r = parse_controller_config(c.text, "lanes.toml");
        EXPECT_TRUE(r) << c.what << ": " << (r ? "" : r.error().message);
    }
    auto r = parse_controller_config("[windows.w]\ntimezone = \"UTC\"\nstart = 08:00:00\nend = 17:30:00\n[classes.a]\n",
                                     "x");
    ASSERT_TRUE(r);
    EXPECT_EQ(windows_of(*r).find("w")->start, minutes{480});
    EXPECT_EQ(windows_of(*r).find("w")->end, minutes{1050});
}

struct ErrorCase {
    const char* what;
    const char* text;
    const char* expected;  // a line of the error output: "lanes.toml:L:C: key: message..." (prefix match)
};

// A valid prefix (lines 1-6) most cases build on.
#define BASE                         \
    "default_class = \"a\"\n"        \
    "[windows.peak]\n"               \
    "timezone = \"Europe/Berlin\"\n" \
    "start = \"08:00\"\n"            \
    "end = \"20:00\"\n"              \
    "[classes.a]\n"

TEST(Config, ReportsEveryKindOfError) {
    const std::vector<ErrorCase> cases = {
        // TOML syntax, with toml++'s position.
        {"syntax", BASE "rank = \n",
         "lanes.toml:7:8: syntax error: Error while parsing key-value pair: expected value"},
        {"duplicate key", BASE "rank = 1\nrank = 2\n",
         "lanes.toml:8:8: syntax error: Error while parsing key-value pair: cannot redefine existing integer 'rank'"},
        // Unknown keys at every level, with the nearest known key.
        {"top-level typo", BASE "[polcy]\n", "lanes.toml:7:2: polcy: unknown key (did you mean \"policy\"?)"},
        {"class key typo", BASE "rat = \"1Gbit\"\n",
         "lanes.toml:7:1: classes.a.rat: unknown key (did you mean \"rate\"?)"},
        {"class key plural", BASE "partition = \"gpu\"\n",
         "lanes.toml:7:1: classes.a.partition: unknown key (did you mean \"partitions\"?)"},
        {"unknown class key", BASE "colour = \"blue\"\n",
         "lanes.toml:7:1: classes.a.colour: unknown key (known keys: "},
        {"window key typo",
         BASE "[windows.w]\ntimezone = \"UTC\"\nstart = \"1:00\"\nend = \"2:00\"\nexcept_dates = []\n",
         "lanes.toml:11:1: windows.w.except_dates: unknown key"},
        {"policy key typo", BASE "[policy]\nscirpt = \"x.lua\"\n",
         "lanes.toml:8:1: policy.scirpt: unknown key (did you mean \"script\"?)"},
        {"rule key typo", BASE "[[rules]]\nclass = \"a\"\naccount = [\"x\"]\n",
         "lanes.toml:9:1: rules[0].account: unknown key (did you mean \"accounts\"?)"},
        {"nic key typo", BASE "[[nodes.nic]]\ndevice = \"eth0\"\nlinkspeed = \"1Gbit\"\n",
         "lanes.toml:9:1: nodes.nic[0].linkspeed: unknown key (did you mean \"link_speed\"?)"},
        {"nodes key typo", BASE "[nodes]\nforeign_qdisk = \"adopt\"\n",
         "lanes.toml:8:1: nodes.foreign_qdisk: unknown key (did you mean \"foreign_qdisc\"?)"},
        // Wrong types.
        {"string for integer", BASE "rank = \"high\"\n",
         "lanes.toml:7:8: classes.a.rank: expected an integer, got a string"},
        {"integer for string", BASE "qos = 5\n", "lanes.toml:7:7: classes.a.qos: expected a string, got an integer"},
        {"bool", BASE "user_may_lower_cap = \"yes\"\n",
         "lanes.toml:7:22: classes.a.user_may_lower_cap: expected true or false, got a string"},
        {"list element", BASE "partitions = [\"a\", 3]\n",
         "lanes.toml:7:20: classes.a.partitions[1]: expected a string, got an integer"},
        {"class not a table", "default_class = \"a\"\nclasses = 3\n",
         "lanes.toml:2:11: classes: expected a table, got an integer"},
        {"rules not tables", BASE "[[rules]]\nclass = \"a\"\n[nodes]\nnic = 3\n",
         "lanes.toml:10:7: nodes.nic: expected [[nodes.nic]] tables, got an integer"},
        // Out of range.
        {"dscp > 63", BASE "dscp = 64\n", "lanes.toml:7:8: classes.a.dscp: value 64 is out of range (0..63)"},
        {"dscp name", BASE "dscp = \"AF51\"\n", "lanes.toml:7:8: classes.a.dscp: DSCP 'AF51' is not a DSCP name"},
        {"rdma sl > 15", BASE "rdma_service_level = 16\n",
         "lanes.toml:7:22: classes.a.rdma_service_level: value 16 is out of range (0..15)"},
        {"rdma tc > 255", BASE "rdma_traffic_class = 256\n",
         "lanes.toml:7:22: classes.a.rdma_traffic_class: value 256 is out of range (0..255)"},
        {"rank > 7", BASE "rank = 8\n", "lanes.toml:7:8: classes.a.rank: value 8 is out of range (0..7)"},
        {"percent > 100", BASE "rate = \"150%\"\n", "lanes.toml:7:8: classes.a.rate: rate '150%' is out of range"},
        {"zero rate", BASE "rate = \"0Gbit\"\n", "lanes.toml:7:8: classes.a.rate: rate '0Gbit' is zero"},
        {"rate without unit", BASE "rate = 1000\n", "lanes.toml:7:8: classes.a.rate: a rate needs a unit"},
        {"ambiguous bps", BASE "rate = \"10Gbps\"\n",
         "lanes.toml:7:8: classes.a.rate: rate '10Gbps': unit 'Gbps' is ambiguous"},
        {"nice", BASE "nice = 2147483647\n", "lanes.toml:7:8: classes.a.nice: value 2147483647 is out of range"},
        // Rate and ceil.
        {"ceil < rate", BASE "rate = \"10Gbit\"\nceil = \"5Gbit\"\n",
         "lanes.toml:8:8: classes.a.ceil: ceil \"5Gbit\" is below rate \"10Gbit\""},
        {"ceil < rate, relative", BASE "rate = \"50%\"\nceil = \"40%\"\n",
         "lanes.toml:8:8: classes.a.ceil: ceil \"40%\" is below rate \"50%\""},
        {"ceil without rate", BASE "ceil = \"5Gbit\"\n", "lanes.toml:7:8: classes.a.ceil: ceil needs a rate"},
        {"ingress ceil < ingress rate", BASE "ingress_rate = \"10Gbit\"\ningress_ceil = \"5Gbit\"\n",
         "lanes.toml:8:16: classes.a.ingress_ceil: ingress_ceil \"5Gbit\" is below ingress_rate \"10Gbit\""},
        {"ingress ceil without rate", BASE "ingress_ceil = \"5Gbit\"\n",
         "lanes.toml:7:16: classes.a.ingress_ceil: ingress_ceil needs an ingress_rate"},
        {"ingress rate zero", BASE "ingress_rate = \"0Gbit\"\n",
         "lanes.toml:7:16: classes.a.ingress_rate: rate '0Gbit' is zero"},
        {"ingress typo", BASE "ingres_rate = \"1Gbit\"\n",
         "lanes.toml:7:1: classes.a.ingres_rate: unknown key (did you mean \"ingress_rate\"?)"},
        // Cross references.
        {"unknown window", BASE "avoid_windows = [\"peek\"]\n",
         "lanes.toml:7:17: classes.a.avoid_windows: unknown window \"peek\" (did you mean \"peak\"?)"},
        {"unknown window, none defined", "[classes.a]\navoid_windows = [\"x\"]\n",
         "lanes.toml:2:17: classes.a.avoid_windows: unknown window \"x\" (no [windows.NAME] tables are defined)"},
        {"unknown default class", "default_class = \"trainig\"\n[classes.training]\n[classes.inference]\n",
         "lanes.toml:1:17: default_class: unknown class \"trainig\" (did you mean \"training\"?)"},
        {"unknown class in rule", BASE "[[rules]]\nclass = \"b\"\n",
         "lanes.toml:8:9: rules[0].class: unknown class \"b\" (defined: \"a\")"},
        {"rule without class", BASE "[[rules]]\nusers = [\"x\"]\n", "lanes.toml:7:1: rules[0]: missing key \"class\""},
        {"no default class", "[classes.a]\n[classes.b]\n", "lanes.toml:1:1: default_class: missing"},
        {"no classes", "", "lanes.toml:1:1: classes: no classes defined"},
        {"borrow without windows", BASE "borrow_partitions = [\"x\"]\n",
         "lanes.toml:7:21: classes.a.borrow_partitions: borrowing happens outside"},
        {"policy override field", BASE "policy_overrides = [\"partitoin\"]\n",
         "lanes.toml:7:20: classes.a.policy_overrides: unknown field \"partitoin\" (did you mean \"partition\"?)"},
        {"overrun value", BASE "window_overrun = \"shortn\"\n",
         "lanes.toml:7:18: classes.a.window_overrun: unknown value \"shortn\" (did you mean \"shorten\"?)"},
        {"class name", "[classes.\"a b\"]\n", "lanes.toml:1:10: classes.a b: class names may use"},
        // Windows.
        {"empty window", BASE "[windows.w]\ntimezone = \"UTC\"\nstart = \"08:00\"\nend = \"08:00\"\n",
         "lanes.toml:10:7: windows.w.end: the window is empty (start equals end)"},
        {"whole week avoided",
         BASE "avoid_windows = [\"day\", \"night\"]\n"
              "[windows.day]\ntimezone = \"UTC\"\nstart = \"06:00\"\nend = \"18:00\"\n"
              "[windows.night]\ntimezone = \"Europe/Berlin\"\nstart = \"18:00\"\nend = \"08:00\"\n",
         "lanes.toml:7:17: classes.a.avoid_windows: these windows together cover the whole week"},
        {"bad time zone", BASE "[windows.w]\ntimezone = \"Europe/Berln\"\nstart = \"1:00\"\nend = \"2:00\"\n",
         "lanes.toml:8:12: windows.w.timezone: unknown time zone 'Europe/Berln'"},
        {"time zone path", BASE "[windows.w]\ntimezone = \"../../etc/passwd\"\nstart = \"1:00\"\nend = \"2:00\"\n",
         "lanes.toml:8:12: windows.w.timezone: time zone '../../etc/passwd' is not a valid IANA zone name"},
        {"missing time zone", BASE "[windows.w]\nstart = \"1:00\"\nend = \"2:00\"\n",
         "lanes.toml:7:1: windows.w: missing key \"timezone\""},
        {"missing start", BASE "[windows.w]\ntimezone = \"UTC\"\nend = \"2:00\"\n",
         "lanes.toml:7:1: windows.w: missing key \"start\""},
        {"bad time", BASE "[windows.w]\ntimezone = \"UTC\"\nstart = \"8am\"\nend = \"2:00\"\n",
         "lanes.toml:9:9: windows.w.start: time '8am' is not a time of day"},
        {"24:00 start", BASE "[windows.w]\ntimezone = \"UTC\"\nstart = \"24:00\"\nend = \"2:00\"\n",
         "lanes.toml:9:9: windows.w.start: time '24:00' is not a time of day"},
        {"bad day",
         BASE "[windows.w]\ntimezone = \"UTC\"\ndays = [\"mon\", \"funday\"]\nstart = \"1:00\"\nend = \"2:00\"\n",
         "lanes.toml:9:8: windows.w.days: 'funday' is not a day"},
        {"bad date",
         BASE "[windows.w]\ntimezone = \"UTC\"\nstart = \"1:00\"\nend = \"2:00\"\nexcept = [\"2026-02-30\"]\n",
         "lanes.toml:11:11: windows.w.except[0]: date '2026-02-30' is not a valid date"},
        {"reversed range",
         BASE "[windows.w]\ntimezone = \"UTC\"\nstart = \"1:00\"\nend = \"2:00\"\n"
              "except = [\"2026-01-01\", \"2026-12-26..2026-12-24\"]\n",
         "lanes.toml:11:25: windows.w.except[1]: date range '2026-12-26..2026-12-24' ends before it starts"},
        {"except and add",
         BASE "[windows.w]\ntimezone = \"UTC\"\nstart = \"1:00\"\nend = \"2:00\"\n"
              "except = [\"2026-12-24..2026-12-26\"]\nadd = [\"2026-12-25\"]\n",
         "lanes.toml:12:7: windows.w.add: date 2026-12-25 is both in \"except\" and in \"add\""},
        {"window name", BASE "[windows.\"peak hours\"]\n", "lanes.toml:7:10: windows.peak hours: window names may use"},
        // Policy.
        {"on_error", BASE "[policy]\non_error = \"acept-default\"\n",
         "lanes.toml:8:12: policy.on_error: unknown value \"acept-default\" (did you mean \"accept-default\"?)"},
        {"time budget unit", BASE "[policy]\ntime_budget = \"20\"\n",
         "lanes.toml:8:15: policy.time_budget: duration '20' has no unit"},
        {"time budget range", BASE "[policy]\ntime_budget = \"30s\"\n",
         "lanes.toml:8:15: policy.time_budget: out of range (100us..10s)"},
        {"memory ambiguous", BASE "[policy]\nmemory_limit = \"16MB\"\n",
         "lanes.toml:8:16: policy.memory_limit: size '16MB': unit 'MB' is ambiguous"},
        {"instruction budget", BASE "[policy]\ninstruction_budget = 0\n",
         "lanes.toml:8:22: policy.instruction_budget: value 0 is out of range"},
        // Rules.
        {"catch-all first", BASE "[[rules]]\nclass = \"a\"\n[[rules]]\nclass = \"a\"\nusers = [\"x\"]\n",
         "lanes.toml:9:1: rules[1]: this rule can never match: rules[0] (line 7) matches every job"},
        {"duplicate rule",
         BASE "[[rules]]\nclass = \"a\"\nusers = [\"x\", \"y\"]\n[[rules]]\nclass = \"a\"\nusers = [\"y\", \"x\"]\n",
         "lanes.toml:10:1: rules[1]: this rule can never match: rules[0] (line 7) has the same matchers"},
        {"min_gpus 0", BASE "[[rules]]\nclass = \"a\"\nmin_gpus = 0\n",
         "lanes.toml:9:12: rules[0].min_gpus: value 0 is out of range"},
        // Nodes.
        {"device and route_to", BASE "[[nodes.nic]]\ndevice = \"eth0\"\nroute_to = \"10.0.0.0/8\"\n",
         "lanes.toml:9:12: nodes.nic[0].route_to: give either \"device\" or \"route_to\", not both"},
        {"neither device nor route_to", BASE "[[nodes.nic]]\nnodes = \"gpu*\"\n",
         "lanes.toml:7:1: nodes.nic[0]: missing key: give \"device\""},
        {"bad prefix", BASE "[[nodes.nic]]\nroute_to = \"10.0.0.0/33\"\n",
         "lanes.toml:8:12: nodes.nic[0].route_to: not an IP address or prefix"},
        {"bad device", BASE "[[nodes.nic]]\ndevice = \"a-very-long-interface-name\"\n",
         "lanes.toml:8:10: nodes.nic[0].device: not an interface name"},
        {"bad hostlist", BASE "[[nodes.nic]]\nnodes = \"train[1-4\"\ndevice = \"eth0\"\n",
         "lanes.toml:8:9: nodes.nic[0].nodes: not a host list"},
        {"relative link speed", BASE "[[nodes.nic]]\ndevice = \"eth0\"\nlink_speed = \"50%\"\n",
         "lanes.toml:9:14: nodes.nic[0].link_speed: must be an absolute rate"},
        {"root handle", BASE "[nodes]\nroot_handle = \"ffff\"\n",
         "lanes.toml:8:15: nodes.root_handle: out of range (1..fffe hexadecimal"},
        {"root handle hex", BASE "[nodes]\nroot_handle = \"xyz\"\n",
         "lanes.toml:8:15: nodes.root_handle: not a hexadecimal qdisc major number"},
        {"state_dir", BASE "[nodes]\nstate_dir = \"run/lanes\"\n",
         "lanes.toml:8:13: nodes.state_dir: must be an absolute path"},
        {"cgroup_root", BASE "[nodes]\ncgroup_root = \"lanes\"\n",
         "lanes.toml:8:15: nodes.cgroup_root: must be \"auto\" or an absolute path"},
        {"unclassified_dscp", BASE "[nodes]\nunclassified_dscp = \"AF99\"\n",
         "lanes.toml:8:21: nodes.unclassified_dscp: "},
        {"unclassified_dscp range", BASE "[nodes]\nunclassified_dscp = 64\n",
         "lanes.toml:8:21: nodes.unclassified_dscp: value 64 is out of range (0..63)"},
        {"unclassified ceil below rate", BASE "[nodes]\nunclassified_rate = \"50%\"\nunclassified_ceil = \"10%\"\n",
         "lanes.toml:9:21: nodes.unclassified_ceil: unclassified_ceil is below unclassified_rate"},
        {"unclassified rate unit", BASE "[nodes]\nunclassified_rate = 100\n",
         "lanes.toml:8:21: nodes.unclassified_rate: a rate needs a unit"},
        {"gso_burst", BASE "[nodes]\ngso_burst = \"5s\"\n", "lanes.toml:8:13: nodes.gso_burst: not a time"},
        {"foreign_qdisc", BASE "[nodes]\nforeign_qdisc = \"replace\"\n",
         "lanes.toml:8:17: nodes.foreign_qdisc: unknown value \"replace\" (expected \"refuse\" or \"adopt\")"},
    };
    for (const auto& c : cases) {
        auto r = parse_controller_config(c.text, "lanes.toml");
        ASSERT_FALSE(r) << c.what << ": parsed, but expected " << c.expected;
        const std::string& m = r.error().message;
        bool found = false;
        size_t start = 0;
        while (start <= m.size()) {
            size_t nl = m.find('\n', start);
            if (nl == std::string::npos) nl = m.size();
            if (m.compare(start, std::string(c.expected).size(), c.expected) == 0) found = true;
            start = nl + 1;
        }
        EXPECT_TRUE(found) << c.what << "\n  expected a line starting: " << c.expected << "\n  got:\n" << m;
    }
}

TEST(Config, UnclassifiedTrafficAndGsoBurst) {
    auto d = parse_controller_config("[classes.a]\n", "lanes.toml");
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(d->node.unclassified_dscp, std::optional<uint8_t>(0));  // CS0
    EXPECT_EQ(d->node.unclassified_rate, (lanes::Rate{0, 5}));
    EXPECT_EQ(d->node.unclassified_ceil, (lanes::Rate{0, 25}));
    EXPECT_EQ(d->node.gso_burst_us, std::optional<uint32_t>(250));
    auto c = parse_controller_config(
        "[classes.a]\n[nodes]\nunclassified_dscp = \"keep\"\nunclassified_rate = \"1Gbit\"\n"
        "unclassified_ceil = \"100%\"\ngso_burst = \"off\"\n",
        "lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_FALSE(c->node.unclassified_dscp);
    EXPECT_EQ(c->node.unclassified_rate, (lanes::Rate{1'000'000'000, 0}));
    EXPECT_EQ(c->node.unclassified_ceil, (lanes::Rate{0, 100}));
    EXPECT_FALSE(c->node.gso_burst_us);
    c = parse_controller_config("[classes.a]\n[nodes]\nunclassified_dscp = \"AF11\"\ngso_burst = \"2ms\"\n",
                                "lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->node.unclassified_dscp, std::optional<uint8_t>(10));
    EXPECT_EQ(c->node.gso_burst_us, std::optional<uint32_t>(2000));
}

TEST(Config, CollectsAllErrorsInFileOrder) {
    const char* text =
        "default_class = \"a\"\n"       // 1
        "[classes.a]\n"                 // 2
        "dscp = 99\n"                   // 3
        "rate = \"10Gbps\"\n"           // 4
        "avoid_windows = [\"nope\"]\n"  // 5
        "[nodes]\n"                     // 6
        "root_handle = \"zz\"\n"        // 7
        "colour = 1\n";                 // 8
    auto r = parse_controller_config(text, "/etc/slurm/lanes.toml");
    ASSERT_FALSE(r);
    const std::string& m = r.error().message;
    std::vector<std::string> lines;
    for (size_t start = 0; start < m.size();) {
        size_t nl = m.find('\n', start);
        if (nl == std::string::npos) nl = m.size();
        lines.push_back(m.substr(start, nl - start));
        start = nl + 1;
    }
    ASSERT_EQ(lines.size(), 5u) << m;
    EXPECT_EQ(lines[0].rfind("/etc/slurm/lanes.toml:3:8: classes.a.dscp:", 0), 0u) << lines[0];
    EXPECT_EQ(lines[1].rfind("/etc/slurm/lanes.toml:4:8: classes.a.rate:", 0), 0u) << lines[1];
    EXPECT_EQ(lines[2].rfind("/etc/slurm/lanes.toml:5:17: classes.a.avoid_windows:", 0), 0u) << lines[2];
    EXPECT_EQ(lines[3].rfind("/etc/slurm/lanes.toml:7:15: nodes.root_handle:", 0), 0u) << lines[3];
    EXPECT_EQ(lines[4].rfind("/etc/slurm/lanes.toml:8:1: nodes.colour: unknown key", 0), 0u) << lines[4];
}

// The nodes (spank_lanes, lanes-agent) read [windows] for its syntax only; the
// controller side also loads the time zones and checks the week, and its
// messages join the parser's in file order.
TEST(Config, WindowsNeedTheControllerForZonesOnly) {
    const char* text =
        "default_class = \"a\"\n"        // 1
        "[classes.a]\n"                  // 2
        "avoid_windows = [\"all\"]\n"    // 3
        "dscp = 99\n"                    // 4
        "[windows.w]\n"                  // 5
        "timezone = \"Europe/Berln\"\n"  // 6
        "start = \"1:00\"\n"             // 7
        "end = \"2:00\"\n"               // 8
        "[windows.all]\n"                // 9
        "timezone = \"UTC\"\n"           // 10
        "start = \"00:00\"\n"            // 11
        "end = \"24:00\"\n"              // 12
        "[classes.b]\n"                  // 13
        "avoid_windows = [\"w\"]\n";     // 14
    auto node = lanes::parse_config(text, "lanes.toml");
    ASSERT_FALSE(node);
    EXPECT_EQ(node.error().message, "lanes.toml:4:8: classes.a.dscp: value 99 is out of range (0..63)");
    auto ctld = parse_controller_config(text, "lanes.toml");
    ASSERT_FALSE(ctld);
    EXPECT_EQ(ctld.error().message,
              "lanes.toml:3:17: classes.a.avoid_windows: these windows together cover the whole week: jobs of "
              "class \"a\" could never start\n"
              "lanes.toml:4:8: classes.a.dscp: value 99 is out of range (0..63)\n"
              "lanes.toml:6:12: windows.w.timezone: unknown time zone 'Europe/Berln' (no file "
              "/usr/share/zoneinfo/Europe/Berln)");

    // The node side still refuses a [windows] table of the wrong shape.
    auto shape =
        lanes::parse_config("[classes.a]\n[windows.w]\ntimezone = 1\nstart = \"1:00\"\nend = \"2:00\"\n", "lanes.toml");
    ASSERT_FALSE(shape);
    EXPECT_EQ(shape.error().message.rfind("lanes.toml:3:12: windows.w.timezone: expected a string", 0), 0u)
        << shape.error().message;
    // And accepts a zone it does not look up; the controller loads it.
    const char* good = "[classes.a]\n[windows.w]\ntimezone = \"Europe/Berlin\"\nstart = \"1:00\"\nend = \"2:00\"\n";
    auto n = lanes::parse_config(good, "lanes.toml");
    ASSERT_TRUE(n) << n.error().message;
    EXPECT_FALSE(n->windows);
    EXPECT_EQ(n->window_specs.clock.at("w").timezone, "Europe/Berlin");
    auto c = parse_controller_config(good, "lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    ASSERT_TRUE(c->windows);
    ASSERT_NE(c->windows->find("w"), nullptr);
    EXPECT_EQ(c->windows->find("w")->zone->name(), "Europe/Berlin");
}

TEST(Config, PolicyScriptPath) {
    struct Case {
        const char* config_path;
        const char* script;
        const char* expected;
    };
    const std::vector<Case> cases = {
        {"/etc/slurm/lanes.toml", "lanes.lua", "/etc/slurm/lanes.lua"},
        {"/etc/slurm/lanes.toml", "policies/site.lua", "/etc/slurm/policies/site.lua"},
        {"/etc/slurm/lanes.toml", "../lanes/site.lua", "/etc/lanes/site.lua"},
        {"/etc/slurm/lanes.toml", "/opt/lanes/site.lua", "/opt/lanes/site.lua"},
        {"lanes.toml", "lanes.lua", "lanes.lua"},
        {"conf/lanes.toml", "lanes.lua", "conf/lanes.lua"},
        {"/etc/slurm/lanes.toml", "", ""},
    };
    for (const auto& c : cases) {
        const std::string text = std::string("[policy]\nscript = \"") + c.script + "\"\n[classes.a]\n";
        auto r = parse_controller_config(text, c.config_path);
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(r->policy.script, c.expected) << c.config_path << " + " << c.script;
    }
}

TEST(Config, LoadErrors) {
    auto r = lanes::load_controller_config("/nonexistent/lanes.toml");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message.rfind("/nonexistent/lanes.toml: cannot open: ", 0), 0u) << r.error().message;
}

TEST(Config, DefaultPath) {
    const char* saved_lanes = std::getenv("LANES_CONFIG");
    const char* saved_slurm = std::getenv("SLURM_CONF");
    const std::string keep_lanes = saved_lanes ? saved_lanes : "", keep_slurm = saved_slurm ? saved_slurm : "";
    unsetenv("LANES_CONFIG");
    unsetenv("SLURM_CONF");
    const std::string compiled = lanes::default_config_path(false);
    EXPECT_EQ(compiled.size() > 11 ? compiled.substr(compiled.size() - 11) : compiled, "/lanes.toml");
    EXPECT_EQ(lanes::default_config_path(true), compiled);
    setenv("SLURM_CONF", "/opt/slurm/etc/slurm.conf", 1);
    EXPECT_EQ(lanes::default_config_path(true), "/opt/slurm/etc/lanes.toml");
    setenv("LANES_CONFIG", "/tmp/x/lanes.toml", 1);
    EXPECT_EQ(lanes::default_config_path(true), "/tmp/x/lanes.toml");
    EXPECT_EQ(lanes::default_config_path(false), compiled);  // a user's environment is not trusted
    if (saved_lanes) setenv("LANES_CONFIG", keep_lanes.c_str(), 1);
    else unsetenv("LANES_CONFIG");
    if (saved_slurm) setenv("SLURM_CONF", keep_slurm.c_str(), 1);
    else unsetenv("SLURM_CONF");
}

}  // namespace

namespace {

// Every key the parser knows is documented in lanes.toml(5): ask each table for
// its known keys through the unknown-key message, then look for them in the page.
TEST(Config, ManPageDocumentsEveryKey) {
    std::ifstream in(srcdir() + "/man/lanes.toml.5.in");
    ASSERT_TRUE(in) << "man/lanes.toml.5.in";
    const std::string man((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::vector<std::pair<std::string, std::string>> tables = {
        {"", "zzzzzzzzzz = 1\n[classes.a]\n"},
        {"policy", "[policy]\nzzzzzzzzzz = 1\n[classes.a]\n"},
        {"windows.w",
         "[windows.w]\ntimezone = \"UTC\"\nstart = \"1:00\"\nend = \"2:00\"\nzzzzzzzzzz = 1\n[classes.a]\n"},
        {"classes.a", "[classes.a]\nzzzzzzzzzz = 1\n"},
        {"rules[0]", "[[rules]]\nclass = \"a\"\nzzzzzzzzzz = 1\n[classes.a]\n"},
        {"nodes", "[nodes]\nzzzzzzzzzz = 1\n[classes.a]\n"},
        {"nodes.nic[0]", "[[nodes.nic]]\ndevice = \"x\"\nzzzzzzzzzz = 1\n[classes.a]\n"},
        {"signals.s", "[signals.s]\nurl = \"http://h:1\"\nquery = \"q\"\nzzzzzzzzzz = 1\n[classes.a]\n"},
        {"windows.b",
         "[signals.s]\nurl = \"http://h:1\"\nquery = \"q\"\n[windows.b]\nsignal = \"s\"\nabove = 1\n"
         "zzzzzzzzzz = 1\n[classes.a]\n"},
        {"classes.a.control",
         "[signals.s]\nurl = \"http://h:1\"\nquery = \"q\"\n[classes.a]\nrate = \"1Gbit\"\n[classes.a.control]\n"
         "zzzzzzzzzz = 1\n"},
    };
    size_t checked = 0;
    for (const auto& [table, text] : tables) {
        auto r = parse_controller_config(text, "lanes.toml");
        ASSERT_FALSE(r) << table;
        const std::string& m = r.error().message;
        const std::string marker = "(known keys: ";
        const size_t at = m.find(marker);
        ASSERT_NE(at, std::string::npos) << table << ": " << m;
        const size_t end = m.find(')', at);
        std::string list = m.substr(at + marker.size(), end - at - marker.size());
        for (size_t start = 0; start < list.size();) {
            size_t comma = list.find(", ", start);
            if (comma == std::string::npos) comma = list.size();
            const std::string key = list.substr(start, comma - start);
            start = comma + 2;
            const bool documented = man.find(".BR " + key + " \" = ") != std::string::npos ||
                                    man.find("[" + key + "]") != std::string::npos ||
                                    man.find("[" + key + ".NAME]") != std::string::npos ||
                                    man.find("." + key + "]]") != std::string::npos;
            EXPECT_TRUE(documented) << (table.empty() ? "" : table + ".") << key << " is not in lanes.toml(5)";
            ++checked;
        }
    }
    EXPECT_GT(checked, 50u);
}

}  // namespace
