// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [windows.NAME]: windows that follow the clock (days, times, a time
// zone, dated exceptions) or a signal (with hysteresis); and the check that a
// class's avoided windows leave it some time to start.
#pragma once

#include <toml++/toml.h>

#include "core/toml_reader.hpp"

namespace lanes::config_parse {

// [windows.NAME]: after [signals], before [classes] (which refer to windows).
void parse_windows_section(ConfigParse& ctx, const toml::table& t);
// After [classes]: a class whose avoided windows together cover a whole week
// can never start.
void check_never_runs(ConfigParse& ctx, const toml::table& root);

}  // namespace lanes::config_parse
