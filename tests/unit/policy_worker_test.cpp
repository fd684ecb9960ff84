// SPDX-License-Identifier: GPL-2.0-or-later
// The policy worker protocol (policy_wire.hpp) and the worker pool
// (policy_pool.hpp) with the real lanes-policy-worker ($LANES_POLICY_WORKER,
// set by make check).
#include <gtest/gtest.h>
#include <sched.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <sstream>
#include <thread>

#include "ctld/policy.hpp"
#include "ctld/policy_pool.hpp"
#include "ctld/policy_wire.hpp"
#include "ctld/windows_config.hpp"
#include "tests/unit/fixed_windows.hpp"

namespace lanes {
namespace {

using test::utc;

JobView full_job() {
    JobView j;
    j.name = "train\x1b[2J";
    j.comment = std::string(3000, 'c');
    j.user = "alice";
    j.uid = 1001;
    j.account = "ml";
    j.partition = "gpu,cpu";
    j.qos = "high";
    j.tres_per_node = "gres:gpu:8";
    j.tres_per_job = "gres/gpu:16";
    j.gpus = 16;
    j.min_nodes = 2;
    j.max_nodes = 4;
    j.num_tasks = 16;
    j.time_limit_minutes = 120;
    j.features = "a100&ib";
    j.batch = true;
    j.environment = {{"HOME", "/home/alice"}, {"EMPTY", ""}, {std::string("N\0UL", 4), "x"}};
    j.requested_class = "training";
    j.submit_time = utc(2026, 11, 30, 9);
    j.begin_time = utc(2026, 11, 30, 22);
    return j;
}

std::string payload_of(const std::string& frame) { return frame.substr(wire::kHeaderBytes); }

// Every field of JobView, one by one.
void expect_same_job(const JobView& b, const JobView& a) {
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.comment, a.comment);
    EXPECT_EQ(b.user, a.user);
    EXPECT_EQ(b.uid, a.uid);
    EXPECT_EQ(b.account, a.account);
    EXPECT_EQ(b.partition, a.partition);
    EXPECT_EQ(b.qos, a.qos);
    EXPECT_EQ(b.tres_per_node, a.tres_per_node);
    EXPECT_EQ(b.tres_per_job, a.tres_per_job);
    EXPECT_EQ(b.gpus, a.gpus);
    EXPECT_EQ(b.min_nodes, a.min_nodes);
    EXPECT_EQ(b.max_nodes, a.max_nodes);
    EXPECT_EQ(b.num_tasks, a.num_tasks);
    EXPECT_EQ(b.time_limit_minutes, a.time_limit_minutes);
    EXPECT_EQ(b.features, a.features);
    EXPECT_EQ(b.batch, a.batch);
    EXPECT_EQ(b.environment, a.environment);
    EXPECT_EQ(b.requested_class, a.requested_class);
    EXPECT_EQ(b.requested_cap, a.requested_cap);
    EXPECT_EQ(b.submit_time, a.submit_time);
    EXPECT_EQ(b.begin_time, a.begin_time);
}

TEST(PolicyWire, ClassifyRoundTrip) {
    wire::Classify in{full_job(), utc(2026, 11, 30, 9, 30)};
    std::string frame = wire::encode(in);
    auto h = wire::decode_header(std::string_view(frame).substr(0, wire::kHeaderBytes));
    ASSERT_TRUE(h) << h.error().message;
    EXPECT_EQ(h->type, wire::Type::Classify);
    EXPECT_EQ(h->payload_bytes, frame.size() - wire::kHeaderBytes);
    auto out = wire::decode_classify(payload_of(frame));
    ASSERT_TRUE(out) << out.error().message;
    expect_same_job(out->job, in.job);
    EXPECT_EQ(out->now, in.now);
}

TEST(PolicyWire, OutcomeAnswerAndSmallMessagesRoundTrip) {
    wire::Outcome o;
    o.outcome.kind = PolicyOutcome::Kind::Class;
    o.outcome.class_name = "training";
    o.outcome.reason = "big";
    o.outcome.location = "p.lua:3";
    o.outcome.user_messages = {"one", ""};
    o.outcome.partition = "gpu";
    o.outcome.nice = -5;
    o.outcome.begin_time = utc(2026, 12, 1);
    o.outcome.time_limit_minutes = 0;
    o.retire = true;
    auto o2 = wire::decode_outcome(payload_of(wire::encode(o)));
    ASSERT_TRUE(o2) << o2.error().message;
    EXPECT_EQ(o2->outcome.kind, PolicyOutcome::Kind::Class);
    EXPECT_EQ(o2->outcome.class_name, "training");
    EXPECT_EQ(o2->outcome.user_messages, o.outcome.user_messages);
    EXPECT_EQ(o2->outcome.partition, o.outcome.partition);
    EXPECT_FALSE(o2->outcome.qos);
    EXPECT_EQ(o2->outcome.nice, -5);
    EXPECT_EQ(o2->outcome.begin_time, o.outcome.begin_time);
    EXPECT_EQ(o2->outcome.time_limit_minutes, 0u);
    EXPECT_TRUE(o2->retire);

    wire::Answer a;
    a.flag = true;
    a.time = utc(2026, 12, 1, 8);
    a.text = "Mon 08:00 UTC";
    a.signal = SignalValue{0.25, true, false, std::chrono::seconds(7), ""};
    auto a2 = wire::decode_answer(payload_of(wire::encode(a)));
    ASSERT_TRUE(a2) << a2.error().message;
    EXPECT_TRUE(a2->flag);
    EXPECT_EQ(a2->time, a.time);
    EXPECT_EQ(a2->text, a.text);
    ASSERT_TRUE(a2->signal);
    EXPECT_EQ(a2->signal->value, 0.25);
    EXPECT_EQ(a2->signal->age, std::chrono::seconds(7));

    auto q =
        wire::decode_query(payload_of(wire::encode(wire::Query{wire::Query::Op::NextEnd, "peak", a.time.value()})));
    ASSERT_TRUE(q);
    EXPECT_EQ(q->op, wire::Query::Op::NextEnd);
    EXPECT_EQ(q->name, "peak");
    auto i = wire::decode_init(payload_of(wire::encode(wire::Init{"text", "/etc/lanes.toml", "p.lua", "src"})));
    ASSERT_TRUE(i);
    EXPECT_EQ(i->source, "src");
    auto r = wire::decode_ready(payload_of(wire::encode(wire::Ready{false, "p.lua:1: boom"})));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->error, "p.lua:1: boom");
    auto l = wire::decode_log(payload_of(wire::encode(wire::LogLine{LogLevel::Error, "x"})));
    ASSERT_TRUE(l);
    EXPECT_EQ(l->level, LogLevel::Error);
}

