// SPDX-License-Identifier: GPL-2.0-or-later
// The state store trusts only files and directories that this user owns and
// nobody else can write: root must not act on a planted state file.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "node/job_state_store.hpp"

using namespace lanes;

namespace {

struct StoreDir : ::testing::Test {
    std::string dir;
    void SetUp() override {
        char tmpl[] = "/tmp/lanes-store-test.XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir = tmpl;
        chmod(dir.c_str(), 0700);
    }
    void TearDown() override { std::filesystem::remove_all(dir); }
    JobState sample() const {
        JobState s;
        s.job_id = 7;
        s.class_name = "training";
        s.minor = 7;
        s.cgroup = "/sys/fs/cgroup/unified/lanes/job_7";
        return s;
    }
};

}  // namespace

TEST_F(StoreDir, RoundTripsAPrivateFile) {
    JobStateStore store(dir);
    ASSERT_TRUE(store.save(sample()));
    auto loaded = store.load(7);
    ASSERT_TRUE(loaded) << loaded.error().message;
    ASSERT_TRUE(*loaded);
    EXPECT_EQ((*loaded)->class_name, "training");
}

TEST_F(StoreDir, RefusesAFileOthersCanWrite) {
    JobStateStore store(dir);
    ASSERT_TRUE(store.save(sample()));
    chmod((dir + "/job_7").c_str(), 0666);
    auto loaded = store.load(7);
    ASSERT_FALSE(loaded);
    EXPECT_NE(loaded.error().message.find("refusing to trust it"), std::string::npos) << loaded.error().message;
}

TEST_F(StoreDir, RefusesADirectoryOthersCanWrite) {
    JobStateStore store(dir);
    ASSERT_TRUE(store.save(sample()));
    chmod(dir.c_str(), 0777);
    auto loaded = store.load(7);
    ASSERT_FALSE(loaded);
    EXPECT_NE(loaded.error().message.find("state directory"), std::string::npos) << loaded.error().message;
}

TEST_F(StoreDir, RefusesASymlinkedDirectory) {
    JobStateStore store(dir);
    ASSERT_TRUE(store.save(sample()));
    std::string link = dir + "-link";
    ASSERT_EQ(symlink(dir.c_str(), link.c_str()), 0);
    auto loaded = JobStateStore(link).load(7);
    unlink(link.c_str());
    EXPECT_FALSE(loaded);
}

TEST_F(StoreDir, AbsentStateIsNotAnError) {
    auto loaded = JobStateStore(dir).load(8);
    ASSERT_TRUE(loaded);
    EXPECT_FALSE(*loaded);
    auto no_dir = JobStateStore(dir + "/missing").load(8);
    ASSERT_TRUE(no_dir);
    EXPECT_FALSE(*no_dir);
}
