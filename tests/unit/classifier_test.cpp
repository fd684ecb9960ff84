// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "ctld/builtin_rules.hpp"
#include "ctld/classifier.hpp"
#include "tests/unit/fixed_windows.hpp"

namespace lanes {
namespace {

using test::utc;
namespace fs = std::filesystem;

const SysSeconds kPeak = utc(2026, 11, 30, 9);      // Monday 09:00 UTC, inside "peak"
const SysSeconds kOffPeak = utc(2026, 11, 30, 21);  // Monday 21:00 UTC

class TempDir {
public:
    TempDir() {
        char tmpl[] = "/tmp/lanes-classifier-XXXXXX";
        path_ = ::mkdtemp(tmpl);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    std::string file(const std::string& name) const { return (path_ / name).string(); }
    // Replace atomically (new inode), as editors and config management do.
    void write(const std::string& name, const std::string& text) const {
        std::string tmp = file(name + ".tmp");
        std::ofstream(tmp) << text;
        fs::rename(tmp, file(name));
    }

private:
    fs::path path_;
};

Config base_config() {
    Config c;
    c.path = "/etc/slurm/lanes.toml";
    c.default_class = "batch";
    ClassConfig training;
    training.name = "training";
    training.rank = 1;
    training.partitions = {"train"};
    training.qos = "training";
    training.avoid_windows = {"peak"};
    training.window_overrun = OverrunAction::Defer;
    training.borrow_partitions = {"infer"};
    training.allowed_accounts = {"ml"};
    training.policy_overrides = {"time_limit", "nice"};
    training.dscp = 8;
    training.rate = Rate{10000000000ull, 0};
    training.ceil = Rate{25000000000ull, 0};
    training.user_may_lower_cap = true;
    training.rdma_service_level = 1;
    training.ingress_rate = Rate{2000000000ull, 0};
    training.ingress_ceil = Rate{5000000000ull, 0};
    ClassConfig inference;
    inference.name = "inference";
    inference.rank = 7;
    inference.partitions = {"infer"};
    inference.qos = "inference";
    inference.allowed_users = {"*"};
    inference.policy_overrides = {"partition", "qos"};
    inference.dscp = 34;
    inference.rate = Rate{0, 40};
    inference.ceil = Rate{0, 100};
    inference.user_may_lower_cap = true;
    ClassConfig batch;
    batch.name = "batch";
    batch.rank = 3;
    batch.dscp = 0;
    batch.rate = Rate{0, 20};
    c.classes = {{"training", training}, {"inference", inference}, {"batch", batch}};
    ClassRule r1;
    r1.class_name = "inference";
    r1.partitions = {"infer"};
    r1.line = 40;
    ClassRule r2;
    r2.class_name = "training";
    r2.gres = "gpu";
    r2.min_gpus = 8;
    r2.interactive = false;
    r2.line = 45;
    c.rules = {r1, r2};
    c.policy.time_budget = std::chrono::seconds(5);  // not what these tests are about
    return c;
}

JobView training_job() {
    JobView j;
    j.name = "train-llm";
    j.user = "bob";
    j.uid = 1002;
    j.account = "ml";
    j.partition = "train";
    j.tres_per_node = "gres:gpu:8";
    j.gpus = 8;
    j.time_limit_minutes = 120;
    j.batch = true;
    j.submit_time = kPeak;
    return j;
}

struct Logs {
    std::mutex mu;
    std::vector<std::string> lines;
    LogSink sink() {
        return [this](LogLevel, const std::string& line) {
            std::lock_guard lock(mu);
            lines.push_back(line);
        };
    }
    size_t count(const std::string& needle) {
        std::lock_guard lock(mu);
        size_t n = 0;
        for (const auto& l : lines)
            if (l.find(needle) != std::string::npos) ++n;
        return n;
    }
    std::string text() {  // for a failure's message
        std::lock_guard lock(mu);
        std::string all;
        for (const auto& l : lines) all += l + "\n";
        return all;
    }
};

std::shared_ptr<const WindowOracle> peak_oracle() {
    auto w = std::make_shared<test::FixedWindows>();
    w->daily("peak", utc(2026, 11, 30), 8, 20);
    return w;
}

std::unique_ptr<Classifier> make(Config cfg, Logs& logs) {
    auto c = Classifier::from_config(std::move(cfg), logs.sink(), {}, peak_oracle());
    EXPECT_TRUE(c) << (c ? "" : c.error().message);
    return c ? std::move(*c) : nullptr;
}

// A Config whose policy is `script`, written to dir.
Config with_policy(const TempDir& dir, const std::string& script, Config cfg = base_config()) {
    dir.write("policy.lua", script);
    cfg.policy.script = dir.file("policy.lua");
    return cfg;
}

bool has_message(const Decision& d, const std::string& needle) {
    for (const auto& m : d.user_messages)
        if (m.find(needle) != std::string::npos) return true;
    return false;
}

// ------------------------------------------------------------ built-in rules

TEST(ClassifierRules, Matchers) {
    JobView j;
    j.name = "serve-llama";
    j.partition = "debug,infer";
    j.tres_per_job = "gres/gpu:a100:2";
    j.gpus = 2;
    j.account = "ml";
    j.user = "bob";
    ClassRule r;
    EXPECT_TRUE(rule_matches(r, j));  // no matchers: matches all
    r.partitions = {"infer"};
    EXPECT_TRUE(rule_matches(r, j));
    r.partitions = {"debu"};
    EXPECT_FALSE(rule_matches(r, j));
    r = {};
    r.name_patterns = {"train-*", "serve-*"};
    EXPECT_TRUE(rule_matches(r, j));
    r.name_patterns = {"serve"};
    EXPECT_FALSE(rule_matches(r, j));
    r = {};
    r.gres = "gpu";
    EXPECT_TRUE(rule_matches(r, j));
    r.gres = "gpu:a100";
    EXPECT_TRUE(rule_matches(r, j));
    r.gres = "gpu:h100";
    EXPECT_FALSE(rule_matches(r, j));
    r.gres = "gp";
    EXPECT_FALSE(rule_matches(r, j));
    r = {};
    r.min_gpus = 2;
    EXPECT_TRUE(rule_matches(r, j));
    r.min_gpus = 3;
    EXPECT_FALSE(rule_matches(r, j));
    r = {};
    r.interactive = true;
    EXPECT_TRUE(rule_matches(r, j));  // batch = false
    j.batch = true;
    EXPECT_FALSE(rule_matches(r, j));
    r = {};
    r.accounts = {"ml"};
    r.users = {"alice"};
    EXPECT_FALSE(rule_matches(r, j));
    r.users = {"bob"};
    EXPECT_TRUE(rule_matches(r, j));
}

TEST(ClassifierRules, GresSpellings) {
    JobView j;
    for (const char* tres : {"gres:gpu:4", "gres/gpu:4", "gpu:4", "gres:gpu", "gres:nic:1,gres:gpu:4"}) {
        j.tres_per_node = tres;
        EXPECT_TRUE(tres_requests_gres(j, "gpu")) << tres;
    }
    for (const char* tres : {"", "gres:gpux:4", "gres:nic:1", "license:gpu"}) {
        j.tres_per_node = tres;
        EXPECT_FALSE(tres_requests_gres(j, "gpu")) << tres;
    }
}

TEST(ClassifierRules, FirstMatchWinsAndIsDescribed) {
    Config c = base_config();
    JobView j = training_job();
    j.partition = "infer";
    const ClassRule* r = match_rules(c.rules, j);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->class_name, "inference");
    EXPECT_EQ(describe_rule(c.rules, *r, c.path), "rule 1 (lanes.toml:40)");
    j.partition = "train";
    r = match_rules(c.rules, j);
    ASSERT_TRUE(r);
    EXPECT_EQ(describe_rule(c.rules, *r, c.path), "rule 2 (lanes.toml:45)");
    j.gpus = 1;
    EXPECT_EQ(match_rules(c.rules, j), nullptr);
}

// ------------------------------------------------------------ classification

TEST(Classifier, BuiltinRulesWithoutPolicy) {
    Logs logs;
    auto c = make(base_config(), logs);
    Decision d = c->classify(training_job(), kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Accept);
    EXPECT_EQ(d.class_name, "training");
    EXPECT_EQ(d.partition, "train,infer");  // off-peak and ends before peak: borrows
    EXPECT_EQ(d.qos, "training");
    EXPECT_NE(d.reason.find("class training: rule 2 (lanes.toml:45)"), std::string::npos) << d.reason;
    EXPECT_FALSE(d.begin_time);
}

TEST(Classifier, TrainingAtPeakIsDeferred) {
    Logs logs;
    auto c = make(base_config(), logs);
    Decision d = c->classify(training_job(), kPeak);
    EXPECT_EQ(d.class_name, "training");
    EXPECT_EQ(d.begin_time, utc(2026, 11, 30, 20));
    EXPECT_EQ(d.partition, "train");
    EXPECT_TRUE(has_message(d, "lanes: training job deferred to Mon 20:00 UTC (peak window)"));
    EXPECT_NE(d.reason.find("deferred past window 'peak'"), std::string::npos) << d.reason;
}

TEST(Classifier, DefaultClassWhenNothingMatches) {
    Logs logs;
    auto c = make(base_config(), logs);
    JobView j = training_job();
    j.gpus = 1;
    Decision d = c->classify(j, kPeak);
    EXPECT_EQ(d.class_name, "batch");
    EXPECT_EQ(d.reason, "class batch: default_class");
    EXPECT_FALSE(d.partition);
    EXPECT_FALSE(d.begin_time);
    EXPECT_TRUE(d.defaulted);  // counted in lanes_controller_jobs_defaulted_total
    EXPECT_FALSE(d.policy_failed);
    EXPECT_FALSE(c->classify(training_job(), kPeak).defaulted);  // a rule chose training
}

TEST(Classifier, NetworkFromClass) {
    Logs logs;
    auto c = make(base_config(), logs);
    Decision d = c->classify(training_job(), kOffPeak);
    EXPECT_EQ(d.network.dscp, 8);
    EXPECT_EQ(d.network.rate, (Rate{10000000000ull, 0}));
    EXPECT_EQ(d.network.ceil, (Rate{25000000000ull, 0}));
    EXPECT_EQ(d.network.rdma_traffic_class, 32);  // dscp << 2
    EXPECT_EQ(d.network.rdma_service_level, 1);
    EXPECT_EQ(d.network.rank, 1);
    JobView j = training_job();
    j.gpus = 1;
    d = c->classify(j, kOffPeak);  // batch: ceil defaults to rate
    EXPECT_EQ(d.network.ceil, (Rate{0, 20}));
    EXPECT_EQ(d.network.rdma_traffic_class, 0);
    EXPECT_EQ(d.network.rank, 3);
}

TEST(Classifier, ExplicitClassRequests) {
    Logs logs;
    auto c = make(base_config(), logs);
    JobView j = training_job();
    j.gpus = 1;
    j.requested_class = "training";  // account ml is allowed
    Decision d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Accept);
    EXPECT_EQ(d.class_name, "training");
    EXPECT_NE(d.reason.find("requested with --lanes-class"), std::string::npos) << d.reason;

