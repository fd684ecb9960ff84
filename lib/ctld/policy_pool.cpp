// SPDX-License-Identifier: GPL-2.0-or-later
// Policy worker processes (policy_pool.hpp).
#include "ctld/policy_pool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/text.hpp"
#include "ctld/policy_api.hpp"
#include "ctld/router.hpp"
#include "ctld/worker_io.hpp"

namespace lanes {

namespace {

using SteadyClock = std::chrono::steady_clock;
using policy_detail::kMaxUserMessageBytes;

std::string describe_duration(std::chrono::microseconds d) {
    if (d.count() % 1000000 == 0) return std::to_string(d.count() / 1000000) + "s";
    if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "ms";
    return std::to_string(d.count()) + "us";
}

PolicyOutcome error_outcome(std::string message) {
    PolicyOutcome out;
    out.kind = PolicyOutcome::Kind::Error;
    out.error = std::move(message);
    return out;
}

wire::Answer answer(const wire::Query& q, const WindowOracle& windows) {
    wire::Answer a;
    switch (q.op) {
        case wire::Query::Op::Known: a.flag = windows.known(q.name); break;
        case wire::Query::Op::InWindow: a.flag = windows.known(q.name) && windows.in_window(q.name, q.at); break;
        case wire::Query::Op::NextStart:
            if (windows.known(q.name)) a.time = windows.next_start(q.name, q.at);
            break;
        case wire::Query::Op::NextEnd:
            if (windows.known(q.name)) a.time = windows.next_end(q.name, q.at);
            break;
        case wire::Query::Op::Describe:
            if (windows.known(q.name)) a.text = windows.describe(q.name, q.at);
            break;
        case wire::Query::Op::Signal: a.signal = windows.signal(q.name); break;
    }
    return a;
}

// How long a round trip runs on one CPU before the caller and the worker
// are let go (see OneCpuRoundTrip): an ordinary classification takes 10-20 us.
constexpr std::chrono::microseconds kShortRoundTrip{250};

// For one round trip, the caller and its worker on one CPU: the CPU the
// caller runs on. The caller sleeps while the worker runs, so the worker
// takes that CPU at once and wakes the caller on it; no wake-up crosses to
// another, possibly halted, CPU, and the caller is not moved away while it
// waits (which made the next job move the worker too). The caller's own CPU
// mask is given back at the end; the worker stays bound (rebound only when
// a caller comes from another CPU). A round trip that takes longer than
// kShortRoundTrip is let go at once (let_go()): a policy that runs to its
// deadline must not share one CPU with the caller that has to kill it.
class OneCpuRoundTrip {
public:
    explicit OneCpuRoundTrip(PolicyWorkerPool::Worker& w) {
        int cpu = ::sched_getcpu();
        if (cpu < 0 || cpu >= CPU_SETSIZE) return;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (::sched_getaffinity(0, sizeof saved_, &saved_) == 0 && CPU_COUNT(&saved_) > 1)
            pinned_ = ::sched_setaffinity(0, sizeof one, &one) == 0;
        if (cpu != w.cpu && ::sched_setaffinity(w.pid, sizeof one, &one) == 0) w.cpu = cpu;
    }
    ~OneCpuRoundTrip() {
        if (pinned_) ::sched_setaffinity(0, sizeof saved_, &saved_);
    }
    // Both back to the caller's own CPUs.
    void let_go(PolicyWorkerPool::Worker& w) {
        if (!pinned_) return;
        ::sched_setaffinity(0, sizeof saved_, &saved_);
        ::sched_setaffinity(w.pid, sizeof saved_, &saved_);
        w.cpu = -1;
        pinned_ = false;
    }
    OneCpuRoundTrip(const OneCpuRoundTrip&) = delete;
    OneCpuRoundTrip& operator=(const OneCpuRoundTrip&) = delete;

private:
    cpu_set_t saved_{};
    bool pinned_ = false;
};

// An idle worker has nothing to say: anything readable (data, end of file)
// or a hang-up means it is gone or broken.
bool idle_and_alive(const PolicyWorkerPool::Worker& w) {
    struct pollfd p {
        w.fd, POLLIN, 0
    };
    struct timespec zero {};
    return ::ppoll(&p, 1, &zero, nullptr) == 0;
}

}  // namespace

PolicyWorkerPool::PolicyWorkerPool(wire::Init init, WorkerPoolOptions options, LogSink log)
    : init_(std::move(init)), options_(std::move(options)), log_(std::move(log)) {
    if (options_.workers == 0) options_.workers = 1;
    cooldown_ = OverrunCooldown(options_.overrun_cooldown);
}

PolicyWorkerPool::~PolicyWorkerPool() {
    std::vector<Worker> all;
    {
        std::lock_guard lock(mutex_);
        all.swap(idle_);
        for (auto& w : graveyard_) all.push_back(w);
        graveyard_.clear();
    }
    for (auto& w : all) kill_and_reap(w, true);
}

std::string PolicyWorkerPool::name() const { return basename_of(init_.chunk_name); }

void PolicyWorkerPool::log(LogLevel level, const std::string& line) const noexcept {
    try {
        if (log_) log_(level, line);
    } catch (...) {
    }
}

Result<void> PolicyWorkerPool::check_program(const std::string& program) {
    if (program.empty() || program.front() != '/')
        return fail("policy.worker: '" + program + "' is not an absolute path");
    struct stat st {};
    if (::stat(program.c_str(), &st) != 0)
        return fail("policy.worker: " + program + ": " + std::strerror(errno) +
                    " (the lanes-policy-worker program; set [policy] worker in lanes.toml)");
    if (!S_ISREG(st.st_mode) || ::access(program.c_str(), X_OK) != 0)
        return fail("policy.worker: " + program + ": not an executable file");
    if (::geteuid() == 0) {
        if (st.st_uid != 0) return fail("policy.worker: " + program + ": not owned by root; refused");
        if (st.st_mode & (S_IWGRP | S_IWOTH))
            return fail("policy.worker: " + program + ": writable by group or others; refused");
    }
    return {};
}

void PolicyWorkerPool::kill_and_reap(Worker& w, bool wait) {
    if (w.fd >= 0) ::close(w.fd);
    w.fd = -1;
    if (w.pid > 0) {
        ::kill(w.pid, SIGKILL);
        if (wait) {
            while (::waitpid(w.pid, nullptr, 0) < 0 && errno == EINTR) {
            }
        }
    }
    w.pid = -1;
}

Result<PolicyWorkerPool::Worker> PolicyWorkerPool::spawn() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return fail(name() + ": cannot start a policy worker: socketpair: " + std::strerror(errno));
    if (sv[1] == 3) {  // dup2(3, 3) would keep close-on-exec: move it out of the way first
        int moved = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 4);
        ::close(sv[1]);
        sv[1] = moved;
        if (moved < 0) {
            ::close(sv[0]);
            return fail(name() + ": cannot start a policy worker: fcntl: " + std::strerror(errno));
        }
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, sv[1], 3);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::string argv0 = "lanes-policy-worker";
    std::string arg1 = "--serve-fd=3";
    char* argv[] = {argv0.data(), arg1.data(), nullptr};
    char* envp[] = {nullptr};
    pid_t pid = -1;
    int rc = ::posix_spawn(&pid, options_.program.c_str(), &actions, &attr, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(sv[1]);
    if (rc != 0) {
        ::close(sv[0]);
        return fail(name() + ": cannot start the policy worker " + options_.program + ": " + std::strerror(rc));
    }
    Worker w{pid, sv[0]};
    ::fcntl(w.fd, F_SETFL, ::fcntl(w.fd, F_GETFL) | O_NONBLOCK);

    auto deadline = SteadyClock::now() + options_.start_timeout;
    std::string why;
    if (wire::write_frame(w.fd, wire::encode(init_), deadline) != wire::IoStatus::Ok) {
        why = "it did not take the policy";
    } else {
        while (why.empty()) {
            wire::Frame frame;
            std::string error;
            auto status = wire::read_frame(w.fd, frame, deadline, &error);
            if (status == wire::IoStatus::Timeout) {
                why = "it did not load the policy within " + describe_duration(options_.start_timeout) +
                      " (the top level runs with 10x the time budget of " + describe_duration(options_.time_budget) +
                      "); killed";
            } else if (status != wire::IoStatus::Ok) {
                why = error.empty() ? "it ended while loading the policy" : error;
            } else if (frame.type == wire::Type::Log) {
                if (auto line = wire::decode_log(frame.payload))
                    log(line->level, printable(line->text, kMaxUserMessageBytes));
            } else if (frame.type == wire::Type::Ready) {
                auto ready = wire::decode_ready(frame.payload);
                if (!ready) {
                    why = ready.error().message;
                } else if (!ready->ok) {
                    kill_and_reap(w, true);
                    return fail(printable(ready->error, 4096));
                } else {
                    return w;
                }
            } else {
                why = "unexpected message while loading";
            }
        }
    }
    kill_and_reap(w, true);
    return fail(name() + ": policy worker " + options_.program + ": " + why);
}

