// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [classes.NAME.control]: the node agent's ceil controller for a
// class (agent/ceil_controller.hpp), and the checks that refuse settings under
// which it cannot converge.
#pragma once

#include <toml++/toml.h>

#include "core/toml_reader.hpp"

namespace lanes::config_parse {

// [classes.NAME.control], read into `cls` (whose rate, ceil and busy_window are
// read already). `r` is the class's reader.
void parse_class_control(ConfigParse& ctx, TableReader& r, ClassConfig& cls);

}  // namespace lanes::config_parse
