// SPDX-License-Identifier: GPL-2.0-or-later
// Asking slurmctld whether jobs still exist, for `lanesctl gc` and the
// reconcile at slurmd start (node_facts.hpp decide_liveness() takes the answer).
// The question runs in a child process with a hard time bound, so neither a dead
// controller (libslurm retries for MessageTimeout), nor a missing slurm.conf
// (libslurm calls exit()), nor a hung connection holds up the caller: each
// becomes an Unreachable answer that says why.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

#include "node/node_facts.hpp"

namespace lanes::glue {

// How long slurmctld gets for all of the jobs together, libslurm's own retries
// (up to MessageTimeout when the controller is down) included.
inline constexpr std::chrono::seconds kControllerTimeout{20};

// A job's state as slurm_load_job() reports it (enum job_states plus flags).
ControllerAnswer controller_answer_of_state(uint32_t job_state);

// Asks slurmctld about each job in a child process (fork, no exec). In the child,
// `prepare` runs first (lanesctl: slurm_init(); slurmd has its configuration
// already), then slurm_load_job() per job, found at run time (dlsym): spank_lanes
// must not link libslurm, slurmd brings its own. The child is killed at
// `timeout`; every job without an answer by then is Unreachable, with the reason
// (timeout, the child's exit and the last thing it printed).
std::map<uint32_t, ControllerAnswer> ask_slurmctld(const std::vector<uint32_t>& job_ids,
                                                   std::chrono::milliseconds timeout, void (*prepare)() = nullptr);

}  // namespace lanes::glue
