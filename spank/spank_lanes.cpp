// SPDX-License-Identifier: GPL-2.0-or-later
// spank_lanes: the node half of Lanes. This file only dispatches on
// spank_context(); each context lives in its own file, the work in lib/.
//
//   plugstack.conf:  required spank_lanes.so config=/etc/slurm/lanes.toml
//
// Context              callback                   file
// srun/sbatch/salloc   init, init_post_opt        options.cpp  (--lanes-class, --lanes-cap)
// slurmd               init                       slurmd.cpp   (start: reconcile)
// prolog/epilog        job_prolog, job_epilog     slurmd.cpp   (shape / unshape the job)
// slurmstepd           init                       task.cpp     (load lanes.toml per step)
// task (root, child)   task_init_privileged       task.cpp     (classify the task)
// slurmstepd           task_exit                  task.cpp     (log the tasks' times)
//
// The definitions match spank.h's own declarations (23.02+ declares them: C
// linkage, no noexcept); each body runs in glue::guarded, so no exception leaves.

#include "spank/common.hpp"

extern "C" {
extern const char plugin_name[] = "lanes";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

using namespace lanes::spank;

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
    return guarded("init", -1, [&]() -> int {
        switch (spank_context()) {
            case S_CTX_LOCAL:
            case S_CTX_ALLOCATOR: return register_options(sp);
            case S_CTX_REMOTE:
                // Options must be known remotely too, though their values are ignored there.
                if (register_options(sp) != 0) return -1;
                return step_start(sp, ac, av);
            case S_CTX_SLURMD: return slurmd_start(ac, av);
            default: return 0;
        }
    });
}

extern "C" int slurm_spank_init_post_opt(spank_t sp, int, char**) {
    return guarded("init_post_opt", -1, [&]() -> int {
        auto context = spank_context();
        if (context != S_CTX_LOCAL && context != S_CTX_ALLOCATOR) return 0;
        return pass_options_to_controller(sp);
    });
}

extern "C" int slurm_spank_job_prolog(spank_t sp, int ac, char** av) {
    return guarded("prolog", -1, [&]() -> int { return job_prolog(sp, ac, av); });
}

extern "C" int slurm_spank_task_init_privileged(spank_t sp, int, char**) {
    return guarded("task init", -1, [&]() -> int { return task_init_privileged(sp); });
}

extern "C" int slurm_spank_task_exit(spank_t sp, int, char**) {
    return guarded("task exit", 0, [&]() -> int { return task_exit(sp); });
}

extern "C" int slurm_spank_job_epilog(spank_t sp, int ac, char** av) {
    return guarded("epilog", 0, [&]() -> int { return job_epilog(sp, ac, av); });
}