Result<std::unique_ptr<PolicyWorkerPool>> PolicyWorkerPool::start(wire::Init init, WorkerPoolOptions options,
                                                                  LogSink log) {
    if (auto ok = check_program(options.program); !ok) return fail(ok.error());
    std::unique_ptr<PolicyWorkerPool> pool(new PolicyWorkerPool(std::move(init), std::move(options), std::move(log)));
    auto first = pool->spawn();
    if (!first) return fail(first.error());
    pool->idle_.push_back(*first);
    pool->total_ = 1;
    return pool;
}

PolicyWorkerPool::Worker PolicyWorkerPool::acquire(SteadyClock::time_point deadline, std::string& error,
                                                   bool& started_inline) {
    struct WakeAfterUnlock {  // declared before the lock: runs after it is released
        PolicyWorkerPool* pool;
        bool due = false;
        ~WakeAfterUnlock() {
            if (due && pool->wake_) pool->wake_();
        }
    } wake{this};
    std::unique_lock lock(mutex_);
    if (idle_.empty() && waiting_ >= options_.queue) {
        ++stats_.queue_rejections;
        error = name() + ": the policy queue is full (" + std::to_string(waiting_) + " jobs waiting for " +
                std::to_string(total_) + " policy workers, policy.queue = " + std::to_string(options_.queue) +
                "); the job was not classified";
        return {};
    }
    ++waiting_;
    while (true) {
        while (idle_.empty()) {
            if (!background_ && total_ < options_.workers) {
                ++total_;
                lock.unlock();
                auto made = spawn();
                lock.lock();
                if (made) {
                    ++stats_.respawns;
                    --waiting_;
                    ++busy_;
                    started_inline = true;
                    return *made;
                }
                --total_;
                --waiting_;
                ++stats_.spawn_failures;
                error = made.error().message;
                return {};
            }
            if (idle_cv_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty()) {
                --waiting_;
                ++stats_.queue_timeouts;
                error = name() + ": no policy worker became free within the time budget of " +
                        describe_duration(options_.time_budget) + " (" + std::to_string(busy_) + " busy, " +
                        std::to_string(options_.workers - std::min(options_.workers, busy_)) + " being restarted, " +
                        std::to_string(waiting_) + " other jobs waiting); the job was not classified";
                return {};
            }
        }
        Worker w = idle_.back();
        idle_.pop_back();
        if (!idle_and_alive(w)) {
            // It ended while idle (killed by someone, or by PR_SET_PDEATHSIG when
            // the thread that started it ended): set aside, take another.
            --total_;
            ++stats_.worker_deaths;
            graveyard_.push_back(w);
            wake.due = background_;
            continue;
        }
        --waiting_;
        ++busy_;
        return w;
    }
}

