// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [windows.NAME]: windows that follow the clock (days, times, a time
// zone, dated exceptions) or a signal (with hysteresis), as written.
#pragma once

#include <toml++/toml.h>

#include "core/toml_reader.hpp"

namespace lanes::config_parse {

// [windows.NAME]: after [signals], before [classes] (which refer to windows).
void parse_windows_section(ConfigParse& ctx, const toml::table& t);
// After [classes]: where each class's avoid_windows is, for the controller
// side's check that they leave the class some time to start.
void note_avoid_windows(ConfigParse& ctx, const toml::table& root);

}  // namespace lanes::config_parse
