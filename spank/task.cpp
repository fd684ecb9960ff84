// SPDX-License-Identifier: GPL-2.0-or-later
// slurmstepd (remote context): the step's start and each task before exec.
//   step start               load lanes.toml once per step
//   task_init_privileged     as root in the forked task: place it where its
//                            traffic is classified; NCCL/UCX traffic-class variables
#include <unistd.h>

#include <fstream>

#include "node/job_state_store.hpp"
#include "node/task_env.hpp"
#include "spank/common.hpp"

namespace lanes::spank {
namespace {

// slurmstepd keeps the parsed config for its tasks (forked after init).
std::optional<Config> g_step_config;

// Slurm's own cgroup v2 job directory of this process, if Slurm's cgroup plugin
// placed it in one ("0::/system.slice/<node>_slurmstepd.scope/job_7/step_0/...").
std::optional<std::string> slurm_job_cgroup(uint32_t job_id) {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("0::", 0) == 0) return slurm_job_dir_of(line.substr(3), job_id);
    return std::nullopt;
}

}  // namespace

int step_start(spank_t, int ac, char** av) {
    auto args = parse_args(ac, av);
    if (!args) return -1;
    g_step_config = load(*args);
    if (g_step_config) {
        // slurmstepd's own environment (set by Slurm), never the job's.
        auto node = node_config_for(g_step_config->node, node_name());
        if (!node) {
            slurm_error("%s", node.error().message.c_str());
            g_step_config.reset();
        } else {
            g_step_config->node = *node;
        }
    }
    // A broken lanes.toml must not kill the user's step: tasks then run
    // unclassified, and the prolog (which failed the same way) said so.
    return 0;
}

int task_init_privileged(spank_t sp) {
    if (!g_step_config) return 0;
    auto job_id = job_id_of(sp);
    if (!job_id) return 0;
    auto state = JobStateStore(g_step_config->node.state_dir).load(*job_id);
    if (!state) {  // unreadable or untrusted state: fail closed, the task would dodge its cap
        slurm_error("lanes: job %u: %s", *job_id, state.error().message.c_str());
        return -1;
    }
    if (!*state) return 0;  // nothing is shaped for this job on this node
    const JobState& job = **state;
    if (job.cgroup_owned) {
        if (auto slurm_cgroup = slurm_job_cgroup(*job_id)) {
            // Moving the task would take it out of Slurm's limits (memory, cores,
            // devices); keep Slurm's placement and say the job is not marked.
            slurm_error("lanes: job %u: Slurm manages this task's cgroup (%s); not moving it to %s, so its "
                        "traffic is not classified (see LIMITATIONS in spank_lanes(8))",
                        *job_id, slurm_cgroup->c_str(), job.cgroup.c_str());
        } else {
            // In the forked task, before exec: S_TASK_PID is not set yet, getpid() is the task.
            auto attached = NodeShaper::attach_task(g_step_config->node, *job_id, getpid());
            if (!attached) {
                slurm_error("lanes: job %u: cannot place task %d in its cgroup: %s", *job_id,
                            static_cast<int>(getpid()), attached.error().message.c_str());
                return -1;  // an unclassified task would dodge the cap: fail the launch
            }
        }
    }
    for (const auto& [name, value] : task_environment(job.class_name, job.net))
        spank_setenv(sp, name.c_str(), value.c_str(), 1);
    return 0;
}

}  // namespace lanes::spank
