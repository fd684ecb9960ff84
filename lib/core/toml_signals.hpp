// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [signals.NAME]: live values from a Prometheus-compatible API.
#pragma once

#include <toml++/toml.h>

#include "core/toml_reader.hpp"

namespace lanes::config_parse {

// [signals.NAME]: parsed before the windows, which may follow them.
void parse_signals_section(ConfigParse& ctx, const toml::table& t);

}  // namespace lanes::config_parse
