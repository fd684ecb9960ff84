// SPDX-License-Identifier: GPL-2.0-or-later
// What a job's owner may change (issue #20 item 5): the pure decision of
// ctld/owner_update.hpp, and the job record reader that feeds it
// (job_submit/job_record_view.hpp) over a synthetic record.
#include <gtest/gtest.h>
#include <slurm/slurm_version.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "ctld/owner_update.hpp"
#include "ctld/router.hpp"
#include "fixed_windows.hpp"
#include "job_submit/job_record_view.hpp"

namespace lanes {
namespace {

using test::mon;
using test::utc;

struct OwnerUpdateJudge : ::testing::Test {
    test::FixedWindows windows;
    Config config;
    RouteOptions options;
    HeldJob held;

    OwnerUpdateJudge() {
        windows.daily("peak", utc(2026, 11, 30), 8, 20);
        config.path = "/etc/slurm/lanes.toml";
        ClassConfig training;
        training.name = "training";
        training.partitions = {"gpu"};
        training.nice = 100;
        training.avoid_windows = {"peak"};
        training.window_overrun = OverrunAction::Defer;
        training.borrow_partitions = {"spare"};
        config.classes["training"] = training;
        ClassConfig strict = training;
        strict.name = "strict";
        strict.window_overrun = OverrunAction::Reject;
        config.classes["strict"] = strict;
        ClassConfig inference;
        inference.name = "inference";
        inference.partitions = {"gpu"};
        config.classes["inference"] = inference;

        held.job_id = 42;
        held.class_name = "training";
        held.decided_nice = 100;
        held.job.user = "alice";
        held.job.account = "ml";
        held.job.partition = "gpu";
        held.job.time_limit_minutes = 60;
        held.job.begin_time = mon(20);  // deferred out of the peak
    }
    OwnerVerdict judge(const OwnerUpdate& update, SysSeconds now = mon(10)) {
        return judge_owner_update(update, &held, config, now, windows, options);
    }
};

TEST_F(OwnerUpdateJudge, AnUpdateOfNothingLanesJudgesIsAllowed) {
    auto v = judge({});
    EXPECT_EQ(v.action, OwnerVerdict::Action::Allow);
    EXPECT_TRUE(v.message.empty());
    // Without a readable record too: nothing needs it.
    EXPECT_EQ(judge_owner_update({}, nullptr, config, mon(10), windows, options).action, OwnerVerdict::Action::Allow);
}

TEST_F(OwnerUpdateJudge, RoutedFieldsAreRefusedNamingTheField) {
    OwnerUpdate u;
    u.routed_field = "the partition";
    auto v = judge(u);
    EXPECT_EQ(v.action, OwnerVerdict::Action::Refuse);
    EXPECT_EQ(v.code, OwnerVerdict::Code::AccessDenied);
    EXPECT_EQ(v.message.rfind("lanes: the partition decides the job's traffic class and routing", 0), 0u) << v.message;
}

TEST_F(OwnerUpdateJudge, NiceBelowTheClassesIsRefused) {
    OwnerUpdate u;
    u.nice = 0;
    auto v = judge(u);
    EXPECT_EQ(v.action, OwnerVerdict::Action::Refuse);
    EXPECT_EQ(v.code, OwnerVerdict::Code::AccessDenied);
    EXPECT_NE(v.message.find("lanes: Nice=0 is below the nice of 100 that its class training gives it"),
              std::string::npos)
        << v.message;
    EXPECT_NE(v.message.find("Nice=100 or more is allowed"), std::string::npos) << v.message;
    u.nice = 99;
    EXPECT_EQ(judge(u).action, OwnerVerdict::Action::Refuse);
}

TEST_F(OwnerUpdateJudge, NiceAtOrAboveTheClassesIsAllowed) {
    OwnerUpdate u;
    u.nice = 100;
    EXPECT_EQ(judge(u).action, OwnerVerdict::Action::Allow);
    u.nice = 5000;
    EXPECT_EQ(judge(u).action, OwnerVerdict::Action::Allow);
}

TEST_F(OwnerUpdateJudge, TheNiceLanesDecidedIsTheFloorNotTheClassSetting) {
    held.decided_nice = 300;  // a policy override gave this job more
    OwnerUpdate u;
    u.nice = 200;
    auto v = judge(u);
    EXPECT_EQ(v.action, OwnerVerdict::Action::Refuse);
    EXPECT_NE(v.message.find("nice of 300"), std::string::npos) << v.message;
    held.decided_nice.reset();  // routed before LANES_NICE existed: the class's nice
    u.nice = 50;
    EXPECT_NE(judge(u).message.find("nice of 100"), std::string::npos);
}

TEST_F(OwnerUpdateJudge, AClassWithoutNiceLeavesNiceToSlurm) {
    held.class_name = "inference";
    held.decided_nice.reset();
    OwnerUpdate u;
    u.nice = 0;
    EXPECT_EQ(judge(u).action, OwnerVerdict::Action::Allow);
}

TEST_F(OwnerUpdateJudge, AJobLanesDidNotRouteKeepsSlurmsRules) {
    held.class_name.reset();
    held.decided_nice.reset();
    OwnerUpdate u;
    u.nice = 0;
    u.begin_time = mon(10);
    u.time_limit_set = true;
    EXPECT_EQ(judge(u).action, OwnerVerdict::Action::Allow);
}

TEST_F(OwnerUpdateJudge, AnUnreadableRecordRefusesWhatNeedsIt) {
    for (int which = 0; which < 2; ++which) {
        OwnerUpdate u;
        if (which == 0) u.nice = 500;
        if (which == 1) u.begin_time = mon(21);
        auto v = judge_owner_update(u, nullptr, config, mon(10), windows, options);
        EXPECT_EQ(v.action, OwnerVerdict::Action::Refuse) << which;
        EXPECT_NE(v.message.find("job record is unknown to this build of Lanes"), std::string::npos) << v.message;
    }
    // A time limit needs nothing of the job: Slurm lets an owner only lower it.
    OwnerUpdate u;
    u.time_limit_set = true, u.time_limit_minutes = 30;
    EXPECT_EQ(judge_owner_update(u, nullptr, config, mon(10), windows, options).action, OwnerVerdict::Action::Allow);
}

TEST_F(OwnerUpdateJudge, ShorterTimeLimitIsAllowedALongerOneIntoThePeakIsRefused) {
    OwnerUpdate u;
    u.time_limit_set = true;
    u.time_limit_minutes = 30;
    EXPECT_EQ(judge(u).action, OwnerVerdict::Action::Allow);
    held.job.begin_time = mon(22);   // the owner moved it later: 10h before Tuesday's peak
    u.time_limit_minutes = 11 * 60;  // into the peak, though it would fit a whole gap
    auto v = judge(u);
    EXPECT_EQ(v.action, OwnerVerdict::Action::Refuse);
    EXPECT_EQ(v.code, OwnerVerdict::Code::InvalidTimeLimit);
    EXPECT_NE(v.message.find("cannot be raised to 11h"), std::string::npos) << v.message;
    u.time_limit_minutes = 10 * 60;  // ends Tuesday 08:00
    EXPECT_EQ(judge(u).action, OwnerVerdict::Action::Allow);
}

TEST_F(OwnerUpdateJudge, AStartTimeOutsideThePeakIsAllowed) {
    OwnerUpdate u;
    u.begin_time = mon(22);
    EXPECT_EQ(judge(u).action, OwnerVerdict::Action::Allow);
}

TEST_F(OwnerUpdateJudge, AStartTimeInsideThePeakIsRefusedNamingTheClasssStart) {
    OwnerUpdate u;
    u.begin_time = mon(10);  // "StartTime=now" during the peak
    auto v = judge(u);
    EXPECT_EQ(v.action, OwnerVerdict::Action::Refuse);
    EXPECT_EQ(v.code, OwnerVerdict::Code::AccessDenied);
    EXPECT_EQ(v.message.rfind("lanes: the start time of this training job cannot be moved to now: ", 0), 0u)
        << v.message;
    EXPECT_NE(v.message.find("keeps such jobs out of the peak window and would start it at Mon 20:00 UTC, so a "
                             "StartTime from then on is allowed"),
              std::string::npos)
        << v.message;
    u.begin_time = mon(1);  // a past time is "now"
    EXPECT_EQ(judge(u).action, OwnerVerdict::Action::Refuse);
    u.begin_time = mon(20);  // the class's own start
    EXPECT_EQ(judge(u).action, OwnerVerdict::Action::Allow);
}

TEST_F(OwnerUpdateJudge, AStartTimeThatRunsIntoThePeakIsRefused) {
    OwnerUpdate u;
    u.begin_time = mon(7, 30);  // before Monday's peak, but 60 min run into it
    auto v = judge(u, mon(6));
    EXPECT_EQ(v.action, OwnerVerdict::Action::Refuse);
    EXPECT_NE(v.message.find("cannot be moved to Mon 07:30 UTC"), std::string::npos) << v.message;
    u.begin_time = mon(6, 30);  // ends 07:30: fits before it
    EXPECT_EQ(judge(u, mon(6)).action, OwnerVerdict::Action::Allow);
}

TEST_F(OwnerUpdateJudge, AStartTimeTheClassRejectsIsRefused) {
    held.class_name = "strict";
    OwnerUpdate u;
    u.begin_time = mon(7, 30);
    auto v = judge(u, mon(6));
    EXPECT_EQ(v.action, OwnerVerdict::Action::Refuse);
    EXPECT_EQ(v.code, OwnerVerdict::Code::AccessDenied);
    EXPECT_NE(v.message.find("the start time of this strict job cannot be moved to Mon 07:30 UTC"), std::string::npos)
        << v.message;
}

TEST_F(OwnerUpdateJudge, ABorrowedPartitionMustStillEndBeforeThePeak) {
    config.classes["training"].window_overrun = OverrunAction::Warn;  // keeps the start, lends only before the peak
    held.job.partition = "gpu,spare";
    held.job.begin_time.reset();
    OwnerUpdate u;
    u.begin_time = mon(6);  // 06:00-07:00 ends before 08:00
    EXPECT_EQ(judge(u, mon(5)).action, OwnerVerdict::Action::Allow);
    u.begin_time = mon(7, 30);  // 07:30-08:30 runs into the peak
    auto v = judge(u, mon(5));
    EXPECT_EQ(v.action, OwnerVerdict::Action::Refuse);
    EXPECT_NE(v.message.find("may use partition spare only because it ends before the next peak window"),
              std::string::npos)
        << v.message;
}

TEST_F(OwnerUpdateJudge, ANewLimitAndStartTimeAreJudgedTogether) {
    OwnerUpdate u;
    u.begin_time = mon(21);
    u.time_limit_set = true;
    u.time_limit_minutes = 10 * 60;  // 21:00 + 10h = 07:00: fits
    EXPECT_EQ(judge(u).action, OwnerVerdict::Action::Allow);
    u.time_limit_minutes = 12 * 60;  // 09:00: into Tuesday's peak
    EXPECT_EQ(judge(u).action, OwnerVerdict::Action::Refuse);
}

TEST_F(OwnerUpdateJudge, AClassNoLongerConfiguredCannotBeChecked) {
    held.class_name = "gone";
    held.decided_nice.reset();
    OwnerUpdate u;
    u.time_limit_set = true;
    u.time_limit_minutes = 30;  // shorter: nothing to check
    EXPECT_EQ(judge(u).action, OwnerVerdict::Action::Allow);
    u.time_limit_minutes = 90;
    auto v = judge(u);
    EXPECT_EQ(v.action, OwnerVerdict::Action::Refuse);
    EXPECT_NE(v.message.find("class 'gone' is no longer in /etc/slurm/lanes.toml"), std::string::npos) << v.message;
    OwnerUpdate start;
    start.begin_time = mon(22);
    EXPECT_EQ(judge(start).action, OwnerVerdict::Action::Refuse);
}

// ---- the record reader, over a record laid out as a layout says

struct Record {
    JobRecordLayout layout{0x010203, 0, 16, 24, 28, 32, 40, 48, 56, 64, 0, 8, 16};
    alignas(8) unsigned char job[128] = {};
    alignas(8) unsigned char details[32] = {};
    char partition[8] = "gpu";
    char account[8] = "ml";
    char env0[32] = "LANES_CLASS=training";
    char env1[32] = "LANES_NICE=100";
    char* env[3] = {env0, env1, nullptr};

