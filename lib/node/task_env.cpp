// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/task_env.hpp"

#include <dirent.h>

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

std::vector<std::pair<std::string, std::string>> path_task_environment(const ClassPath& path, const std::string& device,
                                                                       const std::string& hca) {
    std::vector<std::pair<std::string, std::string>> env;
    auto put = [&](const char* name, const std::string& given, const std::string& derived) {
        const std::string& v = given.empty() ? derived : given;
        if (!v.empty()) env.emplace_back(name, v);
    };
    put("NCCL_SOCKET_IFNAME", path.nccl_socket_ifname, device.empty() ? "" : "=" + device);
    put("NCCL_IB_HCA", path.nccl_ib_hca, hca.empty() ? "" : "=" + hca);
    put("UCX_NET_DEVICES", path.ucx_net_devices, hca.empty() ? device : hca + ":1");
    if (path.rdma_gid_index) {
        env.emplace_back("NCCL_IB_GID_INDEX", std::to_string(*path.rdma_gid_index));
        env.emplace_back("UCX_IB_GID_INDEX", std::to_string(*path.rdma_gid_index));
    }
    return env;
}

std::string rdma_device_of(const std::string& device, const std::string& sysfs) {
    if (device.empty() || device.find('/') != std::string::npos) return "";
    auto first = [&](const std::string& dev) -> std::string {
        DIR* d = opendir((sysfs + "/" + dev + "/device/infiniband").c_str());
        if (!d) return "";
        std::string out;
        while (dirent* e = readdir(d)) {
            std::string n = e->d_name;
            if (n != "." && n != ".." && (out.empty() || n < out)) out = n;
        }
        closedir(d);
        return out;
    };
    std::string hca = first(device);
    if (hca.empty())
        if (auto dot = device.rfind('.'); dot != std::string::npos && dot > 0) hca = first(device.substr(0, dot));
    return hca;
}

}  // namespace lanes
