// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl: the administrator's command for Lanes. This file only parses the
// command line, builds the shared context and dispatches; each subcommand lives
// in its own cmd_*.cpp. See lanesctl(8).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "config.h"
#include "core/version.hpp"
#include "lanesctl/args.hpp"
#include "lanesctl/commands.hpp"
#include "node/node_facts.hpp"

namespace {

int run(int argc, char** argv) {
    using namespace lanes::ctl;
    std::vector<std::string> args(argv + 1, argv + argc);
    auto parsed = parse_args(args);
    if (!parsed) {
        print_error(parsed.error().message);
        std::fputs("Try 'lanesctl --help'.\n", stderr);
        return kExitUsage;
    }
    const Options& options = *parsed;
    if (options.version) {
        std::printf("%s\n", lanes::version_string());
        return kExitOk;
    }
    if (options.help) {
        std::fputs(usage_text(options.command).c_str(), stdout);
        return kExitOk;
    }
    // Needs no configuration, node or clock.
    if (options.command == Command::Rate) return run_rate(options);
    Context context;
    context.config_path = resolve_config_path(
        options,
        [](const char* name) -> std::optional<std::string> {
            const char* value = std::getenv(name);
            if (!value) return std::nullopt;
            return std::string(value);
        },
        LANES_DEFAULT_CONFIG);
    context.node = options.node.empty() ? lanes::node_name() : options.node;  // as spank_lanes names it
    context.now = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
    context.local_zone = load_local_zone();
    switch (options.command) {
        case Command::Check: return run_check(options, context);
        case Command::PolicyTest: return run_policy_test(options, context);
        case Command::Windows: return run_windows(options, context);
        case Command::Status: return run_status(options, context);
        case Command::Gc: return run_gc(options, context);
        case Command::Reapply: return run_reapply(options, context);
        case Command::Signals: return run_signals(options, context);
        case Command::Agent: return run_agent(options, context);
        case Command::Report: return run_report(options, context);
        case Command::Rate:
        case Command::None: break;
    }
    return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lanesctl: internal error: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "lanesctl: internal error\n");
    }
    return lanes::ctl::kExitRuntime;
}
