// SPDX-License-Identifier: GPL-2.0-or-later
// Golden fixtures: tests/golden/<set>/lanes.toml + one JSON case per file (see
// lanesctl/policy_fixture.hpp). Each shipped policy has a set; "rules" has no policy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "ctld/classifier.hpp"
#include "lanesctl/json.hpp"
#include "lanesctl/policy_fixture.hpp"
#include "tests/unit/test_util.hpp"

namespace lanes {
namespace {

using lanes::test::golden_dir;

namespace fs = std::filesystem;

// Runs every case of one set; returns how many ran.
size_t run_set(const std::string& set) {
    fs::path dir = golden_dir() / set;
    std::vector<std::string> logs;
    auto made = Classifier::create((dir / "lanes.toml").string(),
                                   [&](LogLevel, const std::string& line) { logs.push_back(line); });
    EXPECT_TRUE(made) << (made ? "" : made.error().message);
    if (!made) return 0;
    std::vector<fs::path> cases;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().extension() == ".json") cases.push_back(entry.path());
    std::sort(cases.begin(), cases.end());
    for (const auto& path : cases) {
        SCOPED_TRACE(path.filename().string());
        auto fixture = load_fixture(path.string());
        EXPECT_TRUE(fixture) << (fixture ? "" : fixture.error().message);
        if (!fixture) continue;
        Decision d = (*made)->classify(fixture->job, fixture->at, fixture->admin);
        auto problems = check_fixture(*fixture, d);
        std::string all;
        for (const auto& p : problems) all += "\n  " + p;
        EXPECT_TRUE(problems.empty()) << fixture->description << all
                                      << "\n  decision: " << json::write(decision_to_json(d), 2);
    }
    return cases.size();
}

TEST(Golden, DefaultPolicy) { EXPECT_GE(run_set("default"), 12u); }

TEST(Golden, ByPartitionPolicy) { EXPECT_GE(run_set("by_partition"), 5u); }

TEST(Golden, BuiltinRulesWithoutPolicy) { EXPECT_GE(run_set("rules"), 4u); }

TEST(Golden, CheckerReportsMismatchesAndUnknownKeys) {
    auto f = parse_fixture(R"({"job": {"name": "x"}, "at": "2026-12-01T09:00:00Z",
        "expect": {"class": "training", "partition": null, "clas": "x", "message_contains": "hello",
                   "network": {"dscp": 8}}})",
                           "case.json");
    ASSERT_TRUE(f) << f.error().message;
    Decision d;
    d.class_name = "batch";
    d.partition = "gpu";
    d.user_messages = {"lanes: hi"};
    auto problems = check_fixture(*f, d);
    ASSERT_EQ(problems.size(), 5u);
    EXPECT_EQ(problems[0], R"(class: want "training", got "batch")");
    EXPECT_EQ(problems[1], R"(partition: want null, got "gpu")");
    EXPECT_EQ(problems[2], "expect.clas: unknown key");
    EXPECT_EQ(problems[3], R"(message_contains: "hello" not found in: lanes: hi)");
    EXPECT_EQ(problems[4], "network.dscp: want 8, got null");
    d.class_name = "training";
    d.partition.reset();
    d.user_messages = {"well hello"};
    d.network.dscp = 8;
    EXPECT_EQ(check_fixture(*f, d).size(), 1u);  // only the typo remains
}

TEST(Golden, FixtureErrors) {
    auto unknown = parse_fixture(R"({"job": {}, "at": "2026-12-01T09:00:00Z", "expect": {}, "extra": 1})", "a.json");
    ASSERT_FALSE(unknown);
    EXPECT_NE(unknown.error().message.find("unknown key \"extra\""), std::string::npos);
    auto job_key = parse_fixture(R"({"job": {"gpu": 1}, "at": "2026-12-01T09:00:00Z", "expect": {}})", "b.json");
    ASSERT_FALSE(job_key);
    EXPECT_NE(job_key.error().message.find("job.gpu: unknown key"), std::string::npos);
    auto no_offset = parse_fixture(R"({"job": {}, "at": "2026-12-01T09:00:00", "expect": {}})", "c.json");
    ASSERT_FALSE(no_offset);
    EXPECT_NE(no_offset.error().message.find("invalid timestamp"), std::string::npos);
    auto syntax = parse_fixture("{\"job\": {},\n \"at\": }", "d.json");
    ASSERT_FALSE(syntax);
    EXPECT_EQ(syntax.error().message.rfind("d.json:2:8: ", 0), 0u) << syntax.error().message;
}

