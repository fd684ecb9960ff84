// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl policy test / status / gc output: human text, JSON shapes, Prometheus
// textfile format, and the slurmstepd process-title parsing gc relies on.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "lanesctl/json.hpp"
#include "lanesctl/node_report.hpp"
#include "lanesctl/policy_report.hpp"
#include "node/ingress_plan.hpp"
#include "node/node_facts.hpp"
#include "tests/unit/test_util.hpp"

namespace {

using lanes::test::contains;
using lanes::test::utc;

using namespace std::chrono;
using lanes::SysSeconds;

lanes::Decision training_decision() {
    lanes::Decision d;
    d.class_name = "training";
    d.partition = "train";
    d.qos = "training";
    d.begin_time = utc(2026, 12, 1, 19);
    d.time_limit_minutes = 120;
    d.network.rate = lanes::Rate{10'000'000'000, 0};
    d.network.ceil = lanes::Rate{0, 40};
    d.network.dscp = 8;
    d.network.rdma_traffic_class = 32;
    d.network.rdma_service_level = 1;
    d.user_messages = {"lanes: training job deferred to Tue 20:00 CET (peak window)"};
    d.reason = "policy default.lua:40 (training); deferred past window 'peak'";
    return d;
}

lanes::ctl::PolicyTestResult result_of(const lanes::Decision& d) {
    lanes::ctl::PolicyTestResult r;
    r.source = "train.json";
    lanes::JobView job;
    job.name = "train-llm";
    job.user = "bob";
    job.account = "ml";
    job.partition = "train";
    job.gpus = 16;
    r.job_summary = lanes::ctl::job_summary(job);
    r.at = utc(2026, 12, 1, 8);
    r.decision = d;
    return r;
}

TEST(LanesctlPolicyOutput, HumanBlockShowsEveryField) {
    auto zone = lanes::TimeZone::load("Europe/Berlin");
    ASSERT_TRUE(zone);
    const std::string text = lanes::ctl::format_policy_human({result_of(training_decision())}, zone->get(), false);
    EXPECT_EQ(text,
              "train.json: job 'train-llm' of bob (account ml, partition train, gpus 16)\n"
              "  at:          Tue 2026-12-01 09:00 CET\n"
              "  verdict:     accept\n"
              "  class:       training\n"
              "  partition:   train\n"
              "  qos:         training\n"
              "  features:    (unchanged)\n"
              "  nice:        (unchanged)\n"
              "  begin time:  Tue 2026-12-01 20:00 CET\n"
              "  time limit:  2h (120 min)\n"
              "  rate/ceil:   10Gbit / 40%\n"
              "  dscp:        CS1 (8)\n"
              "  rdma:        tc 32, sl 1\n"
              "  messages:    lanes: training job deferred to Tue 20:00 CET (peak window)\n"
              "  why:         policy default.lua:40 (training); deferred past window 'peak'\n");
}

TEST(LanesctlPolicyOutput, RejectAndFixtureMode) {
    lanes::Decision reject;
    reject.verdict = lanes::Decision::Verdict::Reject;
    reject.reject_kind = lanes::Decision::RejectKind::ClassNotAllowed;
    reject.class_name = "inference";
    reject.reason = "lanes: class 'inference' is not allowed for bob";
    auto r = result_of(reject);
    const std::string text = lanes::ctl::format_policy_human({r}, nullptr, false);
    EXPECT_TRUE(contains(text, "  verdict:     REJECT (class_not_allowed)\n")) << text;
    EXPECT_FALSE(contains(text, "partition:")) << text;

    auto pass = result_of(training_decision());
    pass.checked = true;
    auto failing = result_of(reject);
    failing.source = "refused.json";
    failing.description = "explicit class refused";
    failing.checked = true;
    failing.diffs = {"verdict: want \"accept\", got \"reject\""};
    auto broken = lanes::ctl::PolicyTestResult{};
    broken.source = "broken.json";
    broken.error = "broken.json:3:7: expected ':'";
    const std::string fixtures = lanes::ctl::format_policy_human({pass, failing, broken}, nullptr, true);
    EXPECT_EQ(fixtures,
              "PASS train.json\n"
              "FAIL refused.json (explicit class refused)\n"
              "  verdict: want \"accept\", got \"reject\"\n"
              "  why: lanes: class 'inference' is not allowed for bob\n"
              "FAIL broken.json\n"
              "  error: broken.json:3:7: expected ':'\n"
              "1 passed, 2 failed\n");
}

TEST(LanesctlPolicyOutput, JsonShape) {
    auto r = result_of(training_decision());
    auto failing = r;
    failing.checked = true;
    failing.diffs = {"class: want \"inference\", got \"training\""};
    auto v = lanes::ctl::policy_json({r, failing}, nullptr);
    EXPECT_EQ(lanes::json::find(v, "passed")->get<int64_t>(), 1);
    EXPECT_EQ(lanes::json::find(v, "failed")->get<int64_t>(), 1);
    const auto& results = lanes::json::find(v, "results")->get_ref<const lanes::json::Array&>();
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(lanes::json::find(results[0], "source")->get_ref<const std::string&>(), "train.json");
    EXPECT_EQ(lanes::json::find(results[0], "at")->get_ref<const std::string&>(), "2026-12-01T08:00:00Z");
    EXPECT_TRUE(lanes::json::find(results[0], "ok")->get<bool>());
    EXPECT_TRUE(lanes::json::find(results[0], "error")->is_null());
    const auto* decision = lanes::json::find(results[0], "decision");
    ASSERT_TRUE(decision && decision->is_object());
    EXPECT_EQ(lanes::json::find(*decision, "class")->get_ref<const std::string&>(), "training");
    EXPECT_EQ(lanes::json::find(*decision, "begin_time")->get_ref<const std::string&>(), "2026-12-01T19:00:00Z");
    EXPECT_EQ(lanes::json::write(*lanes::json::find(*decision, "network")),
              R"({"dscp":8,"rate":"10Gbit","ceil":"40%","rdma_traffic_class":32,"rdma_service_level":1,"rank":0})");
    EXPECT_FALSE(lanes::json::find(results[1], "ok")->get<bool>());
    EXPECT_EQ(lanes::json::write(*lanes::json::find(results[1], "diffs")),
              R"(["class: want \"inference\", got \"training\""])");
}

lanes::ctl::StatusReport status_report() {
    lanes::ctl::StatusReport report;
    report.node = "gpu1";
    report.leaf_qdisc = "pfifo";
    lanes::NicFacts nic;
    nic.device = "eth0";
    nic.link_speed_bits = 100'000'000'000ULL;
    nic.has_our_root = true;
    report.nics.push_back(nic);
    lanes::ctl::JobStatus job;
    job.state.job_id = 7;
    job.state.class_name = "training";
    job.state.minor = 7;
    job.state.net.dscp = 8;
    job.state.cgroup = "/sys/fs/cgroup/unified/lanes/job_7";
    job.state.devices.push_back(lanes::JobDevice{"eth0", 10'000'000'000ULL, 25'000'000'000ULL});
    job.counters["eth0"] = lanes::ClassCounters{123456, 100, 2, 5, 1500};
    report.jobs.push_back(job);
    lanes::ctl::JobStatus broken;
    broken.state.job_id = 9;
    broken.state.class_name = "inf\"erence";
    broken.state.devices.push_back(lanes::JobDevice{"eth0", 1'000'000, 1'000'000});
    broken.error = "lanes: eth0: no such device";
    report.jobs.push_back(broken);
    report.parked.push_back(lanes::ParkedClass{0x41, 0x1a4e, {"eth0"}});
    report.parked.push_back(lanes::ParkedClass{0x42, 0x1a4e, {"eth0", "eth1"}});
    return report;
}

TEST(LanesctlStatusOutput, IngressClassEverywhere) {
    lanes::ctl::StatusReport report = status_report();
    auto& job = report.jobs.front();
    job.state.ingress_devices.push_back(lanes::JobDevice{"eth0", 1'000'000'000ULL, 5'000'000'000ULL});
    job.ingress_counters["eth0"] = lanes::ClassCounters{987654, 700, 3, 9, 0};
    const std::string text = lanes::ctl::format_status_human(report);
    EXPECT_TRUE(contains(text,
                         "7         training    in:eth0       1Gbit    5Gbit  -            987654        700       3   "
                         "     9        0\n"))
        << text;
    EXPECT_TRUE(contains(lanes::ctl::format_status_human(report, lanes::ctl::TableStyle{false, true}),
                         "7|training|in:eth0|1Gbit|5Gbit||987654|700|3|9|0|\n"));
    const std::string prom = lanes::ctl::prometheus_text(report);
    EXPECT_TRUE(contains(prom,
                         "lanes_job_bytes_total{hpc_job=\"7\",class=\"training\",device=\"eth0\",host=\"gpu1\","
                         "direction=\"ingress\"} 987654\n"))
        << prom;
    EXPECT_TRUE(contains(prom,
                         "lanes_job_ceil_bytes_per_second{hpc_job=\"7\",class=\"training\",device=\"eth0\","
                         "host=\"gpu1\",direction=\"ingress\"} 625000000\n"))
        << prom;
    const std::string js = lanes::json::write(lanes::ctl::status_json(report));
    EXPECT_TRUE(contains(js, "\"ingress\":[{\"device\":\"eth0\",\"ifb\":\"" + lanes::ifb_device_name("eth0") +
                                 "\",\"rate_bits\":1000000000,\"ceil_bits\":5000000000,\"bytes\":987654"))
        << js;
}

TEST(LanesctlStatusOutput, Human) {
    const std::string text = lanes::ctl::format_status_human(status_report());
    EXPECT_TRUE(contains(text, "node gpu1: eth0 (100Gbit); leaf qdisc pfifo\n")) << text;
    EXPECT_TRUE(contains(text, "JOB       CLASS       DEVICE         RATE     CEIL  DSCP")) << text;
    EXPECT_TRUE(contains(text,
                         "7         training    eth0         10Gbit   25Gbit  CS1          123456        100       2   "
                         "     5     1500\n"))
        << text;
    EXPECT_TRUE(contains(text, "9         inf\"erence  error: lanes: eth0: no such device\n")) << text;
    // Parked classes carry no job: one line after the table.
    EXPECT_TRUE(contains(text,
                         "no such device\nparked classes (no job; kept for the next jobs, nodes.parked_classes): "
                         "1a4e:41 (eth0), 1a4e:42 (eth0 eth1)\n"))
        << text;
    lanes::ctl::StatusReport idle;
    idle.node = "n";
    idle.parked.push_back(lanes::ParkedClass{7, 0x1a4e, {"eth0"}});
    EXPECT_EQ(lanes::ctl::format_status_human(idle),
              "node n: no NICs selected\nno jobs shaped\n"
              "parked classes (no job; kept for the next jobs, nodes.parked_classes): 1a4e:7 (eth0)\n");
    lanes::ctl::StatusReport empty;
    empty.node = "n";
    EXPECT_EQ(lanes::ctl::format_status_human(empty), "node n: no NICs selected\nno jobs shaped\n");
}

TEST(LanesctlStatusOutput, NoheaderAndParsable) {
    using lanes::ctl::TableStyle;
    const std::string rows = lanes::ctl::format_status_human(status_report(), TableStyle{false, false});
    EXPECT_EQ(rows.rfind("7         training    eth0", 0), 0u) << rows;  // first line is a row
    EXPECT_FALSE(contains(rows, "node gpu1")) << rows;
    EXPECT_FALSE(contains(rows, "CLASS")) << rows;
    EXPECT_TRUE(contains(rows, "9         inf\"erence  error:")) << rows;
    EXPECT_FALSE(contains(rows, "parked")) << rows;  // rows are jobs only
    lanes::ctl::StatusReport empty;
    empty.node = "n";
    EXPECT_EQ(lanes::ctl::format_status_human(empty, TableStyle{false, false}), "");

    const std::string p = lanes::ctl::format_status_human(status_report(), TableStyle{true, true});
    EXPECT_EQ(p,
              "JOBID|CLASS|DEVICE|RATE|CEIL|DSCP|BYTES|PACKETS|DROPS|OVERLIMITS|BACKLOG|ERROR\n"
              "7|training|eth0|10Gbit|25Gbit|CS1|123456|100|2|5|1500|\n"
              "9|inf\"erence||||-||||||lanes: eth0: no such device\n");
    const std::string ph = lanes::ctl::format_status_human(status_report(), TableStyle{false, true});
    EXPECT_EQ(ph.rfind("7|training|", 0), 0u) << ph;
    // Every line has the same number of fields.
    size_t start = 0;
    while (start < p.size()) {
        size_t end = p.find('\n', start);
        std::string line = p.substr(start, end - start);
        EXPECT_EQ(std::count(line.begin(), line.end(), '|'), 11) << line;
        start = end + 1;
    }
    EXPECT_EQ(lanes::ctl::format_status_human(empty, TableStyle{false, true}), "");
}

TEST(LanesctlStatusOutput, Json) {
    const std::string json = lanes::json::write(lanes::ctl::status_json(status_report()));
    EXPECT_EQ(
        json,
        R"({"node":"gpu1","leaf_qdisc":"pfifo","nics":[{"device":"eth0","link_speed_bits":100000000000}],)"
        R"("jobs":[{"job_id":7,"class":"training","minor":"7","dscp":"CS1","dscp_value":8,)"
        R"("cgroup":"/sys/fs/cgroup/unified/lanes/job_7","error":null,"devices":[{"device":"eth0",)"
        R"("rate_bits":10000000000,"ceil_bits":25000000000,"bytes":123456,"packets":100,"drops":2,)"
        R"("overlimits":5,"backlog_bytes":1500}],"ingress":[]},)"
        R"({"job_id":9,"class":"inf\"erence","minor":"0","dscp":null,"dscp_value":null,"cgroup":"",)"
        R"("error":"lanes: eth0: no such device","devices":[{"device":"eth0","rate_bits":1000000,)"
        R"("ceil_bits":1000000,"bytes":null,"packets":null,"drops":null,"overlimits":null,"backlog_bytes":null}],)"
        R"("ingress":[]}],)"
        R"("parked":[{"class":"1a4e:41","devices":["eth0"]},{"class":"1a4e:42","devices":["eth0","eth1"]}]})");
}

