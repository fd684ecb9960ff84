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
    LivenessProbe asked([](const std::vector<uint32_t>& ids) {
        std::map<uint32_t, ControllerAnswer> out;
        for (uint32_t id : ids) out[id] = {ControllerAnswer::Kind::Ended, "COMPLETED"};
        return out;
    });
    st.boot_id = current_boot_id();
    EXPECT_FALSE(asked.check(st).alive);
}

// decide_liveness(): local evidence + slurmctld's answer -> keep or remove, and why.
struct LivenessCase {
    const char* name;
    LocalJobEvidence local;
    std::optional<ControllerAnswer> answer;
    bool alive;
    const char* why_contains;
};

TEST(NodeFacts, LivenessDecision) {
    using K = ControllerAnswer::Kind;
    const LocalJobEvidence nothing{};
    const LocalJobEvidence stepd{false, "slurmstepd pid 42"};
    const LocalJobEvidence old{true, ""};
    const LivenessCase cases[] = {
        {"earlier boot, whatever slurmctld says", old, ControllerAnswer{K::Active, "RUNNING"}, false, "earlier boot"},
        {"earlier boot, not asked", old, std::nullopt, false, "earlier boot"},
        {"a step runs here though slurmctld says ended", stepd, ControllerAnswer{K::Ended, "CANCELLED"}, true,
         "slurmstepd pid 42"},
        {"a step runs here, slurmctld forgot it", stepd, ControllerAnswer{K::Unknown, "Invalid job id specified"}, true,
         "slurmstepd pid 42"},
        {"nothing here, not asked", nothing, std::nullopt, true, "alive until its epilog (slurmctld not asked)"},
        {"nothing here, running (salloc, no step)", nothing, ControllerAnswer{K::Active, "RUNNING"}, true,
         "slurmctld says it is active (RUNNING)"},
        {"nothing here, pending (requeued)", nothing, ControllerAnswer{K::Active, "PENDING"}, true, "PENDING"},
        {"nothing here, epilog still to come", nothing, ControllerAnswer{K::Completing, "CANCELLED+COMPLETING"}, true,
         "epilog is still to come"},
        {"nothing here, cancelled", nothing, ControllerAnswer{K::Ended, "CANCELLED"}, false,
         "slurmctld says it ended (CANCELLED) and no step of it runs here"},
        {"nothing here, timeout", nothing, ControllerAnswer{K::Ended, "TIMEOUT"}, false, "TIMEOUT"},
        {"nothing here, purged", nothing, ControllerAnswer{K::Unknown, "Invalid job id specified"}, false,
         "no longer knows it (Invalid job id specified)"},
        {"nothing here, slurmctld down", nothing,
         ControllerAnswer{K::Unreachable, "Unable to contact slurm controller (connect failure)"}, true,
         "cannot be asked (Unable to contact slurm controller (connect failure)): kept until"},
        {"nothing here, no slurm.conf", nothing, ControllerAnswer{K::Unreachable, "cannot use Slurm here (exit 1)"},
         true, "cannot use Slurm here"},
    };
    for (const auto& c : cases) {
        auto got = decide_liveness(c.local, c.answer);
        EXPECT_EQ(got.alive, c.alive) << c.name << ": " << got.why;
        EXPECT_NE(got.why.find(c.why_contains), std::string::npos) << c.name << ": " << got.why;
    }
}

TEST(NodeFacts, ControllerAnswersRoundTripOneLineEach) {
    using K = ControllerAnswer::Kind;
    std::string text =
        format_controller_answer(7, {K::Ended, "CANCELLED"}) +
        format_controller_answer(8, {K::Unreachable, "two\nlines"}) + format_controller_answer(9, {K::Unknown, ""}) +
        "lanesctl: fatal: Unable to process configuration file\n" + "12 sideways what\n" + "x active RUNNING\n" +
        format_controller_answer(4294967295u, {K::Completing, "FAILED+COMPLETING"});
    std::vector<std::string> other;
    auto answers = parse_controller_answers(text, &other);
    ASSERT_EQ(answers.size(), 4u);
    EXPECT_EQ(answers.at(7), (ControllerAnswer{K::Ended, "CANCELLED"}));
    EXPECT_EQ(answers.at(8), (ControllerAnswer{K::Unreachable, "two lines"}));
    EXPECT_EQ(answers.at(9), (ControllerAnswer{K::Unknown, ""}));
    EXPECT_EQ(answers.at(4294967295u), (ControllerAnswer{K::Completing, "FAILED+COMPLETING"}));
    ASSERT_EQ(other.size(), 3u);
    EXPECT_EQ(other[0], "lanesctl: fatal: Unable to process configuration file");
}

TEST(NodeFacts, SlurmctldIsAskedOnceAboutTheUndecidedJobsOnly) {
    std::vector<std::vector<uint32_t>> calls;
    LivenessProbe probe([&](const std::vector<uint32_t>& ids) {
        calls.push_back(ids);
        std::map<uint32_t, ControllerAnswer> out;
        out[4000000001u] = {ControllerAnswer::Kind::Ended, "COMPLETED"};  // 4000000002u: no answer
        return out;
    });
    JobState gone, silent, old;
    gone.job_id = 4000000001u;
    silent.job_id = 4000000002u;
    old.job_id = 4000000003u;
    gone.boot_id = silent.boot_id = current_boot_id();
    old.boot_id = "00000000-0000-0000-0000-000000000000";
    auto all = probe.check_all({gone, silent, old});
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0], (std::vector<uint32_t>{4000000001u, 4000000002u}));
    EXPECT_FALSE(all.at(4000000001u).alive);
    EXPECT_TRUE(all.at(4000000002u).alive) << all.at(4000000002u).why;  // unanswered: kept
    EXPECT_NE(all.at(4000000002u).why.find("cannot be asked"), std::string::npos);
    EXPECT_FALSE(all.at(4000000003u).alive);
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
