// SPDX-License-Identifier: GPL-2.0-or-later
// lanes-agent: the node agent (lanes-agent(8)). Holds the line: the kernel's tc
// and nftables state of every running job is brought back to the job's desired
// state whenever something changes it, and the HTB ceil of jobs of classes with
// busy_window/busy_ceil follows the signal windows, that of jobs of classes
// with a [classes.NAME.control] follows its controller (ceil_controller.hpp).
//
// Level-triggered: netlink notifications (links, qdiscs and classes of the
// managed NICs, the nft table inet lanes) only say "look again". A burst is
// coalesced (agent.debounce after the last notification, at most
// kDebounceLimit after the first), then one converge compares the kernel with
// every job's desired state and repairs what differs. A converge also runs at
// start and every agent.resync_interval, catching what no notification
// reported. The agent's own repairs cause notifications too; the converge they
// start finds nothing to repair, so there is no loop.
//
// Ceil shifts go to the desired state (NodeShaper::set_ceils), never to tc
// directly. They are planned again when the signal monitor publishes a new
// snapshot (its change_fd) or a job comes or goes (inotify on the state
// directory), and at nothing else. A controller decides only at wall-clock
// multiples of its dwell (the same instants on every node), on the values
// Prometheus gives for the same instant (decision_wait()): the agent sleeps
// until the next one, there is no tick in between: an idle agent sleeps in poll() until an
// event, the resync, a fetch of a signal or a window's deadline. SIGTERM/SIGINT: every shifted job gets its normal ceil
// back, then the agent exits.
//
// Output: log lines on stderr (journald), the metrics in node_exporter's
// textfile directory (agent.textfile_dir/lanes_agent.prom), and
// <state_dir>/agent/status, which `lanesctl status` shows.
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/agent_metrics.hpp"
#include "agent/ceil_controller.hpp"
#include "agent/ceil_shift.hpp"
#include "agent/kernel_events.hpp"
#include "core/lanes_toml.hpp"
#include "core/text.hpp"
#include "core/version.hpp"
#include "node/ingress_plan.hpp"
#include "node/node_facts.hpp"
#include "node/node_shaper.hpp"
#include "node/packet_marker.hpp"
#include "node/policy_routing.hpp"
#include "signals/signal_monitor.hpp"

