// SPDX-License-Identifier: GPL-2.0-or-later
// slurmd (as root): its start, and the job prolog and epilog it runs.
//   start      reconcile: remove the shaping of jobs that are gone
//   prolog     SPANK_LANES_* (slurmctld's copy, with PrologFlags=Alloc) -> HTB
//              class, nft marks, job cgroup, state file
//   epilog     remove everything of the job; never fails (that would drain the node)
#include "core/job_env.hpp"
#include "spank/common.hpp"

namespace lanes::spank {
int slurmd_start(int ac, char** av) {
    auto args = parse_args(ac, av);
    if (!args) return -1;
    auto config = load(*args);
    if (!config) {
        // slurmd still starts: a node without Lanes is better than a node down. Its
        // prologs fail the same way for jobs that need shaping, and say why.
        slurm_error("lanes: no usable lanes.toml at slurmd start; leftovers not reconciled");
        return 0;
    }
    if (!args->reconcile_on_start) return 0;
    auto shaper = open_shaper(*config);
    if (!shaper) {
        // No NIC selected for this node is a normal configuration: nothing to shape.
        slurm_info("lanes: not shaping on %s: %s", node_name().c_str(), shaper.error().message.c_str());
        return 0;
    }
    // Alive until its epilog: only state from an earlier boot goes here (slurmctld
    // runs the epilog of every job that ended while slurmd was down).
    LivenessProbe probe;
    auto removed = (*shaper)->reconcile([&](const JobState& st) {
        auto alive = probe.check(st);
        if (!alive.alive) slurm_info("lanes: JobId=%u: %s", st.job_id, alive.why.c_str());
        return alive.alive;
    });
    if (!removed) {
        slurm_error("lanes: reconcile at slurmd start: %s", removed.error().message.c_str());
        return 0;  // leftovers are not worth keeping slurmd down; lanesctl gc can retry
    }
    for (uint32_t job : *removed) slurm_info("lanes: removed leftover state of job %u at slurmd start", job);
    return 0;
}

int job_prolog(spank_t sp, int ac, char** av) {
    auto job_id = job_id_of(sp);
    if (!job_id) {
        slurm_error("lanes: prolog: no job id");
        return -1;
    }
    auto vars = lanes_environment();
    if (vars.empty()) {
        slurm_debug("lanes: job %u has no Lanes decision (job_submit/lanes not configured?)", *job_id);
        return 0;
    }
    auto directive = decode_directive(vars);
    if (!directive) {
        slurm_error("lanes: job %u: bad decision from slurmctld: %s", *job_id, directive.error().message.c_str());
        return -1;
    }
    if (!directive->network.dscp && !directive->network.rate && !directive->network.ceil) {
        slurm_debug("lanes: job %u class %s has no network settings", *job_id, directive->class_name.c_str());
        return 0;
    }
    auto args = parse_args(ac, av);
    if (!args) return -1;
    auto config = load(*args);
    if (!config) return -1;
    auto shaper = open_shaper(*config);
    if (!shaper) {
        slurm_info("lanes: job %u: not shaping on %s: %s", *job_id, node_name().c_str(),
                   shaper.error().message.c_str());
        return 0;
    }
    JobNetRequest request;
    request.job_id = *job_id;
    request.class_name = directive->class_name;
    request.net = directive->network;
    auto state = (*shaper)->apply(request);
    if (!state) {
        slurm_error("lanes: job %u: %s", *job_id, state.error().message.c_str());
        return -1;
    }
    slurm_info("lanes: job %u class %s shaped on %zu NIC(s)", *job_id, directive->class_name.c_str(),
               state->devices.size());
    return 0;
}

int job_epilog(spank_t sp, int ac, char** av) {
    auto job_id = job_id_of(sp);
    if (!job_id) {
        slurm_error("lanes: epilog: no job id");
        return 0;
    }
    // A failing epilog drains the node. Nothing left behind here is worth that:
    // leftovers are logged and removed by slurmd's start-up reconcile or
    // `lanesctl gc`, so every path below returns 0.
    auto args = parse_args(ac, av);
    if (!args) return 0;
    auto config = load(*args);
    if (!config) {
        slurm_error("lanes: job %u: no usable lanes.toml; its shaping (if any) is left for lanesctl gc", *job_id);
        return 0;
    }
    auto shaper = open_shaper(*config);
    if (!shaper) return 0;  // nothing is shaped on this node
    auto removed = (*shaper)->remove(*job_id);
    if (!removed)
        slurm_error("lanes: job %u: teardown incomplete, left for lanesctl gc: %s", *job_id,
                    removed.error().message.c_str());
    return 0;
}

}  // namespace lanes::spank