    j.account = "physics";
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_EQ(d.reject_kind, Decision::RejectKind::ClassNotAllowed);
    EXPECT_NE(d.reason.find("you may not request class 'training'"), std::string::npos) << d.reason;
    EXPECT_NE(d.reason.find("account 'physics'"), std::string::npos) << d.reason;

    d = c->classify(j, kOffPeak, /*is_admin=*/true);
    EXPECT_EQ(d.verdict, Decision::Verdict::Accept);
    EXPECT_EQ(d.class_name, "training");

    j.requested_class = "trainig";
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_EQ(d.reject_kind, Decision::RejectKind::InvalidOption);
    EXPECT_NE(d.reason.find("unknown class 'trainig'"), std::string::npos) << d.reason;
    EXPECT_NE(d.reason.find("classes you may request: inference"), std::string::npos) << d.reason;

    j.requested_class = "batch";  // nobody listed
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_NE(d.reason.find("cannot be requested explicitly"), std::string::npos) << d.reason;
}

TEST(Classifier, CapRequests) {
    Logs logs;
    auto c = make(base_config(), logs);
    JobView j = training_job();
    j.requested_cap = "5Gbit";
    Decision d = c->classify(j, kOffPeak);
    ASSERT_EQ(d.verdict, Decision::Verdict::Accept) << d.reason;
    EXPECT_EQ(d.network.ceil, (Rate{5000000000ull, 0}));
    EXPECT_EQ(d.network.rate, (Rate{5000000000ull, 0}));  // the guarantee follows the lower ceiling
    EXPECT_NE(d.reason.find("--lanes-cap=5Gbit"), std::string::npos);

    j.requested_cap = "20Gbit";
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.network.ceil, (Rate{20000000000ull, 0}));
    EXPECT_EQ(d.network.rate, (Rate{10000000000ull, 0}));

