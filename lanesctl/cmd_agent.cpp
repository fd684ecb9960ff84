// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl agent: the node agent. Follows the signal windows (the same
// SignalMonitor as job_submit/lanes) and moves the HTB ceil of running jobs of
// every class with busy_window/busy_ceil between its normal and its busy value:
// NodeShaper::set_ceils() records the ceil in the job's desired state and sends
// one RTM_NEWTCLASS per job and NIC per shift, under the state directory's lock
// (so it never races a prolog or an epilog, and never re-creates a class an
// epilog removed). Each shift is logged and counted; the counts, the windows and
// the signals go to <state_dir>/agent.prom (node_exporter textfile format).
// SIGTERM/SIGINT: every shifted job gets its normal ceil back before exit.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <set>

#include "core/lanes_toml.hpp"
#include "core/text.hpp"
#include "lanesctl/ceil_shift.hpp"
#include "lanesctl/commands.hpp"
#include "node/job_state_store.hpp"
#include "node/node_shaper.hpp"
#include "node/traffic_control.hpp"
#include "signals/signal_monitor.hpp"

namespace lanes::ctl {

namespace {

void log_line(LogLevel level, const std::string& line) {
    char stamp[32];
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    // lib/ and the agent's own lines carry no prefix (core/log.hpp); lib/node's
    // may still start "lanes: " (kept, not doubled).
    std::fprintf(stderr, "%s %s%s%s\n", stamp, level == LogLevel::Error ? "error: " : "",
                 line.rfind("lanes: ", 0) == 0 ? "" : "lanes: agent: ", lanes::log_line(line).c_str());
    std::fflush(stderr);
}

bool write_file_atomically(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ok = ::close(fd) == 0 && ok;
    return ok && ::rename(tmp.c_str(), path.c_str()) == 0;
}

struct ShiftCounts {
    std::map<std::pair<std::string, std::string>, uint64_t> shifts;  // (class, "busy"/"normal") -> count
    uint64_t errors = 0;
};

std::string metrics_text(const ShiftCounts& counts, const SignalSnapshot* snap, size_t tightened) {
    std::string out;
    out += "# HELP lanes_agent_shifts_total Ceil changes of running jobs made by the Lanes agent.\n";
    out += "# TYPE lanes_agent_shifts_total counter\n";
    for (const auto& [key, n] : counts.shifts)
        out += "lanes_agent_shifts_total{class=\"" + prometheus_label_value(key.first) + "\",to=\"" +
               prometheus_label_value(key.second) + "\"} " + std::to_string(n) + "\n";
    out += "# TYPE lanes_agent_shift_errors_total counter\nlanes_agent_shift_errors_total " +
           std::to_string(counts.errors) + "\n";
    out += "# TYPE lanes_agent_jobs_tightened gauge\nlanes_agent_jobs_tightened " + std::to_string(tightened) + "\n";
    if (snap) {
        out += "# TYPE lanes_agent_window_busy gauge\n";
        for (const auto& [name, w] : snap->windows)
            out += "lanes_agent_window_busy{window=\"" + prometheus_label_value(name) + "\"} " + (w.busy ? "1" : "0") +
                   "\n";
        out += "# TYPE lanes_agent_signal_value gauge\n";
        for (const auto& [name, s] : snap->signals)
            if (s.value.value)
                out += "lanes_agent_signal_value{signal=\"" + prometheus_label_value(name) + "\"} " +
                       format_signal_value(*s.value.value) + "\n";
        out += "# TYPE lanes_agent_signal_fresh gauge\n";
        for (const auto& [name, s] : snap->signals)
            out += "lanes_agent_signal_fresh{signal=\"" + prometheus_label_value(name) + "\"} " +
                   (s.value.fresh ? "1" : "0") + "\n";
    }
    return out;
}

}  // namespace

int run_agent(const Options&, const Context& context) {
    if (geteuid() != 0) {
        print_error("agent: must run as root (changes HTB classes, reads the Lanes state directory)");
        return kExitRuntime;
    }
    auto config = load_config(context.config_path);
    if (!config) {
        print_error(config.error().message);
        return kExitFailed;
    }
    bool any = false;
    for (const auto& [name, c] : config->classes) any = any || !c.busy_window.empty();
    if (!any) {
        print_error("agent: no class in " + context.config_path + " has busy_window/busy_ceil: nothing to do");
        return kExitFailed;
    }
    auto node = node_config_for(config->node, context.node);
    if (!node) {
        print_error(node.error().message);
        return kExitFailed;
    }
    // Block the stop signals in every thread (the monitor's included) and wait
    // for them below with sigtimedwait: no handler, no async-signal-safety issue.
    sigset_t stop_set;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGTERM);
    sigaddset(&stop_set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);

