// SPDX-License-Identifier: GPL-2.0-or-later
// SignalMonitor. See signal_monitor.hpp.
#include "signals/signal_monitor.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include "signals/curl_fetcher.hpp"

namespace lanes {

struct SignalMonitor::SignalSlot {
    SignalConfig config;
    SignalState state;
    std::string logged_error;  // the failure last logged ("" when healthy)
    bool logged_unusable = false;
};

namespace {
struct PendingLog {
    LogLevel level;
    std::string line;
};
thread_local std::vector<PendingLog>* t_pending = nullptr;
}  // namespace

SignalMonitor::SignalMonitor(LogSink log, FetcherFactory make_fetcher, Clock clock)
    : log_(std::move(log)), make_fetcher_(std::move(make_fetcher)), clock_(std::move(clock)) {
    if (!make_fetcher_) make_fetcher_ = [](const std::atomic<bool>* cancel) { return make_curl_fetcher(cancel); };
    if (!clock_) clock_ = [] { return SignalClock::now(); };
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) fetch_seed_ = std::hash<std::string>{}(host);
}

SignalMonitor::~SignalMonitor() {
    stop();
    if (change_fd_ >= 0) ::close(change_fd_);
}

int SignalMonitor::change_fd() {
    std::lock_guard lock(mutex_);
    if (change_fd_ < 0) change_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return change_fd_;
}

std::optional<SignalClock::time_point> SignalMonitor::next_evaluation_due() const {
    std::lock_guard lock(mutex_);
    return next_evaluation_due_locked(clock_());
}

std::optional<SignalClock::time_point> SignalMonitor::next_evaluation_due_locked(SignalClock::time_point now) const {
    std::vector<SignalTimers> signals;
    for (const auto& [name, slot] : slots_) signals.push_back({&slot->config, &slot->state});
    std::vector<const SignalWindowTracker*> windows;
    for (const auto& [name, tracker] : trackers_) windows.push_back(&tracker);
    return next_signal_change(signals, windows, now);
}

void SignalMonitor::stop() { stop_threads(); }

void SignalMonitor::stop_threads() {
    std::vector<std::thread> threads;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        cancel_ = true;
        threads.swap(threads_);
    }
    wake_.notify_all();
    evaluator_wake_.notify_all();
    for (auto& t : threads)
        if (t.joinable()) t.join();
    std::lock_guard lock(mutex_);
    stopping_ = false;
    cancel_ = false;
}

void SignalMonitor::configure(const std::map<std::string, SignalConfig>& signals,
                              const std::map<std::string, SignalWindowConfig>& windows, bool start_threads) {
    {
        std::lock_guard lock(mutex_);
        bool same =
            slots_.size() == signals.size() && trackers_.size() == windows.size() && !threads_.empty() == start_threads;
        for (const auto& [name, cfg] : signals) {
            auto it = slots_.find(name);
            if (it == slots_.end() || !(it->second->config == cfg)) same = false;
        }
        for (const auto& [name, cfg] : windows) {
            auto it = trackers_.find(name);
            if (it == trackers_.end() || !(it->second.config() == cfg)) same = false;
        }
        if (same && (!slots_.empty() || !trackers_.empty() || snapshot_)) return;
    }
    stop_threads();
    std::lock_guard lock(mutex_);
    std::map<std::string, std::unique_ptr<SignalSlot>> slots;
    for (const auto& [name, cfg] : signals) {
        auto it = slots_.find(name);
        if (it != slots_.end() && it->second->config == cfg) {
            slots[name] = std::move(it->second);
        } else {
            auto slot = std::make_unique<SignalSlot>();
            slot->config = cfg;
            slots[name] = std::move(slot);
        }
    }
    std::map<std::string, SignalWindowTracker> trackers;
    for (const auto& [name, cfg] : windows) {
        auto it = trackers_.find(name);
        if (it != trackers_.end() && it->second.config() == cfg) trackers.emplace(name, it->second);
        else trackers.emplace(name, SignalWindowTracker(cfg));
    }
    slots_ = std::move(slots);
    trackers_ = std::move(trackers);
    std::vector<PendingLog> pending;
    t_pending = &pending;
    evaluate_locked(clock_());
    t_pending = nullptr;
    if (start_threads) {
        for (auto& [name, slot] : slots_) threads_.emplace_back(&SignalMonitor::worker, this, slot.get());
        if (!trackers_.empty() || !slots_.empty()) threads_.emplace_back(&SignalMonitor::evaluator, this);
    }
    for (auto& p : pending)
        if (log_) log_(p.level, p.line);
}

std::shared_ptr<const SignalSnapshot> SignalMonitor::snapshot() const {
    std::lock_guard lock(mutex_);
    if (!snapshot_) return snapshot_;
    const auto now = clock_();
    if (now - snapshot_->taken < std::chrono::seconds(1)) return snapshot_;
    // The windows cannot have changed (the evaluator wakes when they can); the
    // values' ages and texts have.
    auto snap = std::make_shared<SignalSnapshot>(*snapshot_);
    snap->taken = now;
    for (const auto& [name, slot] : slots_)
        if (auto it = snap->signals.find(name); it != snap->signals.end())
            it->second.value = effective_value(slot->config, slot->state, now);
    snapshot_ = std::move(snap);
    return snapshot_;
}