TEST(PolicyWire, TruncatedAndGarbageInputIsRefused) {
    std::string payload = payload_of(wire::encode(wire::Classify{full_job(), utc(2026, 11, 30)}));
    // Every strict prefix is refused, and so is a trailing byte.
    for (size_t n = 0; n < payload.size(); n += (n < 200 ? 1 : 97))
        EXPECT_FALSE(wire::decode_classify(std::string_view(payload).substr(0, n))) << n;
    EXPECT_FALSE(wire::decode_classify(payload + "x"));
    std::string outcome = payload_of(wire::encode(wire::Outcome{}));
    for (size_t n = 0; n < outcome.size(); ++n) EXPECT_FALSE(wire::decode_outcome(outcome.substr(0, n))) << n;
    // A huge count or length inside a small frame ends at the frame's end.
    std::string huge("\xff\xff\xff\xff\xff\xff\xff\xff", 8);
    EXPECT_FALSE(wire::decode_classify(huge));
    EXPECT_FALSE(wire::decode_outcome("\x00" + huge));
    EXPECT_FALSE(wire::decode_outcome(std::string("\x07", 1)));        // unknown kind
    EXPECT_FALSE(wire::decode_query(std::string("\x09\0\0\0\0", 5)));  // unknown op
    // Headers: unknown type, zero and oversized lengths.
    EXPECT_FALSE(wire::decode_header(std::string("\x01\0\0\0\x63", 5)));
    EXPECT_FALSE(wire::decode_header(std::string("\0\0\0\0\x01", 5)));
    EXPECT_FALSE(wire::decode_header(std::string("\xff\xff\xff\xff\x03", 5)));
    EXPECT_FALSE(wire::decode_header("abc"));
    // Random bytes never crash a decoder.
    uint32_t seed = 12345;
    for (int round = 0; round < 2000; ++round) {
        std::string junk(static_cast<size_t>(round % 64), '\0');
        for (auto& c : junk) c = static_cast<char>((seed = seed * 1103515245 + 12345) >> 16);
        (void)wire::decode_classify(junk);
        (void)wire::decode_outcome(junk);
        (void)wire::decode_answer(junk);
        (void)wire::decode_init(junk);
    }
}

// Every field of every message set to a value other than its default (and,
// in a second set, every optional empty): decode(encode(m)) gives back each
// field, and the frames are exactly the bytes below, so that a worker and a
// controller from different builds agree on the wire.
JobView small_job() {
    JobView j;
    j.name = "n";
    j.comment = "c";
    j.user = "u";
    j.uid = 0x01020304;
    j.account = "a";
    j.partition = "p";
    j.qos = "q";
    j.tres_per_node = "tn";
    j.tres_per_job = "tj";
    j.gpus = 5;
    j.min_nodes = 6;
    j.max_nodes = 7;
    j.num_tasks = 8;
    j.time_limit_minutes = 9;
    j.features = "f";
    j.batch = true;
    j.environment = {{"K", "V"}, {"L", ""}};
    j.requested_class = "rc";
    j.requested_cap = "cap";
    j.submit_time = SysSeconds{std::chrono::seconds{0x11}};
    j.begin_time = SysSeconds{std::chrono::seconds{-2}};
    return j;
}

