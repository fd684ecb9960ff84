// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl's command line: what the admin asked for, as plain data. Pure: no I/O,
// so every accepted and refused command line is unit-tested (tests/unit/lanesctl_*).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace lanes::ctl {

// Documented in lanesctl(8), EXIT STATUS.
enum ExitCode : int {
    kExitOk = 0,
    kExitFailed = 1,   // check found errors, a policy test or fixture did not match
    kExitUsage = 2,    // bad command line (the message names the option)
    kExitRuntime = 3,  // cannot do the work: slurmctld unreachable, not root, kernel error
};

enum class Command { None, Check, PolicyTest, Windows, Status, Gc, Reapply, Signals, Agent, Rate, Report };

struct Options {
    Command command = Command::None;
    bool help = false;
    bool version = false;

    // Global.
    std::string config;  // empty: resolve_config_path()
    std::string node;    // empty: the host name
    bool json = false;

    // status, windows: tables for scripts (Slurm's habits: squeue -h, sacct -P)
    bool noheader = false;  // --noheader: no header line
    bool parsable = false;  // --parsable: '|'-separated fields, no padding

    // policy test
    std::vector<std::string> job_files;  // positional JOB.json (whole fixture or job object)
    std::vector<uint32_t> job_ids;       // --job ID (repeatable)
    std::string fixtures_dir;            // --fixtures DIR
    std::string at;                      // --at TIME (time_spec.hpp)
    bool as_admin = false;               // --admin: classify as an operator would be

    // windows
    std::string from;                       // --from TIME
    int days = 14;                          // --days N (1..366)
    std::vector<std::string> window_names;  // --window NAME (repeatable); empty: all
    bool reservations = false;              // --reservations [NODES]
    std::string reservation_nodes;          // empty: the borrowed partitions (PART_NODES)
    std::string reservation_accounts;       // --reservation-accounts A,B
    std::string reservation_users;          // --reservation-users U,V
    bool apply = false;                     // --apply: create the reservations in slurmctld

    // rate
    std::vector<std::string> rates;  // positional RATE

    // status: --prometheus FILE (the textfile to write); report: --prometheus
    // URL|SIGNAL (the Prometheus API to query)
    std::string prometheus_file;

    // report (also --from, --window, --noheader, --parsable)
    std::string to;                                              // --to TIME; empty: now
    std::chrono::seconds report_step{0};                         // --step DURATION; 0: rows only at window boundaries
    double slo_seconds = 0;                                      // --slo DURATION (required)
    std::string report_class = "training";                       // --class NAME
    std::string latency_metric = "lanes_probe_latency_seconds";  // --latency-metric NAME (a histogram)
    std::string plot_file;                                       // --plot FILE.png

    // gc; reapply --dry-run (check only)
    bool dry_run = false;
    bool all = false;
};

// Parse the arguments after argv[0]. Errors name the offending option or word:
// "unknown option '--frm' for 'windows'", "--days: 'x' is not a number of days (1..366)".
Result<Options> parse_args(const std::vector<std::string>& args);

// Full help (command == None) or one subcommand's help.
std::string usage_text(Command command);
const char* command_name(Command command);

// What bash completion offers, from the option table parse_args() uses
// (lanesctl/completion_gen.cpp writes contrib/completions/lanesctl from it).
struct CompletionTable {
    std::vector<std::string> commands;        // "check", "policy test", ... in --help's order
    std::vector<std::string> global_options;  // valid before and after every subcommand
    // Per subcommand (command_name()): its own options, without the global ones.
    std::vector<std::pair<std::string, std::vector<std::string>>> command_options;
    std::vector<std::string> value_options;  // options that must have a value (--config FILE)
};
CompletionTable completion_table();

// lanes.toml to use: --config, else $LANES_CONFIG, else lanes.toml next to $SLURM_CONF,
// else `compiled_default` (LANES_DEFAULT_CONFIG): the same order as job_submit/lanes.
std::string resolve_config_path(const Options& options,
                                const std::function<std::optional<std::string>(const char*)>& getenv,
                                const std::string& compiled_default);

}  // namespace lanes::ctl
