// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [classes.NAME] path keys: route_table, egress_device, vlan,
// egress_prefixes and the RDMA/NCCL overrides that go with them (ClassPath in
// lanes_toml.hpp).
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/toml_reader.hpp"

namespace lanes::config_parse {

// Reads the path keys of one class table into `c.path` (left nullopt when the
// class names no path). Errors name classes.NAME.key.
void parse_class_path(TableReader& r, const toml::table& t, ClassConfig& c);

// "10.20.0.0/16" or "fd00:20::/48" in canonical form (the address as inet_ntop
// writes it); fails saying why (no "/len", a bad address or length, host bits
// set past the length).
Result<std::string> canonical_cidr(std::string_view text);

}  // namespace lanes::config_parse
