// SPDX-License-Identifier: GPL-2.0-or-later
// The built-in [[rules]] of lanes.toml: first rule whose matchers all match wins.
// Used when no Lua policy is configured, when the policy returns nil, and from
// policies as lanes.rules(job).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"
#include "core/lanes_toml.hpp"

namespace lanes {

// True if every matcher the rule gives matches the job (a rule with no matchers
// matches every job).
bool rule_matches(const ClassRule& rule, const JobView& job);

// The first matching rule, or nullptr.
const ClassRule* match_rules(const std::vector<ClassRule>& rules, const JobView& job);

// "rule 3 (lanes.toml:42)": where a decision came from.
std::string describe_rule(const std::vector<ClassRule>& rules, const ClassRule& rule, const std::string& config_path);

// True if the job's TRES request (tres_per_node or tres_per_job) names the GRES,
// in any of Slurm's spellings: "gres:gpu:4", "gres/gpu:a100:2", "gpu:4".
// A typed GRES ("gpu:a100") matches only that type.
bool tres_requests_gres(const JobView& job, std::string_view gres);

// Membership in an allow-list where "*" means everyone.
bool listed(const std::vector<std::string>& list, std::string_view name);

}  // namespace lanes
