// SPDX-License-Identifier: GPL-2.0-or-later
#include "job_submit/job_desc_translate.hpp"

#include <cstring>
#include <string_view>
#include <vector>

#include "core/job_env.hpp"
#include "glue/slurm_job_fields.hpp"

extern "C" {
// Slurm's allocator, resolved in slurmctld (libslurmfull) or libslurm (tests).
char* slurm_xstrdup(const char* str);
void slurm_xfree(void** ptr);
void* slurm_xrecalloc(void** ptr, size_t nmemb, size_t size, bool clear, bool try_alloc, const char* file, int line,
                      const char* func);
}

namespace lanes {

namespace {

void replace_string(char*& field, const std::string& value) {
    if (field) slurm_xfree(reinterpret_cast<void**>(&field));
    field = slurm_xstrdup(value.c_str());
}

}  // namespace

JobView job_view_from_desc(const job_desc_msg_t& desc, uint32_t submit_uid, UserNames& names, SysSeconds now) {
    return job_view_from_fields(glue::fields_from_desc(desc, submit_uid), now,
                                [&names](uint32_t uid) { return names.name(uid); });
}

void strip_lanes_env(job_desc_msg_t& desc) {
    if (!desc.spank_job_env) return;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < desc.spank_job_env_size; ++i) {
        char* entry = desc.spank_job_env[i];
        if (!entry) continue;
        if (is_lanes_entry(entry)) {
            slurm_xfree(reinterpret_cast<void**>(&entry));
        } else {
            desc.spank_job_env[kept++] = entry;
        }
    }
    for (uint32_t i = kept; i < desc.spank_job_env_size; ++i) desc.spank_job_env[i] = nullptr;
    desc.spank_job_env_size = kept;
}

std::string apply_decision_to_desc(job_desc_msg_t& desc, const Decision& decision) {
    if (decision.partition) replace_string(desc.partition, *decision.partition);
    if (decision.qos) replace_string(desc.qos, *decision.qos);
    if (decision.features) replace_string(desc.features, *decision.features);
    if (decision.nice) desc.nice = NICE_OFFSET + static_cast<uint32_t>(*decision.nice);
    if (decision.begin_time) desc.begin_time = static_cast<time_t>(decision.begin_time->time_since_epoch().count());
    if (decision.time_limit_minutes) desc.time_limit = *decision.time_limit_minutes;

    strip_lanes_env(desc);
    auto entries = encode_decision(decision);
    uint32_t size = desc.spank_job_env_size;
    // One spare slot keeps the array NULL-terminated, as Slurm expects.
    slurm_xrecalloc(reinterpret_cast<void**>(&desc.spank_job_env), size + entries.size() + 1, sizeof(char*), true,
                    false, __FILE__, __LINE__, __func__);
    for (const auto& entry : entries) desc.spank_job_env[size++] = slurm_xstrdup(entry.c_str());
    desc.spank_job_env[size] = nullptr;
    desc.spank_job_env_size = size;

    std::string messages;
    for (const auto& line : decision.user_messages) {
        if (!messages.empty()) messages += '\n';
        messages += line;
    }
    return messages;
}

std::optional<std::string> routed_field_changed(const job_desc_msg_t& update) {
    const struct {
        bool changed;
        const char* what;
    } fields[] = {
        {update.partition != nullptr, "the partition"},
        {update.qos != nullptr, "the QOS"},
        {update.features != nullptr, "the feature list (--constraint)"},
        {update.reservation != nullptr, "the reservation"},
        {update.spank_job_env_size > 0, "the job's SPANK environment"},
        {update.name != nullptr, "the job name"},
        {update.comment != nullptr, "the comment"},
        {update.account != nullptr, "the account"},
        {update.tres_per_node != nullptr || update.tres_per_job != nullptr || update.tres_per_task != nullptr ||
             update.tres_per_socket != nullptr,
         "the GRES/TRES request"},
        {(update.min_nodes != NO_VAL && update.min_nodes != 0) || (update.max_nodes != NO_VAL && update.max_nodes != 0),
         "the node count"},
        {update.num_tasks != NO_VAL && update.num_tasks != 0, "the task count"},
    };
    for (const auto& field : fields)
        if (field.changed) return std::string(field.what);
    return std::nullopt;
}

int reject_code(const Decision& decision) {
    switch (decision.reject_kind) {
        case Decision::RejectKind::ClassNotAllowed: return ESLURM_ACCESS_DENIED;
        // --lanes-class/--lanes-cap refused: Slurm prints strerror(code) under
        // our message, and "Invalid Trackable RESource (TRES) specification"
        // sent users looking at their --gres; the request was denied.
        case Decision::RejectKind::InvalidOption: return ESLURM_ACCESS_DENIED;
        case Decision::RejectKind::TimeWindow: return ESLURM_INVALID_TIME_LIMIT;
        case Decision::RejectKind::Policy: break;
    }
    return ESLURM_ACCESS_DENIED;
}

}  // namespace lanes