struct Full {
    wire::Init init{"t", "p", "c", "s"};
    wire::Ready ready{true, "e"};
    wire::Classify classify{small_job(), SysSeconds{std::chrono::seconds{0x12}}};
    wire::Query query{wire::Query::Op::Signal, "w", SysSeconds{std::chrono::seconds{0x13}}};
    wire::Answer answer{true, SysSeconds{std::chrono::seconds{0x14}}, "d",
                        SignalValue{0.5, true, true, std::chrono::seconds{0x15}, "why"}};
    wire::LogLine log{LogLevel::Info, "l"};
    wire::Outcome outcome;
    Full() {
        PolicyOutcome& o = outcome.outcome;
        o.kind = PolicyOutcome::Kind::Reject;
        o.class_name = "k";
        o.reason = "r";
        o.location = "x:1";
        o.reject_message = "no";
        o.error = "err";
        o.user_messages = {"m1", "m2"};
        o.partition = "pa";
        o.qos = "qo";
        o.features = "fe";
        o.nice = -3;
        o.begin_time = SysSeconds{std::chrono::seconds{0x16}};
        o.time_limit_minutes = 0x17;
        outcome.retire = true;
    }
};

// The same messages with every optional empty, every string empty, every flag
// false and every number zero: the other branch of each field.
struct Empty {
    wire::Init init;
    wire::Ready ready;
    wire::Classify classify;
    wire::Query query;
    wire::Answer answer;
    wire::LogLine log{LogLevel::Debug, ""};
    wire::Outcome outcome;
};

std::string hex(const std::string& bytes) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

template <typename Messages>
void expect_every_field_round_trips(const Messages& m) {
    auto init = wire::decode_init(payload_of(wire::encode(m.init)));
    ASSERT_TRUE(init) << init.error().message;
    EXPECT_EQ(init->config_text, m.init.config_text);
    EXPECT_EQ(init->config_path, m.init.config_path);
    EXPECT_EQ(init->chunk_name, m.init.chunk_name);
    EXPECT_EQ(init->source, m.init.source);

    auto ready = wire::decode_ready(payload_of(wire::encode(m.ready)));
    ASSERT_TRUE(ready) << ready.error().message;
    EXPECT_EQ(ready->ok, m.ready.ok);
    EXPECT_EQ(ready->error, m.ready.error);

    auto classify = wire::decode_classify(payload_of(wire::encode(m.classify)));
    ASSERT_TRUE(classify) << classify.error().message;
    expect_same_job(classify->job, m.classify.job);
    EXPECT_EQ(classify->now, m.classify.now);

    auto query = wire::decode_query(payload_of(wire::encode(m.query)));
    ASSERT_TRUE(query) << query.error().message;
    EXPECT_EQ(query->op, m.query.op);
    EXPECT_EQ(query->name, m.query.name);
    EXPECT_EQ(query->at, m.query.at);

    auto answer = wire::decode_answer(payload_of(wire::encode(m.answer)));
    ASSERT_TRUE(answer) << answer.error().message;
    EXPECT_EQ(answer->flag, m.answer.flag);
    EXPECT_EQ(answer->time, m.answer.time);
    EXPECT_EQ(answer->text, m.answer.text);
    ASSERT_EQ(answer->signal.has_value(), m.answer.signal.has_value());
    if (m.answer.signal) {
        EXPECT_EQ(answer->signal->value, m.answer.signal->value);
        EXPECT_EQ(answer->signal->fresh, m.answer.signal->fresh);
        EXPECT_EQ(answer->signal->from_fallback, m.answer.signal->from_fallback);
        EXPECT_EQ(answer->signal->age, m.answer.signal->age);
        EXPECT_EQ(answer->signal->why_unusable, m.answer.signal->why_unusable);
    }

    auto log = wire::decode_log(payload_of(wire::encode(m.log)));
    ASSERT_TRUE(log) << log.error().message;
    EXPECT_EQ(log->level, m.log.level);
    EXPECT_EQ(log->text, m.log.text);

    auto outcome = wire::decode_outcome(payload_of(wire::encode(m.outcome)));
    ASSERT_TRUE(outcome) << outcome.error().message;
    const PolicyOutcome& a = m.outcome.outcome;
    const PolicyOutcome& b = outcome->outcome;
    EXPECT_EQ(b.kind, a.kind);
    EXPECT_EQ(b.class_name, a.class_name);
    EXPECT_EQ(b.reason, a.reason);
    EXPECT_EQ(b.location, a.location);
    EXPECT_EQ(b.reject_message, a.reject_message);
    EXPECT_EQ(b.error, a.error);
    EXPECT_EQ(b.user_messages, a.user_messages);
    EXPECT_EQ(b.partition, a.partition);
    EXPECT_EQ(b.qos, a.qos);
    EXPECT_EQ(b.features, a.features);
    EXPECT_EQ(b.nice, a.nice);
    EXPECT_EQ(b.begin_time, a.begin_time);
    EXPECT_EQ(b.time_limit_minutes, a.time_limit_minutes);
    EXPECT_EQ(outcome->retire, m.outcome.retire);
}

TEST(PolicyWire, EveryFieldRoundTrips) {
    expect_every_field_round_trips(Full{});
    expect_every_field_round_trips(Empty{});
}

