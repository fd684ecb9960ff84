// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [nodes] and [[nodes.nic]]: which interfaces to shape, and how.
#pragma once

#include <toml++/toml.h>

#include "core/toml_reader.hpp"

namespace lanes::config_parse {

void parse_nodes_section(ConfigParse& ctx, const toml::table& t);

}  // namespace lanes::config_parse
