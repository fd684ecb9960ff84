// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl agent: kept for the units and scripts that start the agent this way.
// The agent is its own program now, lanes-agent(8) (it links only lib/node,
// lib/signals and lib/core): this execs it with the same --config and --node.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lanesctl/commands.hpp"

#ifndef LANES_SBINDIR
#define LANES_SBINDIR "/usr/sbin"
#endif

namespace lanes::ctl {

int run_agent(const Options&, const Context& context) {
    // LANES_AGENT (tests, a build tree) overrides the installed program.
    const char* env = std::getenv("LANES_AGENT");
    const std::string program = env && *env ? env : LANES_SBINDIR "/lanes-agent";
    std::vector<std::string> args = {program, "--config", context.config_path, "--node", context.node};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    print_error("agent: cannot run " + program + ": " + std::strerror(errno) +
                " (the agent is lanes-agent(8) now; install it or run it directly)");
    return kExitRuntime;
}

}  // namespace lanes::ctl
