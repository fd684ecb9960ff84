// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [classes.NAME] path keys: route_table, egress_device, vlan and the
// RDMA/NCCL overrides that go with them (ClassPath in lanes_toml.hpp).
#pragma once

#include <toml++/toml.h>

#include "core/toml_reader.hpp"

namespace lanes::config_parse {

// Reads the path keys of one class table into `c.path` (left nullopt when the
// class names no path). Errors name classes.NAME.key.
void parse_class_path(TableReader& r, const toml::table& t, ClassConfig& c);

}  // namespace lanes::config_parse
