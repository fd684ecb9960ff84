// SPDX-License-Identifier: GPL-2.0-or-later
// The trust path: how the controller's decision reaches the nodes.
//
// job_submit/lanes writes the decision into the job's SPANK environment
// (job_desc->spank_job_env). With PrologFlags=Alloc every node's prolog receives
// slurmctld's copy of that array as SPANK_<NAME> variables, so a user cannot
// forge it (see STYLE.md). Before writing, every user-supplied LANES_* entry is
// stripped; the user's own requests travel as LANES_REQUEST_* and are read (and
// validated) first.
//
// Pure functions over "NAME=value" strings; no Slurm types.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"
#include "core/result.hpp"

namespace lanes {

// Names in spank_job_env (Slurm adds the SPANK_ prefix for the prolog).
inline constexpr std::string_view kEnvPrefix = "LANES_";
inline constexpr std::string_view kEnvRequestClass = "LANES_REQUEST_CLASS";
inline constexpr std::string_view kEnvRequestCap = "LANES_REQUEST_CAP";
inline constexpr std::string_view kEnvClass = "LANES_CLASS";
inline constexpr std::string_view kEnvDscp = "LANES_DSCP";
inline constexpr std::string_view kEnvRate = "LANES_RATE";
inline constexpr std::string_view kEnvCeil = "LANES_CEIL";
inline constexpr std::string_view kEnvRdmaTc = "LANES_RDMA_TC";
inline constexpr std::string_view kEnvRdmaSl = "LANES_RDMA_SL";
inline constexpr std::string_view kEnvRank = "LANES_RANK";
// The nice Lanes gave the job: the floor of what its owner may set (job_modify).
inline constexpr std::string_view kEnvNice = "LANES_NICE";
// The job's ingress caps (NetworkDecision.ingress_rate/ingress_ceil).
inline constexpr std::string_view kEnvIngressRate = "LANES_INGRESS_RATE";
inline constexpr std::string_view kEnvIngressCeil = "LANES_INGRESS_CEIL";

// The name of an env entry with an optional SPANK_ prefix removed ("SPANK_X=1" -> "X").
std::string_view env_entry_name(std::string_view entry);

// True if the entry is Lanes-owned (LANES_* or SPANK_LANES_*), whoever wrote it.
bool is_lanes_entry(std::string_view entry);

// The user's requests (LANES_REQUEST_CLASS/CAP, with or without SPANK_ prefix).
struct UserRequests {
    std::optional<std::string> lanes_class;
    std::optional<std::string> cap;
};
UserRequests read_user_requests(const std::vector<std::string>& entries);

// The entries that carry a decision to the nodes, e.g. {"LANES_CLASS=training", "LANES_DSCP=8", ...}.
// Rates are written as "<bits>" or "<percent>%".
std::vector<std::string> encode_decision(const Decision& decision);

// What a node reads back (from the prolog's SPANK_LANES_* environment or the
// state file). Errors name the variable and the bad value.
struct NodeDirective {
    std::string class_name;
    NetworkDecision network;
};
Result<NodeDirective> decode_directive(const std::map<std::string, std::string>& vars);

// A Rate in the env and in state files: format_rate's Bits style
// ("10000000000" or "40%"), and its parser.
inline std::string encode_rate(const Rate& rate) { return format_rate(rate, RateStyle::Bits); }
Result<Rate> decode_rate(std::string_view text);

}  // namespace lanes
