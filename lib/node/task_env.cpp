// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/task_env.hpp"

namespace lanes {

std::vector<std::pair<std::string, std::string>> task_environment(const std::string& class_name,
                                                                  const NetworkDecision& net) {
    std::vector<std::pair<std::string, std::string>> env;
    env.emplace_back("LANES_CLASS", class_name);
    if (net.dscp) env.emplace_back("LANES_DSCP", std::to_string(*net.dscp));
    // The RDMA traffic class is the whole 8-bit TOS/TClass byte: DSCP << 2 unless
    // the class sets it explicitly.
    std::optional<uint8_t> tc = net.rdma_traffic_class;
    if (!tc && net.dscp) tc = static_cast<uint8_t>(*net.dscp << 2);
    if (tc) {
        env.emplace_back("NCCL_IB_TC", std::to_string(*tc));
        env.emplace_back("UCX_IB_TRAFFIC_CLASS", std::to_string(*tc));
    }
    if (net.rdma_service_level) {
        env.emplace_back("NCCL_IB_SL", std::to_string(*net.rdma_service_level));
        env.emplace_back("UCX_IB_SL", std::to_string(*net.rdma_service_level));
    }
    return env;
}

}  // namespace lanes
