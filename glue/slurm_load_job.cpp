// SPDX-License-Identifier: GPL-2.0-or-later
#include "config.h"  // HAVE_SLURM_LOAD_JOB_STEP_ID (Slurm 26.05)

#include <dlfcn.h>

#include <cerrno>

#include "glue/slurm_load_job.hpp"

namespace lanes::glue {

bool slurm_job_api_in_process(SlurmJobApi& api) {
    api.load_job = reinterpret_cast<decltype(api.load_job)>(::dlsym(RTLD_DEFAULT, "slurm_load_job"));
    api.free_job_info_msg =
        reinterpret_cast<decltype(api.free_job_info_msg)>(::dlsym(RTLD_DEFAULT, "slurm_free_job_info_msg"));
    api.strerror = reinterpret_cast<decltype(api.strerror)>(::dlsym(RTLD_DEFAULT, "slurm_strerror"));
    return api.load_job && api.free_job_info_msg && api.strerror;
}

std::span<const slurm_job_info_t> LoadedJob::records() const {
    if (!msg_) return {};
    return {msg_->job_array, msg_->record_count};
}

const slurm_job_info_t* LoadedJob::record_of(uint32_t job_id) const {
    for (const auto& record : records())
        if (record.job_id == job_id) return &record;
    return nullptr;
}

std::expected<LoadedJob, LoadJobError> load_job(const SlurmJobApi& api, uint32_t job_id, uint16_t show_flags) {
    job_info_msg_t* msg = nullptr;
#ifdef HAVE_SLURM_LOAD_JOB_STEP_ID
    slurm_step_id_t id{};
    id.job_id = job_id;
    id.step_id = NO_VAL;
    id.step_het_comp = NO_VAL;
    int rc = api.load_job(&msg, id, show_flags);
#else
    int rc = api.load_job(&msg, job_id, show_flags);
#endif
    if (rc != SLURM_SUCCESS) {
        int err = errno;  // slurm_get_errno() is gone since 23.x; Slurm sets errno
        return std::unexpected(LoadJobError{err, api.strerror(err)});
    }
    return LoadedJob(api, msg);
}

}  // namespace lanes::glue
