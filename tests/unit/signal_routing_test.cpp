// SPDX-License-Identifier: GPL-2.0-or-later
// Signal windows in the controller: while a window that follows a signal holds,
// jobs of classes that avoid it are deferred by `retry` and do not borrow; the
// policy reads lanes.signal(). The snapshots are fixed (no threads, no network).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "core/lanes_toml.hpp"
#include "ctld/classifier.hpp"
#include "ctld/windows_config.hpp"
#include "signals/signals.hpp"

namespace lanes {
namespace {

using namespace std::chrono;

class FixedSource final : public SignalSource {
public:
    std::shared_ptr<const SignalSnapshot> snapshot() const override { return snap; }
    std::shared_ptr<SignalSnapshot> snap;
};

const char* kConfig = R"(
default_class = "training"
[signals.p99]
url = "http://127.0.0.1:9"
query = "q"
[windows.busy]
signal = "p99"
above = 0.25
until_below = 0.1
retry = "10min"
[classes.training]
partitions = ["train"]
avoid_windows = ["busy"]
borrow_partitions = ["infer"]
exempt_users = ["alice"]
rate = "1Gbit"
busy_window = "busy"
busy_ceil = "500Mbit"
[classes.inference]
partitions = ["infer"]
)";

std::shared_ptr<SignalSnapshot> snapshot_at(SignalClock::time_point at, bool busy, std::optional<double> value) {
    auto s = std::make_shared<SignalSnapshot>();
    s->taken = at;
    SignalSnapshot::Signal sig;
    sig.value.value = value;
    sig.value.fresh = value.has_value();
    if (value) sig.value.age = seconds{3};
    s->signals["p99"] = sig;
    s->windows["busy"] = SignalSnapshot::WindowState{busy, at, minutes{10}, busy ? "p99=0.3 above 0.25" : "idle"};
    return s;
}

JobView job_of(const std::string& user) {
    JobView j;
    j.name = "train-1";
    j.user = user;
    j.partition = "train";
    j.time_limit_minutes = 60;
    j.batch = true;
    return j;
}

TEST(SignalRouting, BusyWindowDefersByRetryAndForbidsBorrowing) {
    auto cfg = parse_controller_config(kConfig, "lanes.toml");
    ASSERT_TRUE(cfg) << cfg.error().message;
    auto source = std::make_shared<FixedSource>();
    ClassifierOptions options;
    options.signals = source;
    auto c = Classifier::from_config(*cfg, {}, options);
    ASSERT_TRUE(c) << c.error().message;
    const SysSeconds now = floor<seconds>(SignalClock::now());

    source->snap = snapshot_at(now, false, 0.05);
    Decision idle = (*c)->classify(job_of("bob"), now);
    EXPECT_FALSE(idle.begin_time);
    EXPECT_EQ(idle.partition, "train,infer");  // borrows while idle

    source->snap = snapshot_at(now, true, 0.3);
    Decision busy = (*c)->classify(job_of("bob"), now);
    ASSERT_TRUE(busy.begin_time);
    EXPECT_EQ(*busy.begin_time, now + minutes{10});
    EXPECT_EQ(busy.partition, "train");  // no borrowing while busy
    bool told = false;
    for (const auto& m : busy.user_messages) told = told || m.find("deferred") != std::string::npos;
    EXPECT_TRUE(told);

    // Exempt users are not deferred, and still do not borrow inside the window.
    Decision exempt = (*c)->classify(job_of("alice"), now);
    EXPECT_FALSE(exempt.begin_time);
    EXPECT_EQ(exempt.partition, "train");
}

TEST(SignalRouting, NoSnapshotFollowsWhenUnknown) {
    auto text = std::string(kConfig);
    auto cfg = parse_controller_config(text, "lanes.toml");
    ASSERT_TRUE(cfg);
    auto source = std::make_shared<FixedSource>();  // never evaluated: null snapshot
    ClassifierOptions options;
    options.signals = source;
    const SysSeconds now = floor<seconds>(SignalClock::now());
    ASSERT_FALSE(cfg->signal_windows["busy"].when_unknown_set);
    auto busy = Classifier::from_config(*cfg, {}, options);  // when_unknown = busy (default)
    ASSERT_TRUE(busy);
    auto d = (*busy)->classify(job_of("bob"), now);
    ASSERT_TRUE(d.begin_time);
    EXPECT_GE(*d.begin_time, now + minutes{10});

    cfg->signal_windows["busy"].when_unknown = UnknownSignalAction::Idle;
    auto idle = Classifier::from_config(*cfg, {}, options);
    ASSERT_TRUE(idle);
    EXPECT_FALSE((*idle)->classify(job_of("bob"), now).begin_time);
}

TEST(SignalRouting, PolicyReadsSignalValueAndAge) {
    char dir[] = "/tmp/lanes-sigpolicy-XXXXXX";
    ASSERT_TRUE(::mkdtemp(dir));
    const std::string script = std::string(dir) + "/policy.lua";
    std::ofstream(script) << R"(
function classify(job)
  local v, age, fresh = lanes.signal("p99")
  if v == nil then return {class = "training", reason = "no value"} end
  if v > 0.25 then return {class = "inference", reason = string.format("p99=%g age=%d fresh=%s", v, age, tostring(fresh))} end
  return {class = "training", reason = "calm"}
end
)";
    auto cfg = parse_controller_config(kConfig, "lanes.toml");
    ASSERT_TRUE(cfg);
    cfg->policy.script = script;
    cfg->policy.time_budget = std::chrono::seconds(5);  // the default 20 ms can run out on a busy machine
    auto source = std::make_shared<FixedSource>();
    ClassifierOptions options;
    options.signals = source;
    auto c = Classifier::from_config(*cfg, {}, options);
    ASSERT_TRUE(c) << c.error().message;
    const SysSeconds now = floor<seconds>(SignalClock::now());
    source->snap = snapshot_at(now, false, 0.3);
    Decision d = (*c)->classify(job_of("bob"), now);
    EXPECT_EQ(d.class_name, "inference");
    EXPECT_NE(d.reason.find("p99=0.3 age=3 fresh=true"), std::string::npos) << d.reason;
    source->snap = snapshot_at(now, false, std::nullopt);
    d = (*c)->classify(job_of("bob"), now);
    EXPECT_EQ(d.class_name, "training");
    EXPECT_NE(d.reason.find("no value"), std::string::npos) << d.reason;
    std::remove(script.c_str());
    ::rmdir(dir);
}

}  // namespace
}  // namespace lanes
