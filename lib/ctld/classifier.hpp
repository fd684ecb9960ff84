// SPDX-License-Identifier: GPL-2.0-or-later
// The controller's brain: lanes.toml + the admin's Lua policy -> a Decision per job.
// Thread-safe (Slurm 23.02+ calls job_submit concurrently); reloads on change.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/job.hpp"
#include "core/lanes_toml.hpp"
#include "core/log.hpp"
#include "core/result.hpp"
#include "ctld/owner_update.hpp"
#include "ctld/policy.hpp"

namespace lanes {

class WindowOracle;  // router.hpp
class SignalSource;  // signals/signals.hpp

struct ClassifierOptions {
    // reload_if_changed() looks at the files at most this often.
    std::chrono::milliseconds min_reload_interval{1000};
    // lua_States in the pool (one per concurrent caller); 0: by CPU count (2..8).
    size_t max_lua_states = 0;
    // window_overrun = "shorten" never shortens a job below this; it defers instead.
    uint32_t min_shorten_minutes = 10;
    // Live signals for signal windows and lanes.signal(); null: every signal is
    // unknown (windows follow their when_unknown setting).
    std::shared_ptr<const SignalSource> signals;
    // Set (slurmctld): policies build and close their lua_States only in
    // maintain(), never inside classify(); called when maintain() has work.
    std::function<void()> wake_maintainer;
    // Checks a configuration against the host (slurmctld's slurm.conf) before
    // it is used, at start and on every reload: an error text refuses it.
    std::function<std::string(const Config&)> check_config;
    // Set (slurmctld): a policy that fails to load or its self-check at start
    // does not fail create(): every job gets policy.on_error with the reason
    // until a reload brings a policy that loads. A broken lanes.toml still fails.
    bool start_without_policy = false;
};

// Counters for the controller's log (job_submit/lanes logs them when they change).
struct ClassifierStats {
    uint64_t reloads = 0;          // new versions swapped in (each logged)
    uint64_t reload_failures = 0;  // broken versions refused, the last good one kept (each logged once)
    WorkerPoolStats policy;        // the current policy's workers; zeros without workers
};

// "policy workers: 4 alive, 0 busy; 1203 classifications, 2 overruns (killed), ..."
std::string describe_stats(const ClassifierStats& stats);
// The same in Prometheus' text format (lanes_policy_*, lanes_reloads_total),
// for node_exporter's textfile collector ([policy] metrics_file).
std::string stats_prometheus(const ClassifierStats& stats);

class Classifier {
public:
    // Loads lanes.toml and its policy; fails (with file:line messages) if either is broken.
    static Result<std::unique_ptr<Classifier>> create(const std::string& config_path, LogSink log);
    static Result<std::unique_ptr<Classifier>> create(const std::string& config_path, LogSink log,
                                                      const ClassifierOptions& options);
    // From a Config already in memory (lanesctl, tests): compiles config.policy.script
    // (a path) if set; never reloads. `windows` replaces the oracle over
    // config.windows (tests use fixed intervals).
    static Result<std::unique_ptr<Classifier>> from_config(Config config, LogSink log,
                                                           const ClassifierOptions& options = {},
                                                           std::shared_ptr<const WindowOracle> windows = nullptr);
    virtual ~Classifier() = default;

    // Classify and route one job at `now`. Never throws. A policy error applies the
    // configured failure mode (accept with the default class, or reject) and says so
    // in decision.reason / user_messages. `is_admin` relaxes explicit-class checks.
    virtual Decision classify(const JobView& job, SysSeconds now, bool is_admin = false) = 0;

    // Re-read lanes.toml / the policy if their (ns mtime, inode, size) changed,
    // at most once per `min_interval`. A broken new version is logged once and the
    // last good one stays. Returns true if a new version was swapped in.
    virtual bool reload_if_changed() = 0;

    virtual std::shared_ptr<const Config> config() const = 0;

    // An owner's `scontrol update` of a job (job_modify): judge_owner_update()
    // (owner_update.hpp) with the configuration and windows in force. Never
    // throws: an internal error refuses the update, saying so.
    virtual OwnerVerdict judge_owner_update(const OwnerUpdate& update, const HeldJob* held, SysSeconds now) const = 0;

    // With options.wake_maintainer: close the policy's discarded lua_States and
    // build its pool back up. Call from a thread that holds no slurmctld lock.
    virtual void maintain() = 0;

    virtual ClassifierStats stats() const = 0;
};

}  // namespace lanes