    j.requested_cap = "30Gbit";
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_EQ(d.reject_kind, Decision::RejectKind::InvalidOption);
    EXPECT_NE(d.reason.find("above class 'training' cap of 25Gbit"), std::string::npos) << d.reason;

    j.requested_cap = "10%";
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_NE(d.reason.find("as a rate"), std::string::npos) << d.reason;

    j.requested_cap = "fast";
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_NE(d.reason.find("--lanes-cap=fast"), std::string::npos) << d.reason;

    j.partition = "infer";  // inference: relative cap
    j.requested_cap = "50%";
    d = c->classify(j, kOffPeak);
    ASSERT_EQ(d.verdict, Decision::Verdict::Accept) << d.reason;
    EXPECT_EQ(d.network.ceil, (Rate{0, 50}));
    EXPECT_EQ(d.network.rate, (Rate{0, 40}));

    j.partition = "other";
    j.gpus = 1;  // batch: user_may_lower_cap = false
    j.requested_cap = "1Gbit";
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_NE(d.reason.find("class 'batch' does not allow --lanes-cap"), std::string::npos) << d.reason;
}

TEST(Classifier, IngressCapRequests) {
    Logs logs;
    auto c = make(base_config(), logs);
    JobView j = training_job();
    Decision d = c->classify(j, kOffPeak);
    ASSERT_EQ(d.verdict, Decision::Verdict::Accept) << d.reason;
    EXPECT_EQ(d.network.ingress_rate, (Rate{2000000000ull, 0}));  // the class's
    EXPECT_EQ(d.network.ingress_ceil, (Rate{5000000000ull, 0}));

    j.requested_cap = "out=2Gbit,in=1Gbit";
    d = c->classify(j, kOffPeak);
    ASSERT_EQ(d.verdict, Decision::Verdict::Accept) << d.reason;
    EXPECT_EQ(d.network.ceil, (Rate{2000000000ull, 0}));
    EXPECT_EQ(d.network.ingress_ceil, (Rate{1000000000ull, 0}));
    EXPECT_EQ(d.network.ingress_rate, (Rate{1000000000ull, 0}));  // follows the lower ceiling

    j.requested_cap = "in=3Gbit";  // egress stays the class's
    d = c->classify(j, kOffPeak);
    ASSERT_EQ(d.verdict, Decision::Verdict::Accept) << d.reason;
    EXPECT_EQ(d.network.ceil, (Rate{25000000000ull, 0}));
    EXPECT_EQ(d.network.ingress_ceil, (Rate{3000000000ull, 0}));
    EXPECT_EQ(d.network.ingress_rate, (Rate{2000000000ull, 0}));

    j.requested_cap = "out=2Gbit,in=6Gbit";  // more than the class
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_EQ(d.reject_kind, Decision::RejectKind::InvalidOption);
    EXPECT_NE(d.reason.find("--lanes-cap in=6Gbit is above class 'training' ingress_ceil of 5Gbit"), std::string::npos)
        << d.reason;

    j.requested_cap = "out=30Gbit,in=1Gbit";
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_NE(d.reason.find("--lanes-cap out=30Gbit is above class 'training' ceil of 25Gbit"), std::string::npos)
        << d.reason;

    j.requested_cap = "in=10%";
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_NE(d.reason.find("give --lanes-cap in= as a rate"), std::string::npos) << d.reason;

    j.requested_cap = "sideways=1Gbit";
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_NE(d.reason.find("unknown direction 'sideways'"), std::string::npos) << d.reason;
}