    template <typename T>
    static void put(unsigned char* base, uint16_t offset, T value) {
        std::memcpy(base + offset, &value, sizeof value);
    }
    Record() {
        put<uint32_t>(job, layout.magic, 0xf0b7392c);
        put<uint32_t>(job, layout.job_id, 42);
        put<uint32_t>(job, layout.user_id, 0);
        put<uint32_t>(job, layout.time_limit, 60);
        put<const char*>(job, layout.partition, partition);
        put<const char*>(job, layout.account, account);
        put<char**>(job, layout.spank_job_env, env);
        put<uint32_t>(job, layout.spank_job_env_size, 2);
        put<void*>(job, layout.details, details);
        put<uint32_t>(details, layout.details_magic, 0x0dea84e7);
        put<time_t>(details, layout.details_begin_time, 1764532800);
        put<uint32_t>(details, layout.details_nice, 0x80000000u + 100);
    }
};

TEST(JobRecordView, ReadsTheFieldsWhereTheLayoutSays) {
    Record r;
    auto values = read_job_record(r.job, r.layout);
    ASSERT_TRUE(values) << values.error().message;
    EXPECT_EQ(values->job_id, 42u);
    EXPECT_EQ(values->time_limit, 60u);
    EXPECT_EQ(values->partition, "gpu");
    EXPECT_EQ(values->account, "ml");
    EXPECT_EQ(values->spank_job_env, (std::vector<std::string>{"LANES_CLASS=training", "LANES_NICE=100"}));
    EXPECT_EQ(values->begin_time, 1764532800);
    EXPECT_EQ(values->nice, 0x80000000u + 100);
    UserNames names;
    HeldJob held = held_job_from_record(*values, names);
    EXPECT_EQ(held.class_name, "training");
    EXPECT_EQ(held.decided_nice, 100);
    EXPECT_EQ(held.job.time_limit_minutes, 60u);
    EXPECT_EQ(held.job.user, "root");
    ASSERT_TRUE(held.job.begin_time);
    EXPECT_EQ(held.job.begin_time->time_since_epoch().count(), 1764532800);
}

TEST(JobRecordView, TheClassIsReadWithOrWithoutSlurmsSpankPrefix) {
    JobRecordValues values;
    values.spank_job_env = {"OTHER=1", "SPANK_LANES_CLASS=inference", "SPANK_LANES_NICE=-5"};
    UserNames names;
    HeldJob held = held_job_from_record(values, names);
    EXPECT_EQ(held.class_name, "inference");
    EXPECT_EQ(held.decided_nice, -5);
    values.spank_job_env = {"LANES_CLASS=training", "LANES_NICE=not-a-number"};
    held = held_job_from_record(values, names);
    EXPECT_EQ(held.class_name, "training");
    EXPECT_FALSE(held.decided_nice);
}

TEST(JobRecordView, AWrongLayoutReadsNothing) {
    Record r;
    JobRecordLayout shifted = r.layout;
    shifted.magic = 4;
    auto values = read_job_record(r.job, shifted);
    ASSERT_FALSE(values);
    EXPECT_NE(values.error().message.find("magic"), std::string::npos);
    shifted = r.layout;
    shifted.details_magic = 4;
    EXPECT_FALSE(read_job_record(r.job, shifted));
    Record::put<uint32_t>(r.job, r.layout.spank_job_env_size, 1000000);
    auto implausible = read_job_record(r.job, r.layout);
    ASSERT_FALSE(implausible);
    EXPECT_NE(implausible.error().message.find("implausible"), std::string::npos);
    EXPECT_FALSE(read_job_record(nullptr, r.layout));
}

TEST(JobRecordView, SentinelsAreUnset) {
    Record r;
    Record::put<uint32_t>(r.job, r.layout.time_limit, 0xffffffff);  // INFINITE
    Record::put<time_t>(r.details, r.layout.details_begin_time, 0);
    Record::put<uint32_t>(r.job, r.layout.spank_job_env_size, 0);
    auto values = read_job_record(r.job, r.layout);
    ASSERT_TRUE(values);
    UserNames names;
    HeldJob held = held_job_from_record(*values, names);
    EXPECT_FALSE(held.job.time_limit_minutes);
    EXPECT_FALSE(held.job.begin_time);
    EXPECT_FALSE(held.class_name);
    EXPECT_FALSE(held.decided_nice);
}

TEST(JobRecordView, EveryMicroReleaseHasItsOwnLayout) {
    // The host's release and the two the version roots build against.
    EXPECT_TRUE(job_record_layout(SLURM_VERSION_NUM(22, 5, 8)));
    const auto* early = job_record_layout(SLURM_VERSION_NUM(24, 11, 0));
    const auto* late = job_record_layout(SLURM_VERSION_NUM(24, 11, 7));
    ASSERT_TRUE(early && late);
    EXPECT_NE(early->spank_job_env, late->spank_job_env) << "24.11.0 and 24.11.7 differ";
    EXPECT_TRUE(job_record_layout(SLURM_VERSION_NUM(26, 5, 0)));
    EXPECT_FALSE(job_record_layout(SLURM_VERSION_NUM(21, 8, 0)));
    // The Slurm this was built against may be newer than the table (Debian
    // unstable moves on): job_modify then refuses what needs the record.
    if (!job_record_layout(SLURM_VERSION_NUMBER))
        std::printf("note: Slurm %x is not in glue/job_record_layout.inc (contrib/job-record-offsets.sh)\n",
                    SLURM_VERSION_NUMBER);
}

}  // namespace
}  // namespace lanes
