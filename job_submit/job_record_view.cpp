// SPDX-License-Identifier: GPL-2.0-or-later
#include "job_submit/job_record_view.hpp"

#include <charconv>
#include <cstring>
#include <string_view>

#include "core/job_env.hpp"

namespace lanes {

namespace {

constexpr JobRecordLayout kLayouts[] = {
#include "glue/job_record_layout.inc"
};

// slurmctld's JOB_MAGIC and DETAILS_MAGIC (unchanged 22.05..26.05; the
// generator refuses a release where they differ).
constexpr uint32_t kJobMagic = 0xf0b7392c;
constexpr uint32_t kDetailsMagic = 0x0dea84e7;
constexpr uint32_t kNoVal = 0xfffffffe;
constexpr uint32_t kInfinite = 0xffffffff;
// More SPANK entries than any job carries: a larger count means a bad layout.
constexpr uint32_t kMaxSpankEntries = 4096;
constexpr size_t kMaxString = 64 * 1024;

template <typename T>
T field(const void* base, uint16_t offset) {
    T value;
    std::memcpy(&value, static_cast<const char*>(base) + offset, sizeof value);
    return value;
}

std::string string_at(const void* base, uint16_t offset) {
    const char* s = field<const char*>(base, offset);
    return s ? std::string(s, strnlen(s, kMaxString)) : std::string();
}

std::optional<std::string> env_value(const std::vector<std::string>& entries, std::string_view name) {
    for (const auto& entry : entries) {
        if (env_entry_name(entry) != name) continue;
        auto eq = entry.find('=');
        if (eq != std::string::npos) return entry.substr(eq + 1);
    }
    return std::nullopt;
}

}  // namespace

const JobRecordLayout* job_record_layout(uint32_t slurm_version) {
    for (const auto& layout : kLayouts)
        if (layout.slurm_version == slurm_version) return &layout;
    return nullptr;
}

Result<JobRecordValues> read_job_record(const void* job_ptr, const JobRecordLayout& layout) {
    if (!job_ptr) return fail("no job record");
    if (field<uint32_t>(job_ptr, layout.magic) != kJobMagic)
        return fail("the job record's magic value is not where this Slurm release keeps it");
    const void* details = field<const void*>(job_ptr, layout.details);
    if (!details) return fail("the job record has no details (a finished job?)");
    if (field<uint32_t>(details, layout.details_magic) != kDetailsMagic)
        return fail("the job details' magic value is not where this Slurm release keeps it");
    JobRecordValues values;
    values.job_id = field<uint32_t>(job_ptr, layout.job_id);
    values.user_id = field<uint32_t>(job_ptr, layout.user_id);
    values.time_limit = field<uint32_t>(job_ptr, layout.time_limit);
    values.partition = string_at(job_ptr, layout.partition);
    values.account = string_at(job_ptr, layout.account);
    values.begin_time = field<time_t>(details, layout.details_begin_time);
    values.nice = field<uint32_t>(details, layout.details_nice);
    auto env = field<char* const*>(job_ptr, layout.spank_job_env);
    auto env_size = field<uint32_t>(job_ptr, layout.spank_job_env_size);
    if (env_size > kMaxSpankEntries || (env_size && !env))
        return fail("the job record's SPANK environment (" + std::to_string(env_size) + " entries) is implausible");
    for (uint32_t i = 0; i < env_size; ++i)
        if (env[i]) values.spank_job_env.emplace_back(env[i], strnlen(env[i], kMaxString));
    return values;
}

HeldJob held_job_from_record(const JobRecordValues& record, UserNames& names) {
    HeldJob held;
    held.job_id = record.job_id;
    held.class_name = env_value(record.spank_job_env, kEnvClass);
    if (auto nice = env_value(record.spank_job_env, kEnvNice)) {
        int32_t value = 0;
        auto [end, ec] = std::from_chars(nice->data(), nice->data() + nice->size(), value);
        if (ec == std::errc() && end == nice->data() + nice->size()) held.decided_nice = value;
    }
    JobView& job = held.job;
    job.uid = record.user_id;
    job.user = names.name(record.user_id);
    job.account = record.account;
    job.partition = record.partition;
    if (record.time_limit != kNoVal && record.time_limit != kInfinite) job.time_limit_minutes = record.time_limit;
    if (record.begin_time > 0) job.begin_time = SysSeconds{std::chrono::seconds{record.begin_time}};
    return held;
}

}  // namespace lanes