TEST(Classifier, WindowOverrunRejectKind) {
    Logs logs;
    Config cfg = base_config();
    cfg.classes["training"].window_overrun = OverrunAction::Reject;
    auto c = make(cfg, logs);
    JobView j = training_job();
    j.time_limit_minutes = 24 * 60;
    Decision d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_EQ(d.reject_kind, Decision::RejectKind::TimeWindow);
    EXPECT_NE(d.reason.find("window_overrun = reject"), std::string::npos) << d.reason;
}

TEST(Classifier, PolicyDecidesAndFallsThrough) {
    TempDir dir;
    Logs logs;
    auto c = make(with_policy(dir, R"(
        function classify(job)
            if job.name:match('^serve%-') then
                return {class = 'inference', reason = 'serving job', partition = 'infer,gpu'}
            end
            if job.name == 'odd' then lanes.user_message('lanes: odd job') return nil end
            return nil
        end)"),
                  logs);
    JobView j = training_job();
    j.name = "serve-llama";
    Decision d = c->classify(j, kPeak);
    EXPECT_EQ(d.class_name, "inference");
    EXPECT_EQ(d.partition, "infer,gpu");
    EXPECT_NE(d.reason.find("policy policy.lua:4 (serving job)"), std::string::npos) << d.reason;

    j.name = "odd";
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.class_name, "training");  // built-in rules
    EXPECT_TRUE(has_message(d, "lanes: odd job"));

    j.requested_class = "inference";
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.class_name, "inference");  // requested beats the rules when the policy abstains
}