TEST(PolicyWire, FramesAreTheseBytes) {
    const Full f;
    const Empty e;
    const std::pair<std::string, const char*> frames[] = {
        {wire::encode(f.init), "15000000010100000074010000007001000000630100000073"},
        {wire::encode(f.ready), "0700000002010100000065"},
        {wire::encode(f.classify),
         "8900000003010000006e010000006301000000750403020101000000610100000070010000007102000000746e02000000746a0500000"
         "0060000000700000008000000010900000001000000660102000000010000004b0100000056010000004c000000000102000000726301"
         "03000000636170110000000000000001feffffffffffffff1200000000000000"},
        {wire::encode(f.query), "0f000000040601000000771300000000000000"},
        {wire::encode(f.answer),
         "2c000000050101140000000000000001000000640101000000000000e03f010101150000000000000003000000776879"},
        {wire::encode(f.log), "070000000601010000006c"},
        {wire::encode(f.outcome),
         "590000000702010000006b010000007203000000783a31020000006e6f0300000065727202000000020000006d31020000006d3201020"
         "0000070610102000000716f0102000000666501fdffffff011600000000000000011700000001"},
        {wire::encode(e.init), "110000000100000000000000000000000000000000"},
        {wire::encode(e.ready), "06000000020000000000"},
        {wire::encode(e.classify),
         "5200000003000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
         "000000000000000000000000000000000000000000000000000000000000000"},
        {wire::encode(e.query), "0e0000000401000000000000000000000000"},
        {wire::encode(e.answer), "080000000500000000000000"},
        {wire::encode(e.log), "06000000060000000000"},
        {wire::encode(e.outcome), "21000000070100000000000000000000000000000000000000000000000000000000000000"},
    };
    for (size_t i = 0; i < std::size(frames); ++i) EXPECT_EQ(hex(frames[i].first), frames[i].second) << "frame " << i;
}

// ---------------------------------------------------------------- the pool

const char* worker_program() {
    const char* w = std::getenv("LANES_POLICY_WORKER");
    return w && *w ? w : nullptr;
}

#define REQUIRE_WORKER() \
    if (!worker_program()) GTEST_SKIP() << "LANES_POLICY_WORKER is not set (make check sets it)"

std::shared_ptr<const Config> worker_config(const std::string& extra = "", const std::string& budget = "100ms") {
    std::string text = "default_class = \"batch\"\n[policy]\nscript = \"p.lua\"\ntime_budget = \"" + budget +
                       "\"\nworker = \"" + worker_program() + "\"\n" + extra +
                       "\n[classes.training]\nrank = 1\n[classes.batch]\nrank = 3\n";
    auto c = parse_controller_config(text, "/etc/slurm/lanes.toml");
    EXPECT_TRUE(c) << (c ? "" : c.error().message);
    return std::make_shared<const Config>(std::move(*c));
}

// Outlasts the budget in classify() for a job with a comment where no Lua
// hook looks in time: each `<` of two 512 KiB strings of NUL bytes is one VM
// instruction, and Lua compares such strings one NUL-ended piece at a time
// (a strcoll and a strlen per byte), some 2-4 ms; the count hook fires every
// 1000 instructions, about a second apart; only the process bound
// (time_budget + 1 ms) stops it in time. (A looping xpcall handler, the first
// such hole, is closed in the sandbox too.) Loading it touches 1 MiB, within
// the default memory limit: the 12 MiB strings of before cost hundreds of ms
// of page faults on a VM, past the load's budget on a busy machine.
const char* kOutlastsTheHook = R"(
local a = string.rep("\0", 512 * 1024)
local b = a .. "y"
function classify(job)
  if job.comment ~= "" then
    local n = 0
    while true do if a < b then n = n + 1 end end
  end
  return 'training'
end
)";

JobView plain_job() {
    JobView j;
    j.name = "ok";
    j.user = "bob";
    j.uid = 1002;
    j.submit_time = utc(2026, 11, 30, 9);
    return j;
}

JobView attacking_job() {  // another user's
    JobView j = plain_job();
    j.comment = "go";
    j.user = "mallory";
    j.uid = 1003;
    return j;
}

TEST(PolicyWorker, RunsThePolicyInAWorker) {
    REQUIRE_WORKER();
    std::vector<std::string> logs;
    auto p = Policy::compile(R"(function classify(job)
  lanes.log('seen ' .. job.user)
  if lanes.in_window('peak') then return {class = 'training', reason = 'peak'} end
  return 'batch'
end)",
                             "/etc/slurm/p.lua", worker_config(),
                             [&](LogLevel, const std::string& line) { logs.push_back(line); });
    ASSERT_TRUE(p) << p.error().message;
    ASSERT_TRUE((*p)->isolated());
    test::FixedWindows windows;
    windows.daily("peak", utc(2026, 11, 30), 8, 20);
    auto out = (*p)->classify(plain_job(), utc(2026, 11, 30, 9), windows);
    EXPECT_EQ(out.kind, PolicyOutcome::Kind::Class) << out.error;
    EXPECT_EQ(out.class_name, "training");
    EXPECT_EQ(out.reason, "peak");
    EXPECT_EQ(out.location, "p.lua:3");
    out = (*p)->classify(plain_job(), utc(2026, 11, 30, 21), windows);  // the caller's oracle decides
    EXPECT_EQ(out.class_name, "batch");
    ASSERT_EQ(logs.size(), 2u);
    EXPECT_NE(logs[0].find("seen bob"), std::string::npos) << logs[0];
    EXPECT_EQ((*p)->worker_stats().classifications, 2u);
}