    auto shaper = NodeShaper::open(*node, context.node, log_line);
    if (!shaper) {
        print_error("agent: " + shaper.error().message);
        return kExitRuntime;
    }
    const std::vector<NicFacts> nics = (*shaper)->nics();
    const std::string metrics_path = node->state_dir + "/agent.prom";
    SignalMonitor monitor(log_line);
    monitor.configure(config->signals, config->signal_windows);
    log_line(LogLevel::Info, "started on " + context.node + " with " + context.config_path + " (" +
                                 std::to_string(nics.size()) + " NIC(s))");

    ShiftCounts counts;
    std::map<std::string, bool> last_busy;
    bool stopping = false;
    std::set<std::string> logged_errors;

    // The ceils go into each job's desired state and the kernel through the one
    // executor (NodeShaper::set_ceils, under the state lock): a reapply or a
    // converge keeps them, and a restarted agent finds them there.
    auto apply = [&](const std::vector<CeilTarget>& targets, const char* why) {
        std::map<std::pair<uint32_t, std::string>, const CeilTarget*> by_key;
        for (const auto& t : targets) by_key[{t.job_id, t.change.device}] = &t;
        auto done = (*shaper)->set_ceils(ceil_changes(targets), why);
        if (!done) {
            ++counts.errors;
            if (logged_errors.insert(done.error().message).second) log_line(LogLevel::Error, done.error().message);
            return;
        }
        for (const auto& d : *done) {
            if (!d.error.empty()) {
                ++counts.errors;
                const std::string msg =
                    "JobId=" + std::to_string(d.job_id) + " on " + d.device + ": cannot set ceil: " + d.error;
                if (logged_errors.insert(msg).second) log_line(LogLevel::Error, msg);
                continue;
            }
            if (d.from_bits == d.to_bits) continue;
            auto t = by_key.find({d.job_id, d.device});
            const bool to_busy = t != by_key.end() && d.to_bits != t->second->normal_ceil_bits;
            ++counts
                  .shifts[{t != by_key.end() ? t->second->class_name : std::string("?"), to_busy ? "busy" : "normal"}];
            log_line(LogLevel::Info, "JobId=" + std::to_string(d.job_id) +
                                         (t != by_key.end() ? " (" + t->second->class_name + ")" : std::string()) +
                                         " on " + d.device + ": ceil " + format_rate(d.from_bits) + " -> " +
                                         format_rate(d.to_bits) + " (" + why + ")");
        }
    };

    while (true) {
        auto snap = monitor.snapshot();
        std::map<std::string, bool> busy;
        std::string why = "windows idle";
        if (snap) {
            for (const auto& [name, w] : snap->windows) {
                busy[name] = w.busy && !stopping;
                if (!stopping && last_busy[name] != w.busy)
                    log_line(LogLevel::Info, "window " + name + (w.busy ? " holds" : " is over") + ": " + w.reason);
                if (!stopping) last_busy[name] = w.busy;
                if (w.busy) why = "window " + name + ": " + w.reason;
            }
        }
        if (stopping) why = "agent stopping";
        size_t tightened = 0;
        {
            auto jobs = (*shaper)->list();
            auto targets = plan_ceil_targets(*config, jobs, nics, busy, node->root_handle_major);
            apply(targets, why.c_str());
            for (const auto& job : (*shaper)->list())
                for (const auto& dev : job.devices)
                    if (dev.ceil_now_bits != 0) ++tightened;
        }
        write_file_atomically(metrics_path, metrics_text(counts, snap.get(), tightened));
        if (stopping) {
            log_line(LogLevel::Info,
                     "stopped; " + std::to_string(tightened) + " job class(es) left tightened (0 expected)");
            monitor.stop();
            return tightened == 0 ? kExitOk : kExitRuntime;
        }
        timespec tick{1, 0};
        int sig = sigtimedwait(&stop_set, nullptr, &tick);
        if (sig == SIGTERM || sig == SIGINT) {
            log_line(LogLevel::Info, std::string(sig == SIGTERM ? "SIGTERM" : "SIGINT") + ": restoring normal ceils");
            stopping = true;
        }
    }
}

}  // namespace lanes::ctl