namespace {

using namespace lanes;
using namespace lanes::agent;
using Clock = std::chrono::steady_clock;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;  // configuration
constexpr int kExitUsage = 2;
constexpr int kExitRuntime = 3;  // kernel, permissions
// A burst that never pauses still gets a converge this soon after it began.
constexpr auto kDebounceLimit = std::chrono::milliseconds(100);

void log_line(LogLevel level, const std::string& line) {
    char stamp[32];
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    // lib/'s lines carry no prefix (core/log.hpp); some of lib/node's may still
    // start "lanes: " (kept, not doubled).
    std::fprintf(stderr, "%s %s%s%s\n", stamp, level == LogLevel::Error ? "error: " : "",
                 line.rfind("lanes: ", 0) == 0 ? "" : "lanes: agent: ", lanes::log_line(line).c_str());
    std::fflush(stderr);
}

bool write_file_atomically(const std::string& path, const std::string& text) {
    const std::string tmp = path + "." + std::to_string(getpid()) + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ok = ::close(fd) == 0 && ok;
    if (ok && ::rename(tmp.c_str(), path.c_str()) == 0) return true;
    ::unlink(tmp.c_str());
    return false;
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

const char* kUsage =
    "Usage: lanes-agent [--config PATH] [--node NAME]\n"
    "The Lanes node agent: holds every running job's tc and nftables state to its\n"
    "desired state (netlink events and a periodic resync) and moves the ceil of\n"
    "jobs of classes with [classes.NAME.control] (a controller on an SLO signal)\n"
    "or busy_window/busy_ceil (the signal windows).\n"
    "  --config PATH   lanes.toml (default: $LANES_CONFIG, lanes.toml next to\n"
    "                  $SLURM_CONF, else the installed one)\n"
    "  --node NAME     this node's name as Slurm knows it (default: the host name)\n"
    "  --version, --help\n"
    "See lanes-agent(8).\n";

class Agent {
public:
    Agent(Config config, NodeConfig node, std::string node_name)
        : config_(std::move(config)), node_(std::move(node)), node_name_(std::move(node_name)) {}

    int run();

private:
    void converge(const char* trigger);
    // A path per class (policy_routing.hpp): its rules, routes and elements.
    void converge_paths(const char* trigger);
    void follow_windows(bool stopping);
    // Controllers: decide at the instants due, then hold the jobs to their ceils.
    void control_due();
    void apply_controlled(bool stopping, const std::string& why);
    // Sets the targets' ceils in the kernel and logs each job's change (what:
    // the error's prefix); on_change sees each change that took. Returns how
    // many targets are left off their normal ceil.
    uint64_t set_target_ceils(const std::vector<CeilTarget>& targets, const std::string& why, const char* what,
                              const std::function<void(const CeilSet&, const CeilTarget&)>& on_change);
    std::optional<double> next_decision_unix() const;
    DecisionWait decision_wait_of(const std::string& class_name, int64_t tick, const SignalSnapshot* snap) const;
    void refresh_watched();
    void publish();
    void say_once(const std::string& line) {
        if (logged_.insert(line).second) log_line(LogLevel::Error, line);
    }

    Config config_;
    NodeConfig node_;
    std::string node_name_;
    std::unique_ptr<NodeShaper> shaper_;
    std::unique_ptr<SignalMonitor> monitor_;
    KernelEvents events_;
    WatchedDevices watched_;
    AgentCounters counters_;
    std::string last_repair_;
    std::set<std::string> logged_;
    std::string metrics_path_;
    // In a directory of its own: a write there does not move the state
    // directory's mtime, which tells follow_windows() that jobs came or went.
    std::string status_path_;
    std::string last_metrics_, last_status_;

    // Ceil shifts
    std::map<std::string, bool> last_busy_;
    bool first_shift_pass_ = true;
    // Controllers, per (class, NIC), and the decision instant each class waits for.
    std::map<ClassDevice, CeilController> controllers_;
    std::map<std::string, int64_t> next_tick_;  // class -> tick index (unix / dwell)
    uint64_t controlled_tightened_ = 0;
    struct timespec state_mtime_ {};
};

// Every NIC ever selected stays watched: one that went down (and is not
// selected while down) must still wake the agent when it comes back up.
void Agent::refresh_watched() {
    for (const auto& nic : shaper_->nics()) {
        watched_.names.insert(nic.device);
        watched_.names.insert(ifb_device_name(nic.device));  // its ingress caps' IFB
    }
    for (const auto& sel : node_.nics)
        if (!sel.device.empty() && sel.device.find_first_of("*?[") == std::string::npos)
            watched_.names.insert(sel.device);
    watched_.ifindexes.clear();
    for (const auto& name : watched_.names)
        if (int idx = static_cast<int>(if_nametoindex(name.c_str())); idx > 0) watched_.ifindexes.insert(idx);
    watched_.own_portids = own_netlink_portids();
}

void Agent::converge_paths(const char* trigger) {
    auto paths = converge_node_paths(node_, false, {}, [](LogLevel level, const std::string& line) {
        if (level == LogLevel::Error) log_line(level, line);
    });
    if (!paths) {
        ++counters_.errors["converge"];
        say_once("path converge (" + std::string(trigger) + "): " + paths.error().message);
        return;
    }
    for (const auto& line : *paths) {
        ++counters_.repairs[{"path", "missing"}];
        log_line(LogLevel::Info, "repaired path: " + line + " (" + trigger + ")");
        last_repair_ = std::to_string(static_cast<long long>(counters_.last_converge_unix)) + " path: " + line;
    }
}

void Agent::converge(const char* trigger) {
    const auto t0 = Clock::now();
    auto report = shaper_->converge();
    const double took = std::chrono::duration<double>(Clock::now() - t0).count();
    ++counters_.converges[trigger];
    counters_.last_converge_unix = unix_now();
    counters_.last_converge_seconds = took;
    refresh_watched();
    if (!report) {
        ++counters_.errors["converge"];
        say_once("converge (" + std::string(trigger) + "): " + report.error().message);
        return;
    }
    if (report->problems.empty()) logged_.clear();  // a failure that comes back is logged again
    counters_.last_success_unix = counters_.last_converge_unix;
    counters_.jobs = report->jobs;
    for (const auto& r : report->repairs) {
        ++counters_.repairs[{r.object, r.cause}];
        std::string line = (r.job_id ? "JobId=" + std::to_string(r.job_id) + " " : std::string()) +
                           (r.device.empty() ? "" : "on " + r.device + " ") + "repaired " + r.object + " (" + r.cause +
                           ", " + trigger + ")" + (r.detail.empty() ? "" : ": " + r.detail);
        log_line(LogLevel::Info, line);
        last_repair_ = std::to_string(static_cast<long long>(counters_.last_converge_unix)) + " " + line;
    }
    for (const auto& p : report->problems) {
        ++counters_.errors["repair"];
        say_once(p);
    }
    converge_paths(trigger);
    if (!report->repairs.empty()) {
        char ms[32];
        std::snprintf(ms, sizeof ms, "%.1f", took * 1000);
        log_line(LogLevel::Info, "converged " + std::to_string(report->jobs) + " job(s) in " + ms + " ms, " +
                                     std::to_string(report->repairs.size()) + " repair(s)");
    }
}

void Agent::follow_windows(bool stopping) {
    if (!monitor_) return;
    auto snap = monitor_->snapshot();
    std::map<std::string, bool> busy;
    std::string why = "windows idle";
    if (snap) {
        for (const auto& [name, w] : snap->windows) {
            busy[name] = w.busy && !stopping;
            if (!stopping && last_busy_[name] != w.busy)
                log_line(LogLevel::Info, "window " + name + (w.busy ? " holds" : " is over") + ": " + w.reason);
            if (w.busy) why = "window " + name + ": " + w.reason;
        }
    }
    if (stopping) why = "agent stopping";
    // Nothing to do unless a window changed or a job came or went (a job file is
    // written by tmp + rename, so the directory's mtime moves).
    struct stat st {};
    const bool have_mtime = ::stat(node_.state_dir.c_str(), &st) == 0;
    const bool dir_same =
        have_mtime && st.st_mtim.tv_sec == state_mtime_.tv_sec && st.st_mtim.tv_nsec == state_mtime_.tv_nsec;
    const bool windows_same =
        !stopping && busy.size() == last_busy_.size() && std::equal(busy.begin(), busy.end(), last_busy_.begin());
    if (!stopping) last_busy_ = busy;
    if (!first_shift_pass_ && !stopping && dir_same && windows_same) return;
    if (have_mtime) state_mtime_ = st.st_mtim;

    auto targets = plan_ceil_targets(config_, shaper_->list(), shaper_->nics(), busy);
    first_shift_pass_ = false;
    const uint64_t tightened = set_target_ceils(targets, why, "ceil shift", [&](const CeilSet& s, const CeilTarget& t) {
        ++counters_.shifts[{t.class_name, s.to_bits != t.normal_ceil_bits ? "busy" : "normal"}];
    });
    counters_.jobs_tightened = tightened + controlled_tightened_;
}

uint64_t Agent::set_target_ceils(const std::vector<CeilTarget>& targets, const std::string& why, const char* what,
                                 const std::function<void(const CeilSet&, const CeilTarget&)>& on_change) {
    std::map<std::pair<uint32_t, std::string>, uint64_t> in_force;
    std::map<std::pair<uint32_t, std::string>, const CeilTarget*> target_of;
    for (const auto& t : targets) {
        in_force[{t.job_id, t.device}] = t.current_ceil_bits;
        target_of[{t.job_id, t.device}] = &t;
    }
    auto changes = ceil_changes(targets);
    if (!changes.empty()) {
        auto sets = shaper_->set_ceils(changes, why);
        if (!sets) {
            ++counters_.errors["shift"];
            say_once(std::string(what) + ": " + sets.error().message);
        } else {
            for (const CeilSet& s : *sets) {
                if (!s.error.empty()) {
                    ++counters_.errors["shift"];
                    say_once("JobId=" + std::to_string(s.job_id) + " on " + s.device + ": cannot set ceil: " + s.error);
                    continue;
                }
                in_force[{s.job_id, s.device}] = s.to_bits;
                auto t = target_of.find({s.job_id, s.device});
                if (s.from_bits == s.to_bits || t == target_of.end()) continue;
                on_change(s, *t->second);
                log_line(LogLevel::Info, "JobId=" + std::to_string(s.job_id) + " (" + t->second->class_name + ") on " +
                                             s.device + ": ceil " + format_rate(s.from_bits) + " -> " +
                                             format_rate(s.to_bits) + " (" + why + ")");
            }
        }
    }
    uint64_t tightened = 0;
    for (const auto& t : targets)
        if (in_force[{t.job_id, t.device}] != t.normal_ceil_bits) ++tightened;
    return tightened;
}

std::optional<double> Agent::next_decision_unix() const {
    std::optional<double> out;
    auto snap = monitor_ ? monitor_->snapshot() : nullptr;
    const double now = unix_now();
    for (const auto& [name, tick] : next_tick_) {
        const int64_t dwell = config_.classes.at(name).control->dwell.count();
        double at = static_cast<double>(tick) * static_cast<double>(dwell);
        if (now >= at) {
            // Due, waiting for the values of its instant: until they come (the
            // snapshot's change_fd) or the deadline.
            const DecisionWait w = decision_wait_of(name, next_tick(now, dwell) - 1, snap.get());
            if (!w.ready) at = std::chrono::duration<double>(w.deadline.time_since_epoch()).count();
        }
        if (!out || at < *out) out = at;
    }
    return out;
}

DecisionWait Agent::decision_wait_of(const std::string& class_name, int64_t tick, const SignalSnapshot* snap) const {
    const CeilControlConfig& k = *config_.classes.at(class_name).control;
    std::vector<DecisionSignal> signals;
    for (const std::string* name : {&k.signal, &k.load_signal, &k.congestion_signal}) {
        if (name->empty()) continue;
        auto cfg = config_.signals.find(*name);
        if (cfg == config_.signals.end()) continue;
        DecisionSignal s;
        s.interval = cfg->second.interval;
        s.timeout = cfg->second.timeout;
        if (snap)
            if (auto it = snap->signals.find(*name); it != snap->signals.end())
                s.last_instant = it->second.state.last_instant;
        signals.push_back(s);
    }
    return decision_wait(tick, k.dwell.count(), signals, SignalClock::now());
}

void Agent::control_due() {
    if (!monitor_) return;
    const double now = unix_now();
    auto snap = monitor_->snapshot();
    auto value_of = [&](const std::string& signal) -> std::optional<double> {
        if (!snap) return std::nullopt;
        auto it = snap->signals.find(signal);
        if (it == snap->signals.end()) return std::nullopt;
        return it->second.value.value;  // fresh, or the fallback; none when stale without one
    };
    bool changed = false;
    std::string why;
    for (auto& [name, tick] : next_tick_) {
        const ClassConfig& cls = config_.classes.at(name);
        const CeilControlConfig& k = *cls.control;
        const int64_t dwell = k.dwell.count();
        if (now < static_cast<double>(tick) * static_cast<double>(dwell)) continue;
        // The instant that is due (a late agent takes the latest one).
        const int64_t due = next_tick(now, dwell) - 1;
        // Not fetched yet (the agent just started): no decision on an absence
        // that only says the monitor has not asked.
        if (!snap || !snap->signals.count(k.signal) ||
            snap->signals.at(k.signal).state.successes + snap->signals.at(k.signal).state.failures == 0) {
            tick = due + 1;
            continue;
        }
        // The values of the tick's instant, which every node reads, are not
        // all in yet: the next snapshot, or the deadline.
        if (!decision_wait_of(name, due, snap.get()).ready) continue;
        tick = due + 1;
        ++counters_.ceil_decisions[name];
        ControlSample sample;
        sample.value = value_of(k.signal);
        if (!k.load_signal.empty()) sample.load = value_of(k.load_signal);
        if (!k.congestion_signal.empty()) sample.congestion = value_of(k.congestion_signal);
        for (const auto& nic : shaper_->nics()) {
            const ClassDevice key{name, nic.device};
            const ControlLimits limits = resolve_control(k, *cls.ceil, nic.link_speed_bits);
            auto it = controllers_.find(key);
            if (it == controllers_.end()) it = controllers_.emplace(key, CeilController(limits)).first;
            else if (!(it->second.limits().ceil_bits == limits.ceil_bits &&
                       it->second.limits().floor_bits == limits.floor_bits))
                it->second.set_limits(limits);
            const ControlDecision d = it->second.decide(due, sample);
            counters_.ceil_bits[key] = it->second.ceil_bits();
            if (d.cause == ControlCause::Uncongested) {
                ++counters_.ceil_holds[{name, control_cause_name(d.cause)}];
                log_line(LogLevel::Info, "class " + name + " ceil " + format_rate(d.from_bits) + " held on " +
                                             nic.device + " (cause: " + k.signal + " " +
                                             format_signal_value(*sample.value) + " > slo " +
                                             format_signal_value(k.slo) + ", but " + k.congestion_signal + " " +
                                             format_signal_value(*sample.congestion) + " <= congestion_above " +
                                             format_signal_value(k.congestion_above) + ": not the network's)");
                continue;
            }
            if (!d.changed()) continue;
            changed = true;
            ++counters_.ceil_changes[{name, control_cause_name(d.cause)}];
            std::string cause;
            if (d.cause == ControlCause::NoValue) {
                cause = "no usable value of " + k.signal;
            } else if (d.cause == ControlCause::Congested && d.queued > 0) {
                cause = k.signal + " " + format_signal_value(*sample.value) + " <= slo " + format_signal_value(k.slo) +
                        ", but " + k.congestion_signal + " over congestion_above " +
                        format_signal_value(k.congestion_above) + " at " + std::to_string(d.queued) + " of the last " +
                        std::to_string(d.of) + " decisions at this ceil (now " +
                        format_signal_value(*sample.congestion) + "): the network's knee";
            } else if (d.cause == ControlCause::Congested) {
                cause = k.signal + " " + format_signal_value(*sample.value) + " <= slo " + format_signal_value(k.slo) +
                        ", but " + k.congestion_signal + " " + format_signal_value(*sample.congestion) +
                        " > congestion_above " + format_signal_value(k.congestion_above) + ": no margin in the network";
            } else if (d.cause == ControlCause::LoadRose) {
                cause = k.load_signal + " " + format_signal_value(*sample.load) +
                        " more than margin over any load this ceil held at, and a ceil at or under it broke at a "
                        "higher load: the ceil that held there (" +
                        k.signal + " " + format_signal_value(*sample.value) + " <= slo " + format_signal_value(k.slo) +
                        ")";
            } else if (d.cause == ControlCause::Quiet && d.quiet_again) {
                cause =
                    "back at a load where a quiet queue raised the ceil from at most where the search rests: the "
                    "same raise, under " +
                    format_rate(d.rest_bound_bits) + " (" + k.signal + " " + format_signal_value(*sample.value) +
                    " <= slo*(1-margin) " + format_signal_value(k.slo * (1 - k.margin)) + ")";
            } else if (d.cause == ControlCause::Quiet) {
                cause = k.congestion_signal + " " + format_signal_value(*sample.congestion) + " <= quiet_below " +
                        format_signal_value(*k.quiet_below) +
                        " in the last decisions at this ceil: the queue is quiet, a step toward " +
                        format_rate(d.rest_bound_bits) + " (" + k.signal + " " + format_signal_value(*sample.value) +
                        " <= slo*(1-margin) " + format_signal_value(k.slo * (1 - k.margin)) + ")";
            } else if (d.cause == ControlCause::RestBelow) {
                cause = "rest_below " + format_signal_value(k.rest_below) + " under " + format_rate(d.rest_bound_bits) +
                        ", the lowest ceil too much at this load (a break or a strain here, or the class's ceil)";
                if (sample.value) cause += ", " + k.signal + " " + format_signal_value(*sample.value);
            } else {
                cause = k.signal + " " + format_signal_value(*sample.value) +
                        (d.cause == ControlCause::OverSlo ? " > slo " : " <= slo*(1-margin) ") +
                        format_signal_value(d.cause == ControlCause::OverSlo ? k.slo : k.slo * (1 - k.margin));
            }
            if (d.cause == ControlCause::OverSlo && !k.congestion_signal.empty())
                cause += sample.congestion
                             ? ", " + k.congestion_signal + " " + format_signal_value(*sample.congestion) +
                                   " > congestion_above " + format_signal_value(k.congestion_above)
                             : ", no usable value of " + k.congestion_signal + " (counted as congested)";
            if (sample.load && d.cause != ControlCause::LoadRose)
                cause += ", load " + format_signal_value(*sample.load);
            const std::string line = "class " + name + " ceil " + format_rate(d.from_bits) + " -> " +
                                     format_rate(d.to_bits) + " on " + nic.device + " (cause: " + cause + ")";
            log_line(LogLevel::Info, line);
            why = "controller: " + cause;
        }
    }
    if (changed) apply_controlled(false, why);
}

void Agent::apply_controlled(bool stopping, const std::string& why) {
    if (next_tick_.empty()) return;
    std::map<ClassDevice, uint64_t> ceils;
    if (!stopping)
        for (const auto& [key, c] : controllers_) ceils[key] = c.ceil_bits();
    auto targets = plan_controlled_targets(config_, shaper_->list(), ceils);
    controlled_tightened_ = set_target_ceils(targets, why, "ceil control", [](const CeilSet&, const CeilTarget&) {});
}

void Agent::publish() {
    auto snap = monitor_ ? monitor_->snapshot() : nullptr;
    std::string text = metrics_text(counters_, snap.get());
    if (text != last_metrics_) {
        if (write_file_atomically(metrics_path_, text)) {
            last_metrics_ = std::move(text);
        } else {
            ++counters_.errors["metrics"];
            say_once("cannot write " + metrics_path_ + ": " + std::strerror(errno));
        }
    }
    std::string status = status_text(counters_, static_cast<long>(getpid()), last_repair_);
    if (status != last_status_ && write_file_atomically(status_path_, status)) last_status_ = std::move(status);
}

int Agent::run() {
    counters_.host = node_name_;
    // Block the stop signals in every thread (the monitor's included) and read
    // them from a signalfd in the loop: no handler, no async-signal-safety issue.
    sigset_t stop_set;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGTERM);
    sigaddset(&stop_set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);
    int sig_fd = signalfd(-1, &stop_set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sig_fd < 0) {
        log_line(LogLevel::Error, std::string("signalfd: ") + std::strerror(errno));
        return kExitRuntime;
    }
    // Subscribe before the first converge: nothing changed between the two is missed.
    if (auto ok = events_.open(); !ok) {
        log_line(LogLevel::Error, ok.error().message);
        return kExitRuntime;
    }
    // The executor logs each repair too; the agent logs it once, with what
    // started the converge.
    LogSink shaper_log = [](LogLevel level, const std::string& line) {
        if (line.rfind("converge: repaired ", 0) != 0) log_line(level, line);
    };
    auto shaper = NodeShaper::open(node_, node_name_, shaper_log);
    if (!shaper) {
        log_line(LogLevel::Error, shaper.error().message);
        return kExitRuntime;
    }
    shaper_ = std::move(*shaper);
    for (const auto& p : shaper_->problems()) log_line(LogLevel::Error, p);
    refresh_watched();
    ::mkdir(config_.agent.textfile_dir.c_str(), 0755);  // node_exporter's package makes it; a bare node may not have it
    metrics_path_ = config_.agent.textfile_dir + "/lanes_agent.prom";
    ::mkdir((node_.state_dir + "/agent").c_str(), 0700);
    status_path_ = node_.state_dir + "/agent/status";
    bool shifts = false;
    for (const auto& [name, c] : config_.classes) {
        shifts = shifts || (!c.busy_window.empty() && c.busy_ceil);
        if (c.control && c.ceil) next_tick_[name] = next_tick(unix_now(), c.control->dwell.count());
    }
    shifts = shifts || !next_tick_.empty();
    int snapshot_fd = -1;
    if (shifts) {
        monitor_ = std::make_unique<SignalMonitor>(log_line);
        snapshot_fd = monitor_->change_fd();  // before the threads: no snapshot goes unnoticed
        monitor_->configure(config_.signals, config_.signal_windows);
    }
    log_line(LogLevel::Info,
             "started on " + node_name_ + " with " + config_.path + " (" + std::to_string(shaper_->nics().size()) +
                 " NIC(s), resync every " + std::to_string(config_.agent.resync_interval.count()) + " ms" +
                 (shifts ? ", following the signal windows" : ", no class with busy_window") +
                 (next_tick_.empty() ? "" : ", " + std::to_string(next_tick_.size()) + " controlled class(es)") + ")");
    converge("start");
    follow_windows(false);
    apply_controlled(false, "controller");
    publish();

    const auto resync = config_.agent.resync_interval;
    const auto debounce = config_.agent.debounce;
    auto next_resync = Clock::now() + resync;
    bool pending = false;
    Clock::time_point first_event{}, last_event{};
    // What moves a ceil shift: a new snapshot, a job file created, renamed into
    // place or removed. Without either fd (not expected) the shift follows the
    // resync only, and says so.
    int jobs_fd = -1;
    if (monitor_) {
        jobs_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (jobs_fd >= 0 && inotify_add_watch(jobs_fd, node_.state_dir.c_str(),
                                              IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE) < 0) {
            const int err = errno;
            ::close(jobs_fd);
            jobs_fd = -1;
            errno = err;
        }
        if (snapshot_fd < 0 || jobs_fd < 0)
            log_line(LogLevel::Error, std::string("cannot watch ") +
                                          (snapshot_fd < 0 ? "the signal windows" : node_.state_dir) + ": " +
                                          std::strerror(errno) + "; ceil shifts follow the resync only");
    }
    while (true) {
        auto now = Clock::now();
        auto wake = next_resync;
        if (pending) wake = std::min(wake, std::min(last_event + debounce, first_event + kDebounceLimit));
        if (auto at = next_decision_unix()) {
            const auto until =
                std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*at - unix_now()));
            wake = std::min(wake, now + std::max(Clock::duration::zero(), until));
        }
        const auto wait_ms = std::chrono::ceil<std::chrono::milliseconds>(wake - now).count();
        pollfd fds[5] = {{sig_fd, POLLIN, 0},
                         {events_.route_fd(), POLLIN, 0},
                         {events_.nft_fd(), POLLIN, 0},
                         {snapshot_fd, POLLIN, 0},
                         {jobs_fd, POLLIN, 0}};
        int n = ::poll(fds, 5, static_cast<int>(std::max<long long>(0, wait_ms)));
        if (n < 0 && errno != EINTR) {
            log_line(LogLevel::Error, std::string("poll: ") + std::strerror(errno));
            return kExitRuntime;
        }
        now = Clock::now();
        if (n > 0 && (fds[0].revents & POLLIN)) {
            signalfd_siginfo info{};
            if (::read(sig_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
                log_line(LogLevel::Info,
                         std::string(info.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT") + ": restoring normal ceils");
                break;
            }
        }
        for (int i = 1; n > 0 && i < 3; ++i) {
            // An overrun (ENOBUFS) is reported as POLLERR: drain() counts it.
            if (!(fds[i].revents & (POLLIN | POLLERR))) continue;
            auto d = events_.drain(fds[i].fd, watched_, kNftTable);
            counters_.events["link"] += d.link;
            counters_.events["tc"] += d.tc;
            counters_.events["nft"] += d.nft;
            counters_.events["path"] += d.path;
            if (d.overrun) ++counters_.events["overrun"];
            if (d.any()) {
                if (!pending) first_event = now;
                pending = true;
                last_event = now;
            }
        }
        if (pending && (now >= last_event + debounce || now >= first_event + kDebounceLimit)) {
            pending = false;
            converge("event");
            next_resync = Clock::now() + resync;
            publish();
        }
        if (now >= next_resync) {
            converge("resync");
            next_resync = Clock::now() + resync;
            if (monitor_) follow_windows(false);
            apply_controlled(false, "controller");
            publish();
        }
        bool shift = false;
        if (n > 0 && (fds[3].revents & POLLIN)) {
            uint64_t count = 0;
            [[maybe_unused]] ssize_t r = ::read(snapshot_fd, &count, sizeof count);
            shift = true;
        }
        if (n > 0 && (fds[4].revents & POLLIN)) {
            char buf[4096];
            while (::read(jobs_fd, buf, sizeof buf) > 0) {
            }
            shift = true;
        }
        if (monitor_ && shift) {
            follow_windows(false);
            apply_controlled(false, "controller");
            publish();
        }
        if (auto at = next_decision_unix(); (at && unix_now() >= *at) || (monitor_ && shift)) {
            control_due();
            publish();
        }
    }
    if (jobs_fd >= 0) ::close(jobs_fd);
    apply_controlled(true, "agent stopping");
    follow_windows(true);
    ++counters_.converges["stop"];
    publish();
    const uint64_t left = counters_.jobs_tightened;
    log_line(LogLevel::Info, "stopped; " + std::to_string(left) + " job class(es) left tightened (0 expected)");
    if (monitor_) monitor_->stop();
    return left == 0 ? kExitOk : kExitRuntime;
}

int run(int argc, char** argv) {
    std::string config_path, node;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](const char* opt) -> const char* {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "lanes-agent: %s needs a value\n%s", opt, kUsage);
                return nullptr;
            }
            return argv[++i];
        };
        if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            return kExitOk;
        } else if (a == "--version") {
            std::printf("%s\n", version_string());
            return kExitOk;
        } else if (a == "--config") {
            const char* v = value("--config");
            if (!v) return kExitUsage;
            config_path = v;
        } else if (a.rfind("--config=", 0) == 0) {
            config_path = a.substr(9);
        } else if (a == "--node") {
            const char* v = value("--node");
            if (!v) return kExitUsage;
            node = v;
        } else if (a.rfind("--node=", 0) == 0) {
            node = a.substr(7);
        } else {
            std::fprintf(stderr, "lanes-agent: unknown option %s\n%s", a.c_str(), kUsage);
            return kExitUsage;
        }
    }
    if (config_path.empty()) config_path = default_config_path(true);
    if (node.empty()) node = node_name();
    if (geteuid() != 0) {
        std::fprintf(stderr,
                     "lanes-agent: must run as root (changes tc and nftables, reads the Lanes state directory)\n");
        return kExitRuntime;
    }
    auto config = load_config(config_path);
    if (!config) {
        std::fprintf(stderr, "lanes-agent: %s\n", config.error().message.c_str());
        return kExitFailed;
    }
    auto node_config = node_config_for(config->node, node);
    if (!node_config) {
        std::fprintf(stderr, "lanes-agent: %s\n", node_config.error().message.c_str());
        return kExitFailed;
    }
    Agent agent(std::move(*config), std::move(*node_config), node);
    return agent.run();
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lanes-agent: internal error: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "lanes-agent: internal error\n");
    }
    return kExitRuntime;
}