TEST(PolicyWorker, OverrunKillsTheWorkerAndTheNextJobIsClassified) {
    REQUIRE_WORKER();
    auto p = Policy::compile(kOutlastsTheHook, "/etc/slurm/p.lua", worker_config(), nullptr, 2);
    ASSERT_TRUE(p) << p.error().message;
    test::FixedWindows windows;
    auto out = (*p)->classify(attacking_job(), utc(2026, 11, 30, 9), windows);
    EXPECT_EQ(out.kind, PolicyOutcome::Kind::Error);
    EXPECT_NE(out.error.find("time budget of 100ms"), std::string::npos) << out.error;
    EXPECT_NE(out.error.find("p.lua"), std::string::npos) << out.error;
    auto stats = (*p)->worker_stats();
    EXPECT_EQ(stats.overruns, 1u);
    EXPECT_EQ(stats.kills, 1u);
    for (int i = 0; i < 3; ++i) {
        out = (*p)->classify(plain_job(), utc(2026, 11, 30, 9), windows);
        EXPECT_EQ(out.kind, PolicyOutcome::Kind::Class) << out.error;
        EXPECT_EQ(out.class_name, "training");
    }
}

// One user whose jobs keep driving the policy into the kill path must not
// keep every worker dead: after an overrun, that user's jobs get the error
// outcome at once for policy.overrun_cooldown, others' jobs run as before.
TEST(PolicyWorker, AnOwnerWhoseJobOverranCoolsDown) {
    REQUIRE_WORKER();
    auto p = Policy::compile(kOutlastsTheHook, "/etc/slurm/p.lua", worker_config("workers = 2"), nullptr);
    ASSERT_TRUE(p) << p.error().message;
    test::FixedWindows windows;
    auto first = (*p)->classify(attacking_job(), utc(2026, 11, 30, 9), windows);
    EXPECT_NE(first.error.find("time budget of 100ms"), std::string::npos) << first.error;
    JobView innocent = plain_job();
    innocent.uid = attacking_job().uid;
    for (int i = 0; i < 3; ++i) {
        auto out = (*p)->classify(attacking_job(), utc(2026, 11, 30, 9), windows);
        EXPECT_EQ(out.kind, PolicyOutcome::Kind::Error);
        EXPECT_NE(out.error.find("a job of uid 1003 overran the time budget of 100ms less than 60 s ago; this user's "
                                 "jobs are not run through the policy for another "),
                  std::string::npos)
            << out.error;
        EXPECT_NE(out.error.find("(policy.overrun_cooldown)"), std::string::npos) << out.error;
        EXPECT_EQ((*p)->classify(innocent, utc(2026, 11, 30, 9), windows).kind, PolicyOutcome::Kind::Error);
        EXPECT_EQ((*p)->classify(plain_job(), utc(2026, 11, 30, 9), windows).class_name, "training");
    }
    auto stats = (*p)->worker_stats();
    EXPECT_EQ(stats.overruns, 1u);
    EXPECT_EQ(stats.kills, 1u);
    EXPECT_EQ(stats.cooling_down, 6u);

    auto off = Policy::compile(kOutlastsTheHook, "/etc/slurm/p.lua",
                               worker_config("workers = 2\noverrun_cooldown = \"0s\""), nullptr);
    ASSERT_TRUE(off) << off.error().message;
    EXPECT_EQ((*off)->classify(attacking_job(), utc(2026, 11, 30, 9), windows).kind, PolicyOutcome::Kind::Error);
    EXPECT_EQ((*off)->classify(innocent, utc(2026, 11, 30, 9), windows).class_name, "training")
        << "with overrun_cooldown = 0s the owner's next job runs the policy";
    EXPECT_EQ((*off)->worker_stats().cooling_down, 0u);
}

TEST(PolicyWorker, BackgroundModeRespawnsOffThePath) {
    REQUIRE_WORKER();
    auto p = Policy::compile(kOutlastsTheHook, "/etc/slurm/p.lua", worker_config("workers = 2"), nullptr);
    ASSERT_TRUE(p) << p.error().message;
    std::atomic<int> wakes{0};
    (*p)->build_in_background([&] { ++wakes; });
    (*p)->maintain();
    EXPECT_EQ((*p)->state_count(), 2u);
    test::FixedWindows windows;
    auto out = (*p)->classify(attacking_job(), utc(2026, 11, 30, 9), windows);
    EXPECT_EQ(out.kind, PolicyOutcome::Kind::Error);
    EXPECT_EQ((*p)->state_count(), 1u);  // killed, not yet replaced
    EXPECT_GE(wakes.load(), 2);
    out = (*p)->classify(plain_job(), utc(2026, 11, 30, 9), windows);  // the other worker
    EXPECT_EQ(out.class_name, "training") << out.error;
    (*p)->maintain();
    EXPECT_EQ((*p)->state_count(), 2u);
    EXPECT_EQ((*p)->worker_stats().kills, 1u);
}

