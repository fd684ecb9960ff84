// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>

#include "ctld/policy.hpp"
#include "tests/unit/fixed_windows.hpp"

namespace lanes {
namespace {

using test::utc;

std::shared_ptr<const Config> test_config() {
    Config c;
    c.path = "/etc/slurm/lanes.toml";
    c.default_class = "batch";
    ClassConfig training;
    training.name = "training";
    training.rank = 1;
    training.partitions = {"gpu"};
    training.policy_overrides = {"partition", "time_limit"};
    training.dscp = 8;
    training.rate = Rate{25000000000ull, 0};
    ClassConfig inference;
    inference.name = "inference";
    inference.rank = 7;
    inference.rate = Rate{0, 40};
    ClassConfig batch;
    batch.name = "batch";
    c.classes = {{"training", training}, {"inference", inference}, {"batch", batch}};
    ClassRule r1;
    r1.class_name = "inference";
    r1.name_patterns = {"serve-*"};
    r1.line = 40;
    ClassRule r2;
    r2.class_name = "training";
    r2.gres = "gpu";
    r2.line = 45;
    c.rules = {r1, r2};
    c.policy.instruction_budget = 200000;
    c.policy.memory_limit_bytes = 4u << 20;
    // Generous: only Policy.TimeBudget is about time (valgrind and busy CI machines are slow).
    c.policy.time_budget = std::chrono::seconds(5);
    return std::make_shared<const Config>(std::move(c));
}

JobView sample_job() {
    JobView j;
    j.name = "train-llm";
    j.user = "alice";
    j.uid = 1001;
    j.account = "ml";
    j.partition = "gpu";
    j.tres_per_node = "gres:gpu:8";
    j.gpus = 8;
    j.min_nodes = 2;
    j.max_nodes = 2;
    j.num_tasks = 16;
    j.time_limit_minutes = 120;
    j.batch = true;
    j.environment = {{"HOME", "/home/alice"}, {"LANES_HINT", "big"}};
    j.submit_time = utc(2026, 11, 30, 9);
    return j;
}

struct Harness {
    std::vector<std::string> logs;
    std::mutex mu;
    test::FixedWindows windows;
    std::shared_ptr<Policy> policy;
    std::string compile_error;