TEST(Classifier, PolicyMayChooseAnyClassButRequestsAreChecked) {
    TempDir dir;
    Logs logs;
    auto c = make(with_policy(dir, "function classify(job) return job.lanes_class or 'training' end"), logs);
    JobView j = training_job();
    j.account = "physics";
    Decision d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.class_name, "training");  // the admin's policy may place anyone
    j.requested_class = "training";
    d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);  // a user's own request is checked first
}

TEST(Classifier, OverrideNotAllowedIsPolicyError) {
    TempDir dir;
    Logs logs;
    Config cfg = with_policy(dir, "function classify(job) return {class = 'training', partition = 'infer'} end");
    auto c = make(cfg, logs);
    ASSERT_TRUE(c);
    Decision d = c->classify(training_job(), kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Accept);
    EXPECT_EQ(d.class_name, "batch");
    EXPECT_NE(d.reason.find("does not list it in policy_overrides"), std::string::npos) << d.reason;
    EXPECT_TRUE(has_message(d, "the site policy failed; job placed in class 'batch'"));
    EXPECT_TRUE(has_message(d, "does not list it in policy_overrides"));  // and why
    EXPECT_EQ(logs.count("policy error"), 1u);
    // Log lines name the job as slurmctld does before it has a JobId, and
    // carry no "lanes: " prefix: the sink (glue, lanesctl) adds it.
    EXPECT_EQ(logs.count("JobName=train-llm UserId=bob(1002): policy error: "), 1u);
    EXPECT_EQ(logs.count("lanes: "), 0u);

    cfg.policy.on_error = PolicyFailureMode::Reject;
    auto r = make(cfg, logs);
    d = r->classify(training_job(), kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_EQ(d.reject_kind, Decision::RejectKind::Policy);
    EXPECT_NE(d.reason.find("site policy failed"), std::string::npos) << d.reason;
}

TEST(Classifier, AllowedOverridesApply) {
    TempDir dir;
    Logs logs;
    auto c = make(with_policy(dir, "function classify(job) return {class = 'training', time_limit = 60, nice = 5} end"),
                  logs);
    Decision d = c->classify(training_job(), kOffPeak);
    EXPECT_EQ(d.class_name, "training");
    EXPECT_EQ(d.time_limit_minutes, 60u);
    EXPECT_EQ(d.nice, 5);
}

TEST(Classifier, PolicyRuntimeErrorFailureModes) {
    TempDir dir;
    Logs logs;
    Config cfg =
        with_policy(dir, "function classify(job)\n if job.name == 'x' then error('boom') end\n return nil\nend");
    auto c = make(cfg, logs);
    JobView j = training_job();
    j.name = "x";
    Decision d = c->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Accept);
    EXPECT_EQ(d.class_name, "batch");
    EXPECT_NE(d.reason.find("policy error: /"), std::string::npos) << d.reason;
    EXPECT_NE(d.reason.find("policy.lua:2: boom"), std::string::npos) << d.reason;
    EXPECT_EQ(logs.count("policy.lua:2: boom"), 1u);
    EXPECT_TRUE(d.defaulted);
    EXPECT_TRUE(d.policy_failed);

    cfg.policy.on_error = PolicyFailureMode::Reject;
    auto r = make(cfg, logs);
    d = r->classify(j, kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_TRUE(d.policy_failed);
    EXPECT_NE(d.reason.find("policy.lua:2: boom"), std::string::npos) << d.reason;
    EXPECT_EQ(logs.count("policy.lua:2: boom"), 2u);
}

TEST(Classifier, PolicyReject) {
    TempDir dir;
    Logs logs;
    auto c = make(
        with_policy(dir, "function classify(job) lanes.user_message('see docs') reject('no GPUs for you') end"), logs);
    Decision d = c->classify(training_job(), kOffPeak);
    EXPECT_EQ(d.verdict, Decision::Verdict::Reject);
    EXPECT_EQ(d.reject_kind, Decision::RejectKind::Policy);
    EXPECT_EQ(d.reason, "lanes: no GPUs for you");
    EXPECT_EQ(d.user_messages, (std::vector<std::string>{"see docs"}));
}

TEST(Classifier, BrokenPolicyFailsCreation) {
    TempDir dir;
    Logs logs;
    auto c = Classifier::from_config(with_policy(dir, "function classify(job) return 'nope' end"), logs.sink(), {},
                                     peak_oracle());
    ASSERT_FALSE(c);
    EXPECT_NE(c.error().message.find("unknown class 'nope'"), std::string::npos) << c.error().message;
    auto s = Classifier::from_config(with_policy(dir, "function classify(job) return 'batch'"), logs.sink(), {},
                                     peak_oracle());
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("policy.lua:1:"), std::string::npos) << s.error().message;
}