TEST(PolicyWorker, QueueFullAndNoWorkerFreeAreErrorsThatSayWhy) {
    REQUIRE_WORKER();
    for (const char* queue : {"queue = 0", "queue = 4"}) {
        auto p = Policy::compile(kOutlastsTheHook, "/etc/slurm/p.lua",
                                 worker_config(std::string("workers = 1\n") + queue), nullptr);
        ASSERT_TRUE(p) << p.error().message;
        (*p)->build_in_background(nullptr);
        test::FixedWindows windows;
        auto busy = std::async(std::launch::async,
                               [&] { return (*p)->classify(attacking_job(), utc(2026, 11, 30, 9), windows); });
        while ((*p)->worker_stats().busy == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        auto out = (*p)->classify(plain_job(), utc(2026, 11, 30, 9), windows);
        EXPECT_EQ(out.kind, PolicyOutcome::Kind::Error) << queue;
        auto stats = (*p)->worker_stats();
        if (std::string(queue) == "queue = 0") {
            EXPECT_NE(out.error.find("policy queue is full"), std::string::npos) << out.error;
            EXPECT_EQ(stats.queue_rejections, 1u);
        } else {
            EXPECT_NE(out.error.find("no policy worker became free within the time budget of 100ms"), std::string::npos)
                << out.error;
            EXPECT_EQ(stats.queue_timeouts, 1u);
        }
        EXPECT_EQ(busy.get().kind, PolicyOutcome::Kind::Error);
        (*p)->maintain();
        out = (*p)->classify(plain_job(), utc(2026, 11, 30, 9), windows);
        EXPECT_EQ(out.class_name, "training") << out.error;
    }
}

// A worker being started (counted among the workers from the moment
// maintain() reserves its place) is not free: "no worker free" says it is
// being restarted, not "0 busy, 0 being restarted". The worker program is a
// wrapper that starts the real one half a second late, so the start is still
// under way when the job gives up.
TEST(PolicyWorker, NoWorkerFreeCountsTheWorkerBeingStarted) {
    REQUIRE_WORKER();
    auto dir = std::filesystem::temp_directory_path() / ("lanes-slow-worker-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto wrapper = dir / "slow-worker";
    {
        std::ofstream out(wrapper);
        out << "#!/bin/sh\n/bin/sleep 0.5\nexec " << worker_program() << " \"$@\"\n";
    }
    std::filesystem::permissions(wrapper, std::filesystem::perms(0755));
    auto config = parse_controller_config(
        "default_class = \"batch\"\n[policy]\nscript = \"p.lua\"\ntime_budget = \"100ms\"\n"
        "worker = \"" +
            wrapper.string() +
            "\"\nworkers = 1\n"
            "\n[classes.training]\nrank = 1\n[classes.batch]\nrank = 3\n",
        "/etc/slurm/lanes.toml");
    ASSERT_TRUE(config) << config.error().message;
    auto p = Policy::compile(kOutlastsTheHook, "/etc/slurm/p.lua", std::make_shared<const Config>(std::move(*config)),
                             nullptr);
    ASSERT_TRUE(p) << p.error().message;
    (*p)->build_in_background(nullptr);
    test::FixedWindows windows;
    EXPECT_EQ((*p)->classify(attacking_job(), utc(2026, 11, 30, 9), windows).kind, PolicyOutcome::Kind::Error);
    EXPECT_EQ((*p)->worker_stats().workers, 0u);  // killed
    // The thread that starts a worker must outlive it (PR_SET_PDEATHSIG), as
    // slurmctld's maintainer thread does.
    std::promise<void> finish;
    std::atomic<bool> restarted{false};
    std::thread restarter([&, until = finish.get_future()] {
        (*p)->maintain();
        restarted = true;
        until.wait();
    });
    while ((*p)->worker_stats().workers == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto out = (*p)->classify(plain_job(), utc(2026, 11, 30, 9), windows);
    EXPECT_EQ(out.kind, PolicyOutcome::Kind::Error);
    EXPECT_NE(out.error.find("no policy worker became free within the time budget of 100ms (0 busy, 1 being restarted, "
                             "0 other jobs waiting)"),
              std::string::npos)
        << out.error;
    while (!restarted) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    out = (*p)->classify(plain_job(), utc(2026, 11, 30, 9), windows);
    EXPECT_EQ(out.class_name, "training") << out.error;
    finish.set_value();
    restarter.join();
    std::filesystem::remove_all(dir);
}

TEST(PolicyWorker, AHangingTopLevelFailsToLoadInBoundedTime) {
    REQUIRE_WORKER();
    auto p = Policy::compile(
        "xpcall(function() while true do end end, function() while true do end end)\n"
        "function classify(job) return nil end\n",
        "/etc/slurm/p.lua", worker_config("", "20ms"), nullptr);
    ASSERT_FALSE(p);
    // The sandbox's own budget or the worker's load deadline, whichever comes first.
    EXPECT_TRUE(p.error().message.find("did not load the policy within") != std::string::npos ||
                p.error().message.find("budget exceeded") != std::string::npos)
        << p.error().message;
}

TEST(PolicyWorker, CompileErrorsComeBackWithFileAndLine) {
    REQUIRE_WORKER();
    auto p = Policy::compile("function classify(job)\n  return (\nend\n", "/etc/slurm/p.lua", worker_config(), nullptr);
    ASSERT_FALSE(p);
    EXPECT_NE(p.error().message.find("p.lua:3"), std::string::npos) << p.error().message;
    p = Policy::compile("x = 1\n", "/etc/slurm/p.lua", worker_config(), nullptr);
    ASSERT_FALSE(p);
    EXPECT_NE(p.error().message.find("classify"), std::string::npos) << p.error().message;
}

// 64 concurrent submitters, 2 workers, a queue of 8: every job gets the class
// its policy gives it, or an error that says why (queue full, no worker free
// in time); the refusals are counted; none gets anything silently.
TEST(PolicyWorker, BurstsNeverFallBackSilently) {
    REQUIRE_WORKER();
    auto p = Policy::compile(R"(function classify(job)
  local x = 0
  for i = 1, 20000 do x = x + i end
  if job.name:sub(1, 5) == "train" then return 'training' end
  return 'batch'
end)",
                             "/etc/slurm/p.lua", worker_config("workers = 2\nqueue = 8", "200ms"), nullptr);
    ASSERT_TRUE(p) << p.error().message;
    (*p)->build_in_background(nullptr);
    (*p)->maintain();
    test::FixedWindows windows;
    std::atomic<int> right{0}, refused{0}, wrong{0};
    std::vector<std::thread> submitters;
    for (int t = 0; t < 64; ++t) {
        submitters.emplace_back([&, t] {
            for (int i = 0; i < 10; ++i) {
                JobView job = plain_job();
                job.name = (t + i) % 2 ? "train-x" : "other";
                auto out = (*p)->classify(job, utc(2026, 11, 30, 9), windows);
                std::string want = (t + i) % 2 ? "training" : "batch";
                if (out.kind == PolicyOutcome::Kind::Class && out.class_name == want) ++right;
                else if (out.kind == PolicyOutcome::Kind::Error &&
                         (out.error.find("policy queue is full") != std::string::npos ||
                          out.error.find("no policy worker became free") != std::string::npos))
                    ++refused;
                else ++wrong;
            }
        });
    }
    for (auto& t : submitters) t.join();
    auto stats = (*p)->worker_stats();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_EQ(right.load() + refused.load(), 640);
    EXPECT_EQ(static_cast<uint64_t>(refused.load()), stats.queue_rejections + stats.queue_timeouts);
    EXPECT_EQ(static_cast<uint64_t>(right.load()), stats.classifications);
    EXPECT_GT(right.load(), 0);
    EXPECT_EQ(stats.kills, 0u);
    std::printf("burst: %d classified, %d refused (%llu queue full, %llu no worker in time)\n", right.load(),
                refused.load(), static_cast<unsigned long long>(stats.queue_rejections),
                static_cast<unsigned long long>(stats.queue_timeouts));
}

// The pids of this process's lanes-policy-worker children (from /proc).
std::vector<pid_t> worker_children() {
    std::vector<pid_t> pids;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        std::ifstream stat(entry.path() / "stat");
        std::string line;
        if (!std::getline(stat, line)) continue;
        size_t close = line.rfind(')');
        if (close == std::string::npos || line.find("(lanes-policy-w") == std::string::npos) continue;
        std::istringstream rest(line.substr(close + 2));
        char state;
        pid_t ppid = 0;
        rest >> state >> ppid;
        if (ppid == ::getpid() && state != 'Z') pids.push_back(static_cast<pid_t>(std::stoi(entry.path().filename())));
    }
    return pids;
}

TEST(PolicyWorker, AWorkerThatDiedIdleIsReplacedNotBlamedOnAJob) {
    REQUIRE_WORKER();
    auto p = Policy::compile(kOutlastsTheHook, "/etc/slurm/p.lua", worker_config("workers = 1"), nullptr);
    ASSERT_TRUE(p) << p.error().message;
    auto before = worker_children();
    ASSERT_EQ(before.size(), 1u);
    ::kill(before[0], SIGKILL);
    ::waitpid(before[0], nullptr, 0);
    test::FixedWindows windows;
    auto out = (*p)->classify(plain_job(), utc(2026, 11, 30, 9), windows);
    EXPECT_EQ(out.kind, PolicyOutcome::Kind::Class) << out.error;
    EXPECT_EQ((*p)->worker_stats().worker_deaths, 1u);
    EXPECT_EQ(worker_children().size(), 1u);
}

// The worker runs on its caller's CPU, whichever that is at the time: the
// caller sleeps while the worker runs, so no wake-up crosses CPUs.
TEST(PolicyWorker, FollowsItsCallersCpu) {
    REQUIRE_WORKER();
    cpu_set_t mine;
    ASSERT_EQ(::sched_getaffinity(0, sizeof mine, &mine), 0);
    std::vector<int> allowed;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &mine)) allowed.push_back(c);
    ASSERT_FALSE(allowed.empty());
    auto p = Policy::compile("function classify(job) return 'training' end", "/etc/slurm/p.lua",
                             worker_config("workers = 1"), nullptr);
    ASSERT_TRUE(p) << p.error().message;
    auto pids = worker_children();
    ASSERT_EQ(pids.size(), 1u);
    test::FixedWindows windows;
    for (int cpu : {allowed.back(), allowed.front()}) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
        EXPECT_EQ((*p)->classify(plain_job(), utc(2026, 11, 30, 9), windows).class_name, "training");
        cpu_set_t its;
        ASSERT_EQ(::sched_getaffinity(pids[0], sizeof its, &its), 0);
        EXPECT_EQ(CPU_COUNT(&its), 1) << "caller on CPU " << cpu;
        EXPECT_TRUE(CPU_ISSET(cpu, &its)) << "caller on CPU " << cpu;
    }
    ASSERT_EQ(::sched_setaffinity(0, sizeof mine, &mine), 0);
}

