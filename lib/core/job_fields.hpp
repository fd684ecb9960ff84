// SPDX-License-Identifier: GPL-2.0-or-later
// The one translation from a Slurm job to the policy's JobView, shared by
// job_submit/lanes (job_desc_msg_t at submit and update), `lanesctl policy
// test --job` (job_info_t from slurmctld) and lanesctl's JSON job files.
// Each source only copies Slurm's fields into SlurmJobFields, as Slurm holds
// them, with Slurm's "no value" sentinels (NO_VAL, INFINITE, 0) turned into
// nullopt; every decision about what they mean (whose job it is, how many
// GPUs, which Lanes options the user gave) is made here, once.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/job.hpp"

namespace lanes {

struct SlurmJobFields {
    std::string name;
    std::string comment;
    std::string account;
    std::string partition;
    std::string qos;
    std::string features;
    std::optional<uint32_t> user_id;  // the owner; nullopt: whoever submitted
    uint32_t submit_uid = 0;
    std::string user_name;  // when the source names the owner (job_info_t); else looked up
    // GPU requests, in any of Slurm's spellings ("gres/gpu:2", "gres:gpu:a100:4", "gpu:4").
    std::string tres_per_job;     // --gpus
    std::string tres_per_node;    // --gpus-per-node, --gres
    std::string tres_per_socket;  // --gpus-per-socket
    std::string tres_per_task;    // --gpus-per-task
    std::string gres;             // a bare per-node GRES string ("gpu:a100:4"), when a source has one
    std::optional<uint32_t> min_nodes;
    std::optional<uint32_t> max_nodes;
    std::optional<uint32_t> num_tasks;
    std::optional<uint32_t> ntasks_per_node;
    std::optional<uint32_t> time_limit_minutes;  // nullopt: none or INFINITE
    bool has_script = false;                     // a batch job
    std::vector<std::string> environment;        // "NAME=value"; read for batch jobs only
    std::vector<std::string> spank_env;          // spank_job_env: the user's --lanes-* options
    std::optional<int64_t> begin_time;           // epoch seconds (--begin)
    std::optional<int64_t> submit_time;          // epoch seconds; nullopt: `now`
};

// The job's total GPUs: per job if given; else per node times the node count;
// else per task times the task count (num_tasks, else ntasks_per_node times the
// node count); else per socket times the node count (at least one socket a
// node: a lower bound). A missing count counts as 1.
uint32_t requested_gpus(const SlurmJobFields& fields);

using UserNameOf = std::function<std::string(uint32_t uid)>;

// The JobView a policy sees. `user_name_of` names the owner when the fields do not.
JobView job_view_from_fields(const SlurmJobFields& fields, SysSeconds now, const UserNameOf& user_name_of);

}  // namespace lanes
