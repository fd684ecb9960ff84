// SPDX-License-Identifier: GPL-2.0-or-later
// SignalMonitor: keeps every [signals.NAME] fresh and every signal window
// evaluated, in its own threads, and publishes immutable snapshots.
//
// One worker thread per signal fetches every `interval`, at the same wall-clock
// instants on every node and for the value at that instant (signals.hpp: fetch
// instants; a fetch is bounded by the signal's timeout, so a hung server delays
// only its own signal), and evaluates after it. An evaluator thread sleeps until the next instant at which a decision
// can change with no new fetch (a fresh value going stale, a window's hold_for or
// release_after running out: next_signal_change()), and is woken early by every
// fetch, which can move that instant; an idle node with a signal down wakes only
// for the fetches. Readers (job_submit, the policy, the node agent) only copy a
// shared_ptr under a mutex: they never wait for the network; the agent polls
// change_fd() to learn that a new snapshot is out.
//
// Logging: a line when a signal starts failing or its error changes, when it
// recovers, when it goes stale (and what is used instead), and on every window
// transition. Never once per fetch.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/log.hpp"
#include "signals/signals.hpp"

namespace lanes {

class SignalMonitor final : public SignalSource {
public:
    using FetcherFactory = std::function<std::unique_ptr<SignalFetcher>(const std::atomic<bool>* cancel)>;
    using Clock = std::function<SignalClock::time_point()>;

    // `make_fetcher` defaults to libcurl; `clock` to the system clock (tests pass
    // their own, and drive evaluate_now()).
    explicit SignalMonitor(LogSink log, FetcherFactory make_fetcher = {}, Clock clock = {});
    ~SignalMonitor() override;
    SignalMonitor(const SignalMonitor&) = delete;
    SignalMonitor& operator=(const SignalMonitor&) = delete;

    // Start following these signals and windows, or switch to new ones. The same
    // configuration again is a no-op; otherwise the threads are restarted, and
    // signals and windows whose configuration did not change keep their state.
    void configure(const std::map<std::string, SignalConfig>& signals,
                   const std::map<std::string, SignalWindowConfig>& windows, bool start_threads = true);

    // What only moves with the clock between evaluations (taken, each value's
    // age and why_unusable text) is brought up to date here when the snapshot
    // is a second old or more: readers see what a once-a-second evaluator gave.
    std::shared_ptr<const SignalSnapshot> snapshot() const override;

    // Fetch every signal once now, in this thread, then evaluate (lanesctl signals,
    // tests). Returns the snapshot.
    std::shared_ptr<const SignalSnapshot> refresh_all_now();
    // Re-evaluate freshness and windows at the clock's now.
    void evaluate_now();

    // When the evaluator wakes next with no fetch (nullopt: only a fetch changes
    // anything now), at the clock's now.
    std::optional<SignalClock::time_point> next_evaluation_due() const;

    // An eventfd (non-blocking, close-on-exec) that becomes readable each time a
    // new snapshot is published; the reader drains it. Made on the first call;
    // -1 when it cannot be made (then poll snapshot() instead).
    int change_fd();

    // Stops and joins the threads (transfers in flight are cancelled).
    void stop();

private:
    struct SignalSlot;
    void stop_threads();
    void worker(SignalSlot* slot);
    void evaluator();
    void fetch_one(SignalSlot& slot, SignalFetcher& fetcher,
                   std::optional<SignalClock::time_point> instant = std::nullopt);
    void evaluate_locked(SignalClock::time_point now);
    std::optional<SignalClock::time_point> next_evaluation_due_locked(SignalClock::time_point now) const;

    LogSink log_;
    FetcherFactory make_fetcher_;
    Clock clock_;
    uint64_t fetch_seed_ = 0;  // spreads the fetches of many nodes (signal_fetch_delay)

    mutable std::mutex mutex_;                // guards everything below but threads_
    std::condition_variable wake_;            // the workers: stopping
    std::condition_variable evaluator_wake_;  // the evaluator: stopping, or a new evaluation
    uint64_t evaluations_ = 0;
    int change_fd_ = -1;
    bool stopping_ = false;
    std::atomic<bool> cancel_{false};
    std::map<std::string, std::unique_ptr<SignalSlot>> slots_;
    std::map<std::string, SignalWindowTracker> trackers_;
    mutable std::shared_ptr<const SignalSnapshot> snapshot_;  // snapshot() refreshes its times
    std::vector<std::thread> threads_;
};

}  // namespace lanes
