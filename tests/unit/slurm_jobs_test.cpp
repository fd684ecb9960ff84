// SPDX-License-Identifier: GPL-2.0-or-later
// glue/slurm_jobs: a job state from slurm_load_job() -> the answer liveness
// takes, and the bounded child that asks slurmctld failing soft (no slurm.conf:
// libslurm exits; a controller that never answers: killed at the bound).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

extern "C" {
#include <slurm/slurm.h>
}

#include "glue/slurm_jobs.hpp"

namespace lanes {
namespace {

using K = ControllerAnswer::Kind;

TEST(SlurmJobs, JobStatesMapToAnswers) {
    struct Case {
        uint32_t state;
        K kind;
        const char* detail;
    };
    const Case cases[] = {
        {JOB_PENDING, K::Active, "PENDING"},
        {JOB_RUNNING, K::Active, "RUNNING"},
        {JOB_RUNNING | JOB_CONFIGURING, K::Active, "RUNNING"},
        {JOB_SUSPENDED, K::Active, "SUSPENDED"},
        {JOB_COMPLETE, K::Ended, "COMPLETED"},
        {JOB_CANCELLED, K::Ended, "CANCELLED"},
        {JOB_FAILED, K::Ended, "FAILED"},
        {JOB_TIMEOUT, K::Ended, "TIMEOUT"},
        {JOB_NODE_FAIL, K::Ended, "NODE_FAIL"},
        {JOB_PREEMPTED, K::Ended, "PREEMPTED"},
        {JOB_BOOT_FAIL, K::Ended, "BOOT_FAIL"},
        {JOB_DEADLINE, K::Ended, "DEADLINE"},
        {JOB_OOM, K::Ended, "OUT_OF_MEMORY"},
        {JOB_CANCELLED | JOB_COMPLETING, K::Completing, "CANCELLED+COMPLETING"},
        {JOB_END + 5, K::Active, "state 17"},  // a state this build does not know: kept
    };
    for (const auto& c : cases) {
        auto a = glue::controller_answer_of_state(c.state);
        EXPECT_EQ(a.kind, c.kind) << c.detail;
        EXPECT_EQ(a.detail, c.detail);
    }
}

void die_like_libslurm_without_slurm_conf() {
    std::fputs("lanesctl: error: s_p_parse_file: unable to read \"/nonexistent/slurm.conf\"\n", stderr);
    std::fputs("lanesctl: fatal: Unable to process configuration file\n", stderr);
    ::_exit(1);  // libslurm calls exit(1); _exit keeps LeakSanitizer's report out of it
}

void never_answer() {
    for (;;) ::pause();
}

TEST(SlurmJobs, NoSlurmConfIsUnreachableWithLibslurmsReason) {
    auto answers = glue::ask_slurmctld({11, 12}, std::chrono::seconds(20), die_like_libslurm_without_slurm_conf);
    ASSERT_EQ(answers.size(), 2u);
    for (const auto& [id, a] : answers) {
        EXPECT_EQ(a.kind, K::Unreachable) << id;
        EXPECT_NE(a.detail.find("cannot use Slurm here (exit 1)"), std::string::npos) << a.detail;
        EXPECT_NE(a.detail.find("Unable to process configuration file"), std::string::npos) << a.detail;
    }
}

TEST(SlurmJobs, AControllerThatNeverAnswersIsUnreachableAtTheBound) {
    auto answers = glue::ask_slurmctld({13}, std::chrono::milliseconds(300), never_answer);
    ASSERT_EQ(answers.size(), 1u);
    EXPECT_EQ(answers.at(13).kind, K::Unreachable);
    EXPECT_NE(answers.at(13).detail.find("no answer within"), std::string::npos) << answers.at(13).detail;
}

TEST(SlurmJobs, NoJobsNoQuestion) {
    EXPECT_TRUE(glue::ask_slurmctld({}, std::chrono::seconds(1), never_answer).empty());
}

}  // namespace
}  // namespace lanes
