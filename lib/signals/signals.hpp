// SPDX-License-Identifier: GPL-2.0-or-later
// Signals: live values from a Prometheus-compatible HTTP API ([signals.NAME] in
// lanes.toml) and the windows that follow them with hysteresis. This half is pure:
// the answer parser, the freshness rules and the hysteresis, all functions of
// their inputs and a clock value. Fetching (curl_fetcher) and the refresh threads
// (signal_monitor) are its neighbours, so nothing here does I/O.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/lanes_toml.hpp"
#include "core/result.hpp"

namespace lanes {

using SignalClock = std::chrono::system_clock;

// One HTTP exchange as the fetcher saw it. transport_error is non-empty when no
// HTTP answer arrived (connection refused, timeout, TLS failure, body too large).
struct FetchResult {
    std::string transport_error;
    long http_status = 0;
    std::string body;
};

// Fetches one signal's query. Implementations: libcurl (curl_fetcher.hpp) and the
// scripted fake of the unit tests. fetch() must return within about the
// signal's timeout and never throw.
class SignalFetcher {
public:
    virtual ~SignalFetcher() = default;
    // `instant`: the query's evaluation instant (Prometheus' time=); none: now.
    virtual FetchResult fetch(const SignalConfig& signal,
                              std::optional<SignalClock::time_point> instant = std::nullopt) noexcept = 0;
};

// Fetch instants. Every node fetches a signal at the same wall-clock instants,
// the multiples of its interval since the epoch, and asks for the value at that
// instant (time=), not at the moment its request arrives: agents that read one
// cluster-wide query then read the same number, and controllers fed the same
// numbers take the same decisions (agent/ceil_controller.hpp). Fetching
// whenever a node's thread happened to start gave two nodes of one job values a
// second apart, on either side of a load step, and opposite decisions.
//
// The latest instant at or before `t`.
SignalClock::time_point signal_instant_at_or_before(SignalClock::time_point t, std::chrono::milliseconds interval);
// How long after its instant a signal is fetched: a quarter of the interval (at
// most 1 s), so that scrapes stamped before the instant are in Prometheus' head
// when the query comes, plus as much again at most, spread by `seed` (a hash of
// the host name), so that a thousand agents do not ask in the same millisecond.
std::chrono::milliseconds signal_fetch_delay(std::chrono::milliseconds interval, uint64_t seed);

// The one number in a /api/v1/query answer: a scalar, or an instant vector with
// exactly one series. Errors say what was wrong: an HTTP status, status "error"
// (with Prometheus' errorType and error), NaN or infinite, an empty vector,
// several series (naming two of them), a matrix, malformed JSON.
Result<double> parse_prometheus_answer(long http_status, std::string_view body);

// A FetchResult -> the value or a one-line reason.
Result<double> interpret_fetch(const FetchResult& result);

// What is known about one signal.
struct SignalState {
    std::optional<double> last_value;        // the last good value, however old
    SignalClock::time_point last_success{};  // when it was fetched
    SignalClock::time_point last_attempt{};
    std::string last_error;  // of the last attempt; "" when it succeeded
    // The evaluation instant the last attempt asked for (time=); none: the
    // moment of the request (lanesctl signals).
    std::optional<SignalClock::time_point> last_instant;
    uint64_t successes = 0;
    uint64_t failures = 0;
};

// The value to use now: fresh, from the fallback, or none.
struct SignalValue {
    std::optional<double> value;
    bool fresh = false;  // last_value younger than stale_after
    bool from_fallback = false;
    std::optional<std::chrono::seconds> age;  // of last_value, if any
    // When !fresh: "not fetched yet", "never fetched successfully: <error>",
    // "stale since 2026-12-01 15:04:05 UTC (93s old): <last error>".
    std::string why_unusable;
};
SignalValue effective_value(const SignalConfig& config, const SignalState& state, SignalClock::time_point now);

// The first instant at which effective_value() calls `state`'s value stale, when
// it is fresh at `now`; nullopt when it is not (then only a fetch changes it).
std::optional<SignalClock::time_point> stale_at(const SignalConfig& config, const SignalState& state,
                                                SignalClock::time_point now);

// Updates `state` with one attempt's outcome.
void record_attempt(SignalState& state, const Result<double>& outcome, SignalClock::time_point at,
                    std::optional<SignalClock::time_point> instant = std::nullopt);

// Hysteresis over one signal window. Idle -> busy once the value has stayed above
// `above` for `hold_for`; busy -> idle once it has stayed below `until_below` for
// `release_after`. No usable value: when_unknown (busy by default, idle, or hold
// the state), and the reason says so, with why the value is unusable.
class SignalWindowTracker {
public:
    explicit SignalWindowTracker(SignalWindowConfig config) : config_(std::move(config)) {}
    // Feed the signal's value at `now` (nullopt: no usable value, for the reason
    // `why_unknown`, e.g. SignalValue::why_unusable). Returns whether the state changed.
    bool update(std::optional<double> value, SignalClock::time_point now, std::string_view why_unknown = {});
    bool busy() const { return busy_; }
    SignalClock::time_point since() const { return since_; }
    // Why it is in its state, for logs and lanesctl: "p99=0.31 above 0.25 for 2min".
    const std::string& reason() const { return reason_; }
    const SignalWindowConfig& config() const { return config_; }
    // When the crossing under way completes if the value stays on its side
    // (update() at or after it changes the state); nullopt when none is.
    std::optional<SignalClock::time_point> crossing_due() const;

private:
    SignalWindowConfig config_;
    bool busy_ = false;
    SignalClock::time_point since_{};
    std::optional<SignalClock::time_point> crossing_since_;
    std::string reason_ = "no value yet";
};

// The earliest instant at which evaluating again, with no new fetch, can change
// anything: a fresh value going stale, a window's crossing completing. nullopt:
// nothing changes until a fetch returns. What the evaluator sleeps until.
struct SignalTimers {
    const SignalConfig* config;
    const SignalState* state;
};
std::optional<SignalClock::time_point> next_signal_change(const std::vector<SignalTimers>& signals,
                                                          const std::vector<const SignalWindowTracker*>& windows,
                                                          SignalClock::time_point now);

// An immutable picture of every signal and signal window at one instant; the
// submit path and the policy read only this (a pointer copy).
struct SignalSnapshot {
    SignalClock::time_point taken{};
    struct Signal {
        SignalValue value;
        SignalState state;
    };
    std::map<std::string, Signal> signals;
    struct WindowState {
        bool busy = false;
        SignalClock::time_point since{};
        std::chrono::seconds retry{300};
        std::string reason;
    };
    std::map<std::string, WindowState> windows;
};

// Where the controller and the agent get snapshots from (lib/signals'
// SignalMonitor; tests hand in fixed ones).
class SignalSource {
public:
    virtual ~SignalSource() = default;
    // Never blocks on the network; may return null before the first evaluation.
    virtual std::shared_ptr<const SignalSnapshot> snapshot() const = 0;
};

// "0.31", "1.2e+09": short, exact enough for logs.
std::string format_signal_value(double v);

}  // namespace lanes