// The caller is held on its CPU only for the round trip; a long one (here a
// policy that computes for milliseconds, within its budget) lets both go at
// once, so that a policy running to its deadline never shares the one CPU
// with the caller that must kill it.
TEST(PolicyWorker, ALongRoundTripLetsTheCallerAndWorkerGo) {
    REQUIRE_WORKER();
    cpu_set_t mine;
    ASSERT_EQ(::sched_getaffinity(0, sizeof mine, &mine), 0);
    if (CPU_COUNT(&mine) < 2) GTEST_SKIP() << "needs two CPUs to tell one from all";
    auto p = Policy::compile(
        "function classify(job)\n"
        "  if job.comment == 'slow' then local n = 0 for i = 1, 1500000 do n = n + i end end\n"
        "  return 'training'\n"
        "end\n",
        "/etc/slurm/p.lua", worker_config("instruction_budget = 10000000\nworkers = 1", "2s"), nullptr);
    ASSERT_TRUE(p) << p.error().message;
    auto pids = worker_children();
    ASSERT_EQ(pids.size(), 1u);
    test::FixedWindows windows;
    auto worker_cpus = [&] {
        cpu_set_t its;
        EXPECT_EQ(::sched_getaffinity(pids[0], sizeof its, &its), 0);
        return CPU_COUNT(&its);
    };
    auto my_cpus = [] {
        cpu_set_t now;
        EXPECT_EQ(::sched_getaffinity(0, sizeof now, &now), 0);
        return CPU_COUNT(&now);
    };
    // A round trip is short when the worker answers within 250 us; on a busy
    // machine it may not be scheduled that soon, so one of several will do.
    int pinned = 0;
    for (int i = 0; i < 50 && pinned != 1; ++i) {
        EXPECT_EQ((*p)->classify(plain_job(), utc(2026, 11, 30, 9), windows).class_name, "training");
        pinned = worker_cpus();
    }
    EXPECT_EQ(pinned, 1) << "a short round trip leaves the worker on the caller's CPU";
    EXPECT_EQ(my_cpus(), CPU_COUNT(&mine)) << "the caller's own CPUs are given back";
    JobView slow = plain_job();
    slow.comment = "slow";
    EXPECT_EQ((*p)->classify(slow, utc(2026, 11, 30, 9), windows).class_name, "training");
    EXPECT_EQ(worker_cpus(), CPU_COUNT(&mine)) << "a long round trip lets the worker go";
    EXPECT_EQ(my_cpus(), CPU_COUNT(&mine));
}

