// SPDX-License-Identifier: GPL-2.0-or-later
// Latency bookkeeping for inference_probe: the open-loop send schedule, the
// per-request record, percentiles and the text/JSON summary.
//
// Header-only and free of I/O so tests/unit/probe_test.cpp can check it.
//
// Coordinated omission: every latency is measured from the time the request was
// *scheduled* to be sent, not from when the client managed to send it, so a
// stalled connection shows up as latency instead of silently thinning the load.
// A request that never got its reply (timeout, or still outstanding at the hard
// stop) counts in the percentiles with the time it had waited when we gave up:
// a lower bound, never a free pass.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace lanes::bench {

using Clock = std::chrono::steady_clock;

// Send times fixed up front: request i is due at start + i / rate.
class OpenLoopSchedule {
public:
    OpenLoopSchedule(Clock::time_point start, double rate_per_second, double duration_seconds)
        : start_(start),
          rate_(rate_per_second),
          count_(rate_per_second > 0 && duration_seconds > 0
                     ? static_cast<uint64_t>(std::ceil(rate_per_second * duration_seconds - 1e-9))
                     : 0) {}

    uint64_t count() const { return count_; }
    Clock::time_point start() const { return start_; }
    // Computed from the start each time: no drift accumulates over long runs.
    Clock::time_point at(uint64_t i) const {
        auto ns = static_cast<int64_t>(std::llround(static_cast<double>(i) * 1e9 / rate_));
        return start_ + std::chrono::nanoseconds(ns);
    }

private:
    Clock::time_point start_;
    double rate_;
    uint64_t count_;
};

// Nearest-rank percentile of an ascending vector: the smallest sample such that
// at least p% of the samples are <= it. p in (0, 100]. Empty input gives 0.
inline int64_t percentile_of_sorted(const std::vector<int64_t>& sorted, double p) {
    if (sorted.empty()) return 0;
    double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()) - 1e-9);
    auto index = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(sorted.size()))) - 1;
    return sorted[index];
}

struct LatencySummary {
    uint64_t scheduled = 0;  // requests the schedule asked for
    uint64_t ok = 0;         // replies received in time
    uint64_t errors = 0;     // failed: connection refused/reset/closed, send error
    uint64_t timeouts = 0;   // no reply within the timeout or before the hard stop
    // Over ok + timeouts (timeouts at their give-up time); nanoseconds.
    int64_t p50_ns = 0, p90_ns = 0, p99_ns = 0, p999_ns = 0, max_ns = 0, min_ns = 0;
    double mean_ns = 0;
};

// Cumulative latency histogram in Prometheus' text exposition format (served by
// `inference_probe load --metrics ADDR:PORT`), so PromQL such as
//   histogram_quantile(0.99, sum(rate(lanes_probe_latency_seconds_bucket[30s])) by (le))
// gives the probe's p99. Timeouts count at the time waited, like the summary.
class LatencyHistogram {
public:
    static constexpr std::array<double, 14> kBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                       0.1,    0.25,  0.5,    1,     2.5,  5,     10};
    void observe(std::chrono::nanoseconds latency) {
        const double s = std::max<double>(0, std::chrono::duration<double>(latency).count());
        for (size_t i = 0; i < kBounds.size(); ++i)
            if (s <= kBounds[i]) ++buckets_[i];
        ++count_;
        sum_ += s;
    }
    void count_outcome(int which) { ++outcomes_[which]; }  // 0 ok, 1 timeout, 2 error
    // The rate the open-loop schedule sends at (requests per second): the
    // offered load, which a stall of the replies or a restart of the probe
    // does not move (the rate of completions does).
    void set_offered_rate(double per_second) { offered_rate_ = per_second; }
    std::string prometheus_text() const {
        std::string out =
            "# HELP lanes_probe_latency_seconds Request latency from due time to the reply's last byte.\n"
            "# TYPE lanes_probe_latency_seconds histogram\n";
        char line[160];
        for (size_t i = 0; i < kBounds.size(); ++i) {
            std::snprintf(line, sizeof line, "lanes_probe_latency_seconds_bucket{le=\"%g\"} %llu\n", kBounds[i],
                          static_cast<unsigned long long>(buckets_[i]));
            out += line;
        }
        std::snprintf(line, sizeof line,
                      "lanes_probe_latency_seconds_bucket{le=\"+Inf\"} %llu\nlanes_probe_latency_seconds_sum %.9g\n"
                      "lanes_probe_latency_seconds_count %llu\n",
                      static_cast<unsigned long long>(count_), sum_, static_cast<unsigned long long>(count_));
        out += line;
        out += "# HELP lanes_probe_requests_total Requests by outcome.\n# TYPE lanes_probe_requests_total counter\n";
        static constexpr const char* kNames[] = {"ok", "timeout", "error"};
        for (int i = 0; i < 3; ++i) {
            std::snprintf(line, sizeof line, "lanes_probe_requests_total{outcome=\"%s\"} %llu\n", kNames[i],
                          static_cast<unsigned long long>(outcomes_[i]));
            out += line;
        }
        out +=
            "# HELP lanes_probe_offered_requests_per_second The open-loop schedule's rate (--rate).\n"
            "# TYPE lanes_probe_offered_requests_per_second gauge\n";
        std::snprintf(line, sizeof line, "lanes_probe_offered_requests_per_second %.9g\n", offered_rate_);
        out += line;
        return out;
    }

private:
    std::array<uint64_t, kBounds.size()> buckets_{};
    std::array<uint64_t, 3> outcomes_{};
    uint64_t count_ = 0;
    double sum_ = 0;
    double offered_rate_ = 0;
};

