#include <gtest/gtest.h>

#include "config.hpp"

using namespace lanes;

TEST(NodeConfigFor, ExpandsNodeNameInPaths) {
    NodeConfig c;
    c.state_dir = "/run/lanes/%n";
    c.cgroup_root = "/sys/fs/cgroup/unified/lanes-%n";
    auto e = node_config_for(c, "train1");
    EXPECT_EQ(e.state_dir, "/run/lanes/train1");
    EXPECT_EQ(e.cgroup_root, "/sys/fs/cgroup/unified/lanes-train1");
}

TEST(NodeConfigFor, LeavesAutoAndPlainPathsAlone) {
    NodeConfig c;
    c.state_dir = "/run/lanes";
    EXPECT_EQ(node_config_for(c, "n1").state_dir, "/run/lanes");
    EXPECT_EQ(node_config_for(c, "n1").cgroup_root, "auto");
    c.state_dir = "/run/%x%";
    EXPECT_EQ(node_config_for(c, "n1").state_dir, "/run/%x%");
}