// ------------------------------------------------------------ reload (real files)

// These tests are about reloads, not budgets: the default time budget (20 ms
// of wall time for a load, its self-check or a call) can run out on a loaded
// machine, and a reload or a call then fails for a reason no test here checks.
const char* kToml = R"(default_class = "batch"
[policy]
script = "policy.lua"
time_budget = "5s"
[classes.batch]
rank = 3
[classes.training]
rank = 1
)";

TEST(Classifier, ReloadGoodBrokenFixed) {
    TempDir dir;
    dir.write("lanes.toml", kToml);
    dir.write("policy.lua", "function classify(job) return 'batch' end\n");
    Logs logs;
    ClassifierOptions o;
    o.min_reload_interval = std::chrono::milliseconds(0);
    auto made = Classifier::create(dir.file("lanes.toml"), logs.sink(), o);
    ASSERT_TRUE(made) << made.error().message;
    auto& c = *made;
    JobView j = training_job();
    EXPECT_EQ(c->classify(j, kOffPeak).class_name, "batch");
    EXPECT_FALSE(c->reload_if_changed());  // nothing changed

    dir.write("policy.lua", "function classify(job)\n  return 'training' +\nend\n");
    EXPECT_FALSE(c->reload_if_changed());
    EXPECT_FALSE(c->reload_if_changed());
    EXPECT_FALSE(c->reload_if_changed());
    EXPECT_EQ(logs.count("reload failed"), 1u);               // once, not per check
    EXPECT_EQ(logs.count("policy.lua:3:"), 1u);               // names file:line
    EXPECT_EQ(c->classify(j, kOffPeak).class_name, "batch");  // the last good one

    dir.write("policy.lua", "function classify(job) return 'training' end\n");
    EXPECT_TRUE(c->reload_if_changed());
    EXPECT_EQ(c->classify(j, kOffPeak).class_name, "training");
    EXPECT_EQ(logs.count("reloaded"), 1u);

    // A broken lanes.toml keeps the current generation too.
    dir.write("lanes.toml", std::string(kToml) + "bogus_key = 1\n");
    EXPECT_FALSE(c->reload_if_changed());
    EXPECT_FALSE(c->reload_if_changed());
    EXPECT_EQ(logs.count("reload failed"), 2u);
    EXPECT_EQ(c->classify(j, kOffPeak).class_name, "training");
    dir.write("lanes.toml", kToml);
    EXPECT_TRUE(c->reload_if_changed());
}

