// SPDX-License-Identifier: GPL-2.0-or-later
// slurmstepd (remote context): the step's start and each task before exec.
//   step start               load lanes.toml once per step
//   task_init_privileged     as root in the forked task: place it where its
//                            traffic is classified; NCCL/UCX traffic-class variables
//   task_exit                in slurmstepd: log the times the tasks sent
// Both times are logged at SlurmdDebug=verbose ("step batch set up in", "task 0
// placed in"): Lanes' part of a step's launch, beside the prolog's own line.
// slurmstepd logs the task's too: a line logged from the forked task reached
// the log in pieces, with slurmd's lines inside it, and the bench lost it.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <fstream>

#include "core/cpu_time.hpp"
#include "core/text.hpp"
#include "node/cgroup_tree.hpp"
#include "node/job_state_store.hpp"
#include "node/policy_routing.hpp"
#include "node/task_env.hpp"
#include "spank/common.hpp"

namespace lanes::spank {
namespace {

// slurmstepd keeps the parsed config for its tasks (forked after init), and why
// its step start could not classify the job, if it could not.
std::optional<Config> g_step_config;
std::string g_classify_error;

// Slurm's own cgroup v2 job directory of this process, if Slurm's cgroup plugin
// placed it in one ("0::/system.slice/<node>_slurmstepd.scope/job_7/step_0/...").
std::optional<std::string> slurm_job_cgroup(uint32_t job_id) {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("0::", 0) == 0) return slurm_job_dir_of(line.substr(3), job_id);
    return std::nullopt;
}

// Lanes' share of a step's launch, logged at SlurmdDebug=verbose (what
// bench/launch_storm.sh times beside the prolog): wall and CPU time since made.
class SetupClock {
public:
    double wall_ms() const {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_).count();
    }
    double cpu_ms() const { return process_cpu_ms() - cpu_started_; }

private:
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    double cpu_started_ = process_cpu_ms();
};

// A task's placement time, sent from the forked task to slurmstepd over a pipe
// the step start made: one write, smaller than PIPE_BUF, so never in pieces.
struct TaskTime {
    uint32_t job_id = 0;
    uint32_t task = 0;
    double wall_ms = 0;
    double cpu_ms = 0;
};
static_assert(sizeof(TaskTime) <= PIPE_BUF);
// Both ends close on exec (the user's program never holds them); non-blocking,
// so a full pipe or an empty one never stalls a task or slurmstepd.
int g_task_times[2] = {-1, -1};

void open_task_times() {
    if (g_task_times[0] >= 0) return;
    if (::pipe2(g_task_times, O_CLOEXEC | O_NONBLOCK) != 0) g_task_times[0] = g_task_times[1] = -1;
}

// "batch", "extern", "interactive" or the step's number, as Slurm's logs say it.
std::string step_name(spank_t sp) {
    uint32_t step = 0;
    if (spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS) return "?";
    switch (step) {
        case SLURM_BATCH_SCRIPT: return "batch";
        case SLURM_EXTERN_CONT: return "extern";
        case SLURM_INTERACTIVE_STEP: return "interactive";
        default: return std::to_string(step);
    }
}

int configure_step(spank_t sp, int ac, char** av) {
    auto args = parse_args(ac, av);
    if (!args) return -1;
    g_step_config = load(*args);
    if (g_step_config) {
        // slurmstepd's own environment (set by Slurm), never the job's.
        auto node = node_config_for(g_step_config->node, node_name());
        if (!node) {
            log_sink(lanes::LogLevel::Error, node.error().message);  // one "lanes: " prefix
            g_step_config.reset();
        } else {
            g_step_config->node = *node;
        }
    }
    if (!g_step_config) {
        // Without lanes.toml nothing can be checked here: the tasks fail closed.
        g_classify_error = "no usable lanes.toml in slurmstepd";
        return 0;
    }
    // Every step, the extern step (PrologFlags=Contain) included: Slurm's job
    // cgroup exists by now (proctrack made it before plugins were initialised),
    // and this is the earliest callback that runs as root after that. Keying the
    // job's nft chain on it here covers the steps' tasks and anything
    // pam_slurm_adopt later puts into the job. A failure is kept for the tasks
    // (which fail, with the message on the user's terminal); the step itself goes
    // on, since failing the extern step would fail the job's allocation.
    auto job_id = job_id_of(sp);
    if (!job_id) return 0;
    auto keyed = NodeShaper::classify_step(g_step_config->node, node_name(), *job_id, log_sink);
    if (!keyed) {
        g_classify_error = keyed.error().message;
        log_sink(lanes::LogLevel::Error, g_classify_error);
    }
    return 0;
}

// A task that should be classified and is not: fail its launch, or with
// nodes.classify_failure = "warn" let it run and say so.
int refuse_task(uint32_t job_id, const std::string& why) {
    std::string text = lanes::log_field(why.rfind("lanes: ", 0) == 0 ? why.substr(7) : why, lanes::kLogLineBytes);
    if (text.find("JobId=") == std::string::npos) text = "JobId=" + std::to_string(job_id) + ": " + text;
    if (g_step_config && g_step_config->node.classify_failure_warns) {
        slurm_error("lanes: %s; the task runs unclassified (nodes.classify_failure = \"warn\")", text.c_str());
        return 0;
    }
    slurm_error("lanes: %s; refusing to launch an unclassified task (nodes.classify_failure = \"fail\")", text.c_str());
    return -1;
}

