// SPDX-License-Identifier: GPL-2.0-or-later
// Signals, the pure half: Prometheus answer parsing, freshness, hysteresis.
#include "signals/signals.hpp"
#include "core/text.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <nlohmann/json.hpp>

namespace lanes {

namespace {

using Json = nlohmann::json;

// "2026-12-01 15:04:05 UTC": when a signal's last good value was fetched.
std::string utc_text(SignalClock::time_point at) {
    const std::time_t t = SignalClock::to_time_t(at);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return buf;
}

// Prometheus sends sample values as strings: "0.31", "NaN", "+Inf", "-Inf".
Result<double> sample_value(const Json& pair, const char* what) {
    if (!pair.is_array() || pair.size() != 2 || !pair[1].is_string())
        return fail(std::string("malformed ") + what + " (expected [timestamp, \"value\"])");
    const std::string& text = pair[1].get_ref<const std::string&>();
    if (text == "NaN") return fail("the query returned NaN");
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE)
        return fail("malformed sample value \"" + log_field(text, 64) + "\"");
    if (std::isnan(v)) return fail("the query returned NaN");
    if (std::isinf(v)) return fail("the query returned " + log_field(text, 64) + " (not a usable value)");
    return v;
}

std::string string_member(const Json& object, const char* key) {
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string series_name(const Json& series) {
    auto metric = series.find("metric");
    if (metric == series.end() || !metric->is_object()) return "{}";
    std::string out = log_field(string_member(*metric, "__name__"), 64);
    std::string labels;
    for (auto it = metric->begin(); it != metric->end(); ++it) {
        if (it.key() == "__name__" || !it.value().is_string()) continue;
        labels += (labels.empty() ? "" : ",") + log_field(it.key(), 64) + "=\"" +
                  log_field(it.value().get<std::string>(), 64) + "\"";
    }
    out += "{" + labels + "}";
    return out.size() > 120 ? out.substr(0, 117) + "..." : out;
}

Result<double> parse_answer(long http_status, std::string_view body) {
    Json doc = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
        if (http_status != 200) return fail("HTTP " + std::to_string(http_status) + " (not a Prometheus API answer)");
        return fail("not a Prometheus API answer (not JSON)");
    }
    if (!doc.is_object()) return fail(std::string("not a Prometheus API answer (a JSON ") + doc.type_name() + ")");
    auto status = doc.find("status");
    if (status == doc.end() || !status->is_string()) return fail("not a Prometheus API answer (no \"status\")");
    const std::string st = status->get<std::string>();
    if (st == "error") {
        // The server's words reach slurmctld.log and lanesctl: escaped and bounded.
        std::string type = log_field(string_member(doc, "errorType"), 64);
        std::string text = log_field(string_member(doc, "error"), 200);
        return fail("Prometheus error" + (http_status ? " (HTTP " + std::to_string(http_status) + ")" : std::string()) +
                    (type.empty() ? "" : ": " + type) + (text.empty() ? "" : ": " + text));
    }
    if (st != "success") return fail("unknown status \"" + log_field(st, 32) + "\"");
    if (http_status != 200) return fail("HTTP " + std::to_string(http_status) + " with status \"success\"");
    auto data = doc.find("data");
    if (data == doc.end() || !data->is_object()) return fail("answer has no \"data\"");
    auto result = data->find("result");
    const std::string t = string_member(*data, "resultType");
    if (t.empty() || result == data->end()) return fail("answer has no \"resultType\"/\"result\"");
    if (t == "scalar") return sample_value(*result, "scalar");
    if (t == "vector") {
        if (!result->is_array()) return fail("malformed vector");
        if (result->empty()) return fail("the query returned an empty vector (no series matched)");
        if (result->size() > 1)
            return fail("the query returned " + std::to_string(result->size()) + " series (" +
                        series_name((*result)[0]) + ", " + series_name((*result)[1]) +
                        (result->size() > 2 ? ", ..." : "") + "); aggregate it to one, e.g. max(...)");
        const Json& first = (*result)[0];
        auto value = first.is_object() ? first.find("value") : first.end();
        if (!first.is_object() || value == first.end()) return fail("malformed vector sample (no \"value\")");
        return sample_value(*value, "vector sample");
    }
    if (t == "matrix") return fail("the query returned a range vector (matrix); use an instant query");
    return fail("unsupported resultType \"" + log_field(t, 32) + "\"");
}

}  // namespace

Result<double> parse_prometheus_answer(long http_status, std::string_view body) {
    try {
        return parse_answer(http_status, body);
    } catch (const std::exception& e) {  // nothing leaves lib/ as an exception
        return fail(std::string("cannot read the answer: ") + e.what());
    }
}

Result<double> interpret_fetch(const FetchResult& result) {
    if (!result.transport_error.empty()) return fail(result.transport_error);
    return parse_prometheus_answer(result.http_status, result.body);
}

void record_attempt(SignalState& state, const Result<double>& outcome, SignalClock::time_point at,
                    std::optional<SignalClock::time_point> instant) {
    state.last_attempt = at;
    state.last_instant = instant;
    if (outcome) {
        state.last_value = *outcome;
        state.last_success = at;
        state.last_error.clear();
        ++state.successes;
    } else {
        state.last_error = outcome.error().message;
        ++state.failures;
    }
}