void PolicyWorkerPool::release(Worker w, bool healthy) {
    bool wake = false;
    Worker reap_now;
    {
        std::lock_guard lock(mutex_);
        --busy_;
        if (healthy) {
            idle_.push_back(w);
        } else {
            --total_;
            if (background_) {
                graveyard_.push_back(w);
                wake = true;
            } else {
                reap_now = w;
            }
        }
        idle_cv_.notify_one();
    }
    if (reap_now.pid > 0 || reap_now.fd >= 0) kill_and_reap(reap_now, true);
    if (wake && wake_) wake_();
}

std::optional<std::string> PolicyWorkerPool::cooling_down(uint32_t uid) {
    std::lock_guard lock(mutex_);
    auto now = SteadyClock::now();
    auto until = cooldown_.until(uid, now);
    if (!until) return std::nullopt;
    ++stats_.cooling_down;
    auto left = std::chrono::ceil<std::chrono::seconds>(*until - now).count();
    return name() + ": a job of uid " + std::to_string(uid) + " overran the time budget of " +
           describe_duration(options_.time_budget) + " less than " +
           std::to_string(std::chrono::ceil<std::chrono::seconds>(options_.overrun_cooldown).count()) +
           " s ago; this user's jobs are not run through the policy for another " + std::to_string(left) +
           " s (policy.overrun_cooldown), so that no user can keep every policy worker killed";
}