// A class with a path (lanes.toml route_table / egress_device / vlan): RDMA and
// NCCL are pointed at its NIC (the device from the prolog's path record, the
// overrides from the class).
void set_path_environment(spank_t sp, const JobState& job) {
    const ClassConfig* c = g_step_config ? g_step_config->find_class(job.class_name) : nullptr;
    if (!c || !c->path) return;
    std::string device;
    if (auto rec = job_path(g_step_config->node, job.job_id)) device = rec->path.device;
    for (const auto& [name, value] : path_task_environment(*c->path, device, rdma_device_of(device)))
        spank_setenv(sp, name.c_str(), value.c_str(), 1);
}

int place_task(spank_t sp) {
    auto job_id = job_id_of(sp);
    if (!job_id) return 0;
    if (!g_step_config) return refuse_task(*job_id, g_classify_error);
    auto state = JobStateStore(g_step_config->node.state_dir).load(*job_id);
    if (!state) return refuse_task(*job_id, state.error().message);  // unreadable or untrusted
    if (!*state)
        return refuse_task(*job_id,
                           "no Lanes record on this node (the prolog did not run, or its record was "
                           "removed)");
    JobState job = **state;
    if (!job.unshaped.empty()) return 0;  // the prolog said why nothing is shaped here
    if (job.cgroup_slurm) {
        // Keyed on Slurm's job cgroup: this task is in it (Slurm placed it) once
        // the step start keyed it; retry here if that failed.
        if (job.cgroup_id == 0 || !g_classify_error.empty()) {
            auto keyed = NodeShaper::classify_step(g_step_config->node, node_name(), *job_id, log_sink);
            if (!keyed) return refuse_task(*job_id, keyed.error().message);
            job = *keyed;
        }
        auto mine = slurm_job_cgroup(*job_id);
        if (!mine || relative_path("/sys/fs/cgroup" + *mine, kNftCgroupBase) != job.cgroup_key)
            return refuse_task(*job_id, "this task's cgroup (" + mine.value_or("none") +
                                            ") is not the job's keyed cgroup " + job.cgroup_key);
    } else if (job.cgroup_owned) {
        if (auto slurm_cgroup = slurm_job_cgroup(*job_id)) {
            // Moving the task would take it out of Slurm's limits (memory, cores,
            // devices), and Lanes keys such jobs on Slurm's dir instead: a state
            // from a node set up otherwise at the prolog.
            return refuse_task(*job_id, "Slurm manages this task's cgroup (" + *slurm_cgroup +
                                            ") but the job was shaped for Lanes' own cgroup " + job.cgroup);
        }
        // In the forked task, before exec: S_TASK_PID is not set yet, getpid() is the task.
        auto attached = NodeShaper::attach_task(g_step_config->node, *job_id, getpid());
        if (!attached)
            return refuse_task(*job_id, "cannot place task " + std::to_string(getpid()) +
                                            " in its cgroup: " + attached.error().message);
    }
    for (const auto& [name, value] : task_environment(job.class_name, job.net))
        spank_setenv(sp, name.c_str(), value.c_str(), 1);
    set_path_environment(sp, job);
    return 0;
}

}  // namespace

int step_start(spank_t sp, int ac, char** av) {
    const SetupClock clock;
    open_task_times();
    const int rc = configure_step(sp, ac, av);
    auto job_id = job_id_of(sp);
    if (job_id && g_step_config && g_classify_error.empty())
        slurm_verbose("lanes: JobId=%u step %s set up in %.2f ms (%.2f ms CPU)", *job_id, step_name(sp).c_str(),
                      clock.wall_ms(), clock.cpu_ms());
    return rc;
}

int task_init_privileged(spank_t sp) {
    const SetupClock clock;
    const int rc = place_task(sp);
    uint32_t task = 0;
    auto job_id = job_id_of(sp);
    if (rc == 0 && job_id && spank_get_item(sp, S_TASK_GLOBAL_ID, &task) == ESPANK_SUCCESS) {
        const TaskTime sent{*job_id, task, clock.wall_ms(), clock.cpu_ms()};
        if (g_task_times[1] < 0 || ::write(g_task_times[1], &sent, sizeof sent) != sizeof sent)
            slurm_verbose("lanes: JobId=%u step %s task %u placed in %.2f ms (%.2f ms CPU)", sent.job_id,
                          step_name(sp).c_str(), sent.task, sent.wall_ms, sent.cpu_ms);
    }
    return rc;
}

int task_exit(spank_t sp) {
    if (g_task_times[0] < 0) return 0;
    TaskTime got;
    while (::read(g_task_times[0], &got, sizeof got) == sizeof got)
        slurm_verbose("lanes: JobId=%u step %s task %u placed in %.2f ms (%.2f ms CPU)", got.job_id,
                      step_name(sp).c_str(), got.task, got.wall_ms, got.cpu_ms);
    return 0;
}

}  // namespace lanes::spank