class LatencyRecorder {
public:
    void reserve(size_t n) { samples_.reserve(n); }
    void set_scheduled(uint64_t n) { scheduled_ = n; }
    // Also feed a Prometheus histogram (inference_probe load --metrics).
    void attach(LatencyHistogram* histogram) { histogram_ = histogram; }
    void record_ok(std::chrono::nanoseconds latency) {
        if (histogram_) histogram_->observe(latency), histogram_->count_outcome(0);
        ++ok_;
        samples_.push_back(std::max<int64_t>(0, latency.count()));
    }
    void record_timeout(std::chrono::nanoseconds waited) {
        if (histogram_) histogram_->observe(waited), histogram_->count_outcome(1);
        ++timeouts_;
        samples_.push_back(std::max<int64_t>(0, waited.count()));
    }
    void record_error() {
        if (histogram_) histogram_->count_outcome(2);
        ++errors_;
    }

    uint64_t ok() const { return ok_; }
    uint64_t timeouts() const { return timeouts_; }
    // Every latency recorded (ns; a timeout counts as the time it waited), in
    // the order recorded: for a bootstrap confidence interval outside.
    const std::vector<int64_t>& samples() const { return samples_; }
    uint64_t errors() const { return errors_; }

    LatencySummary summarize() const {
        LatencySummary s;
        s.scheduled = scheduled_;
        s.ok = ok_;
        s.errors = errors_;
        s.timeouts = timeouts_;
        if (samples_.empty()) return s;
        std::vector<int64_t> sorted = samples_;
        std::sort(sorted.begin(), sorted.end());
        s.p50_ns = percentile_of_sorted(sorted, 50);
        s.p90_ns = percentile_of_sorted(sorted, 90);
        s.p99_ns = percentile_of_sorted(sorted, 99);
        s.p999_ns = percentile_of_sorted(sorted, 99.9);
        s.min_ns = sorted.front();
        s.max_ns = sorted.back();
        long double sum = 0;
        for (int64_t v : sorted) sum += v;
        s.mean_ns = static_cast<double>(sum / static_cast<long double>(sorted.size()));
        return s;
    }

private:
    std::vector<int64_t> samples_;
    LatencyHistogram* histogram_ = nullptr;
    uint64_t scheduled_ = 0, ok_ = 0, errors_ = 0, timeouts_ = 0;
};

inline std::string format_ms(double ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", ns / 1e6);
    return buf;
}

// One line per field group, for people.
inline std::string summary_text(const LatencySummary& s) {
    std::string out = "scheduled " + std::to_string(s.scheduled) + " ok " + std::to_string(s.ok) + " errors " +
                      std::to_string(s.errors) + " timeouts " + std::to_string(s.timeouts) + "\n";
    out += "latency ms: p50 " + format_ms(static_cast<double>(s.p50_ns)) + " p90 " +
           format_ms(static_cast<double>(s.p90_ns)) + " p99 " + format_ms(static_cast<double>(s.p99_ns)) + " p99.9 " +
           format_ms(static_cast<double>(s.p999_ns)) + " max " + format_ms(static_cast<double>(s.max_ns)) + " mean " +
           format_ms(s.mean_ns) + "\n";
    return out;
}

// One JSON object on one line, for scripts. `extra` is inserted verbatim after
// the opening brace (already-formatted "key":value pairs followed by a comma,
// or empty).
inline std::string summary_json(const LatencySummary& s, std::string_view extra = {}) {
    std::string out = "{";
    out += extra;
    out += "\"scheduled\":" + std::to_string(s.scheduled) + ",\"ok\":" + std::to_string(s.ok) +
           ",\"errors\":" + std::to_string(s.errors) + ",\"timeouts\":" + std::to_string(s.timeouts) +
           ",\"p50_ms\":" + format_ms(static_cast<double>(s.p50_ns)) +
           ",\"p90_ms\":" + format_ms(static_cast<double>(s.p90_ns)) +
           ",\"p99_ms\":" + format_ms(static_cast<double>(s.p99_ns)) +
           ",\"p999_ms\":" + format_ms(static_cast<double>(s.p999_ns)) +
           ",\"max_ms\":" + format_ms(static_cast<double>(s.max_ns)) +
           ",\"min_ms\":" + format_ms(static_cast<double>(s.min_ns)) + ",\"mean_ms\":" + format_ms(s.mean_ns) + "}";
    return out;
}

// "ADDR:PORT", "[IPV6]:PORT" or "HOST:PORT" split into host and port (no
// resolution here). Port 0 is allowed (serve: pick one).
struct HostPort {
    std::string host;
    uint16_t port = 0;
};

inline Result<HostPort> parse_host_port(std::string_view text) {
    std::string_view host, port;
    if (!text.empty() && text.front() == '[') {
        auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
            return fail("'" + std::string(text) + "': want [IPV6]:PORT");
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
    } else {
        auto colon = text.rfind(':');
        if (colon == std::string_view::npos) return fail("'" + std::string(text) + "': want ADDR:PORT");
        host = text.substr(0, colon);
        if (host.find(':') != std::string_view::npos)
            return fail("'" + std::string(text) + "': write an IPv6 address as [ADDR]:PORT");
        port = text.substr(colon + 1);
    }
    if (host.empty()) return fail("'" + std::string(text) + "': the address is empty");
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535)
        return fail("'" + std::string(text) + "': the port must be a number 0..65535");
    return HostPort{std::string(host), static_cast<uint16_t>(value)};
}

}  // namespace lanes::bench
