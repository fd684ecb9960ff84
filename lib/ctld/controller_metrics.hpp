// SPDX-License-Identifier: GPL-2.0-or-later
// The controller's metrics ([policy] metrics_file): what job_submit/lanes
// decided per class, the policy's health, reloads and signals. The job path
// only bumps counters (record()); the reloader thread takes a snapshot and
// renders it with controller_metrics_text(), a pure function.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/job.hpp"
#include "ctld/classifier.hpp"

namespace lanes {

struct ClassCounts {
    uint64_t classified = 0;  // accepted into the class
    uint64_t deferred = 0;    // accepted, begin time set (moved out of a window)
    uint64_t rejected = 0;    // refused (class "" when refused before a class was chosen)
    uint64_t defaulted = 0;   // default_class because nothing chose (fall-through, policy error)
};

struct SignalHealth {
    std::string name;
    std::optional<int64_t> age_seconds;  // of the last good value; none yet: nullopt
    bool fresh = false;
    std::string last_error;  // of the last attempt; "" when it succeeded
};

struct ControllerSnapshot {
    std::map<std::string, ClassCounts> classes;
    uint64_t policy_errors = 0;  // jobs whose policy run failed (on_error applied)
    ClassifierStats classifier;
    int64_t last_reload_unix = 0;          // last reload attempt, done or refused; 0: none
    int64_t last_reload_success_unix = 0;  // last reload done; 0: none since start
    std::vector<SignalHealth> signals;
};

// Counters bumped on the job path: one short mutex section (a map lookup and
// a few increments), no allocation once a class has been seen.
class ControllerCounters {
public:
    void record(const Decision& decision);
    std::map<std::string, ClassCounts> classes() const;
    uint64_t policy_errors() const;

private:
    mutable std::mutex mutex_;
    std::map<std::string, ClassCounts> classes_;
    uint64_t policy_errors_ = 0;
};

// Prometheus text format: HELP and TYPE for every metric, labels escaped.
// Includes stats_prometheus(snapshot.classifier).
std::string controller_metrics_text(const ControllerSnapshot& snapshot);

}  // namespace lanes
