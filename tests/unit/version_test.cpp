// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include <string>

#include "core/version.hpp"

TEST(Version, NamesLanesAndSlurm) {
    const std::string v = lanes::version_string();
    EXPECT_EQ(v.rfind("lanes ", 0), 0u) << v;
    EXPECT_NE(v.find("(Slurm "), std::string::npos) << v;
}