// slurmctld starts whatever the policy does (a hang at load included, with
// the policy workers): jobs get on_error with the reason, and a fixed policy
// is picked up by the next reload; reloads are counted.
TEST(Classifier, StartsWithoutABrokenPolicyAndReloadsAFixedOne) {
    if (!std::getenv("LANES_POLICY_WORKER")) GTEST_SKIP() << "LANES_POLICY_WORKER is not set (make check sets it)";
    TempDir dir;
    dir.write("lanes.toml", R"(default_class = "batch"
[policy]
script = "policy.lua"
time_budget = "20ms"
[classes.batch]
rank = 3
[classes.training]
rank = 1
)");
    dir.write("policy.lua",
              "xpcall(function() while true do end end, function() while true do end end)\n"
              "function classify(job) return 'training' end\n");
    Logs logs;
    ClassifierOptions o;
    o.min_reload_interval = std::chrono::milliseconds(0);
    auto refused = Classifier::create(dir.file("lanes.toml"), logs.sink(), o);
    ASSERT_FALSE(refused);  // lanesctl check: an error
    EXPECT_TRUE(refused.error().message.find("did not load the policy within") != std::string::npos ||
                refused.error().message.find("budget exceeded") != std::string::npos)
        << refused.error().message;
    o.start_without_policy = true;
    auto made = Classifier::create(dir.file("lanes.toml"), logs.sink(), o);
    ASSERT_TRUE(made) << made.error().message;
    auto& c = *made;
    Decision d = c->classify(training_job(), kOffPeak);
    EXPECT_EQ(d.class_name, "batch");
    EXPECT_TRUE(has_message(d, "the policy did not load")) << d.reason;
    EXPECT_EQ(logs.count("is not loaded"), 1u);

    dir.write("policy.lua", "function classify(job) return 'training' end\n");
    EXPECT_TRUE(c->reload_if_changed());
    EXPECT_EQ(c->classify(training_job(), kOffPeak).class_name, "training");
    dir.write("policy.lua", "function classify(job)\n  return (\nend\n");
    EXPECT_FALSE(c->reload_if_changed());
    EXPECT_EQ(c->classify(training_job(), kOffPeak).class_name, "training");  // the last good one
    EXPECT_EQ(c->stats().reloads, 1u);
    EXPECT_EQ(c->stats().reload_failures, 1u);
    EXPECT_EQ(c->stats().policy.classifications, 3u);  // the self-check and two jobs
    // A replaced policy's counters carry over; the Prometheus text has them.
    dir.write("policy.lua", "function classify(job) return 'batch' end\n");
    EXPECT_TRUE(c->reload_if_changed());
    EXPECT_EQ(c->stats().policy.classifications, 4u);  // and the new one's self-check
    std::string prom = stats_prometheus(c->stats());
    EXPECT_NE(prom.find("\nlanes_policy_classifications_total 4\n"), std::string::npos) << prom;
    EXPECT_NE(prom.find("\nlanes_reloads_total{outcome=\"done\"} 2\n"), std::string::npos) << prom;
    EXPECT_NE(prom.find("\nlanes_reloads_total{outcome=\"refused\"} 1\n"), std::string::npos) << prom;
    EXPECT_NE(prom.find("# TYPE lanes_policy_refused_total counter"), std::string::npos) << prom;
}

