// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/job_fields.hpp"

#include <string_view>

#include "core/job_env.hpp"

namespace lanes {

namespace {

uint32_t at_least_one(std::optional<uint32_t> n) { return n && *n > 0 ? *n : 1; }

}  // namespace

uint32_t requested_gpus(const SlurmJobFields& f) {
    const uint32_t nodes = at_least_one(f.min_nodes);
    if (uint32_t n = count_gpus(f.tres_per_job)) return n;
    if (uint32_t n = count_gpus(f.tres_per_node)) return n * nodes;
    if (uint32_t n = count_gpus(f.gres)) return n * nodes;
    if (uint32_t n = count_gpus(f.tres_per_task)) {
        uint32_t tasks = f.num_tasks && *f.num_tasks > 0 ? *f.num_tasks : at_least_one(f.ntasks_per_node) * nodes;
        return n * tasks;
    }
    return count_gpus(f.tres_per_socket) * nodes;
}

JobView job_view_from_fields(const SlurmJobFields& f, SysSeconds now, const UserNameOf& user_name_of) {
    JobView job;
    job.name = f.name;
    job.comment = f.comment;
    job.uid = f.user_id ? *f.user_id : f.submit_uid;
    if (!f.user_name.empty()) job.user = f.user_name;
    else if (user_name_of) job.user = user_name_of(job.uid);
    else job.user = std::to_string(job.uid);
    job.account = f.account;
    job.partition = f.partition;
    job.qos = f.qos;
    // A policy reads the node-level request; a bare GRES string is one.
    job.tres_per_node = !f.tres_per_node.empty() ? f.tres_per_node : f.gres;
    job.tres_per_job = f.tres_per_job;
    job.gpus = requested_gpus(f);
    job.min_nodes = f.min_nodes.value_or(0);
    job.max_nodes = f.max_nodes.value_or(0);
    job.num_tasks = f.num_tasks.value_or(0);
    job.time_limit_minutes = f.time_limit_minutes;
    job.features = f.features;
    job.batch = f.has_script;
    if (job.batch) {
        for (std::string_view entry : f.environment) {
            auto eq = entry.find('=');
            if (eq == std::string_view::npos) continue;
            job.environment.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
        }
    }
    auto requests = read_user_requests(f.spank_env);
    job.requested_class = requests.lanes_class;
    job.requested_cap = requests.cap;
    job.submit_time = f.submit_time ? SysSeconds{std::chrono::seconds{*f.submit_time}} : now;
    if (f.begin_time && *f.begin_time > 0) job.begin_time = SysSeconds{std::chrono::seconds{*f.begin_time}};
    return job;
}

}  // namespace lanes
