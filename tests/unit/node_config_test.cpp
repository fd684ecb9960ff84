// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include "core/lanes_toml.hpp"

using namespace lanes;

TEST(NodeConfigFor, ExpandsNodeNameInPaths) {
    NodeConfig c;
    c.state_dir = "/run/lanes/%n";
    c.cgroup_root = "/sys/fs/cgroup/unified/lanes-%n";
    auto e = node_config_for(c, "train1");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->state_dir, "/run/lanes/train1");
    EXPECT_EQ(e->cgroup_root, "/sys/fs/cgroup/unified/lanes-train1");
}

TEST(NodeConfigFor, LeavesAutoAndPlainPathsAlone) {
    NodeConfig c;
    c.state_dir = "/run/lanes";
    EXPECT_EQ(node_config_for(c, "n1")->state_dir, "/run/lanes");
    EXPECT_EQ(node_config_for(c, "n1")->cgroup_root, "auto");
    c.state_dir = "/run/%x%";
    EXPECT_EQ(node_config_for(c, "n1")->state_dir, "/run/%x%");
}

TEST(NodeConfigFor, RefusesNamesThatCouldLeaveTheDirectory) {
    NodeConfig c;
    c.state_dir = "/run/lanes/%n";
    for (const char* bad : {"", "..", "../../tmp/x", "a/b", ".hidden", "x y", "n\n"}) {
        auto r = node_config_for(c, bad);
        ASSERT_FALSE(r) << bad;
        EXPECT_NE(r.error().message.find("not a plain host name"), std::string::npos);
    }
    EXPECT_TRUE(node_config_for(c, "gpu-001.cluster_a"));
}
