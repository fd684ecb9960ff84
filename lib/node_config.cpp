#include <string>

#include "config.hpp"

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

NodeConfig node_config_for(const NodeConfig& config, const std::string& node_name) {
    NodeConfig expanded = config;
    expanded.state_dir = expand(config.state_dir, node_name);
    if (config.cgroup_root != "auto") expanded.cgroup_root = expand(config.cgroup_root, node_name);
    return expanded;
}

}  // namespace lanes
