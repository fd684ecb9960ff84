// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [policy]: the Lua policy, its budgets and its worker processes.
#pragma once

#include <toml++/toml.h>

#include "core/toml_reader.hpp"

namespace lanes::config_parse {

void parse_policy_section(ConfigParse& ctx, const toml::table& t);

}  // namespace lanes::config_parse