TEST(LanesctlStatusOutput, Prometheus) {
    const std::string text = lanes::ctl::prometheus_text(status_report());
    EXPECT_TRUE(contains(
        text,
        "# HELP lanes_job_bytes_total Bytes through the job's HTB class (direction: egress sent, ingress received).\n"
        "# TYPE lanes_job_bytes_total counter\n"
        "lanes_job_bytes_total{hpc_job=\"7\",class=\"training\",device=\"eth0\",host=\"gpu1\",direction=\"egress\"} "
        "123456\n"))
        << text;
    EXPECT_TRUE(contains(text,
                         "lanes_job_drops_total{hpc_job=\"7\",class=\"training\",device=\"eth0\",host=\"gpu1\","
                         "direction=\"egress\"} 2\n"));
    EXPECT_TRUE(contains(text,
                         "lanes_job_overlimits_total{hpc_job=\"7\",class=\"training\",device=\"eth0\",host=\"gpu1\","
                         "direction=\"egress\"} 5\n"));
    EXPECT_TRUE(contains(text,
                         "# TYPE lanes_job_backlog_bytes gauge\n"
                         "lanes_job_backlog_bytes{hpc_job=\"7\",class=\"training\",device=\"eth0\",host=\"gpu1\","
                         "direction=\"egress\"} 1500\n"));
    EXPECT_TRUE(contains(text,
                         "lanes_job_ceil_bytes_per_second{hpc_job=\"7\",class=\"training\",device=\"eth0\",host="
                         "\"gpu1\",direction=\"egress\"} 3125000000\n"));
    EXPECT_TRUE(contains(text, "lanes_jobs{node=\"gpu1\"} 2\n"));
    EXPECT_TRUE(contains(text, "lanes_jobs_unreadable{node=\"gpu1\"} 1\n"));
    EXPECT_TRUE(contains(text, "# TYPE lanes_parked_classes gauge\nlanes_parked_classes{node=\"gpu1\"} 2\n"));
    // The job without counters has no samples (not zeros that would reset rates).
    EXPECT_FALSE(contains(text, "hpc_job=\"9\""));
    // Every metric family has exactly one HELP and one TYPE, before its samples.
    for (const char* name : {"lanes_job_bytes_total", "lanes_job_packets_total", "lanes_job_rate_bytes_per_second"}) {
        const std::string help = std::string("# HELP ") + name + " ";
        ASSERT_TRUE(contains(text, help)) << name;
        EXPECT_EQ(text.find(help), text.rfind(help)) << name;
        EXPECT_LT(text.find(help), text.find(std::string(name) + "{")) << name;
    }
    EXPECT_EQ(lanes::ctl::prometheus_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    EXPECT_EQ(text.back(), '\n');
    // Labels Prometheus owns (it renames ours to exported_job) and bit units are gone.
    EXPECT_FALSE(contains(text, "{job=")) << text;
    EXPECT_FALSE(contains(text, ",job=")) << text;
    EXPECT_FALSE(contains(text, "instance=")) << text;
    EXPECT_FALSE(contains(text, "bits")) << text;
}

// A state file or the kernel can hold anything: every output form escapes it.
TEST(LanesctlStatusOutput, HostileStringsEscapedInEveryForm) {
    lanes::ctl::StatusReport report = status_report();
    report.jobs[0].state.class_name = std::string("evil\x1b[2J\0\xff\xc2\x9b", 12);
    report.jobs[0].state.devices[0].device = "eth0\n# TYPE fake counter";
    report.jobs[0].counters = {{"eth0\n# TYPE fake counter", lanes::ClassCounters{1, 1, 0, 0, 0}}};
    report.jobs[1].error = "kernel said \x1b]0;title\x07 and \xfe";
    auto raw_control = [](const std::string& text, bool newlines_allowed) {
        for (size_t i = 0; i < text.size(); ++i) {
            auto c = static_cast<unsigned char>(text[i]);
            if (c == '\n' && newlines_allowed) continue;
            if (c < 0x20 || c == 0x7f || c == 0xff || c == 0xfe) return true;
            if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9f) return true;
        }
        return false;
    };
    for (auto style : {lanes::ctl::TableStyle{}, lanes::ctl::TableStyle{true, true}}) {
        const std::string human = lanes::ctl::format_status_human(report, style);
        EXPECT_FALSE(raw_control(human, true)) << human;
        EXPECT_TRUE(contains(human, "evil\\x1B[2J\\x00\\xFF\\x9B")) << human;
        EXPECT_TRUE(contains(human, "kernel said \\x1B]0;title\\x07 and \\xFE")) << human;
        EXPECT_FALSE(contains(human, "\n# TYPE")) << human;
    }
    const std::string json = lanes::json::write(lanes::ctl::status_json(report));
    EXPECT_FALSE(raw_control(json, false)) << json;
    EXPECT_TRUE(contains(json, R"("class":"evil\u001b[2J\u0000)"
                               "\xef\xbf\xbd"
                               R"(\u009b")"))
        << json;
    const std::string prom = lanes::ctl::prometheus_text(report);
    EXPECT_FALSE(raw_control(prom, true)) << prom;
    EXPECT_FALSE(contains(prom, "\n# TYPE fake")) << prom;
    EXPECT_TRUE(contains(prom, "device=\"eth0\\n# TYPE fake counter\"")) << prom;
    EXPECT_TRUE(contains(prom, "class=\"evil\xef\xbf\xbd[2J\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"")) << prom;
}

TEST(LanesctlGc, StepdProcessTitle) {
    using lanes::stepd_job_id;
    EXPECT_EQ(stepd_job_id(std::string("slurmstepd: [1234.batch]\0\0", 27)), 1234u);
    EXPECT_EQ(stepd_job_id("slurmstepd: [77.extern]"), 77u);
    EXPECT_EQ(stepd_job_id("slurmstepd: [77.0]"), 77u);
    EXPECT_EQ(stepd_job_id("slurmstepd: [5]"), 5u);
    EXPECT_EQ(stepd_job_id("slurmstepd: [abc.batch]"), std::nullopt);
    EXPECT_EQ(stepd_job_id("slurmstepd: [12"), std::nullopt);
    EXPECT_EQ(stepd_job_id("slurmstepd"), std::nullopt);
    EXPECT_EQ(stepd_job_id(std::string("/usr/sbin/slurmstepd\0slurmstepd: [1.batch]", 42)), std::nullopt);
    EXPECT_EQ(stepd_job_id("bash\0-c\0slurmstepd: [9.batch]"), std::nullopt);
    EXPECT_EQ(stepd_job_id(""), std::nullopt);
}

TEST(LanesctlGc, Output) {
    lanes::ctl::GcReport report;
    report.node = "gpu1";
    lanes::JobState dead;
    dead.job_id = 12;
    dead.class_name = "training";
    lanes::JobState live;
    live.job_id = 13;
    live.class_name = "inference";
    report.removed.push_back({dead, "no slurmstepd here, cgroup empty or gone"});
    report.kept.push_back({live, "slurmstepd pid 812"});
    EXPECT_EQ(lanes::ctl::format_gc_human(report),
              "removed job 12 (training): no slurmstepd here, cgroup empty or gone\n"
              "kept job 13 (inference): slurmstepd pid 812\n");
    report.dry_run = true;
    EXPECT_TRUE(contains(lanes::ctl::format_gc_human(report), "would remove job 12 (training)"));
    EXPECT_EQ(lanes::json::write(lanes::ctl::gc_json(report)),
              R"({"node":"gpu1","dry_run":true,"all":false,"removed":[{"job_id":12,"class":"training",)"
              R"("why":"no slurmstepd here, cgroup empty or gone"}],"kept":[{"job_id":13,"class":"inference",)"
              R"("why":"slurmstepd pid 812"}],"devices_reset":[],"errors":[]})");
    lanes::ctl::GcReport all;
    all.node = "gpu1";
    all.all = true;
    all.devices_reset = {"eth0"};
    EXPECT_EQ(lanes::ctl::format_gc_human(all), "removed lanes qdiscs on eth0\nremoved nft table inet lanes\n");
    lanes::ctl::GcReport none;
    none.node = "gpu1";
    EXPECT_EQ(lanes::ctl::format_gc_human(none), "no Lanes jobs on gpu1\n");
}

}  // namespace
