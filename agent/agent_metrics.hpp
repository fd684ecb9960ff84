// SPDX-License-Identifier: GPL-2.0-or-later
// What lanes-agent counts, and the text it writes for node_exporter's textfile
// collector ([agent] textfile_dir/lanes_agent.prom, replaced atomically): every
// metric with HELP and TYPE, label values escaped as the exposition format says
// (backslash, double quote, newline).
//
// Also the small key=value status file the agent keeps in the state directory
// (agent/status), which `lanesctl status` reads: when it last converged, how
// long that took and what it repaired.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "signals/signals.hpp"

namespace lanes::agent {

struct AgentCounters {
    // (object, cause) -> repairs: object "nft_table", "nft_element", "tc_class",
    // ...; cause "missing", "ceil_drift", ...
    std::map<std::pair<std::string, std::string>, uint64_t> repairs;
    // trigger ("start", "event", "resync", "stop") -> converge runs
    std::map<std::string, uint64_t> converges;
    // kind ("link", "tc", "nft", "overrun") -> notifications that said "look again"
    std::map<std::string, uint64_t> events;
    // (class, "busy"/"normal") -> ceil shifts
    std::map<std::pair<std::string, std::string>, uint64_t> shifts;
    // (class, cause) -> changes of a controller's ceil ([classes.NAME.control]);
    // cause "over_slo", "no_value", "headroom", "congested", "load_rose",
    // "rest_below", "quiet"
    std::map<std::pair<std::string, std::string>, uint64_t> ceil_changes;
    // (class, cause) -> decisions that held a controller's ceil against a
    // broken SLO; cause "uncongested" (the congestion signal said no queue)
    std::map<std::pair<std::string, std::string>, uint64_t> ceil_holds;
    // class -> decision instants a controller took (changed or not)
    std::map<std::string, uint64_t> ceil_decisions;
    // (class, device) -> the controller's ceil in force, bits per second
    std::map<std::pair<std::string, std::string>, uint64_t> ceil_bits;
    // The node's name as Slurm knows it: the ceil gauge's host label, as on the
    // per-job series (`lanesctl status --prometheus`), so `lanesctl report`
    // puts each node's ceil next to its jobs. Empty: no host label.
    std::string host;
    // what ("converge", "shift", "metrics") -> failures
    std::map<std::string, uint64_t> errors;
    double last_converge_unix = 0;     // wall clock at the end of the last converge
    double last_converge_seconds = 0;  // how long it took
    double last_success_unix = 0;      // the last converge that ended without error
    uint64_t jobs = 0;                 // jobs with state files at the last converge
    uint64_t jobs_tightened = 0;       // job classes held at a busy ceil now
};

// A label value as the text format wants it.
std::string escape_label_value(std::string_view value);

// The whole file. `snapshot` may be null (no signal windows configured).
std::string metrics_text(const AgentCounters& counters, const SignalSnapshot* snapshot);

// The status file lanesctl status reads (key=value lines).
std::string status_text(const AgentCounters& counters, long pid, const std::string& last_repair);

}  // namespace lanes::agent
