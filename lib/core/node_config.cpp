// SPDX-License-Identifier: GPL-2.0-or-later
#include <cctype>
#include <string>

#include "core/lanes_toml.hpp"

namespace lanes {

namespace {

std::string expand(const std::string& text, const std::string& node) {
    std::string out;
    out.reserve(text.size() + node.size());
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 1 < text.size() && text[i + 1] == 'n') {
            out += node;
            ++i;
        } else {
            out += text[i];
        }
    }
    return out;
}

}  // namespace

Result<NodeConfig> node_config_for(const NodeConfig& config, const std::string& node_name) {
    // The name becomes part of root-owned paths: a Slurm node name, nothing that
    // could climb out of the directory ("..", "/").
    bool ok = !node_name.empty() && node_name.size() <= 64 && node_name[0] != '.';
    for (char c : node_name)
        ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.');
    if (!ok) return fail("node name '" + node_name + "' is not a plain host name; refusing to use it in paths");
    NodeConfig expanded = config;
    expanded.state_dir = expand(config.state_dir, node_name);
    if (config.cgroup_root != "auto") expanded.cgroup_root = expand(config.cgroup_root, node_name);
    return expanded;
}

}  // namespace lanes
