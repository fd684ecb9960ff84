// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [[rules]]: the built-in classification rules.
#pragma once

#include <toml++/toml.h>

#include "core/toml_reader.hpp"

namespace lanes::config_parse {

// [[rules]]: after [classes], which the rules name.
void parse_rules_section(ConfigParse& ctx, const toml::node& node);

}  // namespace lanes::config_parse
