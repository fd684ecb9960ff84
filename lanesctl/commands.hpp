// SPDX-License-Identifier: GPL-2.0-or-later
// The subcommands of lanesctl, one file each (cmd_*.cpp). Each does its I/O
// (config, Slurm, kernel, /proc) and hands plain data to the pure formatting in
// liblanesctl. They return an ExitCode (args.hpp) and never throw.
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "ctld/windows.hpp"
#include "lanesctl/args.hpp"
#include "lanesctl/json.hpp"

namespace lanes::ctl {

// What every subcommand needs besides its options.
struct Context {
    std::string config_path;  // resolved (args.hpp: resolve_config_path)
    std::string node;         // --node, else the host name
    SysSeconds now{};
    std::shared_ptr<const TimeZone> local_zone;  // this machine's zone; null: UTC
};

// The machine's zone: $TZ (":Europe/Berlin" or "Europe/Berlin"), else the name
// /etc/localtime links to, else /etc/localtime itself, else UTC (null).
std::shared_ptr<const TimeZone> load_local_zone();
// Loads IANA zones for --at/--from "... Europe/Berlin".
Result<std::shared_ptr<const TimeZone>> load_zone(const std::string& name);

// --at, --from, --to: `spec` read as a time (time_spec.hpp), or `otherwise`
// when it is empty. nullopt once "OPTION: why" is printed (the command then
// exits with kExitUsage).
std::optional<SysSeconds> time_option(const char* option, const std::string& spec, const Context& context,
                                      SysSeconds otherwise);

// libslurm, initialised (slurm_init) while one lives. libslurm calls fatal() ->
// exit(1) when it finds no configuration (no slurm.conf, no DNS SRV record);
// exit 1 means "test failed" for lanesctl, so while a session lives an exit
// ends lanesctl with kExitRuntime and "cannot use Slurm" instead.
class SlurmSession {
public:
    SlurmSession();
    ~SlurmSession();
    SlurmSession(const SlurmSession&) = delete;
    SlurmSession& operator=(const SlurmSession&) = delete;
};

// Print a JSON document (pretty, 2 spaces) on stdout.
void print_json(const json::Value& value);
// A human report on stdout (or stderr), each line escaped for the terminal
// (core/text.hpp escape_text): what it quotes cannot move the cursor, clear
// the screen or forge a line.
inline constexpr size_t kMaxHumanOutputBytes = 64u << 20;
void print_human(const std::string& text, std::FILE* to = stdout);
// "lanesctl: MESSAGE" on stderr, escaped the same way.
void print_error(const std::string& message);

int run_check(const Options& options, const Context& context);
int run_policy_test(const Options& options, const Context& context);
int run_windows(const Options& options, const Context& context);
int run_status(const Options& options, const Context& context);
int run_gc(const Options& options, const Context& context);
int run_reapply(const Options& options, const Context& context);
int run_signals(const Options& options, const Context& context);
int run_agent(const Options& options, const Context& context);
int run_rate(const Options& options);
int run_report(const Options& options, const Context& context);

}  // namespace lanes::ctl