TEST(Classifier, ReloadIsRateLimited) {
    TempDir dir;
    dir.write("lanes.toml", kToml);
    dir.write("policy.lua", "function classify(job) return 'batch' end\n");
    Logs logs;
    ClassifierOptions o;
    o.min_reload_interval = std::chrono::hours(1);
    auto made = Classifier::create(dir.file("lanes.toml"), logs.sink(), o);
    ASSERT_TRUE(made) << made.error().message;
    dir.write("policy.lua", "function classify(job) return 'training' end\n");
    EXPECT_FALSE((*made)->reload_if_changed());
    EXPECT_EQ((*made)->classify(training_job(), kOffPeak).class_name, "batch");
}

TEST(Classifier, ReloadSeesSameSizeRewriteInTheSameSecond) {
    TempDir dir;
    dir.write("lanes.toml", kToml);
    const std::string before = "function classify(job) return 'batch'    end\n";
    const std::string after = "function classify(job) return 'training' end\n";
    ASSERT_EQ(before.size(), after.size());
    std::ofstream(dir.file("policy.lua")) << before;
    Logs logs;
    ClassifierOptions o;
    o.min_reload_interval = std::chrono::milliseconds(0);
    auto made = Classifier::create(dir.file("lanes.toml"), logs.sink(), o);
    ASSERT_TRUE(made) << made.error().message;
    EXPECT_EQ((*made)->classify(training_job(), kOffPeak).class_name, "batch");
    struct stat was {};
    ASSERT_EQ(::stat(dir.file("policy.lua").c_str(), &was), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the file system's clock tick
    // In place, same size, same inode: only the mtime's nanoseconds may differ.
    std::ofstream(dir.file("policy.lua"), std::ios::trunc) << after;
    struct stat now {};
    ASSERT_EQ(::stat(dir.file("policy.lua").c_str(), &now), 0);
    ASSERT_EQ(now.st_ino, was.st_ino);
    ASSERT_EQ(now.st_size, was.st_size);
    EXPECT_TRUE((*made)->reload_if_changed()) << logs.text();
    EXPECT_EQ((*made)->classify(training_job(), kOffPeak).class_name, "training");
}

TEST(Classifier, ConcurrentClassifyWhileReloading) {
    TempDir dir;
    dir.write("lanes.toml", kToml);
    dir.write("policy.lua", "function classify(job) return 'batch' end\n");
    Logs logs;
    ClassifierOptions o;
    o.min_reload_interval = std::chrono::milliseconds(0);
    o.max_lua_states = 3;
    auto made = Classifier::create(dir.file("lanes.toml"), logs.sink(), o);
    ASSERT_TRUE(made) << made.error().message;
    Classifier& c = **made;
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0}, calls{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < 4; ++t) {
        workers.emplace_back([&] {
            JobView j = training_job();
            // At least a few calls each, however late this thread is scheduled.
            for (int n = 0; !stop || n < 5; ++n) {
                Decision d = c.classify(j, kOffPeak);
                if (d.verdict != Decision::Verdict::Accept || (d.class_name != "batch" && d.class_name != "training"))
                    ++bad;
                ++calls;
                c.reload_if_changed();
            }
        });
    }
    int swaps = 0;
    for (int i = 0; i < 20; ++i) {
        dir.write("policy.lua", std::string("function classify(job) return '") + (i % 2 ? "batch" : "training") +
                                    "' end\n-- " + std::to_string(i) + "\n");
        if (i % 5 == 4) dir.write("policy.lua", "broken(\n");  // a broken version in between
        std::this_thread::sleep_for(std::chrono::milliseconds(15));
        if (c.reload_if_changed()) ++swaps;
    }
    stop = true;
    for (auto& w : workers) w.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_GE(calls.load(), 20);
    EXPECT_GE(logs.count("reloaded"), 1u);
    (void)swaps;
}

}  // namespace
}  // namespace lanes
