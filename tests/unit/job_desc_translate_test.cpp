// SPDX-License-Identifier: GPL-2.0-or-later
// The job_submit glue against a real job_desc_msg_t, with Slurm's own allocator (libslurm).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "job_submit/job_desc_translate.hpp"

extern "C" {
char* slurm_xstrdup(const char* str);
void slurm_xfree(void** ptr);
void* slurm_xcalloc(size_t count, size_t size, bool clear, bool try_alloc, const char* file, int line,
                    const char* func);
}

using namespace lanes;

namespace {

struct DescFixture : ::testing::Test {
    job_desc_msg_t desc{};
    UserNames names{[](uint32_t uid) -> std::optional<std::string> {
        if (uid == 1000) return std::string("alice");
        return std::nullopt;
    }};
    void SetUp() override { slurm_init_job_desc_msg(&desc); }
    void TearDown() override {
        for (char** field : {&desc.partition, &desc.qos, &desc.features, &desc.name})
            if (*field) slurm_xfree(reinterpret_cast<void**>(field));
        if (desc.spank_job_env) {
            for (uint32_t i = 0; i < desc.spank_job_env_size; ++i)
                if (desc.spank_job_env[i]) slurm_xfree(reinterpret_cast<void**>(&desc.spank_job_env[i]));
            slurm_xfree(reinterpret_cast<void**>(&desc.spank_job_env));
        }
    }
    void set_spank_env(std::initializer_list<const char*> entries) {
        desc.spank_job_env = static_cast<char**>(
            slurm_xcalloc(entries.size() + 1, sizeof(char*), true, false, __FILE__, __LINE__, __func__));
        uint32_t i = 0;
        for (const char* e : entries) desc.spank_job_env[i++] = slurm_xstrdup(e);
        desc.spank_job_env_size = i;
    }
    std::vector<std::string> spank_env() const {
        std::vector<std::string> out;
        for (uint32_t i = 0; i < desc.spank_job_env_size; ++i) out.emplace_back(desc.spank_job_env[i]);
        return out;
    }
};

const SysSeconds kNow{std::chrono::seconds{1'800'000'000}};

}  // namespace

TEST(Glue, CountsGpusInEveryTresSpelling) {
    struct Case {
        const char* tres;
        uint32_t gpus;
    } cases[] = {
        {"", 0},
        {"gres/gpu:4", 4},
        {"gres:gpu:a100:2", 2},
        {"gres/gpu=3", 3},
        {"gpu:8", 8},
        {"gres/gpu", 1},
        {"gres/gpu:a100", 1},
        {"gres/gpu:2,gres/gpu:h100:1", 3},
        {"gres/nic:2", 0},
        {"license/x:1;gres/gpu:2", 2},
    };
    for (const auto& c : cases) EXPECT_EQ(count_gpus(c.tres), c.gpus) << c.tres;
}

TEST_F(DescFixture, ViewCarriesTheJobFields) {
    desc.name = slurm_xstrdup("infer-llm");
    desc.partition = slurm_xstrdup("inference");
    desc.user_id = 1000;
    desc.time_limit = 30;
    desc.min_nodes = 2;
    char tres[] = "gres/gpu:4";
    desc.tres_per_node = tres;
    set_spank_env({"SPANK_LANES_REQUEST_CLASS=inference", "LANES_REQUEST_CAP=1Gbit"});
    auto job = job_view_from_desc(desc, 1000, names, kNow);
    desc.tres_per_node = nullptr;
    EXPECT_EQ(job.name, "infer-llm");
    EXPECT_EQ(job.user, "alice");
    EXPECT_EQ(job.uid, 1000u);
    EXPECT_EQ(job.partition, "inference");
    EXPECT_EQ(job.gpus, 8u);
    ASSERT_TRUE(job.time_limit_minutes);
    EXPECT_EQ(*job.time_limit_minutes, 30u);
    EXPECT_FALSE(job.batch);
    EXPECT_EQ(job.requested_class.value_or(""), "inference");
    EXPECT_EQ(job.requested_cap.value_or(""), "1Gbit");
    EXPECT_EQ(job.submit_time, kNow);
}

TEST_F(DescFixture, UnknownUidShowsAsNumber) {
    desc.user_id = 4242;
    EXPECT_EQ(job_view_from_desc(desc, 4242, names, kNow).user, "4242");
    EXPECT_FALSE(job_view_from_desc(desc, 4242, names, kNow).time_limit_minutes);
}

TEST_F(DescFixture, DecisionReplacesForgedEntriesAndRoutes) {
    desc.partition = slurm_xstrdup("debug");
    set_spank_env({"SPANK_LANES_CLASS=inference", "LANES_DSCP=46", "SPANK_OTHER=1", "LANES_REQUEST_CLASS=x"});
    Decision d;
    d.class_name = "training";
    d.partition = "training";
    d.qos = "bulk";
    d.nice = 100;
    d.begin_time = kNow + std::chrono::hours(3);
    d.network.dscp = 8;
    d.user_messages = {"lanes: deferred", "lanes: second"};
    auto message = apply_decision_to_desc(desc, d);
    EXPECT_EQ(message, "lanes: deferred\nlanes: second");
    EXPECT_STREQ(desc.partition, "training");
    EXPECT_STREQ(desc.qos, "bulk");
    EXPECT_EQ(desc.nice, NICE_OFFSET + 100);
    EXPECT_EQ(desc.begin_time, 1'800'000'000 + 3 * 3600);
    auto env = spank_env();
    EXPECT_EQ(env, (std::vector<std::string>{"SPANK_OTHER=1", "LANES_CLASS=training", "LANES_DSCP=8", "LANES_RANK=0",
                                             "LANES_NICE=100"}));
    EXPECT_EQ(desc.spank_job_env[desc.spank_job_env_size], nullptr);
}

TEST_F(DescFixture, DecisionOnEmptyEnvironment) {
    Decision d;
    d.class_name = "inference";
    apply_decision_to_desc(desc, d);
    EXPECT_EQ(spank_env(), (std::vector<std::string>{"LANES_CLASS=inference", "LANES_RANK=0"}));
    EXPECT_EQ(desc.partition, nullptr);
}

TEST_F(DescFixture, StripLeavesOthersInOrder) {
    set_spank_env({"A=1", "LANES_X=2", "B=3", "SPANK_LANES_Y=4"});
    strip_lanes_env(desc);
    EXPECT_EQ(spank_env(), (std::vector<std::string>{"A=1", "B=3"}));
}

TEST(Glue, RejectCodesAreSpecific) {
    Decision d;
    d.verdict = Decision::Verdict::Reject;
    d.reject_kind = Decision::RejectKind::ClassNotAllowed;
    EXPECT_EQ(reject_code(d), ESLURM_ACCESS_DENIED);
    d.reject_kind = Decision::RejectKind::InvalidOption;
    EXPECT_EQ(reject_code(d), ESLURM_ACCESS_DENIED);  // not "Invalid Trackable RESource (TRES)"
    d.reject_kind = Decision::RejectKind::TimeWindow;
    EXPECT_EQ(reject_code(d), ESLURM_INVALID_TIME_LIMIT);
}

TEST_F(DescFixture, UpdatesOfRoutedFieldsAreNamed) {
    EXPECT_FALSE(routed_field_changed(desc)) << "an empty update changes nothing routed";
    desc.time_limit = 10;  // judged against the class (owner_update.hpp), not refused outright
    EXPECT_FALSE(routed_field_changed(desc));
    desc.begin_time = 1;
    desc.nice = NICE_OFFSET;
    EXPECT_FALSE(routed_field_changed(desc));
    struct Case {
        std::function<void(job_desc_msg_t&)> set;
        const char* what;
    } cases[] = {
        {[](job_desc_msg_t& d) { d.min_nodes = 4; }, "the node count"},
        {[](job_desc_msg_t& d) { d.num_tasks = 8; }, "the task count"},
    };
    for (const auto& c : cases) {
        job_desc_msg_t d{};
        slurm_init_job_desc_msg(&d);
        c.set(d);
        auto field = routed_field_changed(d);
        ASSERT_TRUE(field) << c.what;
        EXPECT_EQ(*field, c.what);
    }
    char tres[] = "gres/gpu:8";
    desc.tres_per_node = tres;
    EXPECT_EQ(routed_field_changed(desc).value_or(""), "the GRES/TRES request");
    desc.tres_per_node = nullptr;
    desc.name = slurm_xstrdup("infer-me");
    EXPECT_EQ(routed_field_changed(desc).value_or(""), "the job name");
}
