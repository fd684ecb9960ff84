// SPDX-License-Identifier: GPL-2.0-or-later
// node_facts.hpp: the node facts spank_lanes and lanesctl share.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "node/job_state_store.hpp"
#include "node/node_facts.hpp"

namespace lanes {
namespace {

TEST(NodeFacts, StepdScopeNames) {
    EXPECT_TRUE(is_slurmstepd_scope("slurmstepd.scope"));
    EXPECT_TRUE(is_slurmstepd_scope("n1_slurmstepd.scope"));  // multiple-slurmd build (Debian)
    EXPECT_TRUE(is_slurmstepd_scope("gpu-a.12_slurmstepd.scope"));
    EXPECT_FALSE(is_slurmstepd_scope("_slurmstepd.scope"));
    EXPECT_FALSE(is_slurmstepd_scope("xslurmstepd.scope"));
    EXPECT_FALSE(is_slurmstepd_scope("slurmstepd.scope.d"));
    EXPECT_FALSE(is_slurmstepd_scope("slurmd.service"));
}

TEST(NodeFacts, SlurmJobDirOfACgroupPath) {
    EXPECT_EQ(slurm_job_dir_of("/system.slice/n1_slurmstepd.scope/job_7/step_0/user/task_0"),
              "/system.slice/n1_slurmstepd.scope/job_7");
    EXPECT_EQ(slurm_job_dir_of("/system.slice/slurmstepd.scope/job_7/step_batch/user/task_0", 7u),
              "/system.slice/slurmstepd.scope/job_7");
    // Any depth: a scope in another slice, or inside a container's tree.
    EXPECT_EQ(slurm_job_dir_of("/machine.slice/c1/system.slice/slurmstepd.scope/job_12/step_extern/user", 12u),
              "/machine.slice/c1/system.slice/slurmstepd.scope/job_12");
    EXPECT_EQ(slurm_job_dir_of("/system.slice/n1_slurmstepd.scope/job_7/step_0", 8u), std::nullopt);
    EXPECT_EQ(slurm_job_dir_of("/lanes/job_7"), std::nullopt);  // not Slurm's
    EXPECT_EQ(slurm_job_dir_of("/user.slice/job_7/slurmstepd.scope"), std::nullopt);
    EXPECT_EQ(slurm_job_dir_of("/system.slice/slurmstepd.scope/job_x/step_0"), std::nullopt);
    EXPECT_EQ(slurm_job_dir_of("/system.slice/slurmstepd.scope/system"), std::nullopt);  // slurmd's own
}

TEST(NodeFacts, FindsSlurmJobCgroupUnderAnyStepdScope) {
    std::string root = std::filesystem::temp_directory_path() / ("lanes-facts-" + std::to_string(getpid()));
    std::filesystem::create_directories(root + "/system.slice/n1_slurmstepd.scope/job_5/step_0");
    std::filesystem::create_directories(root + "/system.slice/slurmd.service");
    std::filesystem::create_directories(root + "/other.slice/inner.slice/slurmstepd.scope/job_6");
    EXPECT_EQ(find_slurm_job_cgroup(root, 5), root + "/system.slice/n1_slurmstepd.scope/job_5");
    EXPECT_EQ(find_slurm_job_cgroup(root, 6), root + "/other.slice/inner.slice/slurmstepd.scope/job_6");
    EXPECT_EQ(find_slurm_job_cgroup(root, 7), std::nullopt);
    EXPECT_TRUE(slurm_manages_cgroup_v2(root));
    EXPECT_EQ(find_slurmstepd_scopes(root).size(), 2u);
    std::filesystem::remove_all(root);
    EXPECT_FALSE(slurm_manages_cgroup_v2(root));
}

TEST(NodeFacts, AtomicWriteReplacesWholeAndSetsMode) {
    std::string dir = std::filesystem::temp_directory_path() / ("lanes-atomic-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/f";
    ASSERT_TRUE(write_file_atomically(path, "one\n", 0600));
    ASSERT_TRUE(write_file_atomically(path, "two\n", 0644));
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, "two\n");
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644u);
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);  // no tmp left
    auto bad = write_file_atomically(dir + "/missing/f", "x", 0600);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("missing/f.tmp."), std::string::npos) << bad.error().message;
    std::filesystem::remove_all(dir);
}

TEST(NodeFacts, NodeNameIsSlurmdsElseShortHost) {
    const char* saved = std::getenv("SLURMD_NODENAME");
    std::string keep = saved ? saved : "";
    ::setenv("SLURMD_NODENAME", "gpu7", 1);
    EXPECT_EQ(node_name(), "gpu7");
    ::unsetenv("SLURMD_NODENAME");
    EXPECT_EQ(node_name(), short_host_name());
    EXPECT_EQ(node_name().find('.'), std::string::npos);
    if (saved) ::setenv("SLURMD_NODENAME", keep.c_str(), 1);
}

TEST(NodeFacts, StateFromAnEarlierBootIsGoneOtherwiseAliveUntilEpilog) {
    LivenessProbe probe;
    JobState st;
    st.job_id = 4000000001u;  // no such stepd
    st.boot_id = current_boot_id();
    auto now = probe.check(st);
    EXPECT_TRUE(now.alive) << now.why;  // an allocation without a step has no process here
    EXPECT_NE(now.why.find("alive until its epilog"), std::string::npos) << now.why;
    st.boot_id = "00000000-0000-0000-0000-000000000000";
    auto old = probe.check(st);
    EXPECT_FALSE(old.alive);
    EXPECT_NE(old.why.find("earlier boot"), std::string::npos) << old.why;
    // The controller's word decides when nothing local proves either way.
    LivenessProbe asked([](uint32_t) {
        return std::optional<JobLiveness>(JobLiveness{false, "slurmctld: COMPLETED"});
    });
    st.boot_id = current_boot_id();
    EXPECT_FALSE(asked.check(st).alive);
}

TEST(NodeFacts, StateKeepsBootIdAndUnshapedReason) {
    JobState st;
    st.job_id = 9;
    st.minor = 9;
    st.class_name = "batch";
    st.boot_id = "b1";
    st.unshaped = "class batch has no network settings";
    auto back = parse_job_state(format_job_state(st), "t");
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, st);
}

}  // namespace
}  // namespace lanes