// What the worker gave up before running the policy, as the kernel reports it.
TEST(PolicyWorker, RunsUnderSeccompWithoutNewPrivileges) {
    REQUIRE_WORKER();
    auto p = Policy::compile(kOutlastsTheHook, "/etc/slurm/p.lua", worker_config("workers = 1"), nullptr);
    ASSERT_TRUE(p) << p.error().message;
    auto pids = worker_children();
    ASSERT_EQ(pids.size(), 1u);
    std::ifstream status("/proc/" + std::to_string(pids[0]) + "/status");
    std::map<std::string, std::string> fields;
    for (std::string line; std::getline(status, line);) {
        size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        size_t value = line.find_first_not_of(" \t", colon + 1);
        fields[line.substr(0, colon)] = value == std::string::npos ? "" : line.substr(value);
    }
    EXPECT_EQ(fields["NoNewPrivs"], "1");
#if defined(__x86_64__) || defined(__aarch64__)
    EXPECT_EQ(fields["Seccomp"], "2");  // filter mode
#endif
    std::ifstream limits("/proc/" + std::to_string(pids[0]) + "/limits");
    std::string text((std::istreambuf_iterator<char>(limits)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("Max open files            4                    4"), std::string::npos) << text;
    EXPECT_NE(text.find("Max core file size        0                    0"), std::string::npos) << text;
}

TEST(PolicyWorker, ProgramIsChecked) {
    auto r = PolicyWorkerPool::check_program("relative/worker");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("policy.worker"), std::string::npos);
    r = PolicyWorkerPool::check_program("/nonexistent/lanes-policy-worker");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("No such file"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace lanes
