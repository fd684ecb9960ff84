// SPDX-License-Identifier: GPL-2.0-or-later
// What the spank_lanes context files share: plugstack arguments, lanes.toml with
// its last good copy, the job id, the node's shaper. Only the context files and
// the dispatch include this; lib/ knows nothing of SPANK.
#pragma once

extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/lanes_toml.hpp"
#include "core/result.hpp"
#include "glue/slurm_glue.hpp"
#include "node/node_facts.hpp"  // node_name(): one rule for spank and lanesctl
#include "node/node_shaper.hpp"
#include "spank/spank_args.hpp"

namespace lanes::spank {

using glue::guarded;
using glue::log_sink;

// plugstack.conf arguments; a bad one is logged ("lanes: ...") and nullopt.
std::optional<SpankArgs> parse_args(int ac, char** av);

// lanes.toml, else the last copy that loaded (kept root-only by every good load).
std::optional<Config> load(const SpankArgs& args);

// S_JOB_ID, or in the prolog/epilog (S_CTX_JOB_SCRIPT) slurmd's SLURM_JOB_ID.
std::optional<uint32_t> job_id_of(spank_t sp);

// The job's decision, as slurmctld put it in the prolog's environment.
std::map<std::string, std::string> lanes_environment();

// The node's shaper, with "%n" in lanes.toml's node paths expanded.
Result<std::unique_ptr<NodeShaper>> open_shaper(const Config& config);

// ---- one entry per context (options.cpp, slurmd.cpp, task.cpp) -------------------

// srun/sbatch/salloc (and remote, where options must be known too).
int register_options(spank_t sp);
int pass_options_to_controller(spank_t sp);

// slurmd: start; job script context: prolog, epilog.
int slurmd_start(int ac, char** av);
int job_prolog(spank_t sp, int ac, char** av);
int job_epilog(spank_t sp, int ac, char** av);

// slurmstepd: step start (remote init), each task before exec (as root), each
// task's exit (logs the placement times the tasks sent it).
int step_start(spank_t sp, int ac, char** av);
int task_init_privileged(spank_t sp);
int task_exit(spank_t sp);

}  // namespace lanes::spank