PolicyOutcome PolicyWorkerPool::classify(const JobView& job, SysSeconds now, const WindowOracle& windows) noexcept {
    try {
        auto deadline = SteadyClock::now() + options_.time_budget + std::chrono::milliseconds(1);
        if (auto refused = cooling_down(job.uid)) return error_outcome(*refused);
        std::string error;
        bool started_inline = false;
        Worker w = acquire(deadline, error, started_inline);
        if (w.pid < 0) return error_outcome(error);
        // Outside slurmctld (lanesctl, tests) a worker may be started here: the
        // policy's budget starts once it is ready.
        if (started_inline) deadline = SteadyClock::now() + options_.time_budget + std::chrono::milliseconds(1);
        auto give_up = [&](const std::string& why, bool overrun) {
            ::kill(w.pid, SIGKILL);  // at once; reaped off the job's path
            {
                std::lock_guard lock(mutex_);
                ++stats_.kills;
                if (overrun) {
                    ++stats_.overruns;
                    cooldown_.overran(job.uid, SteadyClock::now());
                } else ++stats_.worker_deaths;
            }
            release(w, false);
            return error_outcome(why);
        };
        auto overran = [&] {
            return give_up(name() + ": classify() did not return within the time budget of " +
                               describe_duration(options_.time_budget) +
                               " (policy.time_budget); its policy worker was killed",
                           true);
        };
        auto broken = [&](const std::string& what) {
            return give_up(
                name() + ": the policy worker failed during classify() (" + what + "); another one is started", false);
        };

        OneCpuRoundTrip same_cpu(w);
        auto status = wire::write_frame(w.fd, wire::encode(wire::Classify{job, now}), deadline);
        if (status == wire::IoStatus::Timeout) return overran();
        if (status != wire::IoStatus::Ok) return broken("it ended");
        if (wire::wait_readable(w.fd, std::min(deadline, SteadyClock::now() + kShortRoundTrip)) ==
            wire::IoStatus::Timeout)
            same_cpu.let_go(w);
        while (true) {
            wire::Frame frame;
            std::string garbage;
            status = wire::read_frame(w.fd, frame, deadline, &garbage);
            if (status == wire::IoStatus::Timeout) return overran();
            if (status == wire::IoStatus::Closed) return broken("it ended");
            if (status == wire::IoStatus::Garbage) return broken(garbage);
            if (frame.type == wire::Type::Log) {
                auto line = wire::decode_log(frame.payload);
                if (!line) return broken(line.error().message);
                log(line->level, printable(line->text, kMaxUserMessageBytes));
            } else if (frame.type == wire::Type::Query) {
                auto q = wire::decode_query(frame.payload);
                if (!q) return broken(q.error().message);
                status = wire::write_frame(w.fd, wire::encode(answer(*q, windows)), deadline);
                if (status == wire::IoStatus::Timeout) return overran();
                if (status != wire::IoStatus::Ok) return broken("it ended");
            } else if (frame.type == wire::Type::Outcome) {
                auto o = wire::decode_outcome(frame.payload);
                if (!o) return broken(o.error().message);
                {
                    std::lock_guard lock(mutex_);
                    ++stats_.classifications;
                }
                release(w, !o->retire);
                PolicyOutcome out = std::move(o->outcome);
                // The worker ran untrusted code: its text is cleaned again here.
                out.reject_message = printable(out.reject_message, kMaxUserMessageBytes);
                out.reason = printable(out.reason, kMaxUserMessageBytes);
                out.error = printable(out.error, kMaxUserMessageBytes);
                out.location = printable(out.location, 256);
                if (out.user_messages.size() > 64) out.user_messages.resize(64);
                for (auto& m : out.user_messages) m = printable(m, kMaxUserMessageBytes);
                return out;
            } else {
                return broken("unexpected message");
            }
        }
    } catch (const std::exception& e) {
        return error_outcome(name() + ": internal error: " + e.what());
    } catch (...) {
        return error_outcome(name() + ": internal error");
    }
}

void PolicyWorkerPool::build_in_background(std::function<void()> wake) {
    {
        std::lock_guard lock(mutex_);
        background_ = true;
        wake_ = std::move(wake);
    }
    if (wake_) wake_();
}

void PolicyWorkerPool::maintain() {
    std::vector<Worker> dead;
    size_t missing = 0;
    {
        std::lock_guard lock(mutex_);
        dead.swap(graveyard_);
        missing = options_.workers > total_ ? options_.workers - total_ : 0;
        total_ += missing;  // reserved; given back below if a start fails
    }
    for (auto& w : dead) kill_and_reap(w, true);
    for (size_t i = 0; i < missing; ++i) {
        auto made = spawn();
        std::lock_guard lock(mutex_);
        if (made) {
            ++stats_.respawns;
            idle_.push_back(*made);
            idle_cv_.notify_one();
        } else {
            --total_;
            ++stats_.spawn_failures;
            log(LogLevel::Error, "policy: cannot start a policy worker: " + made.error().message);
        }
    }
}

WorkerPoolStats PolicyWorkerPool::stats() const {
    std::lock_guard lock(mutex_);
    WorkerPoolStats s = stats_;
    s.workers = total_;
    s.busy = busy_;
    s.waiting = waiting_;
    return s;
}

}  // namespace lanes
