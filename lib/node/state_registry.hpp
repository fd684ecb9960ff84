// SPDX-License-Identifier: GPL-2.0-or-later
// The node-wide registries next to the state dirs, as text: .lanes-state-dirs
// (every state_dir Lanes used, so a job is found after node.state_dir changed),
// .lanes-roots ("<dev> <major>" of every root htb Lanes made, so an idle root
// of ours under an older root_handle is replaced, not refused as foreign), and
// the names of the minor claims in a state dir (minor_<hex>). NodeShaper reads
// and appends the files; these functions only say where and what. No I/O here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lanes {

// state_dir "/run/lanes/state" -> "/run/lanes/.lanes-state-dirs"; a dir right
// under / (or a relative one) -> "/.lanes-state-dirs".
std::string state_dirs_registry_path(const std::string& state_dir);
// The .lanes-roots file next to the state dirs registry.
std::string roots_registry_path(const std::string& state_dirs_registry);

// The registered dirs other than `own` (absolute paths only), in file order.
std::vector<std::string> other_state_dirs(const std::string& registry_text, const std::string& own);
// Whether `state_dir` is registered already (the line to append otherwise).
bool state_dir_registered(const std::string& registry_text, const std::string& state_dir);
std::string state_dir_line(const std::string& state_dir);

// Whether .lanes-roots lists `dev` under `major`, and the line recording it.
bool root_listed(const std::string& roots_text, const std::string& dev, uint16_t major);
std::string root_line(const std::string& dev, uint16_t major);

// "minor_00a3" -> 0x00a3; nullopt for any other name.
std::optional<uint16_t> minor_of_claim_name(std::string_view name);
std::string claim_name(uint16_t minor);

}  // namespace lanes
