// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/state_registry.hpp"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace lanes {

std::string state_dirs_registry_path(const std::string& state_dir) {
    std::size_t slash = state_dir.find_last_of('/');
    return (slash == 0 || slash == std::string::npos ? std::string() : state_dir.substr(0, slash)) +
           "/.lanes-state-dirs";
}

std::string roots_registry_path(const std::string& state_dirs_registry) {
    return state_dirs_registry.substr(0, state_dirs_registry.find_last_of('/')) + "/.lanes-roots";
}

std::vector<std::string> other_state_dirs(const std::string& registry_text, const std::string& own) {
    std::vector<std::string> out;
    std::istringstream in(registry_text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty() && line[0] == '/' && line != own) out.push_back(line);
    return out;
}

bool state_dir_registered(const std::string& registry_text, const std::string& state_dir) {
    return registry_text.find(state_dir_line(state_dir)) != std::string::npos;
}

std::string state_dir_line(const std::string& state_dir) { return state_dir + "\n"; }

bool root_listed(const std::string& roots_text, const std::string& dev, uint16_t major) {
    std::istringstream in(roots_text);
    std::string d;
    unsigned m = 0;
    while (in >> d >> m)
        if (d == dev && m == major) return true;
    return false;
}

std::string root_line(const std::string& dev, uint16_t major) { return dev + " " + std::to_string(major) + "\n"; }

std::optional<uint16_t> minor_of_claim_name(std::string_view name) {
    if (!name.starts_with("minor_") || name.size() != 10) return std::nullopt;
    const std::string hex(name.substr(6));
    return static_cast<uint16_t>(std::strtoul(hex.c_str(), nullptr, 16));
}

std::string claim_name(uint16_t minor) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "minor_%04x", minor);
    return buf;
}

}  // namespace lanes
