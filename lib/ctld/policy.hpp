// SPDX-License-Identifier: GPL-2.0-or-later
// The admin's Lua 5.4 policy, sandboxed: one compiled script, run on a small
// pool of lua_States (each used by one thread at a time), with per-call
// instruction, wall-time and memory budgets. See lanes-policy(7) for the contract.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/job.hpp"
#include "core/lanes_toml.hpp"
#include "core/log.hpp"
#include "core/result.hpp"
#include "ctld/router.hpp"

namespace lanes {

// What one classify(job) call produced.
struct PolicyOutcome {
    enum class Kind {
        Class,        // the policy chose class_name
        FallThrough,  // returned nil: built-in rules / default_class decide
        Reject,       // reject("why") or {reject = "why"}
        Error,        // runtime error, budget exceeded, bad return value
    };
    Kind kind = Kind::FallThrough;
    std::string class_name;
    std::string reason;    // the table's `reason`, if given
    std::string location;  // "default.lua:42": the return that decided, if known
    std::string reject_message;
    std::string error;                       // "default.lua:12: attempt to index a nil value"
    std::vector<std::string> user_messages;  // lanes.user_message() and the table's `message`
    // Routing overrides from the returned table (validated by the classifier
    // against the class's policy_overrides).
    std::optional<std::string> partition;
    std::optional<std::string> qos;
    std::optional<std::string> features;
    std::optional<int32_t> nice;
    std::optional<SysSeconds> begin_time;
    std::optional<uint32_t> time_limit_minutes;
    // Names of the override fields present, in a fixed order.
    std::vector<std::string> overrides() const;
};

// The policy worker pool's counters (policy_pool.hpp), for the controller's log.
struct WorkerPoolStats {
    uint64_t classifications = 0;   // calls answered by a worker
    uint64_t overruns = 0;          // calls abandoned at the deadline
    uint64_t kills = 0;             // workers SIGKILLed (overruns, protocol errors)
    uint64_t queue_rejections = 0;  // calls refused: the queue was full
    uint64_t queue_timeouts = 0;    // calls refused: no worker free before the deadline
    uint64_t cooling_down = 0;      // calls refused: the owner's last job overran (cool-down)
    uint64_t worker_deaths = 0;     // workers that died or spoke garbage mid-call
    uint64_t respawns = 0;          // workers started after the first
    uint64_t spawn_failures = 0;    // starts that failed (logged)
    size_t workers = 0;             // alive now
    size_t busy = 0;
    size_t waiting = 0;
};

struct LuaState;         // lua_sandbox.hpp
class PolicyWorkerPool;  // policy_pool.hpp
struct WorkerPoolStats;  // policy_pool.hpp

class Policy {
public:
    // Compile `source` (text only, never bytecode) and run its top level under the
    // budgets. With config.policy.worker set, this happens in a policy worker
    // process (policy_pool.hpp), which then serves every classify() call;
    // config.text is what the worker parses. `chunk_name` appears in messages ("/etc/slurm/lanes/policy.lua:12:").
    // Fails if the script does not compile, its top level errors, or it defines no
    // global function classify.
    static Result<std::shared_ptr<Policy>> compile(std::string source, std::string chunk_name,
                                                   std::shared_ptr<const Config> config, LogSink log,
                                                   size_t max_states = 0);
    // Same, reading the file.
    static Result<std::shared_ptr<Policy>> load_file(const std::string& path, std::shared_ptr<const Config> config,
                                                     LogSink log, size_t max_states = 0);
    ~Policy();
    Policy(const Policy&) = delete;
    Policy& operator=(const Policy&) = delete;

    // Run classify(job). Never throws; a failure is Kind::Error with a message.
    // Thread-safe: concurrent callers get distinct lua_States.
    PolicyOutcome classify(const JobView& job, SysSeconds now, const WindowOracle& windows) noexcept;

    // Run the policy on a synthetic job; errors (and classes that do not exist)
    // are failures. Used before a reload is swapped in.
    Result<void> self_check(SysSeconds now, const WindowOracle& windows);

    const std::string& chunk_name() const { return chunk_name_; }
    const Config& config() const { return *config_; }
    // Build and close lua_States off the caller's path (slurmctld): from now on
    // classify() never builds or closes a state; it takes an idle one, waiting
    // at most the time budget, and a state that hit a budget is set aside.
    // maintain(), called from a thread that holds no slurmctld lock, closes
    // those and builds the pool up to its size; `wake` asks for a maintain()
    // soon (called with no lock held; may be empty).
    void build_in_background(std::function<void()> wake);
    void maintain();

    // How many lua_States (or, isolated, worker processes) exist now (tests).
    size_t state_count() const;
    // Isolated: the policy runs in lanes-policy-worker processes (see
    // policy_pool.hpp), chosen by a non-empty config.policy.worker.
    bool isolated() const { return pool_ != nullptr; }
    // The worker pool's counters; all zero when not isolated.
    WorkerPoolStats worker_stats() const;
    // How many states were discarded and rebuilt after a budget violation (tests).
    uint64_t rebuilds() const;

private:
    Policy(std::string source, std::string chunk_name, std::shared_ptr<const Config> config, LogSink log,
           size_t max_states);
    Result<std::unique_ptr<LuaState>> new_state();
    std::unique_ptr<LuaState> acquire(std::string& error);
    void release(std::unique_ptr<LuaState> state);

    std::string source_;
    std::string chunk_name_;
    std::shared_ptr<const Config> config_;
    LogSink log_;
    size_t max_states_;
    mutable std::mutex mutex_;
    std::condition_variable idle_cv_;
    std::vector<std::unique_ptr<LuaState>> idle_;
    std::vector<std::unique_ptr<LuaState>> graveyard_;  // tainted, closed by maintain()
    bool background_ = false;
    std::function<void()> wake_;
    size_t total_ = 0;
    uint64_t rebuilds_ = 0;
    std::unique_ptr<PolicyWorkerPool> pool_;
};

// A synthetic job for self-checks and lanesctl.
JobView synthetic_job(const Config& config, SysSeconds now);

}  // namespace lanes
