// SPDX-License-Identifier: GPL-2.0-or-later
// --lanes-cap: what a user asks to lower, per direction. One parser for srun
// (spank/options.cpp), slurmctld (the classifier) and lanesctl.
//
//   --lanes-cap=2Gbit              egress (what the job sends), as before
//   --lanes-cap=out=2Gbit,in=5Gbit egress and ingress (what reaches the job)
//   --lanes-cap=in=40%             ingress only
//
// Each value is a rate as lanes.toml writes one (units.cpp: parse_rate).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/lanes_toml.hpp"
#include "core/result.hpp"

namespace lanes {

struct CapRequest {
    std::optional<Rate> out;  // egress; the single-value form
    std::optional<Rate> in;   // ingress
    bool operator==(const CapRequest&) const = default;
};

// Errors name the part that is wrong ("in=": ...); the caller adds the option.
Result<CapRequest> parse_cap_request(std::string_view text);

}  // namespace lanes
