// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

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