TEST(Golden, JobFromJson) {
    auto v = json::parse(R"({"name": "n", "uid": 7, "gpus": 4, "time_limit": "1-00:00:00", "batch": true,
        "env": {"A": "b"}, "lanes_class": "training", "lanes_cap": "5Gbit", "begin_time": 1800000000,
        "submit_time": "2026-12-01T09:00:00+01:00"})");
    ASSERT_TRUE(v);
    auto j = job_from_json(*v);
    ASSERT_TRUE(j) << j.error().message;
    EXPECT_EQ(j->uid, 7u);
    EXPECT_EQ(j->gpus, 4u);
    EXPECT_EQ(j->time_limit_minutes, 1440u);
    EXPECT_TRUE(j->batch);
    EXPECT_EQ(j->environment.at("A"), "b");
    EXPECT_EQ(j->requested_class, "training");
    EXPECT_EQ(j->requested_cap, "5Gbit");
    EXPECT_EQ(j->begin_time, SysSeconds{std::chrono::seconds{1800000000}});
    EXPECT_EQ(format_timestamp_utc(j->submit_time), "2026-12-01T08:00:00Z");
    auto neg = json::parse(R"({"gpus": -1})");
    EXPECT_FALSE(job_from_json(*neg));
}

TEST(Golden, GpusFromTresLikeThePlugin) {
    // Without "gpus", the TRES strings count, exactly as job_submit/lanes counts them.
    struct Case {
        const char* json;
        uint32_t gpus;
    } cases[] = {
        {R"({"tres_per_node": "gres:gpu:4"})", 4},
        {R"({"tres_per_node": "gres:gpu:4", "min_nodes": 2})", 8},
        {R"({"tres_per_job": "gres/gpu:8"})", 8},
        {R"({"tres_per_job": "gres/gpu:a100:2,gres/gpu=1"})", 3},
        {R"({"tres_per_task": "gres/gpu:1", "num_tasks": 6})", 6},
        {R"({"tres_per_node": "gres:gpu:4", "gpus": 1})", 1},  // given explicitly: kept
    };
    for (const auto& c : cases) {
        auto v = json::parse(c.json);
        ASSERT_TRUE(v) << c.json;
        auto j = job_from_json(*v);
        ASSERT_TRUE(j) << j.error().message;
        EXPECT_EQ(j->gpus, c.gpus) << c.json;
    }
}

TEST(Golden, Timestamps) {
    EXPECT_EQ(format_timestamp_utc(*parse_timestamp("2026-12-01T09:00:00+01:00")), "2026-12-01T08:00:00Z");
    EXPECT_EQ(format_timestamp_utc(*parse_timestamp("2026-06-01T00:30-02:30")), "2026-06-01T03:00:00Z");
    EXPECT_EQ(format_timestamp_utc(*parse_timestamp("2026-12-31T23:59:59Z")), "2026-12-31T23:59:59Z");
    for (const char* bad : {"2026-13-01T00:00Z", "2026-02-30T00:00Z", "2026-12-01", "2026-12-01T25:00Z",
                            "2026-12-01T09:00:00+0100", "2026-12-01T09:00:00Zjunk"})
        EXPECT_FALSE(parse_timestamp(bad)) << bad;
}

