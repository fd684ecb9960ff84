// SPDX-License-Identifier: GPL-2.0-or-later
// The job as the classifier sees it, and the decision it makes. No Slurm types:
// One translator builds JobView from Slurm's fields (core/job_fields.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/lanes_toml.hpp"

namespace lanes {

// Total GPUs in a TRES string like "gres/gpu:4", "gres:gpu:a100:2,gres/gpu=1", "gpu:8".
uint32_t count_gpus(std::string_view tres);

// The job's total GPUs from all its requests: requested_gpus() in core/job_fields.hpp.

struct JobView {
    std::string name;
    std::string comment;
    std::string user;
    uint32_t uid = 0;
    std::string account;
    std::string partition;  // requested (may be "a,b")
    std::string qos;
    std::string tres_per_node;  // e.g. "gres:gpu:4" (as Slurm keeps it)
    std::string tres_per_job;
    uint32_t gpus = 0;  // total GPUs requested, parsed from the TRES fields
    uint32_t min_nodes = 0;
    uint32_t max_nodes = 0;
    uint32_t num_tasks = 0;
    std::optional<uint32_t> time_limit_minutes;  // NO_VAL -> nullopt
    std::string features;
    bool batch = false;                              // has a batch script
    std::map<std::string, std::string> environment;  // batch env (when present)
    // Lanes options the user gave (--lanes-class, --lanes-cap), already syntax-checked.
    std::optional<std::string> requested_class;
    std::optional<std::string> requested_cap;
    SysSeconds submit_time{};
    std::optional<SysSeconds> begin_time;  // user's --begin
};

// Where the job goes and how its traffic is treated. Everything a node needs is
// in `network`, which travels in the job's SPANK environment set by slurmctld.
struct NetworkDecision {
    std::optional<uint8_t> dscp;
    std::optional<Rate> rate;
    std::optional<Rate> ceil;
    std::optional<uint8_t> rdma_traffic_class;
    std::optional<uint8_t> rdma_service_level;
    int rank = 0;
    // Ingress caps (the job's IFB class on each NIC); nullopt = not shaped.
    std::optional<Rate> ingress_rate;
    std::optional<Rate> ingress_ceil;
    bool operator==(const NetworkDecision&) const = default;
};

struct Decision {
    enum class Verdict { Accept, Reject };
    // Why a job was rejected; job_submit maps it to a specific ESLURM_* code.
    enum class RejectKind { Policy, ClassNotAllowed, InvalidOption, TimeWindow };
    Verdict verdict = Verdict::Accept;
    RejectKind reject_kind = RejectKind::Policy;
    std::string class_name;
    std::string reason;                      // why (rule, policy line)
    std::vector<std::string> user_messages;  // shown to the user at submit time
    // Routing; nullopt = leave the job's own value.
    std::optional<std::string> partition;
    std::optional<std::string> qos;
    std::optional<std::string> features;
    std::optional<int32_t> nice;
    std::optional<SysSeconds> begin_time;
    std::optional<uint32_t> time_limit_minutes;
    NetworkDecision network;
    // For the controller's metrics: default_class because nothing chose one
    // (the policy fell through, or failed with on_error = accept-default).
    bool defaulted = false;
    bool policy_failed = false;  // the policy run failed; on_error applied
};

}  // namespace lanes
