// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [classes.NAME]: routing, windows and network settings per class.
#pragma once

#include <toml++/toml.h>

#include "core/toml_reader.hpp"

namespace lanes::config_parse {

void parse_classes_section(ConfigParse& ctx, const toml::table& t);
// Reports a reference to a class that does not exist (with "did you mean");
// one to a broken class is not a second error.
void check_class_name(ConfigParse& ctx, const std::string& name, const toml::node& where, const std::string& key);

}  // namespace lanes::config_parse