SignalClock::time_point signal_instant_at_or_before(SignalClock::time_point t, std::chrono::milliseconds interval) {
    using namespace std::chrono;
    const int64_t step = std::max<int64_t>(1, interval.count());
    const int64_t ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
    int64_t q = ms / step;
    if (ms % step < 0) --q;  // before the epoch: round down, not toward zero
    return SignalClock::time_point{duration_cast<SignalClock::duration>(milliseconds{q * step})};
}

std::chrono::milliseconds signal_fetch_delay(std::chrono::milliseconds interval, uint64_t seed) {
    using namespace std::chrono;
    const int64_t base = std::min<int64_t>(std::max<int64_t>(0, interval.count()) / 4, 1000);
    const int64_t spread = base > 0 ? static_cast<int64_t>(seed % static_cast<uint64_t>(base)) : 0;
    return milliseconds{base + spread};
}

SignalValue effective_value(const SignalConfig& config, const SignalState& state, SignalClock::time_point now) {
    using namespace std::chrono;
    SignalValue v;
    if (state.last_value) {
        auto age = duration_cast<seconds>(now - state.last_success);
        if (age < seconds{0}) age = seconds{0};
        v.age = age;
        if (now - state.last_success <= config.stale_after) {
            v.value = state.last_value;
            v.fresh = true;
            return v;
        }
        v.why_unusable = "stale since " + utc_text(state.last_success) + " (" + std::to_string(age.count()) + "s old)";
    } else {
        v.why_unusable = state.failures ? "never fetched successfully" : "not fetched yet";
    }
    if (!state.last_error.empty()) v.why_unusable += ": " + state.last_error;
    if (config.fallback) {
        v.value = config.fallback;
        v.from_fallback = true;
    }
    return v;
}

std::optional<SignalClock::time_point> stale_at(const SignalConfig& config, const SignalState& state,
                                                SignalClock::time_point now) {
    if (!state.last_value) return std::nullopt;
    // Fresh while now - last_success <= stale_after: stale one tick later.
    const auto at = state.last_success + config.stale_after + SignalClock::duration(1);
    if (now >= at) return std::nullopt;
    return at;
}

std::optional<SignalClock::time_point> SignalWindowTracker::crossing_due() const {
    if (!crossing_since_) return std::nullopt;
    return *crossing_since_ + (busy_ ? config_.release_after : config_.hold_for);
}

std::optional<SignalClock::time_point> next_signal_change(const std::vector<SignalTimers>& signals,
                                                          const std::vector<const SignalWindowTracker*>& windows,
                                                          SignalClock::time_point now) {
    std::optional<SignalClock::time_point> next;
    auto consider = [&](std::optional<SignalClock::time_point> t) {
        if (t && (!next || *t < *next)) next = t;
    };
    for (const auto& s : signals) consider(stale_at(*s.config, *s.state, now));
    for (const auto* w : windows) consider(w->crossing_due());
    return next;
}

bool SignalWindowTracker::update(std::optional<double> value, SignalClock::time_point now,
                                 std::string_view why_unknown) {
    using namespace std::chrono;
    const bool was = busy_;
    if (!value) {
        crossing_since_.reset();
        reason_ = "no usable value of " + config_.signal;
        if (!why_unknown.empty()) reason_ += " (" + std::string(why_unknown) + ")";
        const std::string rule = "when_unknown = " + std::string(unknown_signal_action_name(config_.when_unknown)) +
                                 (config_.when_unknown_set ? "" : ", the default");
        switch (config_.when_unknown) {
            case UnknownSignalAction::Idle:
                busy_ = false;
                reason_ += ": idle (" + rule + ")";
                break;
            case UnknownSignalAction::Busy:
                busy_ = true;
                reason_ += ": busy (" + rule + ")";
                break;
            case UnknownSignalAction::Hold:
                reason_ += std::string(": holding ") + (busy_ ? "busy" : "idle") + " (" + rule + ")";
                break;
        }
    } else if (!busy_) {
        if (*value > config_.above) {
            if (!crossing_since_) crossing_since_ = now;
            if (now - *crossing_since_ >= config_.hold_for) {
                busy_ = true;
                reason_ = config_.signal + "=" + format_signal_value(*value) + " above " +
                          format_signal_value(config_.above) + " for " +
                          std::to_string(duration_cast<seconds>(now - *crossing_since_).count()) + "s";
                crossing_since_.reset();
            }
        } else {
            crossing_since_.reset();
            reason_ =
                config_.signal + "=" + format_signal_value(*value) + " not above " + format_signal_value(config_.above);
        }
    } else {
        if (*value < config_.until_below) {
            if (!crossing_since_) crossing_since_ = now;
            if (now - *crossing_since_ >= config_.release_after) {
                busy_ = false;
                reason_ = config_.signal + "=" + format_signal_value(*value) + " below " +
                          format_signal_value(config_.until_below) + " for " +
                          std::to_string(duration_cast<seconds>(now - *crossing_since_).count()) + "s";
                crossing_since_.reset();
            }
        } else {
            crossing_since_.reset();
            reason_ = config_.signal + "=" + format_signal_value(*value) + " not below " +
                      format_signal_value(config_.until_below);
        }
    }
    if (busy_ != was) since_ = now;
    return busy_ != was;
}

std::string format_signal_value(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

}  // namespace lanes
