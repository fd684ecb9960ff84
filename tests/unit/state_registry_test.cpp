// SPDX-License-Identifier: GPL-2.0-or-later
// The node-wide registries as text: .lanes-state-dirs, .lanes-roots and the
// minor claim names.
#include <gtest/gtest.h>

#include "node/state_registry.hpp"

namespace lanes {
namespace {

TEST(StateRegistry, Paths) {
    struct Case {
        std::string state_dir, registry, roots;
    };
    const std::vector<Case> cases = {
        {"/run/lanes/state", "/run/lanes/.lanes-state-dirs", "/run/lanes/.lanes-roots"},
        {"/state", "/.lanes-state-dirs", "/.lanes-roots"},
        {"relative", "/.lanes-state-dirs", "/.lanes-roots"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.state_dir);
        EXPECT_EQ(state_dirs_registry_path(c.state_dir), c.registry);
        EXPECT_EQ(roots_registry_path(c.registry), c.roots);
    }
}

TEST(StateRegistry, OtherDirsSkipOwnAndRelative) {
    const std::string text = "/run/lanes/state\n/run/lanes/old\nrelative\n\n/var/lib/lanes\n";
    EXPECT_EQ(other_state_dirs(text, "/run/lanes/state"),
              (std::vector<std::string>{"/run/lanes/old", "/var/lib/lanes"}));
    EXPECT_TRUE(other_state_dirs("", "/x").empty());
}

TEST(StateRegistry, Registered) {
    const std::string text = "/run/lanes/state\n";
    EXPECT_TRUE(state_dir_registered(text, "/run/lanes/state"));
    EXPECT_FALSE(state_dir_registered(text, "/run/lanes"));  // "/run/lanes" + "\n" is not in it
    EXPECT_FALSE(state_dir_registered("", "/run/lanes/state"));
    EXPECT_EQ(state_dir_line("/a"), "/a\n");
}

TEST(StateRegistry, Roots) {
    const std::string text = root_line("eth0", 6734) + root_line("eth1", 100);
    EXPECT_EQ(text, "eth0 6734\neth1 100\n");
    EXPECT_TRUE(root_listed(text, "eth0", 6734));
    EXPECT_TRUE(root_listed(text, "eth1", 100));
    EXPECT_FALSE(root_listed(text, "eth0", 100));
    EXPECT_FALSE(root_listed(text, "eth2", 6734));
    EXPECT_FALSE(root_listed("", "eth0", 6734));
}

TEST(StateRegistry, ClaimNames) {
    struct Case {
        const char* name;
        std::optional<uint16_t> minor;
    };
    const std::vector<Case> cases = {
        {"minor_00a3", 0x00a3},         {"minor_fffe", 0xfffe},   {"minor_0001", 1},        {"minor_1", std::nullopt},
        {"minor_000001", std::nullopt}, {"job_42", std::nullopt}, {"parked", std::nullopt},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        EXPECT_EQ(minor_of_claim_name(c.name), c.minor);
    }
    EXPECT_EQ(claim_name(0xa3), "minor_00a3");
    EXPECT_EQ(*minor_of_claim_name(claim_name(0x1234)), 0x1234);
}

}  // namespace
}  // namespace lanes
