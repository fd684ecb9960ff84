// SPDX-License-Identifier: GPL-2.0-or-later
#include "glue/slurm_job_fields.hpp"

#include <optional>
#include <string>

namespace lanes::glue {

namespace {

// What slurm_init_job_desc_msg() leaves in user_id ("not given"): NO_VAL in
// 22.05; newer releases set Slurm's own "nobody" there (not in slurm.h), so
// it is asked once rather than guessed per release. Never 0 (root is an owner).
uint32_t unset_user_id() {
    static const uint32_t unset = [] {
        job_desc_msg_t probe;
        slurm_init_job_desc_msg(&probe);
        return probe.user_id;
    }();
    return unset;
}

std::string str(const char* s) { return s ? std::string(s) : std::string(); }

// A count: NO_VAL (and 0, which Slurm also uses for "not given") is none.
std::optional<uint32_t> count(uint32_t n) {
    if (n == NO_VAL || n == 0) return std::nullopt;
    return n;
}
std::optional<uint32_t> count16(uint16_t n) {
    if (n == NO_VAL16 || n == 0) return std::nullopt;
    return n;
}

std::optional<uint32_t> minutes(uint32_t limit) {
    if (limit == NO_VAL || limit == INFINITE) return std::nullopt;
    return limit;
}

std::vector<std::string> entries(char* const* array, uint32_t size) {
    std::vector<std::string> out;
    if (!array) return out;
    for (uint32_t i = 0; i < size && array[i]; ++i) out.emplace_back(array[i]);
    return out;
}

}  // namespace

SlurmJobFields fields_from_desc(const job_desc_msg_t& desc, uint32_t submit_uid) {
    SlurmJobFields f;
    f.name = str(desc.name);
    f.comment = str(desc.comment);
    f.account = str(desc.account);
    f.partition = str(desc.partition);
    f.qos = str(desc.qos);
    f.features = str(desc.features);
    // user_id names the owner when an admin submits for someone; "not given"
    // (NO_VAL, or what slurm_init_job_desc_msg() sets) means the submitter.
    const uint32_t unset = unset_user_id();
    if (desc.user_id != NO_VAL && desc.user_id != 0xffffffffu && !(unset != 0 && desc.user_id == unset))
        f.user_id = desc.user_id;
    f.submit_uid = submit_uid;
    f.tres_per_job = str(desc.tres_per_job);
    f.tres_per_node = str(desc.tres_per_node);
    f.tres_per_socket = str(desc.tres_per_socket);
    f.tres_per_task = str(desc.tres_per_task);
    f.min_nodes = count(desc.min_nodes);
    f.max_nodes = count(desc.max_nodes);
    f.num_tasks = count(desc.num_tasks);
    f.ntasks_per_node = count16(desc.ntasks_per_node);
    f.time_limit_minutes = minutes(desc.time_limit);
    f.has_script = desc.script != nullptr;
    f.environment = entries(desc.environment, desc.env_size);
    f.spank_env = entries(desc.spank_job_env, desc.spank_job_env_size);
    if (desc.begin_time > 0) f.begin_time = static_cast<int64_t>(desc.begin_time);
    return f;
}

SlurmJobFields fields_from_info(const slurm_job_info_t& info) {
    SlurmJobFields f;
    f.name = str(info.name);
    f.comment = str(info.comment);
    f.account = str(info.account);
    f.partition = str(info.partition);
    f.qos = str(info.qos);
    f.features = str(info.features);
    f.user_id = info.user_id;
    f.submit_uid = info.user_id;
    f.user_name = str(info.user_name);
    f.tres_per_job = str(info.tres_per_job);
    f.tres_per_node = str(info.tres_per_node);
    f.tres_per_socket = str(info.tres_per_socket);
    f.tres_per_task = str(info.tres_per_task);
    f.min_nodes = count(info.num_nodes);
    f.max_nodes = count(info.max_nodes);
    f.num_tasks = count(info.num_tasks);
    f.ntasks_per_node = count16(info.ntasks_per_node);
    f.time_limit_minutes = minutes(info.time_limit);
    f.has_script = info.batch_flag != 0;
    if (info.submit_time > 0) f.submit_time = static_cast<int64_t>(info.submit_time);
    return f;
}

}  // namespace lanes::glue
