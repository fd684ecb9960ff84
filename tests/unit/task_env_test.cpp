// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "node/task_env.hpp"

using namespace lanes;
using Env = std::vector<std::pair<std::string, std::string>>;

TEST(TaskEnv, DerivesTrafficClassFromDscp) {
    NetworkDecision net;
    net.dscp = 34;  // AF41
    net.rdma_service_level = 3;
    EXPECT_EQ(task_environment("inference", net), (Env{{"LANES_CLASS", "inference"},
                                                       {"LANES_DSCP", "34"},
                                                       {"NCCL_IB_TC", "136"},
                                                       {"UCX_IB_TRAFFIC_CLASS", "136"},
                                                       {"NCCL_IB_SL", "3"},
                                                       {"UCX_IB_SL", "3"}}));
}

TEST(TaskEnv, ExplicitTrafficClassWins) {
    NetworkDecision net;
    net.dscp = 8;
    net.rdma_traffic_class = 106;
    auto env = task_environment("training", net);
    EXPECT_EQ(env[2], (std::pair<std::string, std::string>{"NCCL_IB_TC", "106"}));
}

TEST(TaskEnv, NoNetworkSettingsOnlyNamesTheClass) {
    EXPECT_EQ(task_environment("other", NetworkDecision{}), (Env{{"LANES_CLASS", "other"}}));
}

TEST(TaskEnv, RdmaAndNcclFollowTheClassPath) {
    ClassPath path;
    path.device = "ens2f1";
    EXPECT_EQ(path_task_environment(path, "ens2f1", "mlx5_1"),
              (Env{{"NCCL_SOCKET_IFNAME", "=ens2f1"}, {"NCCL_IB_HCA", "=mlx5_1"}, {"UCX_NET_DEVICES", "mlx5_1:1"}}));
    // No RDMA device on the NIC: sockets and UCX's TCP transport only.
    EXPECT_EQ(path_task_environment(path, "ens2f1.200", ""),
              (Env{{"NCCL_SOCKET_IFNAME", "=ens2f1.200"}, {"UCX_NET_DEVICES", "ens2f1.200"}}));
    // The admin's override per class wins; the GID index when set.
    path.nccl_ib_hca = "mlx5_3:1";
    path.ucx_net_devices = "mlx5_3:1,mlx5_4:1";
    path.rdma_gid_index = 3;
    EXPECT_EQ(path_task_environment(path, "ens2f1", "mlx5_1"), (Env{{"NCCL_SOCKET_IFNAME", "=ens2f1"},
                                                                    {"NCCL_IB_HCA", "mlx5_3:1"},
                                                                    {"UCX_NET_DEVICES", "mlx5_3:1,mlx5_4:1"},
                                                                    {"NCCL_IB_GID_INDEX", "3"},
                                                                    {"UCX_IB_GID_INDEX", "3"}}));
    // A route_table path has no device of its own: overrides only.
    EXPECT_EQ(path_task_environment(ClassPath{}, "", ""), Env{});
}

TEST(TaskEnv, RdmaDeviceFromSysfs) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lanes-sysfs-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    const std::string root = tmpl;
    ASSERT_EQ(std::system(("mkdir -p " + root + "/ens2f1/device/infiniband/mlx5_1 " + root + "/eth0").c_str()), 0);
    EXPECT_EQ(rdma_device_of("ens2f1", root), "mlx5_1");
    EXPECT_EQ(rdma_device_of("ens2f1.200", root), "mlx5_1");  // a VLAN: its NIC's
    EXPECT_EQ(rdma_device_of("eth0", root), "");
    EXPECT_EQ(rdma_device_of("../x", root), "");
    EXPECT_EQ(std::system(("rm -rf " + root).c_str()), 0);
}
