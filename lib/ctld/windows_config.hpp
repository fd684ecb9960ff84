// SPDX-License-Identifier: GPL-2.0-or-later
// The controller side's lanes.toml: the common parse (lib/core) plus the
// [windows] checks that need time zones, which srun and slurmstepd never load.
// slurmctld, lanesctl and the policy worker read lanes.toml through these.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/lanes_toml.hpp"
#include "core/result.hpp"

namespace lanes {

// Loads every `timezone` of config.window_specs, builds config.windows from
// the well-formed clock windows (those whose zone loads), and checks that a
// class's avoided windows leave it some time in the week. Problems go to
// `errors` with their file:line:col and key. A ConfigPass.
void compile_windows(Config& config, std::vector<Diagnostic>& errors);

class WindowSet;

// config.windows, or an empty set when it was not compiled (a Config built in
// memory, or read by load_config alone).
const WindowSet& windows_of(const Config& config);

// load_config / parse_config with compile_windows: config.windows is set.
Result<Config> load_controller_config(const std::string& path);
Result<Config> parse_controller_config(std::string_view text, const std::string& path);

}  // namespace lanes
