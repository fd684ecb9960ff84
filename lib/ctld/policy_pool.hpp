// SPDX-License-Identifier: GPL-2.0-or-later
// Policy worker processes: the admin's Lua policy runs in lanes-policy-worker
// processes, never in the caller (slurmctld, lanesctl). A classification waits
// for a free worker in a bounded queue and for its answer until one deadline,
// time_budget + 1 ms after the call began; past it the worker is SIGKILLed and
// the call returns an error that names the budget. Whatever the Lua code does
// (loops in message handlers, C library calls, memory), the caller is back in
// time. Workers are started with posix_spawn (never fork), and in the
// background mode (slurmctld) only by maintain(), off the job's path.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/log.hpp"
#include "core/result.hpp"
#include "ctld/overrun_cooldown.hpp"
#include "ctld/policy.hpp"
#include "ctld/policy_wire.hpp"

namespace lanes {

struct WorkerPoolOptions {
    std::string program;  // lanes-policy-worker
    size_t workers = 2;
    size_t queue = 64;  // callers allowed to wait for a free worker
    std::chrono::microseconds time_budget{20000};
    // How long a new worker may take to load the policy (its top level runs
    // with 10x the budgets) before it is killed.
    std::chrono::microseconds start_timeout{2000000};
    // After a job's classification overran, that job owner's next jobs get
    // the error outcome without running the policy for this long (0: off).
    std::chrono::milliseconds overrun_cooldown{60000};
};

class PolicyWorkerPool {
public:
    // Checks the program (absolute; when running as root: root-owned and not
    // group/world-writable), starts one worker and waits for it to load the
    // policy. Fails with the worker's error (the policy's file:line) or, on a
    // hang, with a message naming the start timeout.
    static Result<std::unique_ptr<PolicyWorkerPool>> start(wire::Init init, WorkerPoolOptions options, LogSink log);
    ~PolicyWorkerPool();
    PolicyWorkerPool(const PolicyWorkerPool&) = delete;
    PolicyWorkerPool& operator=(const PolicyWorkerPool&) = delete;

    PolicyOutcome classify(const JobView& job, SysSeconds now, const WindowOracle& windows) noexcept;

    // As Policy::build_in_background / maintain: from now on classify() never
    // starts or reaps a worker; maintain() does both.
    void build_in_background(std::function<void()> wake);
    void maintain();

    WorkerPoolStats stats() const;

    // Whether `program` may be run as the policy worker; the error names the key.
    static Result<void> check_program(const std::string& program);

    struct Worker {
        pid_t pid = -1;
        int fd = -1;
        int cpu = -1;  // the CPU it is bound to (that of its last caller)
    };

private:
    PolicyWorkerPool(wire::Init init, WorkerPoolOptions options, LogSink log);
    Result<Worker> spawn();
    static void kill_and_reap(Worker& w, bool wait);
    Worker acquire(std::chrono::steady_clock::time_point deadline, std::string& error, bool& started_inline);
    void release(Worker w, bool healthy);
    void log(LogLevel level, const std::string& line) const noexcept;
    // The message for a job whose owner is cooling down, counted; or nothing.
    std::optional<std::string> cooling_down(uint32_t uid);
    std::string name() const;

    wire::Init init_;
    WorkerPoolOptions options_;
    LogSink log_;
    mutable std::mutex mutex_;
    std::condition_variable idle_cv_;
    std::vector<Worker> idle_;
    std::vector<Worker> graveyard_;  // killed or retired; reaped by maintain()
    size_t total_ = 0;               // idle + busy (+ being started)
    size_t busy_ = 0;
    size_t waiting_ = 0;
    bool background_ = false;
    std::function<void()> wake_;
    WorkerPoolStats stats_;
    OverrunCooldown cooldown_{std::chrono::milliseconds(0)};
};

}  // namespace lanes
