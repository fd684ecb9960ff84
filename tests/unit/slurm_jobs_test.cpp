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
#include <slurm/slurm_errno.h>
}

#include <cerrno>
#include <cstring>
#include <vector>

#include "glue/slurm_jobs.hpp"
#include "glue/slurm_load_job.hpp"

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

// glue/slurm_load_job through a fake libslurm: the job named whatever the
// release's slurm_load_job() takes (a uint32_t, or a slurm_step_id_t since
// 26.05), the job's own record found among an array's, the answer freed once,
// and a failure's code and text taken from errno.
template <typename>
struct JobIdArg;
template <typename R, typename A, typename B, typename C>
struct JobIdArg<R (*)(A, B, C)> {
    using type = B;
};
[[maybe_unused]] uint32_t id_of(uint32_t id) { return id; }
[[maybe_unused]] uint32_t id_of(const slurm_step_id_t& id) { return id.job_id; }

struct FakeSlurm {
    std::vector<uint32_t> asked;
    std::vector<uint16_t> flags;
    int frees = 0;
    std::vector<slurm_job_info_t> records;
    job_info_msg_t msg{};
};
FakeSlurm* g_fake = nullptr;

int fake_load(job_info_msg_t** msg, JobIdArg<decltype(&slurm_load_job)>::type id, uint16_t show_flags) {
    g_fake->asked.push_back(id_of(id));
    g_fake->flags.push_back(show_flags);
    if (id_of(id) == 404) {
        errno = ESLURM_INVALID_JOB_ID;
        return SLURM_ERROR;
    }
    g_fake->msg.record_count = static_cast<uint32_t>(g_fake->records.size());
    g_fake->msg.job_array = g_fake->records.data();
    *msg = &g_fake->msg;
    return SLURM_SUCCESS;
}
void fake_free(job_info_msg_t* msg) {
    EXPECT_EQ(msg, &g_fake->msg);
    ++g_fake->frees;
}
char* fake_strerror(int code) {
    static char text[64];
    std::snprintf(text, sizeof text, "error %d", code);
    return text;
}

TEST(SlurmLoadJob, FindsTheJobsOwnRecordAndFreesTheAnswerOnce) {
    FakeSlurm fake;
    g_fake = &fake;
    fake.records.resize(3);
    fake.records[0].job_id = 41;
    fake.records[1].job_id = 42;
    fake.records[1].job_state = JOB_RUNNING;
    fake.records[2].job_id = 43;
    const glue::SlurmJobApi api{fake_load, fake_free, fake_strerror};
    {
        auto loaded = glue::load_job(api, 42, SHOW_ALL);
        ASSERT_TRUE(loaded);
        EXPECT_EQ(loaded->records().size(), 3u);
        ASSERT_NE(loaded->record_of(42), nullptr);
        EXPECT_EQ(loaded->record_of(42)->job_state, JOB_RUNNING);
        EXPECT_EQ(loaded->record_of(7), nullptr);
        EXPECT_EQ(fake.frees, 0);
    }
    EXPECT_EQ(fake.frees, 1);
    EXPECT_EQ(fake.asked, std::vector<uint32_t>{42});
    EXPECT_EQ(fake.flags, std::vector<uint16_t>{SHOW_ALL});

    auto missing = glue::load_job(api, 404, SHOW_DETAIL);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, ESLURM_INVALID_JOB_ID);
    EXPECT_EQ(missing.error().text, "error " + std::to_string(ESLURM_INVALID_JOB_ID));
    EXPECT_EQ(fake.frees, 1);
    g_fake = nullptr;
}

}  // namespace
}  // namespace lanes
