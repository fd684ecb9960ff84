// SPDX-License-Identifier: GPL-2.0-or-later
// Policy test fixtures: one JSON file per case, shared by the golden tests and
// `lanesctl policy test`:
//
//   {
//     "description": "training job submitted at peak is deferred",
//     "job":    {"name": "train-llm", "user": "bob", "account": "ml", "gpus": 8,
//                "time_limit": "2:00:00", "batch": true, ...},
//     "at":     "2026-12-01T09:00:00+01:00",      // `now` for the classifier
//     "admin":  false,                             // optional
//     "expect": {"verdict": "accept", "class": "training",
//                "begin_time": "2026-12-01T20:00:00+01:00", "partition": "train",
//                "message_contains": "deferred", ...}
//   }
//
// Job keys are the names a policy sees (lanes-policy(7)): name, comment, user, uid,
// account, partition, qos, tres_per_node, tres_per_job, gpus, min_nodes, max_nodes,
// num_tasks, time_limit (minutes or a Slurm time string), features, batch, env,
// lanes_class, lanes_cap, submit_time and begin_time (timestamps or epoch seconds);
// and Slurm's own request fields tres_per_task, tres_per_socket, gres and
// ntasks_per_node. They fill SlurmJobFields, and the JobView comes from the same
// translator as job_submit/lanes (core/job_fields.hpp); "gpus", when given,
// replaces the count made from the GPU requests.
// Only the expect keys present are checked; null means "must be unset".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"
#include "core/job_fields.hpp"
#include "core/result.hpp"
#include "lanesctl/json.hpp"

namespace lanes {

// "2026-12-01T09:00:00+01:00", "...Z" (an offset is required), or epoch seconds.
Result<SysSeconds> parse_timestamp(std::string_view text);
std::string format_timestamp_utc(SysSeconds t);  // "2026-12-01T08:00:00Z"

// The Slurm fields a job object names; `gpus` gets its "gpus" key, if any.
Result<SlurmJobFields> job_fields_from_json(const json::Value& job, std::optional<uint32_t>& gpus);
Result<JobView> job_from_json(const json::Value& job);
json::Value decision_to_json(const Decision& decision);

struct PolicyFixture {
    std::string path;
    std::string description;
    JobView job;
    SysSeconds at{};
    bool admin = false;
    json::Value expect;
};

Result<PolicyFixture> parse_fixture(std::string_view text, const std::string& path);
Result<PolicyFixture> load_fixture(const std::string& path);

// What differs between the expectation and the decision; empty when it matches.
// Unknown expect keys are reported too (so a typo cannot make a test pass).
std::vector<std::string> check_fixture(const PolicyFixture& fixture, const Decision& decision);

}  // namespace lanes