TEST(GoldenJson, ParsesStrictJson) {
    auto v = json::parse(
        R"( {"a": [1, -2, 3.5, 1e3, true, false, null], "s": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "o": {}} )");
    ASSERT_TRUE(v) << v.error().message;
    const auto& a = json::find(*v, "a")->get_ref<const json::Array&>();
    ASSERT_EQ(a.size(), 7u);
    EXPECT_TRUE(a[0].is_number_integer());
    EXPECT_EQ(a[1].get<int64_t>(), -2);
    EXPECT_FALSE(a[2].is_number_integer());
    EXPECT_DOUBLE_EQ(a[2].get<double>(), 3.5);
    EXPECT_DOUBLE_EQ(a[3].get<double>(), 1000);
    EXPECT_TRUE(a[6].is_null());
    EXPECT_EQ(json::find(*v, "s")->get_ref<const std::string&>(), "x\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
    EXPECT_TRUE(json::find(*v, "o")->is_object());
    EXPECT_EQ(json::find(*v, "missing"), nullptr);
    // Big integers beyond int64 become doubles, not errors.
    EXPECT_FALSE(json::parse("123456789012345678901234567890")->is_number_integer());
}

TEST(GoldenJson, RejectsWhatIsNotJson) {
    // Errors start "line:col: " (nlohmann-json's own text follows).
    struct Case {
        const char* text;
        const char* where;
    } cases[] = {
        {"", "1:1: "},    {"[1, 2,]", "1:7: "}, {"{'a': 1}", "1:2: "}, {"01", "1:2: "},
        {"1.", "1:3: "},  {"\"\\x\"", "1:3: "}, {"\"a\nb\"", "2:"},    {"\"\\ud800\"", "1:8: "},
        {"nul", "1:4: "}, {"{} x", "1:4: "},    {"[1 2]", "1:4: "},    {"{\n  \"a\": }", "2:8: "},
    };
    for (const auto& c : cases) {
        auto r = json::parse(c.text);
        ASSERT_FALSE(r) << c.text;
        EXPECT_EQ(r.error().message.rfind(c.where, 0), 0u) << c.text << " -> " << r.error().message;
    }
    auto dup = json::parse("{\"a\": 1, \"b\": {\"a\": 2}, \"a\": 3}");
    ASSERT_FALSE(dup);
    EXPECT_EQ(dup.error().message, "duplicate key \"a\"");
    EXPECT_TRUE(json::parse("[{\"a\": 1}, {\"a\": 2}]"));
    EXPECT_FALSE(json::parse("1e999"));
    std::string deep(200, '[');
    auto too_deep = json::parse(deep + std::string(200, ']'));
    ASSERT_FALSE(too_deep);
    EXPECT_EQ(too_deep.error().message, "nesting deeper than 128");
}

// A job named "job\xc3(name" (a truncated UTF-8 sequence: users choose job names)
// used to come out raw, so `lanesctl ... --json` printed invalid JSON. Now the bad
// byte becomes U+FFFD and the output parses.
TEST(GoldenJson, InvalidUtf8IsReplacedNotPassedThrough) {
    json::Value v = json::Object{{"name", "job\xc3(name"}, {"ok", "caf\xc3\xa9"}};
    const std::string out = json::write(v);
    EXPECT_EQ(out, "{\"name\":\"job\xef\xbf\xbd(name\",\"ok\":\"caf\xc3\xa9\"}");
    auto back = json::parse(out);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(json::find(*back, "name")->get_ref<const std::string&>(), "job\xef\xbf\xbd(name");
    Decision d;
    d.class_name = "training";
    d.user_messages.push_back("job\xc3(name refused");
    const std::string decision = json::write(decision_to_json(d), 2);
    EXPECT_EQ(decision.find("\xc3("), std::string::npos);
    EXPECT_TRUE(json::parse(decision));
}

TEST(GoldenJson, WritesCompactAndPretty) {
    json::Object o;
    o.emplace_back("b", json::Array{json::Value(1), json::Value(nullptr), json::Value("t\x01\"")});
    o.emplace_back("a", true);
    json::Value v(std::move(o));
    EXPECT_EQ(json::write(v), R"({"b":[1,null,"t\u0001\""],"a":true})");
    EXPECT_EQ(json::write(v, 2), "{\n  \"b\": [\n    1,\n    null,\n    \"t\\u0001\\\"\"\n  ],\n  \"a\": true\n}");
    auto back = json::parse(json::write(v, 2));
    ASSERT_TRUE(back);
    EXPECT_EQ(json::write(*back), json::write(v));
    EXPECT_EQ(json::write(json::Value(0.5)), "0.5");
}

}  // namespace
}  // namespace lanes
