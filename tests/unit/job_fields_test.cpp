// SPDX-License-Identifier: GPL-2.0-or-later
// The one job translator (core/job_fields.hpp) and its Slurm adapters
// (glue/slurm_job_fields.hpp): every field, every GPU spelling, and the golden
// jobs fed through job_submit's path (job_desc_msg_t) and lanesctl's paths
// (job_info_t, JSON), compared field by field and decision by decision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/job_fields.hpp"
#include "ctld/classifier.hpp"
#include "ctld/user_names.hpp"
#include "glue/slurm_job_fields.hpp"
#include "job_submit/job_desc_translate.hpp"
#include "lanesctl/json.hpp"
#include "lanesctl/policy_fixture.hpp"
#include "tests/unit/test_util.hpp"

namespace lanes {
namespace {

using lanes::test::golden_dir;

namespace fs = std::filesystem;

const SysSeconds kNow{std::chrono::seconds{1'800'000'000}};

// Slurm structs built from SlurmJobFields, as slurmctld would hand them over:
// the reverse of the adapters, so both paths can be fed the same job. The
// strings live as long as the holder; nothing is freed with Slurm's allocator.
struct SlurmJob {
    job_desc_msg_t desc{};
    slurm_job_info_t info{};
    std::deque<std::string> strings;
    std::vector<char*> env, spank;
    char script[16] = "#!/bin/sh\n";

    char* keep(const std::string& s) {
        if (s.empty()) return nullptr;
        strings.push_back(s);
        return strings.back().data();
    }

    explicit SlurmJob(const SlurmJobFields& f) {
        slurm_init_job_desc_msg(&desc);
        desc.name = keep(f.name);
        desc.comment = keep(f.comment);
        desc.account = keep(f.account);
        desc.partition = keep(f.partition);
        desc.qos = keep(f.qos);
        desc.features = keep(f.features);
        if (f.user_id) desc.user_id = *f.user_id;
        desc.tres_per_job = keep(f.tres_per_job);
        desc.tres_per_node = keep(f.tres_per_node.empty() ? f.gres : f.tres_per_node);
        desc.tres_per_socket = keep(f.tres_per_socket);
        desc.tres_per_task = keep(f.tres_per_task);
        if (f.min_nodes) desc.min_nodes = *f.min_nodes;
        if (f.max_nodes) desc.max_nodes = *f.max_nodes;
        if (f.num_tasks) desc.num_tasks = *f.num_tasks;
        if (f.ntasks_per_node) desc.ntasks_per_node = static_cast<uint16_t>(*f.ntasks_per_node);
        desc.time_limit = f.time_limit_minutes ? *f.time_limit_minutes : NO_VAL;
        if (f.has_script) desc.script = script;
        for (const auto& e : f.environment) env.push_back(keep(e));
        for (const auto& e : f.spank_env) spank.push_back(keep(e));
        env.push_back(nullptr);
        spank.push_back(nullptr);
        desc.environment = env.data();
        desc.env_size = static_cast<uint32_t>(env.size() - 1);
        desc.spank_job_env = spank.data();
        desc.spank_job_env_size = static_cast<uint32_t>(spank.size() - 1);
        if (f.begin_time) desc.begin_time = static_cast<time_t>(*f.begin_time);

        info.name = desc.name;
        info.comment = desc.comment;
        info.account = desc.account;
        info.partition = desc.partition;
        info.qos = desc.qos;
        info.features = desc.features;
        info.user_id = f.user_id.value_or(f.submit_uid);
        info.user_name = keep(f.user_name);
        info.tres_per_job = desc.tres_per_job;
        info.tres_per_node = desc.tres_per_node;
        info.tres_per_socket = desc.tres_per_socket;
        info.tres_per_task = desc.tres_per_task;
        info.num_nodes = f.min_nodes.value_or(NO_VAL);
        info.max_nodes = f.max_nodes.value_or(0);
        info.num_tasks = f.num_tasks.value_or(NO_VAL);
        info.ntasks_per_node = f.ntasks_per_node ? static_cast<uint16_t>(*f.ntasks_per_node) : NO_VAL16;
        info.time_limit = f.time_limit_minutes ? *f.time_limit_minutes : NO_VAL;
        info.batch_flag = f.has_script ? 1 : 0;
        info.submit_time = f.submit_time ? static_cast<time_t>(*f.submit_time) : 0;
    }
    ~SlurmJob() {
        // slurm_init_job_desc_msg() allocates nothing; our pointers are not Slurm's.
        desc.environment = nullptr;
        desc.spank_job_env = nullptr;
    }
    SlurmJob(const SlurmJob&) = delete;
    SlurmJob& operator=(const SlurmJob&) = delete;
};

std::string by_uid(uint32_t uid) { return uid == 1000 ? "alice" : std::to_string(uid); }

JobView via_desc(const SlurmJobFields& f, SysSeconds now = kNow) {
    SlurmJob job(f);
    UserNames names([&f](uint32_t uid) -> std::optional<std::string> {
        if (!f.user_name.empty()) return f.user_name;
        return by_uid(uid);
    });
    return job_view_from_desc(job.desc, f.submit_uid, names, now);
}

JobView via_info(const SlurmJobFields& f, SysSeconds now = kNow) {
    SlurmJob job(f);
    return job_view_from_fields(glue::fields_from_info(job.info), now, by_uid);
}

// The fields of two views that differ, by name ("" when equal). `info_path`:
// the second came from job_info_t, which has no SPANK env, job env or begin time.
std::string differences(const JobView& a, const JobView& b, bool info_path = false) {
    std::string out;
    auto cmp = [&out](const char* name, const auto& x, const auto& y) {
        if (!(x == y)) out += std::string(out.empty() ? "" : ", ") + name;
    };
    cmp("name", a.name, b.name);
    cmp("comment", a.comment, b.comment);
    cmp("user", a.user, b.user);
    cmp("uid", a.uid, b.uid);
    cmp("account", a.account, b.account);
    cmp("partition", a.partition, b.partition);
    cmp("qos", a.qos, b.qos);
    cmp("tres_per_node", a.tres_per_node, b.tres_per_node);
    cmp("tres_per_job", a.tres_per_job, b.tres_per_job);
    cmp("gpus", a.gpus, b.gpus);
    cmp("min_nodes", a.min_nodes, b.min_nodes);
    cmp("max_nodes", a.max_nodes, b.max_nodes);
    cmp("num_tasks", a.num_tasks, b.num_tasks);
    cmp("time_limit_minutes", a.time_limit_minutes, b.time_limit_minutes);
    cmp("features", a.features, b.features);
    cmp("batch", a.batch, b.batch);
    cmp("submit_time", a.submit_time, b.submit_time);
    if (!info_path) {
        cmp("environment", a.environment, b.environment);
        cmp("requested_class", a.requested_class, b.requested_class);
        cmp("requested_cap", a.requested_cap, b.requested_cap);
        cmp("begin_time", a.begin_time, b.begin_time);
    }
    return out;
}

// ---- GPUs in every form Slurm keeps them ----

struct GpuCase {
    const char* what;
    SlurmJobFields fields;
    uint32_t gpus;
};

SlurmJobFields gpu_job(std::string per_job, std::string per_node, std::string per_task, std::string gres = {},
                       std::optional<uint32_t> nodes = {}, std::optional<uint32_t> tasks = {},
                       std::optional<uint32_t> tasks_per_node = {}, std::string per_socket = {}) {
    SlurmJobFields f;
    f.tres_per_job = std::move(per_job);
    f.tres_per_node = std::move(per_node);
    f.tres_per_task = std::move(per_task);
    f.gres = std::move(gres);
    f.tres_per_socket = std::move(per_socket);
    f.min_nodes = nodes;
    f.num_tasks = tasks;
    f.ntasks_per_node = tasks_per_node;
    return f;
}

const GpuCase kGpuCases[] = {
    {"none", gpu_job("", "", ""), 0},
    {"--gpus=4 (22.05 spelling)", gpu_job("gres:gpu:4", "", ""), 4},
    {"--gpus=a100:4", gpu_job("gres/gpu:a100:4", "", ""), 4},
    {"--gpus-per-node=2 on 3 nodes", gpu_job("", "gres/gpu:2", "", "", 3), 6},
    {"--gres=gpu:a100:4 on 2 nodes", gpu_job("", "gres:gpu:a100:4", "", "", 2), 8},
    {"bare GRES gpu:a100:4", gpu_job("", "", "", "gpu:a100:4"), 4},
    {"bare GRES on 2 nodes", gpu_job("", "", "", "gpu:a100:4", 2), 8},
    {"--gpus-per-task=2 with 4 tasks", gpu_job("", "", "gres/gpu:2", "", {}, 4), 8},
    {"--gpus-per-task=2, no task count", gpu_job("", "", "gres/gpu:2"), 2},
    {"--gpus-per-task with cpu in the list", gpu_job("", "", "cpu:4,gres/gpu:1", "", 2, 8), 8},
    {"--gpus-per-task, 4 tasks per node on 2 nodes", gpu_job("", "", "gres/gpu:1", "", 2, {}, 4), 8},
    {"--gpus-per-socket=2 on 2 nodes (at least one socket each)", gpu_job("", "", "", "", 2, {}, {}, "gres/gpu:2"), 4},
    {"per job wins over per node", gpu_job("gres/gpu:3", "gres/gpu:8", "", "", 2), 3},
    {"per node wins over per task", gpu_job("", "gres/gpu:1", "gres/gpu:4", "", 2, 8), 2},
    {"two GPU types", gpu_job("", "gres/gpu:a100:2,gres/gpu:h100:1", "", "", 2), 6},
    {"not a GPU", gpu_job("", "gres/nic:2", "license/x:1"), 0},
};

class GpuForms : public ::testing::TestWithParam<GpuCase> {};

TEST_P(GpuForms, CountedTheSameOnEveryPath) {
    const GpuCase& c = GetParam();
    EXPECT_EQ(requested_gpus(c.fields), c.gpus);
    EXPECT_EQ(job_view_from_fields(c.fields, kNow, by_uid).gpus, c.gpus);
    EXPECT_EQ(via_desc(c.fields).gpus, c.gpus) << "job_submit path";
    EXPECT_EQ(via_info(c.fields).gpus, c.gpus) << "lanesctl --job path";
}

INSTANTIATE_TEST_SUITE_P(JobFields, GpuForms, ::testing::ValuesIn(kGpuCases));

// ---- each field ----

TEST(JobFields, OwnerIsUserIdElseTheSubmitter) {
    SlurmJobFields f;
    f.submit_uid = 1000;
    EXPECT_EQ(job_view_from_fields(f, kNow, by_uid).uid, 1000u);
    EXPECT_EQ(job_view_from_fields(f, kNow, by_uid).user, "alice");
    f.user_id = 4242;  // an admin submitting for another user
    EXPECT_EQ(job_view_from_fields(f, kNow, by_uid).uid, 4242u);
    EXPECT_EQ(job_view_from_fields(f, kNow, by_uid).user, "4242");
    f.user_name = "bob";  // the source names the owner: no lookup
    EXPECT_EQ(job_view_from_fields(f, kNow, by_uid).user, "bob");
    EXPECT_EQ(job_view_from_fields(SlurmJobFields{}, kNow, {}).user, "0");

    job_desc_msg_t desc;
    slurm_init_job_desc_msg(&desc);
    EXPECT_FALSE(glue::fields_from_desc(desc, 7).user_id) << "NO_VAL is the submitter";
    desc.user_id = 0xffffffffu;
    EXPECT_FALSE(glue::fields_from_desc(desc, 7).user_id);
    desc.user_id = 0;
    EXPECT_EQ(glue::fields_from_desc(desc, 7).user_id, 0u) << "root is an owner";
}

TEST(JobFields, PlainStringsAreCopied) {
    SlurmJobFields f;
    f.name = "n\x1b[2J";  // copied as is: escaping is each sink's job
    f.comment = "c";
    f.account = "ml";
    f.partition = "a,b";
    f.qos = "q";
    f.features = "ib&v100";
    f.tres_per_job = "gres/gpu:1";
    f.tres_per_node = "gres/gpu:2";
    JobView j = job_view_from_fields(f, kNow, by_uid);
    EXPECT_EQ(j.name, f.name);
    EXPECT_EQ(j.comment, "c");
    EXPECT_EQ(j.account, "ml");
    EXPECT_EQ(j.partition, "a,b");
    EXPECT_EQ(j.qos, "q");
    EXPECT_EQ(j.features, "ib&v100");
    EXPECT_EQ(j.tres_per_job, "gres/gpu:1");
    EXPECT_EQ(j.tres_per_node, "gres/gpu:2");
    f.tres_per_node.clear();
    f.gres = "gpu:a100:4";
    EXPECT_EQ(job_view_from_fields(f, kNow, by_uid).tres_per_node, "gpu:a100:4") << "a bare GRES is per node";
}

TEST(JobFields, CountsWithoutValueAreZero) {
    job_desc_msg_t desc;
    slurm_init_job_desc_msg(&desc);
    JobView j = job_view_from_fields(glue::fields_from_desc(desc, 1), kNow, by_uid);
    EXPECT_EQ(j.min_nodes, 0u);
    EXPECT_EQ(j.max_nodes, 0u);
    EXPECT_EQ(j.num_tasks, 0u);
    EXPECT_FALSE(j.time_limit_minutes);
    desc.min_nodes = 2;
    desc.max_nodes = 4;
    desc.num_tasks = 8;
    j = job_view_from_fields(glue::fields_from_desc(desc, 1), kNow, by_uid);
    EXPECT_EQ(j.min_nodes, 2u);
    EXPECT_EQ(j.max_nodes, 4u);
    EXPECT_EQ(j.num_tasks, 8u);
}

TEST(JobFields, TimeLimitNoneOrInfiniteIsUnset) {
    job_desc_msg_t desc;
    slurm_init_job_desc_msg(&desc);
    for (uint32_t none : {NO_VAL, INFINITE}) {
        desc.time_limit = none;
        EXPECT_FALSE(glue::fields_from_desc(desc, 1).time_limit_minutes);
    }
    desc.time_limit = 90;
    EXPECT_EQ(job_view_from_fields(glue::fields_from_desc(desc, 1), kNow, by_uid).time_limit_minutes, 90u);
    slurm_job_info_t info{};
    info.time_limit = INFINITE;
    EXPECT_FALSE(glue::fields_from_info(info).time_limit_minutes);
}

TEST(JobFields, EnvironmentOnlyForBatchJobs) {
    SlurmJobFields f;
    f.environment = {"A=b", "EMPTY=", "NOEQUALS", "C=d=e"};
    EXPECT_TRUE(job_view_from_fields(f, kNow, by_uid).environment.empty());
    f.has_script = true;
    JobView j = job_view_from_fields(f, kNow, by_uid);
    EXPECT_TRUE(j.batch);
    EXPECT_EQ(j.environment.size(), 3u);
    EXPECT_EQ(j.environment.at("A"), "b");
    EXPECT_EQ(j.environment.at("EMPTY"), "");
    EXPECT_EQ(j.environment.at("C"), "d=e");
}

TEST(JobFields, LanesOptionsComeFromTheSpankEnvironment) {
    SlurmJobFields f;
    f.spank_env = {"SPANK_LANES_REQUEST_CLASS=inference", "LANES_REQUEST_CAP=1Gbit", "OTHER=1"};
    JobView j = job_view_from_fields(f, kNow, by_uid);
    EXPECT_EQ(j.requested_class, "inference");
    EXPECT_EQ(j.requested_cap, "1Gbit");
    EXPECT_FALSE(job_view_from_fields(SlurmJobFields{}, kNow, by_uid).requested_class);
}

TEST(JobFields, TimesFromTheJobElseNow) {
    SlurmJobFields f;
    JobView j = job_view_from_fields(f, kNow, by_uid);
    EXPECT_EQ(j.submit_time, kNow);
    EXPECT_FALSE(j.begin_time);
    f.submit_time = 1'700'000'000;
    f.begin_time = 1'900'000'000;
    j = job_view_from_fields(f, kNow, by_uid);
    EXPECT_EQ(j.submit_time, SysSeconds{std::chrono::seconds{1'700'000'000}});
    EXPECT_EQ(j.begin_time, SysSeconds{std::chrono::seconds{1'900'000'000}});
    f.begin_time = 0;
    EXPECT_FALSE(job_view_from_fields(f, kNow, by_uid).begin_time);
}

TEST(JobFields, JsonKeysFillTheSameFields) {
    auto v = json::parse(R"({"name": "n", "uid": 1000, "tres_per_task": "gres/gpu:2", "ntasks_per_node": 4,
        "min_nodes": 2, "gres": "gpu:a100:1", "tres_per_socket": "gres/gpu:1", "lanes_class": "training"})");
    ASSERT_TRUE(v);
    std::optional<uint32_t> gpus;
    auto f = job_fields_from_json(*v, gpus);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_FALSE(gpus);
    EXPECT_EQ(f->tres_per_task, "gres/gpu:2");
    EXPECT_EQ(f->ntasks_per_node, 4u);
    EXPECT_EQ(f->gres, "gpu:a100:1");
    EXPECT_EQ(f->tres_per_socket, "gres/gpu:1");
    auto j = job_from_json(*v);
    ASSERT_TRUE(j);
    EXPECT_EQ(j->gpus, 2u) << "bare GRES per node, before per task";
    EXPECT_EQ(j->requested_class, "training");
    EXPECT_EQ(differences(*j, via_desc(*f, j->submit_time)), "user") << "JSON names no user, job_submit looks it up";
}

// ---- the golden jobs through both paths ----

TEST(JobFields, GoldenJobsTranslateAlikeOnEveryPath) {
    size_t compared = 0;
    for (const char* set : {"default", "by_partition", "rules"}) {
        fs::path dir = golden_dir() / set;
        auto classifier = Classifier::create((dir / "lanes.toml").string(), [](LogLevel, const std::string&) {});
        ASSERT_TRUE(classifier) << classifier.error().message;
        std::vector<fs::path> cases;
        for (const auto& entry : fs::directory_iterator(dir))
            if (entry.path().extension() == ".json") cases.push_back(entry.path());
        std::sort(cases.begin(), cases.end());
        for (const auto& path : cases) {
            SCOPED_TRACE(path.string());
            auto fixture = load_fixture(path.string());
            ASSERT_TRUE(fixture) << fixture.error().message;
            auto doc = json::parse([&] {
                std::ifstream in(path);
                return std::string(std::istreambuf_iterator<char>(in), {});
            }());
            ASSERT_TRUE(doc);
            std::optional<uint32_t> gpus;
            auto fields = job_fields_from_json(*json::find(*doc, "job"), gpus);
            ASSERT_TRUE(fields) << fields.error().message;
            // A fixture's bare "gpus" is a --gpus=N to Slurm; given with TRES
            // fields, it must be what Slurm's fields count to.
            JobView from_json = fixture->job;
            if (gpus && *gpus > 0 && requested_gpus(*fields) == 0) {
                fields->tres_per_job = "gres/gpu:" + std::to_string(*gpus);
                from_json.tres_per_job = fields->tres_per_job;  // what Slurm would hold for it
            }
            if (!fields->submit_time) fields->submit_time = fixture->job.submit_time.time_since_epoch().count();

            JobView from_desc = via_desc(*fields, from_json.submit_time);  // slurmctld's now
            JobView from_info = via_info(*fields, fixture->at);
            if (from_json.user.empty()) from_desc.user = from_info.user = "";  // the fixture names nobody
            EXPECT_EQ(differences(from_json, from_desc), "") << "JSON and job_submit (job_desc_msg_t) differ";
            EXPECT_EQ(differences(from_json, from_info, true), "") << "JSON and lanesctl --job (job_info_t) differ";

            Decision want = (*classifier)->classify(from_json, fixture->at, fixture->admin);
            Decision got = (*classifier)->classify(from_desc, fixture->at, fixture->admin);
            EXPECT_EQ(json::write(decision_to_json(got)), json::write(decision_to_json(want)));
            EXPECT_TRUE(check_fixture(*fixture, got).empty()) << "job_submit's decision fails the fixture";
            if (!from_json.requested_class && !from_json.requested_cap && !from_json.begin_time &&
                from_json.environment.empty()) {
                Decision via_lanesctl = (*classifier)->classify(from_info, fixture->at, fixture->admin);
                EXPECT_EQ(json::write(decision_to_json(via_lanesctl)), json::write(decision_to_json(want)));
            }
            ++compared;
        }
    }
    EXPECT_GE(compared, 28u);
}

}  // namespace
}  // namespace lanes
