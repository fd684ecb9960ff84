// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [agent]: the node agent, lanes-agent(8).
#pragma once

#include <toml++/toml.h>

#include "core/toml_reader.hpp"

namespace lanes::config_parse {

void parse_agent_section(ConfigParse& ctx, const toml::table& t);

}  // namespace lanes::config_parse
