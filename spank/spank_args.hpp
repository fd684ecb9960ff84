// SPDX-License-Identifier: GPL-2.0-or-later
// spank_lanes' plugstack.conf arguments and user options, validated without Slurm.
//   required spank_lanes.so config=/etc/slurm/lanes.toml
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"

namespace lanes {

struct SpankArgs {
    std::string config_path;         // lanes.toml
    bool reconcile_on_start = true;  // slurmd start removes state of dead jobs
    // Copy of the last lanes.toml that loaded, used when the current one is broken.
    std::string last_good_config = "/run/lanes/last-good.toml";
};

// Unknown keys and bad values are errors naming the argument.
Result<SpankArgs> parse_spank_args(const std::vector<std::string>& args, const std::string& default_config);

// --lanes-class=NAME: letters, digits, '_' and '-', 1-64 characters.
Result<std::string> check_class_option(const std::string& value);
// --lanes-cap=RATE (egress) or out=RATE,in=RATE (either or both; core/cap_request.hpp).
Result<std::string> check_cap_option(const std::string& value);

}  // namespace lanes