    explicit Harness(const std::string& script, std::shared_ptr<const Config> config = test_config(),
                     size_t states = 1) {
        windows.daily("peak", utc(2026, 11, 30), 8, 20);
        auto p = Policy::compile(
            script, "/etc/slurm/test.lua", std::move(config),
            [this](LogLevel, const std::string& line) {
                std::lock_guard lock(mu);
                logs.push_back(line);
            },
            states);
        if (p) policy = *p;
        else compile_error = p.error().message;
    }
    PolicyOutcome run(const JobView& job = sample_job(), SysSeconds now = utc(2026, 11, 30, 9)) {
        return policy->classify(job, now, windows);
    }
};

// A script whose classify(job) body is `body`.
std::string with_body(const std::string& body) { return "function classify(job)\n" + body + "\nend\n"; }

void expect_error(const PolicyOutcome& out, const std::string& needle) {
    EXPECT_EQ(out.kind, PolicyOutcome::Kind::Error) << out.class_name;
    EXPECT_NE(out.error.find(needle), std::string::npos) << "error: " << out.error << "\nwanted: " << needle;
}

TEST(Policy, ReturnsClassName) {
    Harness h(with_body("return 'training'"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    auto out = h.run();
    EXPECT_EQ(out.kind, PolicyOutcome::Kind::Class);
    EXPECT_EQ(out.class_name, "training");
    EXPECT_EQ(out.location, "test.lua:2");
}

TEST(Policy, NilFallsThrough) {
    Harness h(with_body("return nil"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    EXPECT_EQ(h.run().kind, PolicyOutcome::Kind::FallThrough);
}

TEST(Policy, TableWithOverrides) {
    Harness h(with_body(R"(return {class = 'training', reason = 'big job', message = {'one', 'two'},
        partition = {'gpu', 'spare'}, qos = 'low', features = {'a', 'b'}, nice = 10,
        begin_time = 1800000000, time_limit = '1-00:00:00'})"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    auto out = h.run();
    ASSERT_EQ(out.kind, PolicyOutcome::Kind::Class) << out.error;
    EXPECT_EQ(out.class_name, "training");
    EXPECT_EQ(out.reason, "big job");
    EXPECT_EQ(out.user_messages, (std::vector<std::string>{"one", "two"}));
    EXPECT_EQ(out.partition, "gpu,spare");
    EXPECT_EQ(out.qos, "low");
    EXPECT_EQ(out.features, "a&b");
    EXPECT_EQ(out.nice, 10);
    EXPECT_EQ(out.begin_time, SysSeconds{std::chrono::seconds{1800000000}});
    EXPECT_EQ(out.time_limit_minutes, 1440u);
    EXPECT_EQ(out.overrides(),
              (std::vector<std::string>{"partition", "qos", "features", "nice", "begin_time", "time_limit"}));
}

TEST(Policy, JobFieldsAndIntegerTypes) {
    Harness h(with_body(R"(
        assert(job.name == 'train-llm' and job.user == 'alice' and job.account == 'ml')
        assert(job.partition == 'gpu' and job.tres_per_node == 'gres:gpu:8' and job.tres_per_job == '')
        assert(job.comment == '' and job.qos == '' and job.features == '')
        for _, k in ipairs{'uid', 'gpus', 'min_nodes', 'max_nodes', 'num_tasks', 'time_limit', 'submit_time'} do
            assert(math.type(job[k]) == 'integer', k .. ' is ' .. tostring(math.type(job[k])))
        end
        assert(job.gpus == 8 and job.uid == 1001 and job.time_limit == 120 and job.num_tasks == 16)
        assert(job.submit_time == lanes.now())
        assert(job.batch == true and job.env.HOME == '/home/alice' and job.env.NOPE == nil)
        assert(job.lanes_class == nil and job.lanes_cap == nil and job.begin_time == nil)
        local n = 0
        for k, v in pairs(job) do n = n + 1 end
        local e = 0
        for k, v in pairs(job.env) do e = e + 1 end
        assert(e == 2, 'env entries ' .. e)
        return {class = 'training', reason = tostring(n)})"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    auto out = h.run(sample_job(), utc(2026, 11, 30, 9));
    ASSERT_EQ(out.kind, PolicyOutcome::Kind::Class) << out.error;
    // Fields with values: all but lanes_class, lanes_cap, begin_time.
    EXPECT_EQ(out.reason, "18");
}

TEST(Policy, OptionalFieldsAndNoEnvWithoutBatch) {
    Harness h(with_body(R"(
        assert(job.env == nil, 'env without batch script')
        assert(job.time_limit == nil)
        assert(job.lanes_class == 'inference' and job.lanes_cap == '5Gbit')
        assert(math.type(job.begin_time) == 'integer')
        return 'batch')"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    JobView j = sample_job();
    j.batch = false;
    j.time_limit_minutes.reset();
    j.requested_class = "inference";
    j.requested_cap = "5Gbit";
    j.begin_time = utc(2026, 12, 1);
    auto out = h.run(j);
    EXPECT_EQ(out.kind, PolicyOutcome::Kind::Class) << out.error;
}

TEST(Policy, UnknownJobFieldIsAnError) {
    Harness h(with_body("return job.partiton"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    expect_error(h.run(), "job has no field 'partiton'");
}

TEST(Policy, RejectHelperAndField) {
    Harness a(with_body("if job.gpus > 4 then reject('too many GPUs for this account') end return 'batch'"));
    ASSERT_TRUE(a.policy) << a.compile_error;
    auto out = a.run();
    EXPECT_EQ(out.kind, PolicyOutcome::Kind::Reject);
    EXPECT_EQ(out.reject_message, "too many GPUs for this account");
    EXPECT_EQ(out.location, "test.lua:2");

    Harness b(with_body("return {reject = 'no'}"));
    ASSERT_TRUE(b.policy) << b.compile_error;
    out = b.run();
    EXPECT_EQ(out.kind, PolicyOutcome::Kind::Reject);
    EXPECT_EQ(out.reject_message, "no");

    // reject() is final even when the script catches it.
    Harness c(with_body("pcall(lanes.reject, 'caught') return 'batch'"));
    ASSERT_TRUE(c.policy) << c.compile_error;
    EXPECT_EQ(c.run().kind, PolicyOutcome::Kind::Reject);
}

TEST(Policy, RuntimeErrorNamesFileAndLine) {
    Harness h(with_body("local x = nil\nreturn x.y"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    expect_error(h.run(), "test.lua:3:");
    Harness e(with_body("error('custom failure')"));
    expect_error(e.run(), "test.lua:2: custom failure");
    Harness t(with_body("error({})"));
    expect_error(t.run(), "error object is a table value");
}

TEST(Policy, WrongReturnTypes) {
    struct Case {
        const char* body;
        const char* needle;
    } cases[] = {
        {"return 42", "must return a class name, a table or nil, not a number"},
        {"return true", "not a boolean"},
        {"return ''", "empty class name"},
        {"return {klass = 'x'}", "unknown field 'klass'"},
        {"return {reason = 'r'}", "without 'class'"},
        {"return {class = 'training', nice = 1.5}", "field 'nice' must be an integer"},
        {"return {class = 'training', time_limit = 0}", "positive number of minutes"},
        {"return {class = 'training', time_limit = 'soon'}", "not a Slurm time limit"},
        {"return {class = 'training', partition = {1}}", "must list strings"},
        {"return {class = 'training', [1] = 'x'}", "number key"},
        {"return {class = 7}", "field 'class' must be a string"},
        {"return {class = 'training', begin_time = -1}", "seconds since the epoch"},
    };
    for (const auto& c : cases) {
        Harness h(with_body(c.body));
        ASSERT_TRUE(h.policy) << h.compile_error;
        SCOPED_TRACE(c.body);
        expect_error(h.run(), c.needle);
    }
}

// Every attempt must fail cleanly and leave the engine usable.
TEST(Policy, SandboxEscapesFail) {
    struct Case {
        const char* body;
        const char* needle;
    } cases[] = {
        {"os.execute('id')", "global 'os'"},
        {"io.open('/etc/passwd')", "global 'io'"},
        {"require('os')", "global 'require'"},
        {"debug.sethook()", "global 'debug'"},
        {"package.loadlib('x', 'y')", "global 'package'"},
        {"dofile('/etc/passwd')", "global 'dofile'"},
        {"loadfile('/etc/passwd')", "global 'loadfile'"},
        {"coroutine.wrap(print)", "global 'coroutine'"},
        {"local f = assert(load('\\27Lua\\x54\\0')) f()", "attempt to load a binary chunk"},
        {"return string.dump(classify)", "field 'dump'"},
        {"collectgarbage('stop')", "collectgarbage('stop') is not available"},
        {"setmetatable(job, {})", "bad argument #1 to 'setmetatable'"},
        {"rawset(job, 'name', 'x')", "bad argument #1 to 'rawset'"},
        {"job.name = 'x'", "job is read-only (tried to set 'name')"},
        {"job.env.HOME = 'x'", "job.env is read-only"},
        {"lanes.log = print", "lanes is read-only"},
        {"rawset(lanes, 'log', print)", "bad argument #1 to 'rawset'"},
        {"lanes.classes.training.rank = 99", "read-only"},
        {"getmetatable(job).__index = nil", "attempt to index a boolean value"},
        {"local s = job; return s.nope", "job has no field"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.body);
        Harness h(with_body(std::string("if job.name == 'evil' then ") + c.body + " end return 'batch'"));
        ASSERT_TRUE(h.policy) << h.compile_error;
        JobView evil = sample_job();
        evil.name = "evil";
        expect_error(h.run(evil), c.needle);
        // The same engine keeps working afterwards.
        auto out = h.run();
        EXPECT_EQ(out.kind, PolicyOutcome::Kind::Class) << out.error;
        EXPECT_EQ(out.class_name, "batch");
    }
    // The same lua_State after an escape attempt keeps working.
    Harness same(with_body("if job.name == 'evil' then return os.execute('id') end return 'batch'"));
    JobView evil = sample_job();
    evil.name = "evil";
    expect_error(same.run(evil), "global 'os'");
    EXPECT_EQ(same.run().class_name, "batch");
}

TEST(Policy, LoadOfTextIsAllowed) {
    Harness h(with_body("local f = assert(load('return 1 + 1')) return f() == 2 and 'batch' or 'training'"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    EXPECT_EQ(h.run().class_name, "batch");
}

TEST(Policy, InstructionBudget) {
    Harness h(with_body("if job.name == 'loop' then while true do end end return 'batch'"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    JobView loop = sample_job();
    loop.name = "loop";
    expect_error(h.run(loop), "instruction budget exceeded");
    EXPECT_EQ(h.policy->rebuilds(), 1u);
    EXPECT_EQ(h.run().class_name, "batch");  // a fresh state
}

TEST(Policy, TopLevelGetsTenTimesTheInstructionBudget) {
    // lanes-policy(7): the top level of the script gets ten times the budgets.
    // It got the time budget ten times but the instruction budget only once.
    const std::string loop = "local n = 0 for i = 1, 150000 do n = n + i end";  // 300k..450k instructions
    Harness h(loop + "\n" + with_body("if job.name == 'loop' then " + loop + " end return 'batch'"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    JobView job = sample_job();
    job.name = "loop";
    expect_error(h.run(job), "instruction budget exceeded (200000 VM instructions)");
    EXPECT_EQ(h.run().class_name, "batch");
    Harness big("local n = 0 for i = 1, 1500000 do n = n + i end\n" + with_body("return 'batch'"));
    EXPECT_FALSE(big.policy);
    EXPECT_NE(big.compile_error.find("test.lua:1: instruction budget exceeded (2000000 VM instructions)"),
              std::string::npos)
        << big.compile_error;
}

TEST(Policy, BudgetCannotBeSwallowedByPcall) {
    Harness h(with_body("while true do pcall(function() while true do end end) end"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    expect_error(h.run(), "budget exceeded");
}

TEST(Policy, TimeBudget) {
    auto cfg = std::make_shared<Config>(*test_config());
    cfg->policy.instruction_budget = 1ull << 50;
    cfg->policy.time_budget = std::chrono::milliseconds(30);
    Harness h(with_body("if job.name == 'spin' then while true do end end return 'batch'"), cfg);
    ASSERT_TRUE(h.policy) << h.compile_error;
    JobView spin = sample_job();
    spin.name = "spin";
    // With 2^50 instructions allowed, only the time budget can end the loop.
    expect_error(h.run(spin), "time budget exceeded");
    EXPECT_EQ(h.run().class_name, "batch");
}

TEST(Policy, MemoryCap) {
    auto cfg = std::make_shared<Config>(*test_config());
    cfg->policy.instruction_budget = 1ull << 40;
    cfg->policy.time_budget = std::chrono::seconds(20);
    const char* bombs[] = {
        "local s = string.rep('x', 1 << 30) return 'batch'",
        "local t = {} for i = 1, 1 << 40 do t[i] = i end return 'batch'",
        "local s = 'x' while true do s = s .. s end",
        "local t = {} while true do t[#t + 1] = {} end",
    };
    for (const char* bomb : bombs) {
        SCOPED_TRACE(bomb);
        Harness h(std::string("function classify(job) if job.name == 'bomb' then ") + bomb + " end return 'batch' end",
                  cfg);
        ASSERT_TRUE(h.policy) << h.compile_error;
        JobView j = sample_job();
        j.name = "bomb";
        auto out = h.run(j);
        expect_error(out, "memory limit of 4194304 bytes exceeded");
        expect_error(out, "test.lua:1:");  // the line, even when memory ran out
        EXPECT_EQ(h.run().class_name, "batch");
    }
}

TEST(Policy, MemoryErrorCaughtByScriptStillDiscardsState) {
    auto cfg = std::make_shared<Config>(*test_config());
    cfg->policy.instruction_budget = 1ull << 40;
    Harness h(with_body("local ok = pcall(string.rep, 'x', 1 << 30) return ok and 'training' or 'batch'"), cfg);
    ASSERT_TRUE(h.policy) << h.compile_error;
    EXPECT_EQ(h.run().class_name, "batch");
    EXPECT_EQ(h.policy->rebuilds(), 1u);
}

TEST(Policy, DeepRecursion) {
    auto cfg = std::make_shared<Config>(*test_config());
    cfg->policy.instruction_budget = 1ull << 40;
    cfg->policy.time_budget = std::chrono::seconds(20);
    Harness h("local function f(n) return f(n + 1) + 1 end\n" +
                  with_body("if job.name == 'deep' then f(1) end return 'batch'"),
              cfg);
    ASSERT_TRUE(h.policy) << h.compile_error;
    JobView j = sample_job();
    j.name = "deep";
    auto out = h.run(j);
    EXPECT_EQ(out.kind, PolicyOutcome::Kind::Error);
    EXPECT_TRUE(out.error.find("stack overflow") != std::string::npos ||
                out.error.find("memory limit") != std::string::npos)
        << out.error;
    EXPECT_EQ(h.run().class_name, "batch");
    // Deep recursion through C (string.gsub callbacks) is bounded by Lua's C stack limit.
    Harness c("local function g(s) return (s:gsub('.', g)) end\n" +
                  with_body("if job.name == 'deep' then g('ab') end return 'batch'"),
              cfg);
    ASSERT_TRUE(c.policy) << c.compile_error;
    EXPECT_EQ(c.run(j).kind, PolicyOutcome::Kind::Error);
    EXPECT_EQ(c.run().class_name, "batch");
}

TEST(Policy, CompileErrors) {
    Harness syntax("function classify(job)\n  return 'x' +\nend\n");
    EXPECT_FALSE(syntax.policy);
    EXPECT_NE(syntax.compile_error.find("test.lua:3:"), std::string::npos) << syntax.compile_error;

    Harness missing("function classfy(job) return 'batch' end");
    EXPECT_FALSE(missing.policy);
    EXPECT_NE(missing.compile_error.find("must define a global function classify(job)"), std::string::npos)
        << missing.compile_error;

    Harness top_loop("while true do end function classify(job) return 'batch' end");
    EXPECT_FALSE(top_loop.policy);
    EXPECT_NE(top_loop.compile_error.find("budget exceeded"), std::string::npos) << top_loop.compile_error;

    Harness top_error("error('broken at load')\nfunction classify(job) return 'batch' end");
    EXPECT_FALSE(top_error.policy);
    EXPECT_NE(top_error.compile_error.find("test.lua:1: broken at load"), std::string::npos) << top_error.compile_error;

    Harness binary(std::string("\x1bLua\x54\x00", 6));
    EXPECT_FALSE(binary.policy);
    EXPECT_NE(binary.compile_error.find("binary chunk"), std::string::npos) << binary.compile_error;
}

TEST(Policy, LanesHelpers) {
    Harness h(with_body(R"(
        local now = lanes.now()
        assert(math.type(now) == 'integer')
        assert(lanes.in_window('peak') == true)
        assert(lanes.in_window('peak', now + 12 * 3600) == false)
        local s, e = lanes.next_start('peak'), lanes.next_end('peak')
        assert(math.type(s) == 'integer' and math.type(e) == 'integer')
        assert(e - now == 11 * 3600, 'next_end ' .. (e - now))
        assert(s - now == 23 * 3600, 'next_start ' .. (s - now))
        assert(not pcall(lanes.in_window, 'nosuch'))
        local bits = lanes.parse_rate('10Gbit')
        assert(math.type(bits) == 'integer' and bits == 10000000000)
        local none, pct = lanes.parse_rate('40%')
        assert(none == nil and pct == 40)
        assert(not pcall(lanes.parse_rate, 'fast'))
        assert(lanes.parse_duration('1-00:00:00') == 1440)
        assert(lanes.parse_duration('90') == 90)
        assert(lanes.parse_duration('UNLIMITED') == nil)
        local cls, where = lanes.rules(job)
        assert(cls == 'training' and where == 'rule 2 (lanes.toml:45)', tostring(where))
        local c = lanes.classes.training
        assert(c.rank == 1 and c.partitions[1] == 'gpu' and #c.partitions == 1 and c.dscp == 8)
        assert(c.rate == 25000000000 and c.ceil == 25000000000)
        assert(lanes.classes.inference.rate_percent == 40)
        local names = {}
        for name in pairs(lanes.classes) do names[#names + 1] = name end
        table.sort(names)
        assert(table.concat(names, ',') == 'batch,inference,training')
        assert(lanes.default_class == 'batch')
        assert(lanes.windows[1] == nil)
        lanes.log('hello from the policy')
        print('printed', 1)
        lanes.user_message('lanes: note for the user')
        return 'training')"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    auto out = h.run();
    ASSERT_EQ(out.kind, PolicyOutcome::Kind::Class) << out.error;
    EXPECT_EQ(out.user_messages, (std::vector<std::string>{"lanes: note for the user"}));
    ASSERT_EQ(h.logs.size(), 2u);
    EXPECT_EQ(h.logs[0], "policy /etc/slurm/test.lua:32: hello from the policy");
    EXPECT_EQ(h.logs[1], "policy /etc/slurm/test.lua:33: printed 1");  // a log line holds no tab
}

TEST(Policy, ThrowingLogSinkNeverCrossesLua) {
    auto p = Policy::compile(with_body("lanes.log('x') print('y') return 'batch'"), "t.lua", test_config(),
                             [](LogLevel, const std::string&) { throw std::runtime_error("sink broke"); });
    ASSERT_TRUE(p) << p.error().message;
    test::FixedWindows w;
    auto out = (*p)->classify(sample_job(), utc(2026, 11, 30, 9), w);
    EXPECT_EQ(out.kind, PolicyOutcome::Kind::Class) << out.error;
    EXPECT_EQ(out.class_name, "batch");
}

TEST(Policy, UserMessagesAreCapped) {
    Harness h(with_body("for i = 1, 100 do lanes.user_message(string.rep('m', 5000)) end return 'batch'"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    auto out = h.run();
    ASSERT_EQ(out.user_messages.size(), 16u);
    EXPECT_EQ(out.user_messages[0], std::string(1024, 'm') + " [cut]");
}

TEST(Policy, RulesHelperWithoutMatch) {
    Harness h(with_body("local c = lanes.rules(job) return c or 'batch'"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    JobView j = sample_job();
    j.tres_per_node.clear();
    j.name = "plain";
    EXPECT_EQ(h.run(j).class_name, "batch");
    j.name = "serve-llama";
    EXPECT_EQ(h.run(j).class_name, "inference");
}

TEST(Policy, JobIsInvalidAfterClassify) {
    Harness h("local saved\nfunction classify(job) if saved then return saved.name end saved = job return nil end");
    ASSERT_TRUE(h.policy) << h.compile_error;
    EXPECT_EQ(h.run().kind, PolicyOutcome::Kind::FallThrough);
    // The proxy is shared; during the next call it shows the next job, never a dangling one.
    JobView j = sample_job();
    j.name = "batch";
    EXPECT_EQ(h.run(j).class_name, "batch");
}

TEST(Policy, SelfCheck) {
    test::FixedWindows w;
    auto ok = Policy::compile(with_body("return 'batch'"), "ok.lua", test_config(), nullptr);
    ASSERT_TRUE(ok);
    EXPECT_TRUE((*ok)->self_check(utc(2026, 11, 30, 9), w));
    auto bad_class = Policy::compile(with_body("return 'trainnig'"), "bad.lua", test_config(), nullptr);
    ASSERT_TRUE(bad_class);
    auto r = (*bad_class)->self_check(utc(2026, 11, 30, 9), w);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("unknown class 'trainnig'"), std::string::npos) << r.error().message;
    auto crash = Policy::compile(with_body("return job.time_limit.x"), "crash.lua", test_config(), nullptr);
    ASSERT_TRUE(crash);
    r = (*crash)->self_check(utc(2026, 11, 30, 9), w);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("self-check"), std::string::npos);
    EXPECT_NE(r.error().message.find("crash.lua:2:"), std::string::npos) << r.error().message;
}

TEST(Policy, ConcurrentCallsUseSeparateStates) {
    Harness h(R"(
        local calls = 0
        function classify(job)
            calls = calls + 1
            local s = 0
            for i = 1, 2000 do s = s + i end
            if job.gpus >= 4 then return 'training' end
            return 'inference'
        end)",
              test_config(), 4);
    ASSERT_TRUE(h.policy) << h.compile_error;
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            JobView j = sample_job();
            j.gpus = static_cast<uint32_t>(t % 2 ? 8 : 1);
            for (int i = 0; i < 300; ++i) {
                auto out = h.run(j);
                if (out.class_name != (t % 2 ? "training" : "inference")) ++wrong;
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_LE(h.policy->state_count(), 4u);
    EXPECT_GE(h.policy->state_count(), 1u);
}

// Runs fn on a thread; a hang (the bug these tests guard against) fails the
// test and ends the process instead of blocking `make check` forever.
template <typename Fn>
void within_a_minute(const char* what, Fn fn) {
    auto done = std::async(std::launch::async, fn);
    if (done.wait_for(std::chrono::seconds(60)) == std::future_status::timeout) {
        ADD_FAILURE() << what << " did not return within 60 s";
        std::_Exit(1);
    }
    done.get();
}

TEST(PolicyHostile, FinalizersAreRefused) {
    for (const char* where : {"top", "classify"}) {
        SCOPED_TRACE(where);
        std::string script =
            std::string(where) == "top"
                ? "setmetatable({}, {__gc = function() while true do end end})\n" + with_body("return 'batch'")
                : with_body("setmetatable({}, {__gc = function() while true do end end}) return 'batch'");
        within_a_minute("compile and classify", [&] {
            Harness h(script);
            if (std::string(where) == "top") {
                ASSERT_FALSE(h.policy);
                EXPECT_NE(h.compile_error.find("test.lua:1:"), std::string::npos) << h.compile_error;
                EXPECT_NE(h.compile_error.find("__gc is not allowed"), std::string::npos) << h.compile_error;
                return;
            }
            ASSERT_TRUE(h.policy) << h.compile_error;
            expect_error(h.run(), "test.lua:2: setmetatable: __gc is not allowed");
        });
    }
}

TEST(PolicyHostile, MetatablesAreReadOnce) {
    // __gc added after setmetatable never runs; weak tables are refused.
    within_a_minute("policy with a late __gc", [] {
        Harness h(with_body(R"(
            local mt = {}
            local t = setmetatable({}, mt)
            mt.__gc = function() while true do end end
            mt.__mode = 'k'
            t = nil
            local junk = {} for i = 1, 20000 do junk[i] = {i} end
            return 'batch')"));
        ASSERT_TRUE(h.policy) << h.compile_error;
        for (int i = 0; i < 5; ++i) EXPECT_EQ(h.run().class_name, "batch");
        h.policy.reset();  // lua_close: must not run the loop
    });
    Harness weak(with_body("setmetatable({}, {__mode = 'k'}) return 'batch'"));
    ASSERT_TRUE(weak.policy) << weak.compile_error;
    expect_error(weak.run(), "__mode is not allowed");
}

TEST(PolicyHostile, ErrorObjectsGetTheirLine) {
    Harness h(with_body(
        "if job.gpus > 0 then\n error(setmetatable({}, {__tostring = function() while true do end end}))\n end"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    expect_error(h.run(), "test.lua:3: error object is a table value");
    Harness top("error({})\n" + with_body("return nil"));
    EXPECT_NE(top.compile_error.find("test.lua:1: error object is a table value"), std::string::npos)
        << top.compile_error;
}

TEST(PolicyHostile, WhatTheScriptWritesIsOneSafeLine) {
    Harness h(with_body(R"(
        lanes.user_message("line\nsbatch: Submitted batch job 999\27[2J")
        lanes.log("log\ninjected")
        if job.gpus > 4 then reject(string.rep("x", 1 << 20)) end
        return {reject = "ok\r\nsbatch: Submitted batch job 999\n\27[31mred\194\155", reason = "r\n"})"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    JobView small = sample_job();
    small.gpus = 1;
    auto out = h.run(small);
    ASSERT_EQ(out.kind, PolicyOutcome::Kind::Reject);
    EXPECT_EQ(out.reject_message, "ok\\x0D\\x0Asbatch: Submitted batch job 999\\x0A\\x1B[31mred\\x9B");
    ASSERT_EQ(out.user_messages.size(), 1u);
    EXPECT_EQ(out.user_messages[0], "line\\x0Asbatch: Submitted batch job 999\\x1B[2J");
    bool logged = false;
    for (const auto& line : h.logs)
        if (line.find("log\\x0Ainjected") != std::string::npos) logged = true;
    EXPECT_TRUE(logged);
    auto big = h.run();  // 8 GPUs: a 1 MiB reject message
    ASSERT_EQ(big.kind, PolicyOutcome::Kind::Reject);
    EXPECT_LE(big.reject_message.size(), 1024u + 6);
    EXPECT_NE(big.reject_message.find(" [cut]"), std::string::npos);
}

TEST(PolicyHostile, MetatablesStillWork) {
    Harness h(R"(
        local Class = {}
        Class.__index = Class
        function Class:name() return self.n end
        local prot = setmetatable({}, {__metatable = 'locked', __index = function(_, k) return k .. '!' end})
        function classify(job)
            local o = setmetatable({n = 'batch'}, Class)
            assert(getmetatable(o) == Class)
            assert(setmetatable(o, nil) == o and getmetatable(o) == nil)
            setmetatable(o, Class)
            assert(getmetatable(prot) == 'locked' and prot.x == 'x!')
            assert(not pcall(setmetatable, prot, {}))
            return o:name()
        end)");
    ASSERT_TRUE(h.policy) << h.compile_error;
    auto out = h.run();
    EXPECT_EQ(out.class_name, "batch") << out.error;
}

TEST(PolicyHostile, CStringWorkIsBounded) {
    auto cfg = std::make_shared<Config>(*test_config());
    cfg->policy.instruction_budget = 1000000;
    cfg->policy.memory_limit_bytes = 16u << 20;
    cfg->policy.time_budget = std::chrono::seconds(20);  // only the instruction count may stop these
    struct Attack {
        const char* body;
        const char* comment;
    };
    std::string long_comment(1000, 'a');
    const Attack attacks[] = {
        {"local s = string.rep('', math.maxinteger) return 'training'", ""},
        {"local s = string.rep('x', 3000000) for i = 1, 100 do s:gsub('.', string.lower) end return 'batch'", ""},
        {"if job.comment:find('.-.-.-b') then return 'training' end return 'batch'", long_comment.c_str()},
        {"table.move({}, 1, math.maxinteger - 1, 1) return 'batch'", ""},
        {"local s = string.rep('a', 100000) for i = 1, 1000 do s:find(string.rep('a', 5000) .. 'b', 1, true) end "
         "return 'batch'",
         ""},
    };
    for (const auto& a : attacks) {
        SCOPED_TRACE(a.body);
        within_a_minute("the attack", [&] {
            Harness h(with_body(a.body), cfg);
            ASSERT_TRUE(h.policy) << h.compile_error;
            JobView j = sample_job();
            j.comment = a.comment;
            auto out = h.run(j);
            if (std::string(a.body).find("rep('',") != std::string::npos) {
                EXPECT_EQ(out.class_name, "training") << out.error;  // instant, and allowed
                return;
            }
            expect_error(out, "test.lua:2: instruction budget exceeded");
        });
    }
}

TEST(PolicyHostile, BackgroundModeNeverBuildsInClassify) {
    auto cfg = std::make_shared<Config>(*test_config());
    cfg->policy.time_budget = std::chrono::milliseconds(200);  // also how long classify() waits for a state
    Harness h(with_body("if job.name == 'loop' then while true do end end return 'batch'"), cfg, 2);
    ASSERT_TRUE(h.policy) << h.compile_error;
    std::atomic<int> wakes{0};
    h.policy->build_in_background([&] { ++wakes; });
    h.policy->maintain();
    EXPECT_EQ(h.policy->state_count(), 2u);
    JobView loop = sample_job();
    loop.name = "loop";
    expect_error(h.run(loop), "instruction budget exceeded");
    expect_error(h.run(loop), "instruction budget exceeded");
    EXPECT_EQ(h.policy->state_count(), 0u);  // both set aside, none rebuilt by classify()
    EXPECT_GE(wakes.load(), 3);
    expect_error(h.run(), "no policy Lua state became free");
    h.policy->maintain();
    EXPECT_EQ(h.policy->state_count(), 2u);
    EXPECT_EQ(h.run().class_name, "batch");
}

// Found by tests/fuzz/policy_fuzz (corpus: tests/fuzz/corpus/policy/): an
// xpcall message handler ran where the budget error was raised, inside the
// debug hook with hooks off, so a handler that loops never returned.
TEST(PolicyHostile, MessageHandlersRunUnderTheBudget) {
    auto time_only = std::make_shared<Config>(*test_config());
    time_only->policy.instruction_budget = 1ull << 50;
    time_only->policy.time_budget = std::chrono::milliseconds(30);
    const char* handlers[] = {
        "function(e) while true do end end",
        "function(e) local n = 0 while true do n = n + 1 end end",
        "function(e) return xpcall(error, function() while true do end end) end",
    };
    for (auto config : {test_config(), std::shared_ptr<const Config>(time_only)}) {
        for (const char* handler : handlers) {
            SCOPED_TRACE(handler);
            within_a_minute("classify with a looping message handler", [&] {
                Harness h(
                    with_body(std::string("if job.name == 'loop' then xpcall(function() while true do end end, ") +
                              handler + ") end return 'batch'"),
                    config);
                ASSERT_TRUE(h.policy) << h.compile_error;
                JobView loop = sample_job();
                loop.name = "loop";
                expect_error(h.run(loop), "budget exceeded");
                EXPECT_EQ(h.run().class_name, "batch");  // the next job, on a fresh state
            });
        }
    }
    // A handler that runs before any budget is spent still works, metered.
    Harness h(
        with_body("local ok, e = xpcall(error, function(m) return 'handled: ' .. tostring(m) end, 'x') "
                  "return {class = 'batch', reason = e}"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    EXPECT_EQ(h.run().reason, "handled: x");
    Harness spin(with_body("xpcall(error, function(m) while true do end end, 'x') return 'batch'"));
    ASSERT_TRUE(spin.policy) << spin.compile_error;
    within_a_minute("a looping handler of an ordinary error",
                    [&] { expect_error(spin.run(), "instruction budget exceeded"); });
}

// Found by tests/fuzz/policy_fuzz: the table library's sort, concat and unpack
// run in C with no hook; over an array built at load, one call took ~150 ms
// with a 20 ms budget. Their work now counts against the instruction budget.
TEST(PolicyHostile, TableFunctionsAreMetered) {
    auto cfg = std::make_shared<Config>(*test_config());
    cfg->policy.instruction_budget = 1000000;
    cfg->policy.memory_limit_bytes = 16u << 20;
    cfg->policy.time_budget = std::chrono::seconds(20);  // only the instruction count may stop these
    const char* top =
        "local A = {} for i = 1, 60000 do A[i] = (i * 7919) % 100003 end\n"
        "local S = {} for i = 1, 10000 do S[i] = string.rep('a', 200) .. i end\n";
    const char* bodies[] = {
        "for i = 1, 20 do table.sort(A) end return 'batch'",
        "for i = 1, 20 do table.sort(S) end return 'batch'",
        "for i = 1, 20 do local _ = table.concat(A, ',') end return 'batch'",
        "for i = 1, 20 do local _ = select('#', table.unpack(A)) end return 'batch'",
    };
    for (const char* body : bodies) {
        SCOPED_TRACE(body);
        within_a_minute("a table function over a big array", [&] {
            Harness h(top + with_body(body), cfg);
            ASSERT_TRUE(h.policy) << h.compile_error;
            expect_error(h.run(), "instruction budget exceeded");
        });
    }
    // Same results as the library's.
    Harness h(with_body(R"(
        local t = {5, 3, 9, 1, 7, 3}
        table.sort(t)
        local u = {'pear', 'apple', 'fig'}
        table.sort(u, function(a, b) return a > b end)
        local big = {} for i = 1, 500 do big[i] = (i * 37) % 101 end
        table.sort(big)
        for i = 2, #big do assert(big[i - 1] <= big[i]) end
        local ok, err = pcall(table.sort, {3, 2, 1, 4, 5, 6}, function(a, b) return true end)
        local ok2, err2 = pcall(table.concat, {1, {}, 3})
        local r = table.concat(t, ',') .. '|' .. table.concat(u, ',', 2, 3) .. '|' .. select('#', table.unpack(t, 2, 4))
        return {class = 'batch', reason = r .. '|' .. tostring(err) .. '|' .. tostring(err2)}
    )"));
    ASSERT_TRUE(h.policy) << h.compile_error;
    auto out = h.run();
    EXPECT_EQ(out.reason,
              "1,3,3,5,7,9|fig,apple|3|invalid order function for sorting|"
              "invalid value (at index 2) in table for 'concat'")
        << out.error;
}

}  // namespace
}  // namespace lanes