void SignalMonitor::fetch_one(SignalSlot& slot, SignalFetcher& fetcher,
                              std::optional<SignalClock::time_point> instant) {
    // Called without the lock: slot.config does not change while threads run.
    FetchResult result = fetcher.fetch(slot.config, instant);
    Result<double> outcome = interpret_fetch(result);
    const auto now = clock_();
    std::vector<PendingLog> pending;
    {
        std::lock_guard lock(mutex_);
        t_pending = &pending;
        record_attempt(slot.state, outcome, now, instant);
        const std::string& name = slot.config.name;
        if (!outcome) {
            if (slot.logged_error != outcome.error().message) {
                slot.logged_error = outcome.error().message;
                pending.push_back({LogLevel::Error,
                                   "signal " + name + ": " + slot.config.url + ": query failed: " + slot.logged_error});
            }
        } else if (!slot.logged_error.empty()) {
            slot.logged_error.clear();
            pending.push_back(
                {LogLevel::Info, "signal " + name + ": recovered, value " + format_signal_value(*outcome)});
        }
        evaluate_locked(now);
        t_pending = nullptr;
    }
    for (auto& p : pending)
        if (log_) log_(p.level, p.line);
}

void SignalMonitor::evaluate_locked(SignalClock::time_point now) {
    auto snap = std::make_shared<SignalSnapshot>();
    snap->taken = now;
    for (auto& [name, slot] : slots_) {
        SignalValue v = effective_value(slot->config, slot->state, now);
        if (!v.fresh && !slot->logged_unusable && (slot->state.successes || slot->state.failures)) {
            slot->logged_unusable = true;
            if (t_pending)
                t_pending->push_back(
                    {LogLevel::Error, "signal " + name + ": no usable value (" + v.why_unusable + "); " +
                                          (v.from_fallback ? "using fallback " + format_signal_value(*v.value)
                                                           : std::string("windows use their when_unknown setting"))});
        } else if (v.fresh && slot->logged_unusable) {
            slot->logged_unusable = false;
        }
        snap->signals[name] = SignalSnapshot::Signal{v, slot->state};
    }
    for (auto& [name, tracker] : trackers_) {
        std::optional<double> value;
        std::string why_unknown = "no such signal";
        if (auto it = snap->signals.find(tracker.config().signal); it != snap->signals.end()) {
            value = it->second.value.value;
            why_unknown = it->second.value.why_unusable;
        }
        if (tracker.update(value, now, why_unknown) && t_pending)
            t_pending->push_back({LogLevel::Info, "window " + name + " " + (tracker.busy() ? "begins" : "ends") + ": " +
                                                      tracker.reason()});
        snap->windows[name] =
            SignalSnapshot::WindowState{tracker.busy(), tracker.since(), tracker.config().retry, tracker.reason()};
    }
    snapshot_ = std::move(snap);
    ++evaluations_;
    evaluator_wake_.notify_all();
    if (change_fd_ >= 0) {
        const uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(change_fd_, &one, sizeof one);  // full (2^64-2): already readable
    }
}

void SignalMonitor::evaluate_now() {
    std::vector<PendingLog> pending;
    {
        std::lock_guard lock(mutex_);
        t_pending = &pending;
        evaluate_locked(clock_());
        t_pending = nullptr;
    }
    for (auto& p : pending)
        if (log_) log_(p.level, p.line);
}

std::shared_ptr<const SignalSnapshot> SignalMonitor::refresh_all_now() {
    std::vector<SignalSlot*> slots;
    {
        std::lock_guard lock(mutex_);
        for (auto& [name, slot] : slots_) slots.push_back(slot.get());
    }
    for (SignalSlot* slot : slots) {
        auto fetcher = make_fetcher_(&cancel_);
        fetch_one(*slot, *fetcher);
    }
    evaluate_now();
    return snapshot();
}

void SignalMonitor::worker(SignalSlot* slot) {
    std::unique_ptr<SignalFetcher> fetcher;
    try {
        fetcher = make_fetcher_(&cancel_);
    } catch (...) {
        return;
    }
    // Fetches at the signal's instants (signal_instant_at_or_before), each
    // its delay after it, asking for the value at the instant. The first
    // fetch, at start, asks for the latest instant whose delay has passed; a
    // fetch slower than the interval skips to the latest instant, never
    // queues the ones it missed.
    const auto interval = std::max(slot->config.interval, std::chrono::milliseconds{1});
    const auto delay = signal_fetch_delay(interval, fetch_seed_);
    std::optional<SignalClock::time_point> asked;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        const auto now = clock_();
        const auto instant = signal_instant_at_or_before(now - delay, interval);
        if (!asked || instant > *asked) {
            asked = instant;
            lock.unlock();
            try {
                fetch_one(*slot, *fetcher, instant);
            } catch (...) {
                // fetch_one only allocates; keep the thread alive on bad_alloc
            }
            lock.lock();
            continue;
        }
        // The wait is on the steady clock, the instant on clock_: a stepped
        // system clock moves the next fetch by at most one interval.
        const auto until =
            std::clamp<SignalClock::duration>(*asked + interval + delay - now, std::chrono::milliseconds{1}, interval);
        wake_.wait_for(lock, until, [this] { return stopping_; });
    }
}

void SignalMonitor::evaluator() {
    // Sleeps until the next instant a decision can change by time alone; every
    // evaluation (after a fetch, or configure) wakes it to compute that again.
    // The wait is on the steady clock, the deadline on clock_ (the system
    // clock): if that one is stepped, the next fetch recomputes it.
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        const uint64_t seen = evaluations_;
        const auto now = clock_();
        const auto due = next_evaluation_due_locked(now);
        auto changed = [&] { return stopping_ || evaluations_ != seen; };
        if (!due) {
            evaluator_wake_.wait(lock, changed);
            continue;
        }
        if (*due > now && evaluator_wake_.wait_for(lock, *due - now, changed)) continue;
        lock.unlock();
        try {
            evaluate_now();
        } catch (...) {
        }
        lock.lock();
    }
}

}  // namespace lanes
